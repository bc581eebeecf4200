"""The race hunts' pauses: whose code a step belongs to, and a stop at the k-th line of a subject."""

from __future__ import annotations

import dataclasses
import sys
import threading
import time
from typing import Any

import pytest
from rstck._internal.trace import Trace
from rstck._internal.verifications import _racing
from rstck._internal.verifications._racing import PausedSide
from rstck._internal.verifications._racing import _paused_at_line
from rstck._internal.verifications._racing import _paused_call
from rstck._internal.verifications._racing import race
from rstck._internal.watching import kits_step


def _frames_seen(fn: Any) -> list[tuple[str, bool]]:
    seen: list[tuple[str, bool]] = []

    def hook(frame: Any, event: str, arg: Any) -> None:
        if event == "call":
            seen.append((frame.f_code.co_name, kits_step(frame)))

    sys.setprofile(hook)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return seen


@dataclasses.dataclass
class _Point:
    x: int


def test_a_generated_init_counts_for_whoever_called_it() -> None:
    # A dataclass's __init__ is compiled from "<string>": made by the kit's trace, it is the
    # kit's step; made by a subject (this test module stands for one), the subject's.
    trace = Trace()
    kit = [is_kit for name, is_kit in _frames_seen(lambda: trace.add("probe", "request", "1"))
           if name == "__init__"]
    mine = [is_kit for name, is_kit in _frames_seen(lambda: _Point(1)) if name == "__init__"]
    assert kit
    assert all(kit)
    assert mine
    assert not any(mine)


class _TwoSteps:
    """Reads a flag, then acts on it, on two lines with no call between them."""

    def __init__(self) -> None:
        self.flag = False
        self.seen: list[bool] = []

    def act(self) -> None:
        flag = self.flag
        self.seen.append(flag)


def test_a_thread_stops_between_two_lines_that_make_no_call() -> None:
    subject = _TwoSteps()
    # Lines of act(): 1 = the read, 2 = the append. Stopped before line 2, the flag set
    # meanwhile is not seen; stopped before line 1, it is.
    for k, expected in ((2, False), (1, True)):
        subject.flag = False
        # (a long bound: the pause must outlast this thread's wake-up on a loaded machine)
        call, paused, resume, left = _paused_at_line(subject.act, k, "rs-tck:test-paused", pause_s=10.0)
        assert paused.wait(5)
        subject.flag = True
        resume.set()
        assert call.wait(5)
        assert subject.seen[-1] is expected
        assert left == [0]  # it stopped


def test_a_call_with_fewer_lines_than_k_runs_through() -> None:
    subject = _TwoSteps()
    call, paused, _resume, left = _paused_at_line(subject.act, 50, "rs-tck:test-paused")
    assert call.wait(5)
    assert paused.is_set()
    assert left == [48]  # two lines of fifty: it never stopped
    assert subject.seen == [False]
    assert sys.gettrace() is None
    assert threading.current_thread().name != "rs-tck:test-paused"


class _Locked:
    def __init__(self) -> None:
        self.lock = threading.Lock()

    def hold_it(self) -> None:
        with self.lock:
            self.inside = True  # the pause lands here, the lock held

    def take_it(self) -> None:
        with self.lock:
            self.inside = False


def test_a_pause_ends_early_when_its_rival_waits_for_a_lock_it_holds() -> None:
    subject = _Locked()
    for rival, least in ((None, 0.15), (threading.get_ident(), 0.0)):
        call, paused, resume, _ = _paused_at_line(subject.hold_it, 2, "rs-tck:test-paused",
                                                  pause_s=0.2, rival=rival)
        assert paused.wait(5)
        started = time.monotonic()
        subject.take_it()  # blocks until the paused thread lets go of the lock
        waited = time.monotonic() - started
        resume.set()
        assert call.wait(5)
        assert waited >= least
        if rival is not None:
            assert waited < 0.15  # seen standing still at the lock, well before the 0.2 s bound


def test_a_race_tells_whether_its_paused_side_ran_through() -> None:
    # The hunts leave out the rounds past the steps a call has: they must know which ran through.
    for k, through in ((1, False), (2, False), (3, True), (50, True)):
        subject = _TwoSteps()
        side = race(subject.act, lambda: None, k, rule="1.3", what="act() to return", timeout=5.0)
        assert side.ran_through is through
        assert subject.seen == [False]


def test_a_paused_side_still_running_has_not_run_through() -> None:
    subject = _TwoSteps()
    side = PausedSide(subject.act, 2, "rs-tck:test-paused")
    assert side.paused.wait(5)
    assert not side.ran_through  # stopped, not returned
    assert side.let_go(5)
    assert not side.ran_through


class _CheckThenStore:
    """A 2.5 subscriber's on_subscribe: a check and its store under one lock."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.subscription: Any = None

    def on_subscribe(self, subscription: Any) -> None:
        with self.lock:
            if self.vacant():
                self.subscription = subscription

    def vacant(self) -> bool:
        return self.subscription is None


def test_the_2_5_hunts_pause_ends_once_the_other_on_subscribe_waits_for_its_lock(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Its rival cannot move on before the paused call does: holding on to the bound shows nothing."""
    monkeypatch.setattr(_racing, "SUBSCRIBE_PAUSE_S", 0.2)
    subject = _CheckThenStore()
    for rival, least in ((None, 0.15), (threading.get_ident(), 0.0)):
        subject.subscription = None
        # Call events: the lambda, on_subscribe, the lock's __enter__, then vacant(), inside the lock.
        call, paused, resume = _paused_call(lambda: subject.on_subscribe("first"), 4, rival)
        assert paused.wait(5)
        started = time.monotonic()
        subject.on_subscribe("second")  # blocks until the paused call lets go of the lock
        waited = time.monotonic() - started
        resume.set()
        assert call.wait(5)
        assert subject.subscription == "first"
        assert waited >= least
        if rival is not None:
            assert waited < 0.15  # seen waiting at the lock, well before the 0.2 s bound


def test_the_2_5_hunts_pause_holds_a_rival_that_merely_stands_still_to_its_bound(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A rival the scheduler has not run yet looks as still as a blocked one, but may still race."""
    monkeypatch.setattr(_racing, "SUBSCRIBE_PAUSE_S", 0.2)

    def slow_subscriber_step() -> None:
        time.sleep(0.1)  # standing still in the subject's code, at no lock

    call, paused, _resume = _paused_call(lambda: _CheckThenStore().on_subscribe("first"), 1,
                                        threading.get_ident())
    assert paused.wait(5)
    started = time.monotonic()
    slow_subscriber_step()
    assert call.wait(5)
    held = time.monotonic() - started
    assert held >= 0.15  # not let go for standing still: only the 0.2 s bound ended it
