"""The running clock: a timeout counts the time the process could run, and stays event-driven."""

from __future__ import annotations

import threading
import time

from rstck._internal.clock import SLICE_S
from rstck._internal.clock import RunningClock
from rstck._internal.clock import starved_wait


def test_a_wait_on_time_lasts_its_timeout_and_answers_false() -> None:
    gate = threading.Lock()
    gate.acquire()
    started = time.monotonic()
    assert not starved_wait(lambda step: gate.acquire(timeout=step), 0.2)
    assert 0.2 <= time.monotonic() - started < 0.6


def test_late_wake_ups_are_not_credited() -> None:
    """Each slice waking three slices late (a starved process) credits one slice only."""
    calls: list[float] = []

    def late(step: float) -> bool:
        calls.append(step)
        time.sleep(step + 2 * SLICE_S)
        return False

    assert not starved_wait(late, 4 * SLICE_S)
    assert 4 <= len(calls) <= 5  # the last slice may be a rounding error long


def test_it_returns_as_soon_as_the_condition_holds() -> None:
    gate = threading.Lock()
    gate.acquire()
    threading.Timer(0.05, gate.release).start()
    started = time.monotonic()
    assert starved_wait(lambda step: gate.acquire(timeout=step), 5.0)
    assert time.monotonic() - started < 2.0


def test_a_zero_timeout_looks_once() -> None:
    seen: list[float] = []
    assert not starved_wait(lambda step: seen.append(step) is not None, 0.0)
    assert seen == [0.0]


def test_a_running_clock_credits_a_late_step_only_its_length() -> None:
    """The watchdog's clock: a step after a long stall counts at most what was asked for."""
    clock = RunningClock()
    time.sleep(0.05)
    before = time.monotonic()
    assert clock.step(0.01) == 0.01
    time.sleep(0.02)
    second = clock.step(1.0)
    assert 0.02 <= second <= time.monotonic() - before  # from the last step, not the clock's start
