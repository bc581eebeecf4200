"""Command line: ``python -m rstck rules`` prints the rule table; ``tests`` lists every test."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .editions import DEFAULT as DEFAULT_EDITION
from .editions import NAMES as EDITION_NAMES
from .editions import update_doc
from .generated_docs import rules_output
from .generated_docs import verifications_markdown
from .verifications import VERIFICATIONS


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rstck", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    rules = sub.add_parser("rules", help="print the rule table (markdown)")
    rules.add_argument("--update", metavar="README", type=Path,
                       help="rewrite the generated table inside this file instead of printing it")
    rules.add_argument("--edition", choices=EDITION_NAMES, default=DEFAULT_EDITION,
                       help="the edition whose rules to list (its own ids, the JVM id beside each)")
    rules.add_argument("--update-map", metavar="FILE", type=Path,
                       help="rewrite the generated rs <-> JVM rule map inside FILE (docs/editions.md)")
    sub.add_parser("tests", help="list every verification test with its rule and level")
    docs = sub.add_parser("docs", help="print docs/verifications.md")
    docs.add_argument("--update", metavar="FILE", type=Path, help="write it to FILE instead")
    args = parser.parse_args(argv)
    if args.command == "rules" and args.update_map is not None:
        changed = update_doc(args.update_map)
        print(f"{args.update_map}: {'updated' if changed else 'already current'}")
    elif args.command == "rules":
        print(rules_output(args.edition, update=args.update))
    elif args.command == "docs":
        text = verifications_markdown()
        if args.update is not None:
            args.update.write_text(text, encoding="utf-8")
        else:
            print(text, end="")
    else:
        for name, verification in VERIFICATIONS.items():
            for test in verification.tests:
                print(f"{name}::{test.test_id}\t{test.level}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
