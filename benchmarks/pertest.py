"""CPU, system CPU, context switches and wall time of each test of a kind, in one process.

A whole ``pytest`` run overlaps its tests and adds pytest's own costs; this runs the kind's
tests one at a time through ``rstck.run_api.Run`` on a bundled reference, so each figure is one
test's own: CPU is user + system of the whole process (every thread the test woke), switches
are voluntary + involuntary context switches (``getrusage``). A thread switch is paid on both
sides, so on a loaded machine the switch count is the steadier measure of the two.

    python benchmarks/pertest.py processor [--top 30]          # every test, twice; the 2nd round
    python benchmarks/pertest.py publisher --test NAME --runs 10  # one test, after a warm-up run

These are benchmarks, not tests: the numbers depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import logging
import os
import resource
import statistics
import time
from typing import Any

from rstck.reference import failed_publisher
from rstck.reference import identity_processor
from rstck.reference import range_publisher
from rstck.reference import sync_subscriber
from rstck.reference import sync_whitebox_subscriber
from rstck.run_api import Run
from rstck.subjects import ProcessorSubject
from rstck.subjects import PublisherSubject
from rstck.subjects import SubscriberSubject
from rstck.subjects import WhiteboxSubject

SUBJECTS: dict[str, tuple[str, Any]] = {
    "publisher": ("publisher", PublisherSubject(range_publisher, failed_factory=failed_publisher)),
    "blackbox": ("subscriber_blackbox", SubscriberSubject(sync_subscriber)),
    "whitebox": ("subscriber_whitebox", WhiteboxSubject(sync_whitebox_subscriber)),
    "processor": ("processor", ProcessorSubject(identity_processor, failed_factory=failed_publisher)),
}


def _usage() -> tuple[float, float, int]:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime, r.ru_stime, r.ru_nvcsw + r.ru_nivcsw


def measured(run: Run, test: Any) -> tuple[float, float, int, float, str]:
    """CPU, system CPU, switches and wall of one run of ``test``, and its outcome."""
    cpu0, sys0, cs0 = _usage()
    wall0 = time.monotonic()
    outcome = str(run.run_one(test).outcome)
    wall = time.monotonic() - wall0
    cpu1, sys1, cs1 = _usage()
    return cpu1 - cpu0, sys1 - sys0, cs1 - cs0, wall, outcome


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("kind", choices=sorted(SUBJECTS))
    parser.add_argument("--test", help="one test (its name), run --runs times after a warm-up run")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--top", type=int, default=30, help="the N costliest tests (every test mode)")
    args = parser.parse_args(argv)
    # The references log what a raising probe did (rule 2.13): a report's concern, not this one's.
    logging.disable(logging.WARNING)
    verification, subject = SUBJECTS[args.kind]
    run = Run(verification, subject)
    print(f"load {os.getloadavg()[0]:.1f}, bytecode "
          f"{'not written' if os.environ.get('PYTHONDONTWRITEBYTECODE') else 'written'}")
    if args.test:
        chosen = [t for t in run.tests if t.name == args.test]
        if not chosen:
            parser.error(f"no test named {args.test!r} in the {args.kind} verification")
        run.run_one(chosen[0])
        rows = [measured(run, chosen[0]) for _ in range(args.runs)]
        print(f"{args.test}: {args.runs} runs, medians: cpu {statistics.median(r[0] for r in rows):.4f} s, "
              f"sys {statistics.median(r[1] for r in rows):.4f} s, switches "
              f"{statistics.median(r[2] for r in rows):.0f}, wall {statistics.median(r[3] for r in rows):.4f} s; "
              f"outcomes {sorted({r[4] for r in rows})}")
        return 0
    for _ in range(2):  # the first round warms caches and imports; the second is printed
        table = [(*measured(run, test), test.name) for test in run.tests]
    table.sort(reverse=True)
    print(f"all {len(table)} tests: cpu {sum(r[0] for r in table):.3f} s, sys {sum(r[1] for r in table):.3f} s, "
          f"switches {sum(r[2] for r in table)}, wall {sum(r[3] for r in table):.2f} s")
    print("   cpu     sys  switches    wall  outcome  test")
    for cpu, sys_cpu, switches, wall, outcome, name in table[:args.top]:
        print(f"{cpu:6.3f}  {sys_cpu:6.3f}  {switches:8d}  {wall:6.3f}  {outcome:7s}  {name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
