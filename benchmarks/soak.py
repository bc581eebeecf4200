"""Soak the TCK against its reference implementations: any failure is a TCK flake to fix.

Runs every verification of each reference subject (publishers, blackbox and whitebox
subscribers, the identity processor) ``--runs`` times in a row through the engine (no pytest), optionally while ``--load`` busy processes keep the cores occupied, and prints
runs, failures, wall time per run and the load average. Exit code 1 if anything failed.

    python benchmarks/soak.py --runs 50 --load 2
    python benchmarks/soak.py --runs 50 --load 2 --conforming   # the independent shapes too
    python benchmarks/soak.py --runs 50 --load 2 --concurrency 8  # eight tests at once

``--conforming`` adds the shapes of ``tests/conforming`` (JVM example ports, actor and
prefetching processors, ``first()``/``take(n)``, one-shot and asyncio-task publishers), labelled
``conforming:<verification>:<shape>``. With ``--json`` the report is rewritten after every run,
so a soak stopped at its time budget still leaves its counts.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rstck.engine import run_verification
from rstck.reference import async_range_publisher
from rstck.reference import async_subscriber
from rstck.reference import async_whitebox_subscriber
from rstck.reference import failed_publisher
from rstck.reference import identity_processor
from rstck.reference import range_publisher
from rstck.reference import sync_subscriber
from rstck.reference import sync_whitebox_subscriber
from rstck.subjects import ProcessorSubject
from rstck.subjects import PublisherSubject
from rstck.subjects import SubscriberSubject
from rstck.subjects import WhiteboxSubject


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
        "subscriber_blackbox:sync": ("subscriber_blackbox", SubscriberSubject(sync_subscriber, label="sync")),
        "subscriber_blackbox:async": ("subscriber_blackbox", SubscriberSubject(async_subscriber, label="async")),
        "subscriber_whitebox:sync": (
            "subscriber_whitebox", WhiteboxSubject(sync_whitebox_subscriber, any_thread_puppet=True, label="sync_whitebox")
        ),
        "subscriber_whitebox:async": (
            "subscriber_whitebox", WhiteboxSubject(async_whitebox_subscriber, any_thread_puppet=True, label="async_whitebox")
        ),
        "processor:identity": (
            "processor", ProcessorSubject(identity_processor, failed_factory=failed_publisher, label="identity")
        ),
    }
    return out


def conforming_subjects() -> dict[str, tuple[str, Any]]:
    """The independent conforming shapes of ``tests/conforming``, labelled ``conforming:...``."""
    root = str(Path(__file__).resolve().parents[1])
    if root not in sys.path:
        sys.path.insert(0, root)
    from tests.conforming import subjects as conforming

    return {f"conforming:{label}": value for label, value in conforming().items()}


def soak(
    runs: int,
    only: list[str] | None = None,
    *,
    conforming: bool = False,
    on_run: Callable[[dict[str, Any]], None] | None = None,
    concurrency: int = 1,
) -> dict[str, Any]:
    """Run each selected subject's verification ``runs`` times; per-subject failures and wall times."""
    chosen = {label: value for label, value in {**subjects(), **(conforming_subjects() if conforming else {})}.items()
              if not only or label in only}
    walls: dict[str, list[float]] = {label: [] for label in chosen}
    failed: dict[str, list[dict[str, Any]]] = {label: [] for label in chosen}
    tests: dict[str, int] = {label: 0 for label in chosen}

    def summary(label: str) -> dict[str, Any]:
        return {"runs_done": len(walls[label]), "failures": failed[label],
                "wall_s_median": round(statistics.median(walls[label]), 3),
                "wall_s_max": round(max(walls[label]), 3), "tests_per_run": tests[label]}

    # Round-robin, one run of each subject per round, so a soak stopped at its time budget
    # has soaked every subject about equally.
    for i in range(runs):
        for label, (verification, subject) in chosen.items():
            t0 = time.monotonic()
            results = run_verification(verification, subject, concurrency=concurrency)
            walls[label].append(time.monotonic() - t0)
            tests[label] = len(results)
            for r in results:
                if r.outcome in ("failed", "error"):
                    failed[label].append({"run": i, "test": r.test, "message": r.message.splitlines()[0]})
                    print(f"FAIL {label} run {i}: {r.test}\n{r.message}", file=sys.stderr)
            if on_run is not None:
                on_run({name: summary(name) for name in chosen if walls[name]})
    report = {label: summary(label) for label in chosen}
    for label, r in report.items():
        print(f"{label}: {r['runs_done']} runs, {len(r['failures'])} failure(s), wall median "
              f"{r['wall_s_median']:.2f} s, max {r['wall_s_max']:.2f} s, load avg {os.getloadavg()[0]:.2f}",
              flush=True)
    return report


def start_load(n: int) -> list[multiprocessing.Process]:
    """``n`` busy-looping processes; terminate them when done."""
    stop_at = time.monotonic() + 24 * 3600
    burners = [multiprocessing.Process(target=_burn, args=(stop_at,), daemon=True) for _ in range(n)]
    for p in burners:
        p.start()
    return burners


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--load", type=int, default=0, help="busy processes to run meanwhile")
    parser.add_argument("--json", metavar="PATH", help="write the per-run numbers here")
    parser.add_argument("--only", action="append", metavar="LABEL", help="soak only this subject (repeatable)")
    parser.add_argument("--conforming", action="store_true", help="add the shapes of tests/conforming")
    parser.add_argument("--concurrency", type=int, default=1, help="tests run at once (1: the default mode)")
    args = parser.parse_args(argv)
    burners = start_load(args.load)
    report: dict[str, Any] = {"runs": args.runs, "load": args.load, "concurrency": args.concurrency,
                              "loadavg_1m_start": round(os.getloadavg()[0], 2)}
    start = time.monotonic()

    def progress(subjects_so_far: dict[str, Any]) -> None:
        if args.json:
            with open(args.json, "w", encoding="utf-8") as fh:
                json.dump({**report, "subjects": subjects_so_far,
                           "wall_s_so_far": round(time.monotonic() - start, 1),
                           "loadavg_1m_now": round(os.getloadavg()[0], 2)}, fh, indent=2)

    try:
        report["subjects"] = soak(args.runs, args.only, conforming=args.conforming, on_run=progress,
                                  concurrency=args.concurrency)
    finally:
        for p in burners:
            p.terminate()
    failures = sum(len(s["failures"]) for s in report["subjects"].values())
    report["wall_s_total"] = round(time.monotonic() - start, 1)
    report["loadavg_1m_end"] = round(os.getloadavg()[0], 2)
    print(f"total: {failures} failure(s) in {report['wall_s_total']} s")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(report, fh, indent=2)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
