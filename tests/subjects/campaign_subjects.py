"""Subjects for campaign tests: a race that shows in some runs only, and hostile processes.

``racy_publisher`` is built, in about half the runs, with a delivery that hands each
``on_next`` to a thread pool without serialising them (two threads can be inside ``on_next``
at once: rule 1.3), as a library does when a "fast path" is switched on by configuration.
Which build a run gets is drawn once per process from ``random``, which a campaign seeds
with the unit's seed: a rerun with that seed takes the same path.
"""

from __future__ import annotations

import os
import random
import re
import signal

from rstck.reference import range_publisher

from tests.broken.publishers import ConcurrentOnNext
from tests.broken.publishers import RangePublisher
from tests.broken.publishers import RangeSubscription

#: Chance that a run gets the racy build.
RACE_PROBABILITY = 0.5
_racy: bool | None = None


def racy_build() -> bool:
    """Whether this process got the racy build (drawn once, from the seeded ``random``)."""
    global _racy
    if _racy is None:
        _racy = random.random() < RACE_PROBABILITY
    return _racy


def racy_publisher(n: int) -> RangePublisher:
    return RangePublisher(n, ConcurrentOnNext if racy_build() else RangeSubscription)


def stops_its_process(n: int) -> RangePublisher:
    """Hangs the whole process (no thread in it runs again), as a wedged interpreter would."""
    os.kill(os.getpid(), signal.SIGSTOP)
    return RangePublisher(n)


def exits_its_process(n: int) -> RangePublisher:
    """Ends the process from inside a call, as a subject calling ``os._exit`` would."""
    os._exit(3)


def kills_its_process(n: int) -> RangePublisher:
    """SIGKILLs its own process, as the kernel's OOM killer would."""
    os.kill(os.getpid(), signal.SIGKILL)
    return RangePublisher(n)


def wedges_its_interpreter(n: int) -> RangePublisher:
    """Holds the GIL in one C call for hours (a catastrophic regular expression): no Python
    thread of the process runs again, the TCK's own watchdog included."""
    re.match(r"(a+)+$", "a" * 64 + "b")
    return RangePublisher(n)


_hoard: list[bytes] = []


def leaks_memory(n: int) -> RangePublisher:
    """Keeps 128 MiB more with every publisher it makes, as a subject with a leak would."""
    _hoard.append(b"\x01" * (128 << 20))
    return RangePublisher(n)


__all__ = ["exits_its_process", "kills_its_process", "leaks_memory", "racy_publisher", "range_publisher",
           "stops_its_process", "wedges_its_interpreter"]
