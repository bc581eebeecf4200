"""Benchmark the TCK on its bundled references, in one run, and print a table.

Measures, per verification class (range publisher, sync blackbox and whitebox subscribers,
identity processor):

- wall time from the first test's start to the last verdict, at the default windows and at
  small ones (10 ms), run sequentially and with concurrent tests (``concurrency``), with the
  fuzz verification and without it;
- the no-signal windows spent: how many quiet waits ran and their summed time;

and for the probe: ``on_next`` recorded per second in a bulk test (unbounded demand on the
synchronous range publisher) next to a bare counting subscriber on the same publisher, and
the memory such a run holds at its peak at two stream lengths (each in a fresh process).

    python benchmarks/bench.py [--repeat 3] [--json out.json] [--elements 1000000]

These are benchmarks, not tests: the numbers depend on the machine and on its load, which is
printed with them.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from rstck.api import MAX_DEMAND
from rstck.engine import run_verification
from rstck.environment import Environment
from rstck.manual import ManualPublisher
from rstck.probe import ProbeSubscriber
from rstck.reference import failed_publisher
from rstck.reference import identity_processor
from rstck.reference import range_publisher
from rstck.reference import sync_subscriber
from rstck.reference import sync_whitebox_subscriber
from rstck.settings import Settings
from rstck.subjects import ProcessorSubject
from rstck.subjects import PublisherSubject
from rstck.subjects import SubscriberSubject
from rstck.subjects import WhiteboxSubject

SMALL = Settings(timeout=0.1, no_signal_window=0.01, gc_window=0.1)

SUBJECTS: dict[str, tuple[str, Any]] = {
    "publisher": ("publisher", PublisherSubject(range_publisher, failed_publisher, label="range")),
    "subscriber_blackbox": ("subscriber_blackbox", SubscriberSubject(sync_subscriber, label="sync")),
    "subscriber_whitebox": (
        "subscriber_whitebox", WhiteboxSubject(sync_whitebox_subscriber, label="sync_whitebox")
    ),
    "processor": (
        "processor", ProcessorSubject(identity_processor, failed_factory=failed_publisher, label="identity")
    ),
}

#: The methods that wait out a no-signal window (a claim that nothing else arrives).
QUIET_WAITS: tuple[tuple[type, str], ...] = (
    (ProbeSubscriber, "expect_quiet"),
    (ProbeSubscriber, "wait_quiet"),
    (ManualPublisher, "expect_no_request"),
    (ManualPublisher, "settle"),
)


class Windows:
    """Counts the quiet waits and their time, across every thread."""

    def __init__(self) -> None:
        self.count = 0
        self.total = 0.0

    @contextmanager
    def watching(self) -> Iterator[None]:
        originals = [(cls, name, getattr(cls, name)) for cls, name in QUIET_WAITS]

        def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
            def timed(*args: Any, **kwargs: Any) -> Any:
                start = time.monotonic()
                try:
                    return fn(*args, **kwargs)
                finally:
                    self.count += 1
                    self.total += time.monotonic() - start
            return timed

        for cls, name, fn in originals:
            setattr(cls, name, wrap(fn))
        try:
            yield
        finally:
            for cls, name, fn in originals:
                setattr(cls, name, fn)


def supports_concurrency() -> bool:
    return "concurrency" in inspect.signature(run_verification).parameters


def verification_wall(name: str, settings: Settings, concurrency: int) -> dict[str, Any]:
    """One run of a verification class: wall, test time, windows, outcomes."""
    verification, subject = SUBJECTS[name]
    windows = Windows()
    kwargs: dict[str, Any] = {"concurrency": concurrency} if concurrency > 1 else {}
    with windows.watching():
        start = time.monotonic()
        results = run_verification(verification, subject, settings, **kwargs)
        wall = time.monotonic() - start
    bad = [r.test for r in results if r.outcome in ("failed", "error")]
    spans = [(r.started_at, r.finished_at) for r in results if hasattr(r, "started_at")]
    span = max(f for _, f in spans) - min(s for s, _ in spans) if spans else None
    return {
        "wall_s": wall,
        "span_s": span,
        "test_s": sum(r.duration_s for r in results),
        "tests": len(results),
        "failed": bad,
        "windows": windows.count,
        "windows_s": windows.total,
    }


def classes(repeat: int, concurrency: int) -> list[dict[str, Any]]:
    rows = []
    # The fuzz verification (on by default) is measured apart: its cost is its budget of
    # scenarios (--rs-fuzz-examples), where the rule tests' cost is their windows.
    modes = [("default", Settings()), ("default, no fuzz", Settings(no_fuzz=True)),
             ("small", SMALL), ("small, no fuzz", SMALL.replace(no_fuzz=True))]
    for name in SUBJECTS:
        for label, settings in modes:
            for conc in sorted({1, concurrency} if supports_concurrency() else {1}):
                runs = [verification_wall(name, settings, conc) for _ in range(repeat)]
                best = min(runs, key=lambda r: r["wall_s"])
                rows.append({
                    "class": name, "windows_mode": label, "concurrency": conc,
                    "wall_s_median": statistics.median(r["wall_s"] for r in runs),
                    "wall_s_min": best["wall_s"],
                    "test_s_median": statistics.median(r["test_s"] for r in runs),
                    "tests": best["tests"],
                    "failed": sorted({t for r in runs for t in r["failed"]}),
                    "windows": best["windows"],
                    "windows_s": statistics.median(r["windows_s"] for r in runs),
                })
                row = rows[-1]
                print(f"  {name:<20} {label:<16} x{conc:<2} wall {row['wall_s_median']:6.3f} s "
                      f"(min {row['wall_s_min']:.3f})  tests {row['tests']:3}  windows "
                      f"{row['windows']:3} / {row['windows_s']:.3f} s  failed {row['failed'] or '-'}",
                      flush=True)
    return rows


# -- the probe -----------------------------------------------------------------------------------


class Counter:
    """The cheapest subscriber there is: the yardstick for the probe's own cost."""

    def __init__(self) -> None:
        self.count = 0
        self.done = False

    def on_subscribe(self, subscription: Any) -> None:
        subscription.request(MAX_DEMAND)

    def on_next(self, element: Any) -> None:
        self.count += 1

    def on_error(self, exc: BaseException) -> None:
        self.done = True

    def on_complete(self) -> None:
        self.done = True


def bare_rate(elements: int) -> float:
    counter = Counter()
    start = time.perf_counter()
    range_publisher(elements).subscribe(counter)
    elapsed = time.perf_counter() - start
    assert counter.done
    assert counter.count == elements
    return elements / elapsed


def probe_run(elements: int) -> float:
    """The probe as a bulk test uses it: unbounded demand, elements counted, not kept."""
    env = Environment(Settings())
    with env:
        env.body_ident = threading.get_ident()  # as in a verification: this is the TCK's thread
        probe = ProbeSubscriber(env, keep_elements=False)
        range_publisher(elements).subscribe(probe)
        start = time.perf_counter()
        probe.request(MAX_DEMAND)
        probe.expect_terminal(timeout=600)
        elapsed = time.perf_counter() - start
    assert probe.received == elements, probe._seen()
    assert probe.terminal == "on_complete", probe._seen()
    assert not env.problems, env.problems
    return elements / elapsed


def probe_rates(elements: int, repeat: int) -> dict[str, float]:
    bare = statistics.median(bare_rate(elements) for _ in range(repeat))
    probe = statistics.median(probe_run(elements) for _ in range(repeat))
    return {"elements": elements, "bare_per_s": bare, "probe_per_s": probe, "ratio": probe / bare}


def probe_memory(elements: int, traced: bool) -> dict[str, float]:
    """Memory of a fresh process pushing ``elements`` through the probe.

    ``traced``: the most memory Python held at once during the run, over what it held before
    (tracemalloc; exact but slow, so for shorter streams). Otherwise the process's peak
    resident size before and after the run (the run may not raise it at all).
    """
    code = (
        "import sys, resource, tracemalloc; sys.path.insert(0, sys.argv[2]); import bench; "
        "traced = sys.argv[3] == '1'; traced and tracemalloc.start(); "
        "base = tracemalloc.get_traced_memory()[0]; rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss; "
        "rate = bench.probe_run(int(sys.argv[1])); peak = tracemalloc.get_traced_memory()[1]; "
        "print(peak - base, rss, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, rate)"
    )
    out = subprocess.run([sys.executable, "-c", code, str(elements), os.path.dirname(__file__), str(int(traced))],
                         check=True, capture_output=True, text=True).stdout.split()
    held, rss_before, rss_after, rate = int(out[0]), int(out[1]), int(out[2]), float(out[3])
    return {"elements": elements, "traced": traced, "held_kb": held / 1024 if traced else None,
            "rss_before_mb": rss_before / 1024, "rss_peak_mb": rss_after / 1024, "rate_per_s": rate}


def machine() -> dict[str, Any]:
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "loadavg_1m": round(os.getloadavg()[0], 2),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure (the median is shown)")
    parser.add_argument("--concurrency", type=int, default=8, help="concurrent tests in the concurrent mode")
    parser.add_argument("--elements", type=int, default=1_000_000, help="stream length for the probe rate")
    parser.add_argument("--memory", type=int, nargs=2, default=(1_000_000, 10_000_000),
                        metavar=("SMALL", "LARGE"), help="stream lengths for the peak-RSS comparison")
    parser.add_argument("--traced", type=int, nargs=2, default=(100_000, 1_000_000),
                        metavar=("SMALL", "LARGE"), help="stream lengths for the tracemalloc comparison")
    parser.add_argument("--skip-classes", action="store_true")
    parser.add_argument("--skip-memory", action="store_true")
    parser.add_argument("--json", metavar="PATH")
    args = parser.parse_args(argv)
    report: dict[str, Any] = {"machine": machine()}
    print(f"machine: {report['machine']}", flush=True)
    if not args.skip_classes:
        print("verification classes:", flush=True)
        report["classes"] = classes(args.repeat, args.concurrency)
    rates = probe_rates(args.elements, args.repeat)
    report["probe"] = rates
    print(f"probe: {rates['probe_per_s']:,.0f} on_next/s, bare subscriber {rates['bare_per_s']:,.0f}/s "
          f"(ratio {rates['ratio']:.2f}) over {args.elements:,} elements", flush=True)
    memory = [] if args.skip_memory else (
        [probe_memory(n, True) for n in args.traced] + [probe_memory(n, False) for n in args.memory])
    report["memory"] = memory
    for m in memory:
        held = f"{m['held_kb']:.1f} KB held at the peak (tracemalloc), " if m["traced"] else ""
        print(f"memory: {m['elements']:>11,} elements through the probe: {held}peak RSS "
              f"{m['rss_before_mb']:.1f} MB before, {m['rss_peak_mb']:.1f} MB after", flush=True)
    report["machine"]["loadavg_1m_end"] = round(os.getloadavg()[0], 2)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(report, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
