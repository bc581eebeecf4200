"""Soak the TCK against its reference implementations: any failure is a TCK flake to fix.

Runs every verification of each reference subject (publishers, blackbox and whitebox
subscribers, the identity processor) ``--runs`` times in a row through the engine (no pytest), optionally while ``--load`` busy processes keep the cores occupied, and prints
runs, failures, wall time per run and the load average. Exit code 1 if anything failed.

    python benchmarks/soak.py --runs 50 --load 2
    python benchmarks/soak.py --runs 50 --load 2 --conforming   # the independent shapes too
    python benchmarks/soak.py --runs 50 --load 2 --concurrency 8  # eight tests at once

``--conforming`` adds the shapes of ``tests/conforming`` (JVM example ports, actor and
prefetching processors, ``first()``/``take(n)``, one-shot and asyncio-task publishers), labelled
``conforming:<verification>:<shape>``. ``--catalogue`` soaks the whole conforming catalogue
instead: those shapes, the ``rs`` edition's ranges (``rs:<shape>``) and the real designs ported
from RxJava and Reactor (``real:<verification>:<design>``), each through its whole verification
in the default mode (fuzz on). A real design is judged by its entries in the catalogue's
``ALLOWED`` table: a failure listed there is its documented violation, anything else is an
accusation, and a violation listed as ``always`` that goes unseen is a miss. With ``--json`` the
report is rewritten after every run, so a soak stopped at its time budget still leaves its counts.

    python benchmarks/soak.py --catalogue --runs 5 --load 2 --minutes 35 --json soak.json
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

from rstck.reference import async_range_publisher
from rstck.reference import async_subscriber
from rstck.reference import async_whitebox_subscriber
from rstck.reference import failed_publisher
from rstck.reference import identity_processor
from rstck.reference import range_publisher
from rstck.reference import sync_subscriber
from rstck.reference import sync_whitebox_subscriber
from rstck.results import TestResult
from rstck.run_api import run_verification
from rstck.settings import Settings
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


def _repo_on_path() -> None:
    root = str(Path(__file__).resolve().parents[1])
    if root not in sys.path:
        sys.path.insert(0, root)


#: How a soak judges one run of a subject: (results) -> (accusations, misses), each a list of
#: ``{"test", "message"}``; the settings the run uses (``None``: the defaults).
Judge = Callable[[list[TestResult]], tuple[list[dict[str, str]], list[dict[str, str]]]]


def _first_line(message: str) -> str:
    return message.splitlines()[0] if message else ""


def every_failure(results: list[TestResult]) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """A conforming subject: every failed or erroring test is an accusation."""
    return [{"test": r.test, "message": _first_line(r.message)} for r in results
            if r.outcome in ("failed", "error")], []


def judged_by_allowed(label: str) -> Judge:
    """A real design: its ``ALLOWED`` entries (tests/verdicts/test_conforming_catalogue.py) excuse
    its documented violations; a violation listed as ``always`` must show on every run."""
    _repo_on_path()
    from tests.verdicts.test_conforming_catalogue import ALLOWED
    from tests.verdicts.test_conforming_catalogue import _cites

    allowed = ALLOWED[label]

    def judge(results: list[TestResult]) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
        failed = {r.test: r.message for r in results if r.outcome in ("failed", "error")}
        accused = [{"test": test, "message": _first_line(message)} for test, message in failed.items()
                   if not any(_cites(message, a.rule) for a in allowed.get(test, []))]
        missed = [{"test": test, "message": f"documented violation unseen: {options[0].why}"}
                  for test, options in allowed.items()
                  if test not in failed and any(a.always for a in options)]
        return accused, missed

    return judge


def catalogue_subjects() -> dict[str, tuple[str, Any, Settings | None, Judge]]:
    """The whole conforming catalogue, each with the settings its soak uses and its judge."""
    _repo_on_path()
    from tests.conforming import real_designs
    from tests.conforming import rs_edition
    from tests.conforming import subjects as conforming

    out: dict[str, tuple[str, Any, Settings | None, Judge]] = {
        f"conforming:{label}": (verification, subject, None, every_failure)
        for label, (verification, subject) in conforming().items()
    }
    for name in ("sync_range", "async_range"):
        subject = PublisherSubject(getattr(rs_edition, name), rs_edition.failed, label=name)
        out[f"rs:{name}"] = ("publisher", subject, Settings(edition="rs"), every_failure)
    for label, (verification, subject) in real_designs().items():
        out[f"real:{label}"] = (verification, subject, None, judged_by_allowed(label))
    return out


def soak(
    runs: int,
    only: list[str] | None = None,
    *,
    conforming: bool = False,
    catalogue: bool = False,
    on_run: Callable[[dict[str, Any]], None] | None = None,
    concurrency: int = 1,
    deadline: float | None = None,
) -> dict[str, Any]:
    """Run each selected subject's verification ``runs`` times; per-subject failures and wall times.

    With a ``deadline`` (``time.monotonic()``), rounds go on past ``runs`` while a whole round
    still fits before it, and stop short of ``runs`` once it has passed.
    """
    pool: dict[str, tuple[str, Any, Settings | None, Judge]]
    if catalogue:
        pool = catalogue_subjects()
    else:
        pool = {label: (verification, subject, None, every_failure) for label, (verification, subject)
                in {**subjects(), **(conforming_subjects() if conforming else {})}.items()}
    chosen = {label: value for label, value in pool.items() if not only or label in only}
    walls: dict[str, list[float]] = {label: [] for label in chosen}
    failed: dict[str, list[dict[str, Any]]] = {label: [] for label in chosen}
    tests: dict[str, int] = {label: 0 for label in chosen}

    def summary(label: str) -> dict[str, Any]:
        return {"runs_done": len(walls[label]), "failures": failed[label],
                "wall_s_median": round(statistics.median(walls[label]), 3),
                "wall_s_max": round(max(walls[label]), 3), "tests_per_run": tests[label]}

    # Round-robin, one run of each subject per round, so a soak stopped at its time budget
    # has soaked every subject about equally.
    i = 0
    round_s = 0.0
    while True:
        now = time.monotonic()
        if deadline is not None and (now >= deadline or (i >= runs and now + round_s > deadline)):
            break
        if deadline is None and i >= runs:
            break
        for label, (verification, subject, settings, judge) in chosen.items():
            t0 = time.monotonic()
            results = run_verification(verification, subject, settings, concurrency=concurrency)
            walls[label].append(time.monotonic() - t0)
            tests[label] = len(results)
            accused, missed = judge(results)
            by_test = {r.test: r for r in results}
            for kind, found in (("accused", accused), ("missed", missed)):
                for f in found:
                    failed[label].append({"run": i, "kind": kind, **f})
                    full = by_test[f["test"]].message if f["test"] in by_test else f["message"]
                    print(f"FAIL {label} run {i} ({kind}): {f['test']}\n{full}", file=sys.stderr, flush=True)
            if on_run is not None:
                on_run({name: summary(name) for name in chosen if walls[name]})
        round_s = time.monotonic() - now
        i += 1
    report = {label: summary(label) for label in chosen if walls[label]}
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
    parser.add_argument("--catalogue", action="store_true",
                        help="soak the conforming catalogue, the rs edition and the real designs instead")
    parser.add_argument("--minutes", type=float, help="go on past --runs while a round fits in this budget, "
                        "and stop short of --runs once it is spent")
    parser.add_argument("--concurrency", type=int, default=1, help="tests run at once (1: the default mode)")
    args = parser.parse_args(argv)
    burners = start_load(args.load)
    report: dict[str, Any] = {"runs": args.runs, "load": args.load, "concurrency": args.concurrency,
                              "loadavg_1m_start": round(os.getloadavg()[0], 2)}
    start = time.monotonic()
    deadline = start + 60 * args.minutes if args.minutes else None

    def progress(subjects_so_far: dict[str, Any]) -> None:
        if args.json:
            with open(args.json, "w", encoding="utf-8") as fh:
                json.dump({**report, "subjects": subjects_so_far,
                           "wall_s_so_far": round(time.monotonic() - start, 1),
                           "loadavg_1m_now": round(os.getloadavg()[0], 2)}, fh, indent=2)

    try:
        report["subjects"] = soak(args.runs, args.only, conforming=args.conforming, catalogue=args.catalogue,
                                  on_run=progress, concurrency=args.concurrency, deadline=deadline)
    finally:
        for p in burners:
            p.terminate()
    failures = sum(len(s["failures"]) for s in report["subjects"].values())
    report["wall_s_total"] = round(time.monotonic() - start, 1)
    report["loadavg_1m_end"] = round(os.getloadavg()[0], 2)
    report["runs_total"] = sum(s["runs_done"] for s in report["subjects"].values())
    print(f"total: {len(report['subjects'])} subject(s), {report['runs_total']} run(s), {failures} failure(s) "
          f"in {report['wall_s_total']} s")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(report, fh, indent=2)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
