"""A subscriber fuzz scenario hands over, and waits, only where something else could run meanwhile:
a subscriber without threads of its own runs its scenarios without giving its turn up, sleeping
inside requests, or waking a pooled thread for every send; one with a thread keeps all of them."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from rstck._internal import reach
from rstck._internal.environment import Environment
from rstck._internal.fuzz.subscriber_side import SubscriberScenario
from rstck._internal.fuzz.subscriber_side import _Sender
from rstck._internal.worker import IDLE_NAME
from rstck.reference import sync_subscriber
from rstck.settings import Settings
from rstck.subjects import SubscriberSubject
from rstck.verifications import VERIFICATIONS

from .support import HoldingSubscriber
from .support import zero_sleeps

#: Every kind of step, sends from another thread among them.
SCENARIO = (20, (("send", 3, "here"), ("send", 2, "thread"), ("inline", True), ("run",),
                 ("send", 4, "thread"), ("inline", False), ("send", 5, "here"), ("complete",)))


#: Threads the host runs (xdist's, say) are not these tests': only those a test starts count.
pytestmark = pytest.mark.usefixtures("only_this_tests_threads")


class CountingSlot:
    """A scheduler's slot that counts how often the test gave its turn up."""

    def __init__(self) -> None:
        self.released = 0

    def release(self) -> None:
        self.released += 1

    def acquire(self) -> None:
        pass

    def close(self) -> None:
        pass


@contextmanager
def foreign_thread() -> Iterator[None]:
    """A live thread that is not the kit's: a subscriber's worker, as far as the kit can tell."""
    stop = threading.Event()
    worker = threading.Thread(target=stop.wait, args=(10,), name="subscriber-worker", daemon=True)
    worker.start()
    try:
        yield
    finally:
        stop.set()
        worker.join(5)


def run_scenario(monkeypatch: pytest.MonkeyPatch, scenario: Any = SCENARIO) -> tuple[CountingSlot, int]:
    """One scenario against the reference sync subscriber, as the search runs it (on a kit
    thread, the caller waiting for it): the turns it gave up, and the zero-second sleeps on the
    scenario's thread (the yields inside requests)."""
    sleeps = [0]
    body: list[int] = []
    sleep = time.sleep

    def counting(seconds: float) -> None:
        if seconds == 0 and threading.get_ident() in body:
            sleeps[0] += 1
        sleep(seconds)

    monkeypatch.setattr(time, "sleep", counting)
    verification = VERIFICATIONS["subscriber_blackbox"]
    slot = CountingSlot()
    outcome: list[Any] = []

    def body_thread() -> None:
        body.append(threading.get_ident())
        with Environment(Settings(timeout=1.0, no_signal_window=0.05)) as env:
            env.slot, env.body_ident = slot, body[0]
            ctx = verification.make_context(env, SubscriberSubject(sync_subscriber))
            outcome.append((SubscriberScenario(ctx, env, scenario, False, {}).execute(), env.problems))

    runner = threading.Thread(target=body_thread, name="rs-tck-body")
    with reach.waiting_for_results():
        runner.start()
        runner.join(10)
    assert outcome == [(None, [])]
    return slot, sleeps[0]


def test_a_subscriber_without_threads_keeps_the_turn_and_its_requests_do_not_sleep(
        monkeypatch: pytest.MonkeyPatch) -> None:
    slot, sleeps = run_scenario(monkeypatch)
    assert slot.released == 0
    assert sleeps == 0


def test_while_a_thread_not_the_kits_lives_the_turn_is_given_up_and_requests_yield(
        monkeypatch: pytest.MonkeyPatch) -> None:
    with foreign_thread():
        slot, sleeps = run_scenario(monkeypatch)
    assert slot.released >= 1  # between scenarios, and in the 'run' step's window
    assert sleeps > 0


def test_a_scenarios_sends_run_on_one_kit_thread_that_goes_back_to_the_pool(env: Environment) -> None:
    seen: list[threading.Thread] = []
    sender = _Sender()
    for _ in range(3):
        assert sender.call(env, "send", lambda: seen.append(threading.current_thread()), 1.0)
    (thread,) = set(seen)
    assert thread is not threading.current_thread()
    assert thread.name == "rs-tck-fuzz-caller"
    sender.close()
    deadline = time.monotonic() + 5
    while thread.name != IDLE_NAME and time.monotonic() < deadline:
        time.sleep(0.001)
    assert thread.name == IDLE_NAME


def test_a_send_that_does_not_return_in_time_is_left_to_its_thread_and_the_next_gets_another(
        env: Environment) -> None:
    release = threading.Event()
    stuck: list[threading.Thread] = []
    sender = _Sender()

    def blocks() -> None:
        stuck.append(threading.current_thread())
        release.wait(5)

    assert not sender.call(env, "send", blocks, 0.05)
    after: list[threading.Thread] = []
    assert sender.call(env, "send", lambda: after.append(threading.current_thread()), 1.0)
    assert after[0] is not stuck[0]
    release.set()  # the stuck send returns: its thread ends its service and goes back to the pool
    deadline = time.monotonic() + 5
    while stuck[0].name != IDLE_NAME and time.monotonic() < deadline:
        time.sleep(0.001)
    assert stuck[0].name == IDLE_NAME
    sender.close()


def test_a_send_that_raises_is_reported_as_any_kit_threads_error_and_the_next_send_runs(
        env: Environment, monkeypatch: pytest.MonkeyPatch) -> None:
    reported: list[BaseException | None] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: reported.append(args.exc_value))
    sender = _Sender()

    def fails() -> None:
        raise RuntimeError("a TCK defect")

    assert sender.call(env, "send", fails, 1.0)
    ran: list[bool] = []
    assert sender.call(env, "send", lambda: ran.append(True), 1.0)
    assert ran == [True]
    deadline = time.monotonic() + 5
    while not reported and time.monotonic() < deadline:  # reported once the send's caller went on
        time.sleep(0.001)
    assert [type(e) for e in reported] == [RuntimeError]
    sender.close()


def test_a_request_from_the_subscribers_own_thread_yields_though_no_other_thread_lives(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The kit's thread delivering a signal may enter the subscription meanwhile (rule 2.7)."""
    from rstck._internal.fuzz.subscriber_side import _Upstream

    with Environment(Settings(timeout=1.0, no_signal_window=0.05)) as env:
        upstream = _Upstream(env, name="upstream", end=None)
        holder = HoldingSubscriber()
        upstream.attach(holder)
        sleeps = zero_sleeps(monkeypatch)
        worker = threading.Thread(target=holder.subscription.request, args=(1,), name="subscriber-worker")
        with reach.waiting_for_results():
            worker.start()
            worker.join(5)
        upstream.close()
    assert sleeps == ["subscriber-worker"]


@pytest.mark.parametrize(("steps", "hops_alone"), [
    ((("complete",), ("send", 2, "thread")), 0),  # the stream is over: nothing to send
    ((("send", 20, "here"), ("send", 2, "thread")), 0),  # the demand is spent: nothing to send
    ((("send", 1, "here"), ("send", 2, "thread")), 1),  # demand outstanding: the elements go from there
])
def test_a_send_from_another_thread_with_nothing_to_send_hops_only_beside_a_thread_not_the_kits(
        monkeypatch: pytest.MonkeyPatch, steps: tuple[Any, ...], hops_alone: int) -> None:
    """The other thread would run none of the subscriber's code; only a thread of the subscriber's
    could raise the demand (or be shown the wait) meanwhile."""
    hops: list[str] = []
    call = _Sender.call

    def counting(self: _Sender, env: Environment, label: str, fn: Any, timeout: float) -> bool:
        hops.append(label)
        return call(self, env, label, fn, timeout)

    monkeypatch.setattr(_Sender, "call", counting)
    run_scenario(monkeypatch, (3, steps))
    assert len(hops) == hops_alone
    hops.clear()
    with foreign_thread():
        run_scenario(monkeypatch, (3, steps))
    assert len(hops) == 1
