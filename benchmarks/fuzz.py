"""Measure the fuzz verifications: their cost on conforming subjects, and what they catch.

For each reference subject: the wall time of its fuzz verification with the default budget and
how many scenarios ran. For each order-dependent broken implementation of
``tests/broken/order_dependent.py``: whether any fixed verification fails it, whether the fuzz
verification does (on which rule), after how many scenarios and seconds, in which phase
(systematic or random), and the shrunk scenario with its size against the steps its defect
needs. ``--ci`` derandomises as the ``CI`` profile does; ``--repeat N`` runs the fuzz side N
times (random seeds) and reports how often it caught each case. ``--cost N`` measures the default
budget before the systematic phase (no enumeration, the longer random scenarios of then) and
now, alternately, N times each (the median), for each conforming publisher and processor.
``--sides N`` measures the CPU seconds and wall time of one fuzz verification of each side (the
reference publishers, the identity processor, the sync subscribers) in N rounds of a fresh
process each; with ``--against DIR`` every round runs the kit of ``DIR`` (a ``tck`` folder of
another version) too, alternately, for paired before/after figures. ``--sessions N`` times whole
``pytest --rs-...`` processes of each kind (wall, CPU, and the fuzz test's own duration) the
same way.

    python benchmarks/fuzz.py --ci
    python benchmarks/fuzz.py --repeat 20
    python benchmarks/fuzz.py --cost 5
    python benchmarks/fuzz.py --sides 6 --against /tmp/before/tck
    python benchmarks/fuzz.py --sessions 5 --against /tmp/before/tck
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rstck._internal.fuzz.publisher_side import size
from rstck._internal.fuzz.scenario import decode
from rstck._internal.one_rule import run_test
from rstck.reference import async_range_publisher
from rstck.reference import async_subscriber
from rstck.reference import async_whitebox_subscriber
from rstck.reference import identity_processor
from rstck.reference import range_publisher
from rstck.reference import sync_subscriber
from rstck.reference import sync_whitebox_subscriber
from rstck.results import TestResult
from rstck.settings import Settings
from rstck.subjects import ProcessorSubject
from rstck.subjects import PublisherSubject
from rstck.subjects import SubscriberSubject
from rstck.subjects import WhiteboxSubject
from rstck.verifications import VERIFICATIONS

from tests.broken import order_dependent as od

FUZZ = {"publisher": "fuzz_demand_cancel_orders", "processor": "fuzz_demand_cancel_orders",
        "subscriber_blackbox": "fuzz_signal_orders", "subscriber_whitebox": "fuzz_signal_orders"}
#: The catalogue tests' short waits, for the fixed verifications.
FAST = Settings(timeout=0.5, no_signal_window=0.05, gc_window=1.0, stochastic_iterations=10)


def run(verification: str, name: str, subject: Any, settings: Settings) -> TestResult:
    v = VERIFICATIONS[verification]
    (test,) = [t for t in v.tests if t.name == name]
    return run_test(test, lambda env: v.make_context(env, subject), subject.apply(settings),
                    subject_label=subject.label)


def conforming() -> None:
    subjects = [
        ("publisher", "range_publisher", PublisherSubject(range_publisher)),
        ("publisher", "async_range_publisher", PublisherSubject(async_range_publisher)),
        ("processor", "identity_processor", ProcessorSubject(identity_processor)),
        ("subscriber_blackbox", "sync_subscriber", SubscriberSubject(sync_subscriber)),
        ("subscriber_blackbox", "async_subscriber", SubscriberSubject(async_subscriber)),
        ("subscriber_whitebox", "sync_whitebox_subscriber", WhiteboxSubject(sync_whitebox_subscriber)),
        ("subscriber_whitebox", "async_whitebox_subscriber", WhiteboxSubject(async_whitebox_subscriber)),
    ]
    print("| subject | verification | outcome | scenarios | seconds |")
    print("|---|---|---|---|---|")
    for verification, label, subject in subjects:
        result = run(verification, FUZZ[verification], subject, Settings())
        ran = (result.iterations or {}).get("ran", 0)
        print(f"| {label} | {verification} | {result.outcome} | {ran} | {result.duration_s:.2f} |", flush=True)


def broken(repeat: int, only: str | None = None) -> None:
    cases = [(i, "publisher", PublisherSubject(f), r) for i, f, r in od.PUBLISHERS]
    cases += [(i, "subscriber_blackbox", SubscriberSubject(f), r) for i, f, r in od.SUBSCRIBERS]
    cases = [c for c in cases if only is None or only in c[0]]
    print("| case | rule | caught by fixed | caught by fuzzing | phase | scenarios to find | s to find | s in all "
          "| shrunk steps (needs) |")
    print("|---|---|---|---|---|---|---|---|---|")
    shrunk = {}
    for case, verification, subject, rule in cases:
        tests = [t for t in VERIFICATIONS[verification].tests if t.level not in ("untested", "fuzz")]
        fixed = [t.name for t in tests if run(verification, t.name, subject, FAST).outcome in ("failed", "error")]
        caught, examples, found, total, sizes, phases = 0, [], [], [], [], set()
        other: list[str] = []
        for _ in range(repeat):
            result = run(verification, FUZZ[verification], subject, FAST.replace(stochastic_iterations=100))
            if result.outcome == "failed" and result.rule == rule and result.fuzz:
                caught += 1
                examples.append(result.fuzz["examples"])
                found.append(result.fuzz["seconds_to_find"])
                total.append(result.duration_s)
                shrunk[case] = result.fuzz["scenario"]
                phases.add(result.fuzz.get("phase", "random"))
                shrunk_scenario = decode(result.fuzz["replay"])[1]
                sizes.append(size(shrunk_scenario) if verification == "publisher" else len(shrunk_scenario[1]))
            else:
                other.append(f"{result.outcome} {result.rule}")
        rate = f"y ({caught}/{repeat})" if repeat > 1 else ("y" if caught else "n")
        mean = (lambda xs: f"{sum(xs) / len(xs):.1f}" if xs else "-")
        needs = od.STEPS.get(case, 0)
        steps = (f"{min(sizes)}-{max(sizes)} ({needs}); within in {sum(k <= needs for k in sizes)}/{len(sizes)}"
                 if sizes else f"- ({needs})")
        print(f"| {case} | {rule} | {'y: ' + ', '.join(fixed) if fixed else 'n'} | {rate if caught else 'n'} | "
              f"{', '.join(sorted(phases)) or '-'} | {mean(examples)} | {mean(found)} | {mean(total)} | {steps} |"
              + (f" missed as: {', '.join(other)}" if other else ""), flush=True)
    for case, steps in shrunk.items():
        print(f"\n{case}:")
        for step in steps:
            print(f"    {step}")


def cost(repeat: int) -> None:
    """What the systematic phase adds to each conforming publisher's fuzz verification."""
    from statistics import median

    from tests.conforming import subjects as conforming_subjects

    subjects = [("range_publisher", "publisher", PublisherSubject(range_publisher)),
                ("async_range_publisher", "publisher", PublisherSubject(async_range_publisher)),
                ("identity_processor", "processor", ProcessorSubject(identity_processor))]
    subjects += [(label, v, s) for label, (v, s) in conforming_subjects().items() if v in ("publisher", "processor")]
    from rstck._internal.fuzz import (
        publisher_scenarios as publisher_side,  # (the generator reads them there)
    )

    #: Before the systematic phase: no enumeration, and one long random scenario in seven of up to 200 steps.
    modes = {"before": (0, 0.15, 200), "now": (2, publisher_side.LONG_SHARE, publisher_side.LONG_STEPS)}
    print("| subject | before: random only (s) | now: systematic + random (s) | systematic scenarios |")
    print("|---|---|---|---|")
    for label, verification, subject in subjects:
        times: dict[str, list[float]] = {mode: [] for mode in modes}
        ran = 0
        for _ in range(repeat):
            for mode, (steps, share, longest) in modes.items():
                publisher_side.LONG_SHARE, publisher_side.LONG_STEPS = share, longest
                result = run(verification, FUZZ[verification], subject, Settings(fuzz_steps=steps))
                times[mode].append(result.duration_s)
                if steps:
                    ran = (result.iterations or {}).get("ran", 0) - Settings().fuzz_examples
        share, longest = modes["now"][1:]
        publisher_side.LONG_SHARE, publisher_side.LONG_STEPS = share, longest
        print(f"| {label} | {median(times['before']):.2f} | {median(times['now']):.2f} | {ran} |", flush=True)


#: The subjects of ``--sides``: one per side, the processor fuzzed as a publisher.
SIDES = {
    "publisher (range)": ("publisher", lambda: PublisherSubject(range_publisher)),
    "publisher (async range)": ("publisher", lambda: PublisherSubject(async_range_publisher)),
    "processor (identity)": ("processor", lambda: ProcessorSubject(identity_processor)),
    "blackbox subscriber (sync)": ("subscriber_blackbox", lambda: SubscriberSubject(sync_subscriber)),
    "whitebox subscriber (sync)": ("subscriber_whitebox", lambda: WhiteboxSubject(sync_whitebox_subscriber)),
}


def _cold() -> None:
    """Forget what the fuzz modules made once per process (expansions, texts): each measured
    run pays for them, as the only subject of a run does."""
    import importlib

    for name in ("search", "publisher_scenarios", "subscriber_side"):
        module = importlib.import_module(f"rstck._internal.fuzz.{name}")
        for value in vars(module).values():
            if hasattr(value, "cache_clear") and getattr(value, "__module__", None) == module.__name__:
                value.cache_clear()


def sides_once(runs: int) -> dict[str, list[tuple[float, float]]]:
    """``(CPU s, wall s)`` of ``runs`` fuzz verifications per side, after one to warm up."""
    out: dict[str, list[tuple[float, float]]] = {}
    for label, (verification, make) in SIDES.items():
        subject = make()
        run(verification, FUZZ[verification], subject, Settings())
        rows = []
        for _ in range(runs):
            _cold()
            cpu, wall = time.process_time(), time.monotonic()
            result = run(verification, FUZZ[verification], subject, Settings())
            assert result.outcome == "passed", result.message
            rows.append((time.process_time() - cpu, time.monotonic() - wall))
        out[label] = rows
    return out


def sides(rounds: int, against: str | None) -> None:
    """Each side's fuzz verification, in ``rounds`` fresh processes (two per round with ``against``)."""
    from statistics import median

    kits = {"now": None, **({"before": against} if against else {})}
    got: dict[str, dict[str, list[tuple[float, float]]]] = {kit: {} for kit in kits}
    for _ in range(rounds):
        for kit, path in kits.items():
            env = dict(os.environ, PYTHONPATH=path) if path else os.environ.copy()
            env["PYTHONDONTWRITEBYTECODE"] = "1"
            proc = subprocess.run([sys.executable, __file__, "--sides-once", "3"], env=env, check=True,
                                  capture_output=True, text=True)
            for label, rows in json.loads(proc.stdout.splitlines()[-1]).items():
                got[kit].setdefault(label, []).extend(rows)

    def cell(rows: list[tuple[float, float]], i: int) -> str:
        xs = [r[i] for r in rows]
        return f"{median(xs):.3f} ({min(xs):.3f}-{max(xs):.3f})"

    heads = [f"{what} {kit}" for what in ("CPU s", "wall s") for kit in kits]
    print("| side | " + " | ".join(heads) + " |")
    print("|---" * (len(heads) + 1) + "|")
    for label in SIDES:
        cells = [cell(got[kit][label], i) for i in (0, 1) for kit in kits]
        print(f"| {label} | " + " | ".join(cells) + " |", flush=True)


#: The whole processes of ``--sessions``: one per kind, as a user runs them.
SESSIONS = {
    "publisher + failed publisher": ["--rs-publisher=rstck.reference:range_publisher",
                                     "--rs-failed-publisher=rstck.reference:failed_publisher"],
    "sync blackbox subscriber": ["--rs-subscriber=rstck.reference:sync_subscriber"],
    "sync whitebox subscriber": ["--rs-whitebox-subscriber=rstck.reference:sync_whitebox_subscriber"],
    "identity processor": ["--rs-processor=rstck.reference:identity_processor"],
}


def sessions(rounds: int, against: str | None) -> None:
    """Whole ``pytest`` processes of each kind in an empty directory, the kits in turn."""
    import re
    import resource
    import tempfile
    from statistics import median

    kits = {"now": None, **({"before": against} if against else {})}
    got: dict[tuple[str, str], list[tuple[float, float, float]]] = {}
    with tempfile.TemporaryDirectory() as empty:
        for _ in range(rounds):
            for label, args in SESSIONS.items():
                for kit, path in kits.items():
                    env = {k: v for k, v in os.environ.items() if not k.startswith("RS_TCK_")}
                    env["PYTHONDONTWRITEBYTECODE"] = "1"
                    if path:
                        env["PYTHONPATH"] = path
                    before = resource.getrusage(resource.RUSAGE_CHILDREN)
                    wall = time.monotonic()
                    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rN",
                                           "--durations=0", *args], cwd=empty, env=env, capture_output=True, text=True,
                                          check=False)
                    wall = time.monotonic() - wall
                    after = resource.getrusage(resource.RUSAGE_CHILDREN)
                    if proc.returncode != 0:
                        raise SystemExit(f"{label} ({kit}) exited {proc.returncode}:\n{proc.stdout[-2000:]}")
                    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
                    found = re.search(r"([\d.]+)s call\s+\S+::fuzz", proc.stdout)
                    got.setdefault((label, kit), []).append((wall, cpu, float(found.group(1)) if found else 0.0))
    print("| kind | " + " | ".join(f"{kit}: wall / CPU s, fuzz test" for kit in kits) + " |")
    print("|---" * (len(kits) + 1) + "|")
    for label in SESSIONS:
        cells = []
        for kit in kits:
            rows = got[(label, kit)]
            cells.append(" / ".join(f"{median(r[i] for r in rows):.2f}" for i in (0, 1))
                         + f", {median(r[2] for r in rows):.2f}")
        print(f"| {label} | " + " | ".join(cells) + " |", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ci", action="store_true", help="derandomise, as with CI set")
    parser.add_argument("--repeat", type=int, default=1, help="fuzz runs per broken case")
    parser.add_argument("--case", help="only the broken cases whose id contains this")
    parser.add_argument("--cost", type=int, default=0, help="measure the systematic phase's cost, N times")
    parser.add_argument("--sides", type=int, default=0, help="CPU and wall of each side's fuzz verification, N rounds")
    parser.add_argument("--sessions", type=int, default=0, help="whole pytest processes of each kind, N rounds")
    parser.add_argument("--against", help="with --sides/--sessions: a tck folder of another version, in turn")
    parser.add_argument("--sides-once", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.sides_once:
        print(json.dumps(sides_once(args.sides_once)))
        return 0
    if args.sides or args.sessions:
        started = time.monotonic()
        if args.sides:
            sides(args.sides, args.against)
        if args.sessions:
            sessions(args.sessions, args.against)
        print(f"\n(total {time.monotonic() - started:.0f} s, load avg {os.getloadavg()[0]:.2f})")
        return 0
    if args.ci:
        os.environ["CI"] = "1"
    started = time.monotonic()
    if args.cost:
        cost(args.cost)
        print(f"\n(total {time.monotonic() - started:.0f} s, load avg {os.getloadavg()[0]:.2f})")
        return 0
    if os.environ.get("FUZZ_BENCH_SKIP_CONFORMING") is None:
        conforming()
    print()
    broken(args.repeat, args.case)
    print(f"\n(total {time.monotonic() - started:.0f} s, load avg {os.getloadavg()[0]:.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
