"""Benchmark the TCK on its bundled references, in one run, and print a table.

Measures, per verification class (range publisher, sync blackbox and whitebox subscribers,
identity processor):

- wall time from the first test's start to the last verdict, at the default windows and at
  small ones (10 ms), run sequentially and with concurrent tests (``concurrency``), with the
  fuzz verification and without it;
- the no-signal windows spent: how many quiet waits ran and their summed time;

whole processes, as a user runs them: ``pytest --rs-...`` per kind (publisher with the failed
publisher, sync blackbox and whitebox subscribers, identity processor), in the default mode and
with ``--rs-no-fuzz``, with ``PYTHONDONTWRITEBYTECODE=1`` (nothing new written; what the
warm-up wrote is read, so only what pytest rewrites is compiled in each run) and with bytecode
written, each command run in turn so the machine's load falls on all alike (wall and CPU time, medians); and
what the kit adds to a pytest run of a project that does not use it (the same run with the
kit's and Hypothesis' entry points disabled, paired); with ``--jvm``, each kind beside the JVM TCK
class its targets are anchored to, run by a command of the user's, in turn (wall and CPU of both,
the ratios of each, the load average), the kit with bytecode written (``PYTHONDONTWRITEBYTECODE``
unset, what a user has) and without (``=1``), each row labelled; with ``--load N``, all of it on a machine kept busy by N
busy-looping processes;

and for the probe: ``on_next`` recorded per second in a bulk test (unbounded demand on the
synchronous range publisher) next to a bare counting subscriber on the same publisher, and
the memory such a run holds at its peak at two stream lengths (each in a fresh process).

    python benchmarks/bench.py [--repeat 3] [--json out.json] [--elements 1000000]
    python benchmarks/bench.py --only-processes --process-repeat 7
    python benchmarks/bench.py --only-processes --jvm 'java -cp CP RunLibrary {cls}' --jvm-only [--load 2]

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
import shlex
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from rstck._internal.environment import Environment
from rstck.api import MAX_DEMAND
from rstck.manual import ManualPublisher
from rstck.probe import ProbeSubscriber
from rstck.reference import failed_publisher
from rstck.reference import identity_processor
from rstck.reference import range_publisher
from rstck.reference import sync_subscriber
from rstck.reference import sync_whitebox_subscriber
from rstck.run_api import run_verification
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
    """One run of a verification class: wall and CPU (every thread of this process), test
    time, windows, outcomes."""
    verification, subject = SUBJECTS[name]
    windows = Windows()
    kwargs: dict[str, Any] = {"concurrency": concurrency} if concurrency > 1 else {}
    with windows.watching():
        start, cpu_start = time.monotonic(), time.process_time()
        results = run_verification(verification, subject, settings, **kwargs)
        wall, cpu = time.monotonic() - start, time.process_time() - cpu_start
    bad = [r.test for r in results if r.outcome in ("failed", "error")]
    spans = [(r.started_at, r.finished_at) for r in results if hasattr(r, "started_at")]
    span = max(f for _, f in spans) - min(s for s, _ in spans) if spans else None
    return {
        "wall_s": wall,
        "cpu_s": cpu,
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
                    **_summary([r["wall_s"] for r in runs], [r["cpu_s"] for r in runs]),
                    "test_s_median": statistics.median(r["test_s"] for r in runs),
                    "tests": best["tests"],
                    "failed": sorted({t for r in runs for t in r["failed"]}),
                    "windows": best["windows"],
                    "windows_s": statistics.median(r["windows_s"] for r in runs),
                })
                row = rows[-1]
                print(f"  {name:<20} {label:<16} x{conc:<2} {_shown(row)}  tests {row['tests']:3}  windows "
                      f"{row['windows']:3} / {row['windows_s']:.3f} s  failed {row['failed'] or '-'}",
                      flush=True)
    return rows


# -- whole processes ----------------------------------------------------------------------------

#: The subject options of each kind, as a user's command names them.
KINDS: dict[str, list[str]] = {
    "publisher": ["--rs-publisher=rstck.reference:range_publisher",
                  "--rs-failed-publisher=rstck.reference:failed_publisher"],
    "blackbox": ["--rs-subscriber=rstck.reference:sync_subscriber"],
    "whitebox": ["--rs-whitebox-subscriber=rstck.reference:sync_whitebox_subscriber"],
    "processor": ["--rs-processor=rstck.reference:identity_processor"],
}
MODES: dict[str, list[str]] = {"default": [], "no fuzz": ["--rs-no-fuzz"]}
#: Whole-process targets in seconds (medians, ``PYTHONDONTWRITEBYTECODE=1``).
TARGETS: dict[tuple[str, str], float] = {
    ("publisher", "default"): 1.3, ("whitebox", "default"): 0.8, ("processor", "default"): 1.6,
    ("publisher", "no fuzz"): 0.8, ("whitebox", "no fuzz"): 0.5, ("processor", "no fuzz"): 1.0,
}
#: The extra a project's pytest run may pay for having the kit installed, in seconds.
UNRELATED_TARGET_S = 0.010
#: Disables the kit's and Hypothesis' entry points: the run of an environment without the kit.
WITHOUT_KIT = ["-p", "no:rstck", "-p", "no:hypothesispytest"]


def timed_process(args: list[str], cwd: str, *, bytecode: bool) -> tuple[float, float, int]:
    """Wall and CPU seconds of one ``python -m pytest ARGS`` in ``cwd``, and its exit code."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("RS_TCK_") and k != "PYTHONDONTWRITEBYTECODE"}
    if not bytecode:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    return _timed([sys.executable, "-m", "pytest", *args], cwd, env)


def _timed(argv: list[str], cwd: str | None, env: dict[str, str] | None) -> tuple[float, float, int]:
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    return wall, usage.ru_utime + usage.ru_stime, os.waitstatus_to_exitcode(status)


def kit_run(kind: str, mode: str, project: str, *, bytecode: bool) -> tuple[float, float]:
    """Wall and CPU seconds of the kit's command for ``kind`` in ``mode``; it must pass."""
    wall, cpu, code = timed_process([*KINDS[kind], *MODES[mode]], project, bytecode=bytecode)
    if code != 0:
        raise SystemExit(f"pytest {' '.join(KINDS[kind] + MODES[mode])} exited {code}")
    return wall, cpu


def _summary(walls: list[float], cpus: list[float]) -> dict[str, float]:
    """Medians with their range, wall and CPU (user + system), and the load when taken."""
    return {"wall_s_median": statistics.median(walls), "wall_s_min": min(walls), "wall_s_max": max(walls),
            "cpu_s_median": statistics.median(cpus), "cpu_s_min": min(cpus), "cpu_s_max": max(cpus),
            "loadavg_1m": round(os.getloadavg()[0], 2)}


def _shown(row: dict[str, Any]) -> str:
    """``wall M s (min-max), cpu M s (min-max), load L``: on a shared machine CPU is the figure
    to compare, wall the one a user waits for."""
    return (f"wall {row['wall_s_median']:6.3f} s ({row['wall_s_min']:.3f}-{row['wall_s_max']:.3f})  "
            f"cpu {row['cpu_s_median']:6.3f} s ({row['cpu_s_min']:.3f}-{row['cpu_s_max']:.3f})  "
            f"load {row['loadavg_1m']:.1f}")


def processes(repeat: int, kinds: list[str] | None = None) -> list[dict[str, Any]]:
    """Every kind and mode as a whole process, in both bytecode modes, taken in turn."""
    commands = [(kind, mode, bytecode) for bytecode in (False, True) for kind in kinds or KINDS for mode in MODES]
    samples: dict[tuple[str, str, bool], list[tuple[float, float]]] = {c: [] for c in commands}
    with tempfile.TemporaryDirectory() as project:  # a user's project: no conftest, no ini
        for kind, mode, bytecode in commands:  # once each first: bytecode written, caches made
            timed_process([*KINDS[kind], *MODES[mode]], project, bytecode=bytecode)
        for _ in range(repeat):
            for command in commands:
                kind, mode, bytecode = command
                samples[command].append(kit_run(kind, mode, project, bytecode=bytecode))
    rows = []
    for (kind, mode, bytecode), runs in samples.items():
        row = {"kind": kind, "mode": mode, "bytecode": bytecode,
               **_summary([w for w, _ in runs], [c for _, c in runs])}
        target = TARGETS.get((kind, mode))
        row["target_s"] = target
        row["met"] = None if target is None else row["wall_s_median"] <= target
        rows.append(row)
        met = "" if target is None else f"  target {target:.1f} s: {'met' if row['met'] else 'NOT met'}"
        print(f"  {kind:<10} {mode:<8} {'bytecode' if bytecode else 'no bytecode':<11} {_shown(row)}"
              f"{met}", flush=True)
    return rows


def imported(args: list[str], cwd: str) -> dict[str, int]:
    """How many modules of the kit and of Hypothesis a pytest run leaves in ``sys.modules``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RS_TCK_")}
    code = ("import sys, pytest; pytest.main(sys.argv[1:]); "
            "print(' '.join(n.split('.')[0] for n in list(sys.modules)), file=sys.stderr)")
    err = subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, env=env, capture_output=True,
                         text=True, check=False).stderr.split()
    return {top: err.count(top) for top in ("rstck", "rstck_plugins", "hypothesis")}


def unrelated(repeat: int) -> dict[str, Any]:
    """A project that does not use the kit: its pytest run with the kit installed, and without.

    Paired: each round runs both, and the figure is the median of the rounds' differences.
    """
    with tempfile.TemporaryDirectory() as project:
        with open(os.path.join(project, "test_mine.py"), "w", encoding="utf-8") as fh:
            fh.write("def test_mine():\n    assert 1 + 1 == 2\n")
        variants = {"with the kit": ["-p", "no:cacheprovider"],
                    "without": ["-p", "no:cacheprovider", *WITHOUT_KIT]}
        for args in variants.values():
            timed_process(args, project, bytecode=False)
        runs: dict[str, list[tuple[float, float]]] = {name: [] for name in variants}
        for _ in range(repeat):
            for name, args in variants.items():
                wall, cpu, _code = timed_process(args, project, bytecode=False)
                runs[name].append((wall, cpu))
        modules = imported(variants["with the kit"], project)
    with_kit, without = runs["with the kit"], runs["without"]
    report = {
        name: _summary([w for w, _ in r], [c for _, c in r]) for name, r in runs.items()
    } | {
        "extra_wall_s_median": statistics.median(a[0] - b[0] for a, b in zip(with_kit, without, strict=True)),
        "extra_cpu_s_median": statistics.median(a[1] - b[1] for a, b in zip(with_kit, without, strict=True)),
        "modules_imported": modules,
        "target_s": UNRELATED_TARGET_S,
    }
    report["met"] = report["extra_cpu_s_median"] <= UNRELATED_TARGET_S
    print(f"  unrelated pytest run: with the kit {report['with the kit']['wall_s_median']:.3f} s, without "
          f"{report['without']['wall_s_median']:.3f} s; extra (paired medians) wall "
          f"{report['extra_wall_s_median'] * 1000:+.1f} ms, cpu {report['extra_cpu_s_median'] * 1000:+.1f} ms; "
          f"imported {modules}", flush=True)
    return report


#: TestNG's exit status bits: 1 a test failed, 2 some were skipped, 4 failed within a success percentage.
TESTNG_STATUS = 7
#: The JVM TCK class each kit command is compared with (``--jvm``): the anchors of the targets.
JVM_CLASSES: dict[str, list[str]] = {
    "publisher": ["org.reactivestreams.tck.RangePublisherTest",
                  "org.reactivestreams.example.unicast.RangePublisherTest"],
    "blackbox": ["org.reactivestreams.example.unicast.SyncSubscriberTest"],
    "whitebox": ["org.reactivestreams.example.unicast.SyncSubscriberWhiteboxTest"],
    "processor": ["org.reactivestreams.tck.LockstepProcessorTest"],
}


def jvm_paired(repeat: int, runner: str, kinds: list[str] | None = None) -> list[dict[str, Any]]:
    """Each kit command beside the JVM TCK class it is anchored to, taken in turn, in both
    bytecode modes: wall and CPU of each (the child's ``wait4`` usage: the JVM's every thread,
    pytest and any worker process it waited for), and the ratios kit / JVM of each round's walls
    and CPU, then their medians, with the load average beside each run.

    ``bytecode written`` rows run the kit as a user has it (``PYTHONDONTWRITEBYTECODE`` unset:
    Python reads and writes ``__pycache__``; the issue's protocol); ``no bytecode`` rows set
    ``PYTHONDONTWRITEBYTECODE=1`` (the targets' statement): nothing new is written, what earlier
    runs wrote is still read, so every module but those pytest rewrites (its plugins', and any
    named as a test file) loads from bytecode, as from a wheel pip compiled at install. Each
    kit run, in either mode, is paired with a JVM run of its own, taken right after it.

    ``runner`` is a command that runs one TestNG class, ``{cls}`` standing for its name (the
    JVM TCK built from its own sources; its build is not part of this repository). TestNG's exit
    status is a bit mask: 1 means a test failed (its timing tests, under load: the round counts and
    the row says in how many rounds), 2 that some were skipped (as these classes do).
    """
    pairs = [(kind, mode, cls, bytecode) for bytecode in (True, False) for kind, classes in JVM_CLASSES.items()
             if kind in (kinds or JVM_CLASSES) for mode in MODES for cls in classes]
    jvm = {cls: shlex.split(runner.replace("{cls}", cls)) for _kind, _mode, cls, _bytecode in pairs}
    kit: dict[tuple[str, str, str, bool], list[tuple[float, float]]] = {pair: [] for pair in pairs}
    java: dict[tuple[str, str, str, bool], list[tuple[float, float]]] = {pair: [] for pair in pairs}
    loads: dict[tuple[str, str, str, bool], list[float]] = {pair: [] for pair in pairs}
    failed: dict[tuple[str, str, str, bool], int] = dict.fromkeys(pairs, 0)
    with tempfile.TemporaryDirectory() as project:
        for kind, mode, _cls, bytecode in pairs:  # once each first: bytecode written, caches made
            timed_process([*KINDS[kind], *MODES[mode]], project, bytecode=bytecode)
        for argv in jvm.values():
            _timed(argv, None, None)  # the JVM's files read
        for _ in range(repeat):
            for pair in pairs:
                kind, mode, cls, bytecode = pair
                kit[pair].append(kit_run(kind, mode, project, bytecode=bytecode))
                wall, cpu, code = _timed(jvm[cls], None, None)
                if code < 0 or code & ~TESTNG_STATUS:
                    raise SystemExit(f"{' '.join(jvm[cls])} exited {code}: it did not run")
                # A JVM timing test that fails under load still ran its class: the round counts, noted.
                failed[pair] += code & 1
                java[pair].append((wall, cpu))
                loads[pair].append(os.getloadavg()[0])
    rows = []
    for pair in pairs:
        kind, mode, cls, bytecode = pair
        k, j = kit[pair], java[pair]
        row: dict[str, Any] = {
            "kind": kind, "mode": mode, "jvm_class": cls, "bytecode": bytecode,
            **_sided("kit", k), **_sided("jvm", j),
            "wall_ratio_median": statistics.median(a[0] / b[0] for a, b in zip(k, j, strict=True)),
            "cpu_ratio_median": statistics.median(a[1] / b[1] for a, b in zip(k, j, strict=True)),
            "loadavg_1m_min": round(min(loads[pair]), 2), "loadavg_1m_max": round(max(loads[pair]), 2),
            "jvm_rounds_failed": failed[pair],
            "rounds": [{"kit_wall_s": a[0], "kit_cpu_s": a[1], "jvm_wall_s": b[0], "jvm_cpu_s": b[1],
                        "loadavg_1m": round(load, 2)} for a, b, load in zip(k, j, loads[pair], strict=True)],
        }
        rows.append(row)
        name = f"{cls.rsplit('.', 2)[-2]}.{cls.rsplit('.', 1)[-1]}"
        print(f"  {kind:<9} {mode:<7} {_bytecode_label(bytecode):<16} {name:<34} " + "  ".join(
            f"{side} wall {row[f'{side}_wall_s_median']:.2f} s ({row[f'{side}_wall_s_min']:.2f}-"
            f"{row[f'{side}_wall_s_max']:.2f}) cpu {row[f'{side}_cpu_s_median']:.2f} s "
            f"({row[f'{side}_cpu_s_min']:.2f}-{row[f'{side}_cpu_s_max']:.2f})" for side in ("kit", "jvm"))
            + f"  ratio wall {row['wall_ratio_median']:.2f} cpu {row['cpu_ratio_median']:.2f}"
            f"  load {row['loadavg_1m_min']:.1f}-{row['loadavg_1m_max']:.1f}"
            + (f"  JVM failed a test in {failed[pair]} round(s)" if failed[pair] else ""), flush=True)
    return rows


def _bytecode_label(bytecode: bool) -> str:
    """How a row names its bytecode mode (``jvm_paired``)."""
    return "bytecode written" if bytecode else "no bytecode"


def _sided(side: str, runs: list[tuple[float, float]]) -> dict[str, float]:
    """``_summary`` of one side's ``(wall, cpu)`` runs, its keys prefixed (the load is kept per round)."""
    summary = _summary([w for w, _ in runs], [c for _, c in runs])
    return {f"{side}_{key}": value for key, value in summary.items() if key != "loadavg_1m"}


def jvm_table(rows: list[dict[str, Any]]) -> str:
    """The paired figures as a Markdown table, for docs/benchmarks.md."""
    def span(row: dict[str, Any], key: str) -> str:
        return f"{row[f'{key}_median']:.2f} s ({row[f'{key}_min']:.2f}-{row[f'{key}_max']:.2f})"
    header = ("| kit command | mode | bytecode | JVM class | kit wall | kit CPU | JVM wall | JVM CPU | wall ratio "
              "| CPU ratio | load | JVM rounds failed |")
    lines = [header, "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        cls = row["jvm_class"].rsplit(".", 2)
        lines.append(f"| {row['kind']} | {row['mode']} | {_bytecode_label(row.get('bytecode', False))} | "
                     f"{cls[-2]}.{cls[-1]} | {span(row, 'kit_wall_s')} | "
                     f"{span(row, 'kit_cpu_s')} | {span(row, 'jvm_wall_s')} | {span(row, 'jvm_cpu_s')} | "
                     f"{row['wall_ratio_median']:.2f} | {row['cpu_ratio_median']:.2f} | "
                     f"{row['loadavg_1m_min']:.1f}-{row['loadavg_1m_max']:.1f} | {row['jvm_rounds_failed']} |")
    return "\n".join(lines)


#: A busy loop that ends with the process that started it, even one killed without cleaning up.
BURN = "import os, sys\nparent = int(sys.argv[1])\nwhile os.getppid() == parent:\n    for _ in range(100_000): pass\n"


def start_load(n: int) -> list[subprocess.Popen[bytes]]:
    """``n`` busy-looping processes, as ``benchmarks/soak.py --load`` starts: a loaded machine, for
    the figures to say how each side bears sharing the cores. End them with ``end_load``."""
    return [subprocess.Popen([sys.executable, "-c", BURN, str(os.getpid())]) for _ in range(n)]


def end_load(burners: list[subprocess.Popen[bytes]]) -> None:
    for proc in burners:
        proc.terminate()
    for proc in burners:
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


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
    parser.add_argument("--process-repeat", type=int, default=5, help="runs per whole-process figure")
    parser.add_argument("--kinds", nargs="+", choices=list(KINDS),
                        help="whole processes (and --jvm pairs) of these kinds only")
    parser.add_argument("--skip-unrelated", action="store_true",
                        help="no figure for a project that does not use the kit")
    parser.add_argument("--skip-processes", action="store_true")
    parser.add_argument("--only-processes", action="store_true",
                        help="whole-process figures only (no classes, probe or memory)")
    parser.add_argument("--skip-memory", action="store_true")
    parser.add_argument("--jvm", metavar="COMMAND",
                        help="also time each kind beside its JVM TCK class, run by COMMAND ({cls}: the "
                        "class), in turn; with --only-processes")
    parser.add_argument("--jvm-only", action="store_true", help="with --jvm: only the paired JVM figures")
    parser.add_argument("--load", type=int, default=0, metavar="N",
                        help="N busy-looping processes for the whole run: figures on a loaded machine")
    parser.add_argument("--json", metavar="PATH")
    args = parser.parse_args(argv)
    burners = start_load(args.load)
    try:
        return _run(args, burners)
    finally:
        end_load(burners)


def _run(args: argparse.Namespace, burners: list[subprocess.Popen[bytes]]) -> int:
    report: dict[str, Any] = {"machine": machine() | {"burners": len(burners)}}
    print(f"machine: {report['machine']}", flush=True)
    if args.jvm:
        print("paired with the JVM TCK (both bytecode modes; ratios kit / JVM, medians of the rounds'):", flush=True)
        report["jvm"] = jvm_paired(args.process_repeat, args.jvm, args.kinds)
        print(jvm_table(report["jvm"]), flush=True)
    if not args.skip_processes and not args.jvm_only:
        print("whole processes (pytest, a user's command):", flush=True)
        if not args.skip_unrelated:
            report["unrelated"] = unrelated(max(args.process_repeat, 11))
        report["processes"] = processes(args.process_repeat, args.kinds)
    if args.only_processes:
        report["machine"]["loadavg_1m_end"] = round(os.getloadavg()[0], 2)
        if args.json:
            with open(args.json, "w", encoding="utf-8") as fh:
                json.dump(report, fh, indent=2)
        return 0
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
