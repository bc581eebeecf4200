"""A fuzz scenario's environment: a probe's signal yields unless no other thread could enter the
subject meanwhile (the verification's thread waits, blocked, for what has not happened yet, no
call handed to another thread runs, and only the kit runs)."""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable
from collections.abc import Iterator
from typing import Any

import pytest
from rstck._internal import reach
from rstck._internal.environment import Environment
from rstck._internal.fuzz.sandbox import ScenarioEnvironment
from rstck._internal.fuzz.sandbox import call_on_thread
from rstck.probe import ProbeSubscriber
from rstck.settings import Settings

from .support import zero_sleeps

#: Threads the host runs (xdist's, say) are not these tests': only those a test starts count.
pytestmark = pytest.mark.usefixtures("only_this_tests_threads")


@pytest.fixture
def scenario_env() -> Iterator[ScenarioEnvironment]:
    with Environment(Settings(timeout=1.0, no_signal_window=0.02)) as outer:
        outer.body_ident = threading.get_ident()
        env = ScenarioEnvironment(outer)
        with env:
            yield env


class _Subscription:
    def request(self, n: int) -> None:
        pass

    def cancel(self) -> None:
        pass


def on_kit_thread(fn: Callable[[], Any], name: str = "rs-tck:upstream-feeder") -> Any:
    """``fn()`` on a kit thread while this one waits for it, as a verification's caller does."""
    out: list[Any] = []
    thread = threading.Thread(target=lambda: out.append(fn()), name=name)
    with reach.waiting_for_results():
        thread.start()
        thread.join(5)
    return out[0]


def test_a_handed_call_is_listed_while_it_runs(scenario_env: ScenarioEnvironment) -> None:
    seen: list[list[int]] = []

    def nested() -> None:
        seen.append(list(scenario_env.handed))
        assert call_on_thread(scenario_env, "inner", lambda: seen.append(list(scenario_env.handed)), 1.0)

    assert call_on_thread(scenario_env, "outer", nested, 1.0)
    outer, both = seen
    assert len(outer) == 1
    assert both[0] == outer[0]
    assert len(both) == 2
    assert threading.get_ident() not in both
    assert scenario_env.handed == []


def test_racing_only_while_another_thread_could_enter_the_subject(scenario_env: ScenarioEnvironment) -> None:
    assert on_kit_thread(scenario_env.racing)  # the verification's thread is not known to wait
    scenario_env.awaiting = lambda: True
    assert on_kit_thread(scenario_env.racing)  # what it waits for holds: it is about to go on
    scenario_env.awaiting = lambda: False
    assert not on_kit_thread(scenario_env.racing)
    assert on_kit_thread(scenario_env.racing, name="subject-worker")  # a thread not the kit's
    scenario_env.handed.append(-1)  # a call handed to another thread runs
    assert on_kit_thread(scenario_env.racing)
    scenario_env.handed.clear()
    stop = threading.Event()
    foreign = threading.Thread(target=stop.wait, args=(5,), name="subject-worker")
    foreign.start()
    try:
        assert on_kit_thread(scenario_env.racing)
    finally:
        stop.set()
        foreign.join(5)


def test_a_handed_call_does_not_race_the_thread_that_waits_for_it(scenario_env: ScenarioEnvironment) -> None:
    scenario_env.awaiting = lambda: False
    answers: list[bool] = []
    with reach.waiting_for_results():
        assert call_on_thread(scenario_env, "call", lambda: answers.append(scenario_env.racing()), 1.0)
    assert answers == [False]


def test_a_probe_signalled_on_a_kit_thread_yields_only_while_it_is_racing(
        scenario_env: ScenarioEnvironment, monkeypatch: pytest.MonkeyPatch) -> None:
    probe = ProbeSubscriber(scenario_env, "probe")
    probe.on_subscribe(_Subscription())
    probe.request(10)
    sleeps = zero_sleeps(monkeypatch)
    on_kit_thread(lambda: probe.on_next(1))
    assert sleeps == ["rs-tck:upstream-feeder"]  # from another thread than the verification's: a race
    sleeps.clear()
    scenario_env.awaiting = lambda: probe.received >= 5
    on_kit_thread(lambda: probe.on_next(2))
    for element in (3, 4):
        on_kit_thread(functools.partial(probe.on_next, element))
    assert sleeps == []
    on_kit_thread(lambda: probe.on_next(5))  # the fifth: what the wait waits for holds
    assert sleeps == ["rs-tck:upstream-feeder"]
    assert probe.received == 5


def test_a_timed_sleep_of_the_verifications_thread_is_raced_only_once_it_may_be_over(
        scenario_env: ScenarioEnvironment) -> None:
    """A scenario's window sleeps: a signal meanwhile need not yield until the sleep may end,
    when the thread may make its next call (the interleaving the window is for)."""
    from rstck._internal.fuzz.publisher_side import PublisherScenario

    run = PublisherScenario(None, scenario_env, (1, (), (), ()), lambda n: None)
    looks: list[tuple[float, bool]] = []

    def look() -> None:
        deadline = time.monotonic() + 5
        while scenario_env.awaiting is None and time.monotonic() < deadline:
            time.sleep(0.001)
        looks.append((time.monotonic(), scenario_env.racing()))
        while scenario_env.awaiting is not None and time.monotonic() < deadline:
            time.sleep(0.001)
        looks.append((time.monotonic(), scenario_env.racing()))

    thread = threading.Thread(target=look, name="rs-tck:upstream-feeder")
    with reach.waiting_for_results():
        thread.start()
        start = time.monotonic()
        run._sleep(0.5)
        thread.join(5)
    (during, racing_during), (after, racing_after) = looks
    assert during < start + 0.5  # (a thread started this late would be a machine stopped for half a second)
    assert not racing_during
    assert after >= start + 0.5
    assert racing_after


def test_in_a_screened_batch_a_signal_of_a_scenario_the_verifications_thread_is_not_at_does_not_yield(
        scenario_env: ScenarioEnvironment) -> None:
    """The thread calls one scenario's subject at a time: another scenario's signal has no call
    of that thread to meet, whatever the thread does (here: nothing known, so a race for the
    scenario it is at)."""
    from rstck._internal.fuzz.publisher_side import _FailingProbe

    at, other = object(), object()
    probe = _FailingProbe(scenario_env, "probe")
    probe.scenario = other
    mine = _FailingProbe(scenario_env, "mine")
    mine.scenario = at
    assert on_kit_thread(lambda: scenario_env.racing(probe))  # no batch: any scenario
    scenario_env.focus = at
    assert not on_kit_thread(lambda: scenario_env.racing(probe))
    assert on_kit_thread(lambda: scenario_env.racing(mine))
    scenario_env.handed.append(-1)  # a call handed to another thread runs: it may be anyone's
    assert on_kit_thread(lambda: scenario_env.racing(probe))
    scenario_env.handed.clear()
    assert on_kit_thread(lambda: scenario_env.racing(probe), name="subject-worker")
