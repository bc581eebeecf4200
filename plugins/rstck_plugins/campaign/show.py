"""``rs-tck show RUN_DIR TEST``: why a test failed in a campaign, as the pytest side prints it.

Reads ``failures.json`` and ``summary.json``, which every campaign, ingest and summary writes
next to the dataset: no Spark, no Parquet reader, instant. Prints the first failing run's
full message (expectation, observation, hint and the signal trace), how often the test failed,
and the ``pytest`` command that reruns that run.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from .plan import UsageError
from .summary import FAILURES_FILE


def add_parser(sub: Any) -> None:
    s = sub.add_parser("show", help="print why a test failed in a campaign (its message and trace) and its repro",
                       description="Print the first failing run of TEST in the dataset RUN_DIR, as pytest prints "
                       "the failure, with the command that reruns it.")
    s.add_argument("out", type=Path, metavar="RUN_DIR", help="the campaign's --out directory")
    s.add_argument("test", metavar="TEST", help="the test's name, or a part of it that names one test")
    s.add_argument("--subject", metavar="MODULE:ATTR", help="which subject, when the test failed for several")


def _load(path: Path) -> list[dict[str, Any]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"{path.parent}: no {path.name} here: run `rs-tck summary {path.parent}` first "
                         "(datasets written before it existed), or check the directory") from None
    except (OSError, json.JSONDecodeError) as exc:
        raise UsageError(f"{path}: cannot read it: {exc}") from None
    if not isinstance(data, list):
        raise UsageError(f"{path}: not a list of rows")
    return data


def find(rows: list[dict[str, Any]], test: str, subject: str | None) -> list[dict[str, Any]]:
    """Rows naming ``test`` exactly, else the rows whose test contains it; for ``subject`` only."""
    mine = [r for r in rows if subject is None or r.get("subject") == subject]
    exact = [r for r in mine if r.get("test") == test]
    return exact or [r for r in mine if test in str(r.get("test"))]


def _one(matches: list[dict[str, Any]], test: str) -> dict[str, Any]:
    """The row to show: the one match, or the one of them that failed; else a list to choose from.

    A test every subject runs matches once per subject, and usually only one of them failed it.
    """
    names = sorted({(r["subject"], r["test"]) for r in matches})
    if len(names) == 1:
        return matches[0]
    failing = [r for r in matches if r.get("failed", 0) + r.get("errors", 0) > 0]
    if len({(r["subject"], r["test"]) for r in failing}) == 1:
        return failing[0]
    shown = sorted({(r["subject"], r["test"]) for r in failing}) or names
    listed = ", ".join(f"{t} (--subject {s})" for s, t in shown[:6]) + (" ..." if len(shown) > 6 else "")
    which = "failed" if failing else "matched, none failed"
    raise UsageError(f"{test!r} names {len(names)} tests; {len(shown)} {which}: {listed}; give the full "
                     "name, and --subject when several subjects ran it")


def main(args: argparse.Namespace, given: Any = None) -> int:
    out: Path = args.out
    summary = _load(out / "summary.json")
    details = _load(out / FAILURES_FILE)
    matches = find(summary, args.test, args.subject)
    if not matches:
        raise UsageError(f"{out}: no test matching {args.test!r}"
                         + (f" for subject {args.subject}" if args.subject else "") + " in this dataset")
    row = _one(matches, args.test)
    head = (f"{row['subject']} {row['verification']}::{row['test']} (rule {row['rule']}): "
            f"{row['failed'] + row['errors']} of {row['runs']} runs failed")
    detail = next((d for d in details if (d["subject"], d["verification"], d["test"])
                   == (row["subject"], row["verification"], row["test"])), None)
    if detail is None:
        print(head + "; nothing to show")
        return 0
    ci = row.get("pass_rate_ci95")
    if ci:
        head += f" (pass rate {row['pass_rate']:.1%}, 95% interval {ci[0]:.1%}-{ci[1]:.1%})"
    print(head)
    print(f"first failure: {detail['outcome']}, seed {detail['seed']}, campaign {detail['campaign_id']}, "
          f"unit {detail['unit_id']}, host {detail.get('host')}")
    print()
    print(detail.get("message") or "(no message)")
    if row.get("repro"):
        print()
        print("rerun it with:")
        print(f"  {row['repro']}")
    sys.stdout.flush()
    return 0
