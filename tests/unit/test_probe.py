"""The probe subscriber: what it records, the rules it flags live, its fast path."""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from rstck import MAX_DEMAND
from rstck._internal.environment import Environment
from rstck.errors import RuleViolation
from rstck.probe import ProbeSubscriber

from .support import NullSubscription
from .support import fast_probe
from .support import overlap_of
from .support import rules_flagged
from .support import zero_sleeps


def test_probe_flags_each_protocol_violation_as_it_happens(env: Environment) -> None:
    probe = ProbeSubscriber(env, yield_s=None)
    probe.on_next(1)  # before on_subscribe
    assert rules_flagged(env) == ["1.9"]
    second = NullSubscription()
    probe.on_subscribe(NullSubscription())
    probe.on_subscribe(second)  # second on_subscribe: flagged, and cancelled as rule 2.5 asks
    assert rules_flagged(env)[-1] == "1.9"
    assert second.cancels == 1
    probe.request(1)
    probe.on_next(None)  # None element
    assert "2.13" in rules_flagged(env)
    probe.on_next(3)  # beyond demand
    assert rules_flagged(env)[-1] == "1.1"
    probe.on_complete()
    probe.on_error(ValueError("late"))  # after a terminal signal
    assert rules_flagged(env)[-1] == "1.7"
    assert [r.signal for r in env.trace.records() if r.actor == "probe"][-2:] == ["on_complete", "on_error"]


def test_probe_records_demand_at_each_signal(env: Environment) -> None:
    probe = ProbeSubscriber(env)
    probe.on_subscribe(NullSubscription())
    probe.request(2)
    probe.on_next("a")
    probe.on_next("b")
    probe.request(MAX_DEMAND)
    probe.on_next("c")
    demands = [(r.signal, r.demand) for r in env.trace.records() if r.actor == "probe"]
    assert demands == [
        ("on_subscribe", 0), ("request", 2), ("on_next", 2), ("on_next", 1),
        ("request", MAX_DEMAND), ("on_next", MAX_DEMAND),
    ]
    assert env.problems == []


def test_probe_sees_two_threads_inside_at_once(env: Environment) -> None:
    inside, release = threading.Event(), threading.Event()

    def hold(p: ProbeSubscriber, element: Any) -> None:
        if element == "first":
            inside.set()
            release.wait(2)

    probe = ProbeSubscriber(env, on_next=hold)
    probe.on_subscribe(NullSubscription())
    probe.request(2)
    first = threading.Thread(target=probe.on_next, args=("first",), name="emitter-1")
    first.start()
    assert inside.wait(2)
    second = threading.Thread(target=probe.on_next, args=("second",), name="emitter-2")
    second.start()
    second.join(2)
    release.set()
    first.join(2)
    violation = env.problems[0].error
    assert isinstance(violation, RuleViolation)
    assert violation.rule is not None
    assert violation.rule.id == "1.3"
    assert "emitter-2" in str(violation)
    assert "emitter-1" in str(violation)


def test_a_call_handed_over_from_inside_a_signal_may_signal_on_its_thread_but_no_other(env: Environment) -> None:
    # The fuzz verification's "from on_subscribe: from another thread (waited for)": the waiting
    # thread runs nothing, so the JVM RangePublisher's synchronous on_next on the calling thread
    # nests as it would on one thread; an emitter thread of the publisher's own does not.
    results: dict[str, int] = {}

    def hand_over(p: ProbeSubscriber, s: Any) -> None:
        waiting = threading.get_ident()

        def call() -> None:
            with p.acting_for(waiting):
                p.on_next("delivered by the call")
            results["after call"] = len(env.problems)
            emitter = threading.Thread(target=p.on_next, args=("from its own thread",), name="emitter")
            emitter.start()
            emitter.join(2)

        caller = threading.Thread(target=call, name="caller")
        caller.start()
        caller.join(2)

    def ask(p: ProbeSubscriber, s: Any) -> None:
        p.request(2)
        hand_over(p, s)

    probe = ProbeSubscriber(env, on_subscribe=ask)
    probe.on_subscribe(NullSubscription())
    assert results["after call"] == 0
    (problem,) = env.problems
    assert isinstance(problem.error, RuleViolation)
    assert problem.error.rule is not None
    assert problem.error.rule.id == "1.3"
    assert "emitter" in str(problem.error)


def test_same_thread_nesting_is_not_concurrency(env: Environment) -> None:
    subscription = NullSubscription()

    def nest(p: ProbeSubscriber, element: int) -> None:
        if element < 3:
            p.on_next(element + 1)  # what a synchronous, non-trampolined publisher does

    probe = ProbeSubscriber(env, on_next=nest)
    probe.on_subscribe(subscription)
    probe.request(10)
    probe.on_next(0)
    assert env.problems == []
    assert probe.max_depth == 4


def test_the_fast_path_records_thread_demand_time_and_element(env: Environment) -> None:
    probe = fast_probe(env, keep_elements=True)
    probe.on_next("text")
    probe.on_next(1 << 300)  # an int whose text is cut, as short_repr cuts it
    records = env.trace.records()
    assert len(records) == 2 * env.settings.trace_keep  # bounded
    last = records[-3:]
    assert [r.detail for r in last] == ["199", "'text'", repr(1 << 300)[:77] + "..."]
    assert {(r.thread, r.actor, r.signal, r.demand) for r in last} == {
        (threading.current_thread().name, "probe", "on_next", MAX_DEMAND)}
    assert all(a.t <= b.t for a, b in itertools.pairwise(records))
    assert [r.seq for r in records][-1] == env.trace.total - 1 == 2 * env.settings.trace_keep + 3
    assert probe.received == 2 * env.settings.trace_keep + 2 == len(probe.elements)
    assert env.problems == []


def test_the_fast_path_counts_demand_down_and_hands_excess_to_the_full_path(env: Environment) -> None:
    probe = fast_probe(env, demand=250, elements=250)
    assert probe.demand == 0
    probe.on_next(250)
    assert rules_flagged(env) == ["1.1"]
    assert "on_next #251 (250) with no outstanding demand" in str(env.problems[0].error)
    assert [r.demand for r in env.trace.records() if r.signal == "on_next"][-3:] == [2, 1, 0]
    assert probe._fast_owner is None  # beyond demand once: the full path from now on


def test_a_second_thread_arriving_during_the_fast_path_is_a_1_3_overlap(env: Environment) -> None:
    probe = fast_probe(env)
    closed = threading.Event()

    class Slow:
        def __repr__(self) -> str:  # runs inside the fast path, while "emitter-2" arrives
            rival.start()
            closed.wait(5)  # the rival closed the fast path and now looks for us inside it
            return "Slow()"

    def watch() -> None:
        while probe._fast_owner is not None:
            threading.Event().wait(0.001)
        threading.Event().wait(0.05)
        closed.set()

    rival = threading.Thread(target=probe.on_next, args=(7,), name="emitter-2")
    watcher = threading.Thread(target=watch)
    watcher.start()
    probe.on_next(Slow())
    rival.join(5)
    watcher.join(5)
    violation = overlap_of(env)
    assert (f"on_next entered on thread emitter-2 while on_next was running on thread "
            f"{threading.current_thread().name}, in the same subscriber") in str(violation)
    by_seq = {r.seq: r for r in env.trace.records()}
    assert [(by_seq[s].thread, by_seq[s].detail) for s in violation.evidence] == [
        (threading.current_thread().name, "Slow()"), ("emitter-2", "7")]
    assert probe._fast_owner is None
    probe.on_next(8)  # two threads seen: the full path, which pauses for races, from now on
    assert probe._fast_owner is None
    assert probe._racy


def test_the_fast_paths_thread_arriving_while_another_is_inside_is_a_1_3_overlap(env: Environment) -> None:
    probe = fast_probe(env, yield_s=0.5)  # the rival pauses 0.5 s inside on_next
    rival = threading.Thread(target=probe.on_next, args=(7,), name="emitter-2")
    rival.start()
    while not probe._sections:
        threading.Event().wait(0.001)
    probe.on_next(8)
    rival.join(5)
    violation = overlap_of(env)
    assert (f"on_next entered on thread {threading.current_thread().name} while on_next was "
            "running on thread emitter-2, in the same subscriber") in str(violation)


def test_an_asynchronous_publishers_thread_takes_the_fast_path_and_is_still_watched(env: Environment) -> None:
    """on_subscribe on the caller's thread, on_next on the publisher's own (a bulk test's probe,
    no pause asked for): the elements take the fast path, counted and traced alike, and a signal
    from the first thread while the second is inside one is still an overlap (rule 1.3)."""
    env.body_ident = threading.get_ident()
    probe = ProbeSubscriber(env, keep_elements=False, yield_s=None)
    probe.on_subscribe(NullSubscription())
    probe.request(3 * env.settings.trace_keep + 1)
    owners: list[int | None] = []
    inside = threading.Event()
    go_on = threading.Event()

    class Slow:
        def __repr__(self) -> str:  # runs inside the fast path while the test's thread signals
            inside.set()
            go_on.wait(5)
            return "Slow()"

    def emit() -> None:
        for i in range(3 * env.settings.trace_keep):
            probe.on_next(i)
        owners.append(probe._fast_owner)
        probe.on_next(Slow())

    emitter = threading.Thread(target=emit, name="emitter")
    emitter.start()
    assert inside.wait(5)
    owner = owners[0]
    assert owner == emitter.ident  # its elements took the fast path
    closer = threading.Thread(target=lambda: (threading.Event().wait(0.05), go_on.set()))
    closer.start()
    probe.on_complete()  # the test's thread, while the emitter is inside on_next
    emitter.join(5)
    closer.join(5)
    assert probe.received == 3 * env.settings.trace_keep + 1
    assert probe.demand == 0
    violation = overlap_of(env)
    assert "on_complete entered on thread MainThread while on_next was running" in str(violation)
    by_seq = {r.seq: r for r in env.trace.records()}
    assert [(by_seq[s].thread, by_seq[s].signal) for s in violation.evidence] == [
        ("emitter", "on_next"), ("MainThread", "on_complete")]


def test_a_request_from_another_thread_closes_the_fast_path(env: Environment) -> None:
    probe = fast_probe(env, demand=300, elements=200)
    helper = threading.Thread(target=probe.request, args=(5,))
    helper.start()
    helper.join(5)
    assert probe._fast_owner is None
    assert probe.demand == 105
    for i in range(105):
        probe.on_next(i)
    assert env.problems == []
    assert probe._fast_owner is not None  # the full path opened it again: one thread signals
    probe.on_next(0)
    assert rules_flagged(env) == ["1.1"]


def test_a_hook_set_later_still_sees_every_nested_on_next(env: Environment) -> None:
    probe = fast_probe(env)
    depths: list[int] = []

    def nest(p: ProbeSubscriber, element: int) -> None:
        depths.append(p.depth())
        if element < 3:
            p.on_next(element + 1)  # a synchronous, non-trampolined publisher

    probe.on_next_hook = nest
    assert probe._fast_owner is None
    probe.on_next(0)
    assert depths == [1, 2, 3, 4]
    assert probe.max_depth == 4
    assert env.problems == []


def test_cancel_and_terminal_signals_close_the_fast_path(env: Environment) -> None:
    probe = fast_probe(env)
    probe.cancelled = True  # as a test that cancels through its own calls declares it
    assert probe._fast_owner is None
    probe.on_next(1)
    assert probe.after_cancel == 1
    other = fast_probe(env, name="sub2")
    other.on_complete()
    other.on_next(1)
    assert rules_flagged(env) == ["1.7"]


def _waiting(probe: ProbeSubscriber, wait: Callable[[], bool]) -> tuple[threading.Thread, list[bool]]:
    """``wait()`` on another thread, returned once it is registered with the probe; its answer
    lands in the list."""
    woke: list[bool] = []
    waiter = threading.Thread(target=lambda: woke.append(wait()))
    waiter.start()
    while not probe._waiters:
        threading.Event().wait(0.001)
    return waiter, woke


def test_a_wait_on_another_thread_is_woken_by_the_fast_path(env: Environment) -> None:
    probe = fast_probe(env)
    start = probe.received
    waiter, woke = _waiting(probe, lambda: probe._wait(lambda: probe.received >= start + 50, 5))
    for i in range(100):
        probe.on_next(i)
    waiter.join(2)
    assert woke == [True]


def _trickle(probe: ProbeSubscriber, count: int, gap: float, stop_after: int | None = None) -> threading.Thread:
    def feed() -> None:
        for i in range(count if stop_after is None else stop_after):
            threading.Event().wait(gap)
            probe.on_next(i)

    feeder = threading.Thread(target=feed)
    feeder.start()
    return feeder


def test_a_steady_wait_outlasts_a_slow_stream_and_ends_at_a_silence(env: Environment) -> None:
    """``wait_steady``: a stream slower than ``timeout`` in all but never silent that long is
    waited out; a silence of ``timeout`` ends the wait, not before that much of it."""
    env.body_ident = threading.get_ident()
    slow = ProbeSubscriber(env, "slow")
    slow.on_subscribe(NullSubscription())
    slow.request(30)
    feeder = _trickle(slow, 30, 0.01)
    start = time.monotonic()
    assert slow.wait_steady(lambda: slow.received >= 30, 0.15)
    assert time.monotonic() - start > 0.15  # longer than timeout in all
    feeder.join(2)
    stalled = ProbeSubscriber(env, "stalled")
    stalled.on_subscribe(NullSubscription())
    stalled.request(30)
    feeder = _trickle(stalled, 30, 0.01, stop_after=5)
    feeder.join(2)
    start = time.monotonic()
    assert not stalled.wait_steady(lambda: stalled.received >= 30, 0.15)
    assert 0.15 <= time.monotonic() - start < 5.0
    assert stalled.received == 5


def test_a_steady_wait_is_woken_by_its_predicate_not_by_each_signal(env: Environment) -> None:
    probe = fast_probe(env)
    start = probe.received
    waiter, woke = _waiting(probe, lambda: probe.wait_steady(lambda: probe.received >= start + 50, 5))
    (waiting,) = probe._waiters
    probe.on_next(0)
    assert probe._waiters == [waiting]  # one element: the wait goes on, not woken to look again
    for i in range(1, 100):
        probe.on_next(i)
    waiter.join(2)
    assert woke == [True]


@pytest.mark.usefixtures("only_this_tests_threads")
def test_a_racy_probe_yields_on_the_tests_thread_only_while_another_thread_could_race_in(
        env: Environment, monkeypatch: pytest.MonkeyPatch) -> None:
    """The pause inside a signal lets a second thread in: on the verification's own thread with
    every other thread idle in the kit's pool (or none), there is none to let in."""
    env.body_ident = threading.get_ident()
    probe = ProbeSubscriber(env)
    probe.on_subscribe(NullSubscription())
    probe.request(10)
    other = threading.Thread(target=probe.on_next, args=(0,), name="rs-tck:upstream-feeder")
    other.start()
    other.join(5)  # signalled from two threads: racy from now on
    sleeps = zero_sleeps(monkeypatch)
    probe.on_next(1)
    assert sleeps == []
    stop = threading.Event()
    busy = threading.Thread(target=stop.wait, args=(5,), name="rs-tck:upstream-feeder")
    busy.start()
    try:
        probe.on_next(2)
    finally:
        stop.set()
        busy.join(5)
    assert sleeps == [threading.current_thread().name]
    other = threading.Thread(target=probe.on_next, args=(3,), name="rs-tck:upstream-feeder")
    other.start()
    other.join(5)
    assert sleeps == [threading.current_thread().name, "rs-tck:upstream-feeder"]


def test_a_starved_moment_does_not_count_against_a_quiet_wait(env: Environment, monkeypatch: pytest.MonkeyPatch) -> None:
    """In-flight elements still arriving when the whole process is left waiting for a core (here:
    the clock jumps 5 s while they come) are late, not a stream that never stops: the wait for
    quiet counts time the process could run, each wake-up at most the window it waited for."""
    real_monotonic = time.monotonic
    jump = [0.0]
    monkeypatch.setattr(time, "monotonic", lambda: real_monotonic() + jump[0])
    probe = ProbeSubscriber(env)
    probe.on_subscribe(NullSubscription())
    probe.request(MAX_DEMAND)

    def in_flight() -> None:
        for i in range(10):
            if i == 3:
                jump[0] = 5.0  # a starved moment, ten times the limit
            time.sleep(env.settings.no_signal_window / 4)
            probe.on_next(i)

    sender = threading.Thread(target=in_flight)
    sender.start()
    arrived, quiet = probe.wait_quiet()
    sender.join()
    assert quiet
    assert arrived == 10


def test_a_stream_that_never_stops_is_not_quiet(env: Environment) -> None:
    probe = ProbeSubscriber(env)
    probe.on_subscribe(NullSubscription())
    probe.request(MAX_DEMAND)
    stop = threading.Event()

    def flood() -> None:
        i = 0
        while not stop.is_set():
            probe.on_next(i)
            i += 1
            time.sleep(env.settings.no_signal_window / 4)

    sender = threading.Thread(target=flood)
    sender.start()
    started = time.monotonic()
    try:
        _, quiet = probe.wait_quiet()
    finally:
        stop.set()
        sender.join()
    assert not quiet
    assert time.monotonic() - started < 10 * (env.settings.timeout + env.settings.no_signal_window)
