"""Timeouts that count only the time the process could run.

A verdict that a signal never came within ``timeout`` must rest on the subject's silence, not on
a loaded machine that left the whole process waiting for a core: the JVM TCK's default of 100 ms
already assumes a machine that runs the test. A wait is therefore cut into slices, and each
slice credits at most its own length: when the waiting thread wakes late, the process was
starved for the difference, its subject with it, and that time is not held against the subject
(the watchdog of ``rstck._internal.one_rule`` keeps its ``RunningClock`` the same way). On an idle machine a slice wakes
on time and the wait lasts ``timeout``, as before; a subject that truly stalls is caught after
``timeout`` of time it could have used. The wait stays event-driven: ``acquire`` returns as soon
as what it waits for holds.
"""

from __future__ import annotations

import time
from collections.abc import Callable

#: The longest slice of one wait: a wake-up later than this is starvation, not credited.
SLICE_S = 0.05


class RunningClock:
    """Time the process could run, read in steps: a step credits at most what its waiter asked
    for, so a late wake-up (the whole process waiting for a core) counts only its own length."""

    def __init__(self) -> None:
        self._last = time.monotonic()

    def step(self, most: float) -> float:
        """The time since the last step (or since the clock was made), at most ``most``."""
        now = time.monotonic()
        elapsed, self._last = now - self._last, now
        return min(elapsed, most)


def starved_wait(acquire: Callable[[float], bool], timeout: float) -> bool:
    """``acquire(t)`` (a bounded wait, True once its condition holds) in slices until ``timeout``
    of running time has passed; the last answer."""
    remaining = max(0.0, timeout)
    clock = RunningClock()
    while True:
        step = min(SLICE_S, remaining)
        if acquire(step):
            return True
        remaining -= clock.step(step)
        if remaining <= 0:
            return False
