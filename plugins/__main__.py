"""Command line: ``python -m rstck_plugins report results.json -o report.html``; also ``campaign``,
``ingest`` and ``summary``, as ``rs-tck`` offers them.

Renders the HTML report from a saved results file, so a report can be made after the run (on
another machine, from a CI artifact) without running anything again.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rstck.results import ResultsFileError
from rstck.results import load

from .files import check_writable
from .html_report import page as html_report


def main(argv: list[str] | None = None) -> int:
    given = sys.argv[1:] if argv is None else argv
    if given and given[0] in ("campaign", "ingest", "summary", "show"):
        from .campaign import cli

        return cli.main(given)
    parser = argparse.ArgumentParser(prog="python -m rstck_plugins", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("campaign", "ingest", "summary", "show"):
        sub.add_parser(name, help=f"same as rs-tck {name} (Spark campaigns; see rs-tck {name} --help)")
    report = sub.add_parser("report", help="render the HTML report of a results file (--rs-report-json)")
    report.add_argument("results", type=Path, help="results file (schema rs-tck-results/1)")
    report.add_argument("-o", "--output", type=Path,
                        help="HTML file to write (default: the results file with .html)")
    args = parser.parse_args(argv)
    try:
        data, results = load(args.results)
    except ResultsFileError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    output: Path = args.output or args.results.with_suffix(".html")
    problem = check_writable("-o", output)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    data["results"] = [r.to_json() for r in results]
    try:
        html_report.write(output, data)
    except OSError as exc:
        print(f"error: {output}: cannot write the report: {exc.strerror or exc}", file=sys.stderr)
        return 2
    failed = sum(1 for r in results if r.outcome in ("failed", "error"))
    print(f"{output}: report of {len(results)} test(s), {failed} failed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
