"""Soak the TCK against its reference implementations: any failure is a TCK flake to fix.

Runs every verification of each reference subject ``--runs`` times in a row through the engine
(no pytest), optionally while ``--load`` busy processes keep the cores occupied, and prints
runs, failures, wall time per run and the load average. Exit code 1 if anything failed.

    python benchmarks/soak.py --runs 50 --load 2
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import sys
import time
from typing import Any

from rstck.engine import run_verification
from rstck.reference import async_range_publisher
from rstck.reference import failed_publisher
from rstck.reference import range_publisher
from rstck.subjects import PublisherSubject


def _burn(stop_at: float) -> None:
    while time.monotonic() < stop_at:
        pass


def subjects() -> dict[str, tuple[str, Any]]:
    """Reference subjects by label: (verification, subject)."""
    out: dict[str, tuple[str, Any]] = {
        "publisher:range": ("publisher", PublisherSubject(range_publisher, failed_publisher, label="range")),
        "publisher:async_range": (
            "publisher", PublisherSubject(async_range_publisher, failed_publisher, label="async_range")
        ),
    }
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--load", type=int, default=0, help="busy processes to run meanwhile")
    parser.add_argument("--json", metavar="PATH", help="write the per-run numbers here")
    args = parser.parse_args(argv)
    burners = []
    if args.load:
        stop_at = time.monotonic() + 24 * 3600
        for _ in range(args.load):
            p = multiprocessing.Process(target=_burn, args=(stop_at,), daemon=True)
            p.start()
            burners.append(p)
    report: dict[str, Any] = {"runs": args.runs, "load": args.load, "subjects": {}}
    failures = 0
    start = time.monotonic()
    try:
        for label, (verification, subject) in subjects().items():
            walls, failed = [], []
            for i in range(args.runs):
                t0 = time.monotonic()
                results = run_verification(verification, subject)
                walls.append(time.monotonic() - t0)
                bad = [r for r in results if r.outcome in ("failed", "error")]
                for r in bad:
                    failed.append({"run": i, "test": r.test, "message": r.message.splitlines()[0]})
                    print(f"FAIL {label} run {i}: {r.test}\n{r.message}", file=sys.stderr)
            failures += len(failed)
            report["subjects"][label] = {
                "failures": failed,
                "wall_s_median": round(statistics.median(walls), 3),
                "wall_s_max": round(max(walls), 3),
                "tests_per_run": len(results),
            }
            print(f"{label}: {args.runs} runs, {len(failed)} failure(s), wall median "
                  f"{statistics.median(walls):.2f} s, max {max(walls):.2f} s, load avg {os.getloadavg()[0]:.2f}")
    finally:
        for p in burners:
            p.terminate()
    report["wall_s_total"] = round(time.monotonic() - start, 1)
    report["loadavg_1m_end"] = round(os.getloadavg()[0], 2)
    print(f"total: {failures} failure(s) in {report['wall_s_total']} s")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(report, fh, indent=2)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
