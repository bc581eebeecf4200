"""A library's whole TCK in one pytest run: twenty publishers against one, and against the JVM TCK.

Twenty conforming publishers (the reference range publisher wrapped in twenty different
pass-through operators, each declared in a test module as a library declares its operators)
are verified in one ``pytest`` run, in the default mode; so is one of them alone. Rounds
alternate the two runs; the figure is the median of the rounds' ratios (twenty / one), with the
CPU each run used (``ru_utime + ru_stime`` of the process and its worker processes): what twenty
need together is the floor of their wall time on the machine's cores. Each round notes the load
average beside its figures.

With ``--jvm 'COMMAND'``, a third run in each round: the JVM TCK's ``RangePublisherTest`` as
twenty classes in one TestNG run, as a Maven user's module of twenty ``*Test`` classes runs
(``COMMAND`` runs TestNG on the classes named where it says ``{classes}``: ``CLASS01`` to
``CLASS20``, one-line subclasses of ``--jvm-class``; the build of the JVM TCK is not part of this
repository, docs/benchmarks.md says how it was made), and the ratio kit / JVM.

    python benchmarks/library.py --repeat 5 [--subjects 20] [--jvm 'java -cp ... RunLibrary {classes}']
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

#: The operators: each passes its upstream's elements on through a function of its own.
OPERATORS = ["map_identity", "filter_true", "do_on_next", "as_is", "hide", "on_backpressure_none",
             "map_int", "map_copy", "tap", "peek", "on_error_pass", "materialize_flat", "retry_0",
             "subscribe_on_same", "log_none", "timeout_none", "take_all", "skip_none", "distinct_none",
             "cast_int", "scan_none", "window_one", "buffer_none", "delay_zero"]

OPS_SOURCE = '''
from rstck.reference import range_publisher


class _Through:
    """Hands each signal on; ``fn`` maps the elements."""

    def __init__(self, downstream, fn):
        self.downstream, self.fn = downstream, fn

    def on_subscribe(self, subscription):
        self.downstream.on_subscribe(subscription)

    def on_next(self, element):
        if element is None:
            raise TypeError("element is None")
        self.downstream.on_next(self.fn(element))

    def on_error(self, error):
        if error is None:
            raise TypeError("error is None")
        self.downstream.on_error(error)

    def on_complete(self):
        self.downstream.on_complete()

'''

OPERATOR_TEMPLATE = '''

class {cls}:
    """The {name} operator over the range publisher."""

    def __init__(self, upstream):
        self.upstream = upstream

    def subscribe(self, subscriber):
        if subscriber is None:
            raise TypeError("subscriber is None")
        self.upstream.subscribe(_Through(subscriber, {fn}))


def {name}(n):
    return {cls}(range_publisher(n))
'''

FUNCTIONS = ["lambda x: x", "lambda x: x if True else None", "lambda x: (x, x)[0]", "int", "lambda x: +x",
             "lambda x: x + 0", "lambda x: x * 1", "lambda x: x - 0", "lambda x: x | 0", "lambda x: x ^ 0"]

TEST_TEMPLATE = '''
import rstck.pytest as rs
from rstck.reference import failed_publisher

import ops

{declarations}
'''


def write_project(root: Path, subjects: int) -> None:
    """``ops.py`` with the operators, ``test_many.py`` declaring ``subjects`` of them, ``test_one.py`` one."""
    names = OPERATORS[:subjects]
    source = OPS_SOURCE + "".join(
        OPERATOR_TEMPLATE.format(cls="".join(p.title() for p in name.split("_")), name=name,
                                 fn=FUNCTIONS[i % len(FUNCTIONS)])
        for i, name in enumerate(names))
    (root / "ops.py").write_text(source)

    def declare(name: str) -> str:
        return f"test_{name} = rs.publisher_verification(ops.{name}, failed=failed_publisher)"

    (root / "test_many.py").write_text(TEST_TEMPLATE.format(declarations="\n".join(map(declare, names))))
    (root / "test_one.py").write_text(TEST_TEMPLATE.format(declarations=declare(names[0])))


def timed(argv: list[str], cwd: Path) -> tuple[float, float, int]:
    """Wall and CPU seconds of one process and everything it started (the kit's worker processes:
    ``RUSAGE_CHILDREN`` counts every descendant its parent waited for), and its exit status."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RS_TCK_")}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, _usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, os.waitstatus_to_exitcode(status)


def kit(cwd: Path, test_file: str, extra: list[str]) -> tuple[float, float]:
    wall, cpu, code = timed([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", test_file, *extra], cwd)
    if code != 0:
        raise SystemExit(f"pytest {test_file} exited {code}: a conforming subject failed")
    return wall, cpu


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--subjects", type=int, default=20)
    parser.add_argument("--kit-args", default="", help="extra pytest arguments for both kit runs")
    parser.add_argument("--many-args", default="", help="extra pytest arguments for the run of them all "
                        "(--rs-processes=1: one process; -n 2 --dist loadgroup: pytest-xdist)")
    parser.add_argument("--alt-args", default=None, help="a second run of them all in each round, with these "
                        "pytest arguments (--rs-processes=1: paired with the default, in one process)")
    parser.add_argument("--jvm", metavar="COMMAND", help="runs TestNG on the classes named at {classes}")
    parser.add_argument("--jvm-class", default="org.reactivestreams.tck.RangePublisherTest")
    parser.add_argument("--json", metavar="PATH")
    args = parser.parse_args(argv)
    extra = args.kit_args.split()
    rounds: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_project(root, args.subjects)
        classes = " ".join(f"{args.jvm_class}{i:02d}" for i in range(1, args.subjects + 1))
        kit(root, "test_one.py", extra)  # warm-up: bytecode written, caches made
        for n in range(args.repeat):
            many, many_cpu = kit(root, "test_many.py", extra + args.many_args.split())
            one, one_cpu = kit(root, "test_one.py", extra)
            row = {"many_wall_s": many, "many_cpu_s": many_cpu, "one_wall_s": one, "one_cpu_s": one_cpu,
                   "ratio_many_one": many / one}
            if args.alt_args is not None:
                alt, alt_cpu = kit(root, "test_many.py", extra + args.alt_args.split())
                row |= {"alt_wall_s": alt, "alt_cpu_s": alt_cpu, "ratio_alt_one": alt / one}
            if args.jvm:
                wall, jvm_cpu, code = timed(args.jvm.replace("{classes}", classes).split(), root)
                if code < 0:
                    raise SystemExit(f"the JVM run exited {code}")
                # TestNG's status is a bit mask: 2, skipped tests (as RangePublisherTest has); 1, a
                # failed one (its timing tests, under load): the round counts, the failure is noted.
                row |= {"jvm_wall_s": wall, "jvm_cpu_s": jvm_cpu, "ratio_kit_jvm": many / wall,
                        "ratio_kit_jvm_cpu": many_cpu / jvm_cpu, "jvm_failed": float(code & 1)}
            rounds.append(row)
            row["load"] = os.getloadavg()[0]
            print(f"round {n + 1}: " + ", ".join(f"{k} {v:.2f}" for k, v in row.items()), flush=True)
    summary: dict[str, Any] = {k: statistics.median(r[k] for r in rounds) for k in rounds[0]}
    summary |= {"subjects": args.subjects, "repeat": args.repeat, "many_args": args.many_args,
                "alt_args": args.alt_args, "cores": os.cpu_count(),
                "load": os.getloadavg()[0]}
    print("median: " + ", ".join(f"{k} {v:.2f}" if isinstance(v, float) else f"{k} {v}" for k, v in summary.items()))
    if args.json:
        Path(args.json).write_text(json.dumps({"rounds": rounds, "summary": summary}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
