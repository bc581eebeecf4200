"""Command line: ``python -m rstck rules`` prints the rule table; ``tests`` lists every test."""

from __future__ import annotations

import argparse
import sys

from .catalogue import markdown_table
from .verifications import VERIFICATIONS


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rstck", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("rules", help="print the rule table (markdown)")
    sub.add_parser("tests", help="list every verification test with its rule and level")
    args = parser.parse_args(argv)
    if args.command == "rules":
        print(markdown_table())
    else:
        for name, verification in VERIFICATIONS.items():
            for test in verification.tests:
                print(f"{name}::{test.test_id}\t{test.level}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
