"""Rule 2.4: a request after the end, told apart from a subscriber still working off its backlog.

A subscriber that processes its signals later, in order (the JVM's AsyncSubscriber), receives
the end only after the elements that came before it, and may ask for more while it works them
off: one request per element processed, or per batch, however long an element takes. The TCK
weighs each request after the end against the backlog (elements sent that no request answered
yet, puppet pulls, on_subscribe), against idleness (a quiet window with none of the
subscriber's threads in its code) and, in the whitebox, against the subscriber's own report of
the end (``ManualSubscription._late``). Both sides are held here: slow conforming actors pass,
whatever an element takes against the no-signal window, and requests that nothing before the
end explains are still caught.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from rstck._internal.environment import Environment
from rstck._internal.watching import all_busy_in_subjects_code
from rstck._internal.watching import runs_code_of
from rstck.manual import ManualPublisher
from rstck.run_api import run_verification
from rstck.settings import Settings
from rstck.subjects import SubscriberSubject
from rstck.subjects import WhiteboxSubject

from tests.broken import subscribers as broken
from tests.conforming import subscribers as conforming
from tests.verdicts.test_subscriber_catalogue import BB
from tests.verdicts.test_subscriber_catalogue import FAST
from tests.verdicts.test_subscriber_catalogue import WB
from tests.verdicts.test_subscriber_catalogue import named
from tests.verdicts.test_subscriber_catalogue import run_one

# -- slow conforming actors pass ----------------------------------------------------------------

SLOW = {
    # 150 ms per element, one request per element processed: longer than the 100 ms window.
    "blackbox-per-element": (BB, SubscriberSubject(conforming.slow_actor, label="slow_actor")),
    # 20 ms per element, 24 more after every 24: 480 ms between its requests.
    "blackbox-batches": (BB, SubscriberSubject(conforming.slow_batching_actor, label="slow_batching_actor")),
    "whitebox-per-element": (WB, WhiteboxSubject(conforming.slow_actor_whitebox, any_thread_puppet=True,
                                                 label="slow_actor_whitebox")),
    "whitebox-batches": (WB, WhiteboxSubject(conforming.slow_batching_actor_whitebox, any_thread_puppet=True,
                                             label="slow_batching_actor_whitebox")),
}


@pytest.mark.parametrize("label", list(SLOW))
def test_a_slow_actor_passes_the_tests_that_judge_requests_after_the_end(label: str) -> None:
    """The tests that watch after a terminal signal (2.3, 2.4, and 3.10/3.11, whose streams end
    inside request()), at the default window: each actor takes longer than it to work off what
    it got before the end, and asks for more meanwhile. (Their whole verifications pass too;
    these are the tests that accused them.)"""
    verification, subject = SLOW[label]
    results = run_verification(verification, subject, Settings(), rules=["2.3", "2.4", "3.10", "3.11"])
    accused = [f"{r.test}: {r.message.splitlines()[0]}" for r in results if r.outcome in ("failed", "error")]
    assert not accused, "\n".join(accused)
    assert sum(r.outcome == "passed" for r in results) >= 5


@pytest.fixture
def env() -> Iterator[Environment]:
    with Environment(FAST) as environment:
        yield environment


def flagged(env: Environment) -> list[tuple[str | None, str]]:
    return [(getattr(getattr(p.error, "rule", None), "id", None), str(p.error)) for p in env.problems]


def test_a_backlog_worked_off_at_four_windows_an_element_is_no_breach_and_idleness_after_is(
    env: Environment,
) -> None:
    upstream = ManualPublisher(env)
    actor = conforming.SlowActor(work_s=0.2, batch=2)  # the window is 50 ms
    upstream.subscribe(actor)
    upstream.expect_demand()
    upstream.send_next()
    upstream.send_next()
    upstream.send_complete()
    started = time.monotonic()
    upstream.closing_after_terminal(window=0.8)()  # it asks for 2 more some 400 ms after the end
    subscription = upstream.subscription
    assert (subscription.late_requests, subscription.backlog()) == (1, 2)
    assert flagged(env) == []
    assert time.monotonic() - started >= 0.4
    # Worked off, and a window quiet with none of its threads in its code: a request now is late.
    assert subscription.idle
    timer = threading.Timer(0.01, subscription.request, (1,))
    timer.start()
    timer.join()
    assert [rule for rule, _ in flagged(env)] == ["2.4"]
    assert "gone idle" in flagged(env)[0][1]


def test_one_request_more_than_the_backlog_is_a_breach_while_the_subscriber_is_busy(env: Environment) -> None:
    upstream = ManualPublisher(env)
    upstream.subscribe(broken.tops_up_while_working())
    upstream.expect_demand()
    upstream.send_next()
    upstream.send_complete()
    upstream.closing_after_terminal(window=0.6)()
    ((rule, message),) = flagged(env)
    assert rule == "2.4"
    assert "its request #2 since then, when what came before the end explains at most 1" in message


def test_a_request_made_before_the_watch_began_is_told_when_it_begins(env: Environment) -> None:
    upstream = ManualPublisher(env)
    upstream.subscribe(broken.GoodSubscriber())  # asks for one more in each on_next
    upstream.send_next()
    upstream.send_complete()
    upstream.subscription.request(1)  # nothing left to explain it, but no 2.4 watch yet
    assert flagged(env) == []
    upstream.closing_after_terminal(window=0.2)()
    ((rule, message),) = flagged(env)
    assert rule == "2.4"
    assert "1 request(s) on upstream after on_complete() returned" in message


# -- the tests of 2.4 still catch what nothing before the end explains ------------------------


@pytest.mark.parametrize("end", ["on_complete", "on_error"])
@pytest.mark.parametrize("verification", [BB, WB])
def test_a_batching_subscribers_retry_after_the_end_is_caught(verification: str, end: str) -> None:
    """Its backlog count would allow the request (three elements it did not ask again for): the
    blackbox tells it by idleness, the whitebox by the subscriber's own report of the end."""
    subject = (broken.blackbox if verification == BB else broken.whitebox)(broken.BatchRetriesAfterEnd)
    result = run_one(verification, named(verification, "2.4", f"cancelled_after_{end}"), subject)
    assert result.verdict == "failed", result.message
    assert result.message.startswith("[rule 2.4]"), result.message
    assert ("gone idle" if verification == BB else "after it reported processing") in result.message


@pytest.mark.parametrize(("verification", "contains"), [
    (BB, "backlog"), (BB, "cancelled_after_on_complete"), (BB, "cancelled_after_on_error"),
    (WB, "cancelled_after_on_complete"), (WB, "cancelled_after_on_error"),
])
def test_a_slow_actors_extra_request_at_the_end_is_caught(verification: str, contains: str) -> None:
    subject = (SubscriberSubject(broken.tops_up_while_working, label="TopsUpWhileWorking") if verification == BB
               else WhiteboxSubject(broken.tops_up_while_working_whitebox, any_thread_puppet=True,
                                    label="TopsUpWhileWorking"))
    result = run_one(verification, named(verification, "2.4", contains), subject, Settings(timeout=1.0))
    assert result.verdict == "failed", result.message
    assert result.message.startswith("[rule 2.4]"), result.message


# -- the evidence of work ----------------------------------------------------------------------


class _Worker:
    def __init__(self) -> None:
        self.go = threading.Event()

    def work(self) -> None:
        self.go.wait(5)

    def later(self) -> None:
        pass


def test_a_method_running_for_the_subscriber_is_work_a_timer_waiting_to_call_it_is_not() -> None:
    mine, other = _Worker(), _Worker()
    assert not runs_code_of(mine)
    timer = threading.Timer(5, mine.later)  # a timer waits in the standard library's code
    timer.start()
    try:
        assert not runs_code_of(mine)
        thread = threading.Thread(target=other.work)
        thread.start()
        try:
            # The same class, another instance: counted too (which instance a method runs for
            # is not read, frame.f_locals being unsafe on another thread in CPython 3.11).
            assert runs_code_of(mine)
            assert runs_code_of(other)
        finally:
            other.go.set()
            thread.join(5)
        assert not runs_code_of(other)
    finally:
        timer.cancel()


def _hold(ready: threading.Semaphore, go: threading.Event, idents: list[int]) -> None:
    idents.append(threading.get_ident())
    ready.release()
    go.wait(5)


def test_a_pool_busy_with_other_work_may_hold_the_subscribers_next_task_back() -> None:
    pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="late-requests-pool")
    ready, first, second = threading.Semaphore(0), threading.Event(), threading.Event()
    idents: list[int] = []
    try:
        pool.submit(_hold, ready, first, idents)
        pool.submit(_hold, ready, second, idents)
        assert ready.acquire(timeout=5)
        assert ready.acquire(timeout=5)
        caller = idents[0]  # one that called the subscription, busy with someone's task
        assert all_busy_in_subjects_code({caller})  # and the pool's other worker is busy too
        second.set()
        deadline = time.monotonic() + 5
        while all_busy_in_subjects_code({caller}) and time.monotonic() < deadline:
            time.sleep(0.005)
        assert not all_busy_in_subjects_code({caller})  # one is free: a task would run now
        assert not all_busy_in_subjects_code(set())
    finally:
        first.set()
        second.set()
        pool.shutdown(wait=True)


def test_the_late_request_message_names_what_explains_requests_after_the_end(env: Any) -> None:
    upstream = ManualPublisher(env)
    upstream.subscribe(broken.GoodSubscriber())
    upstream.send_next()
    upstream.subscription.stir()  # a puppet pull before the end: one more request explained
    upstream.send_complete()
    assert upstream.subscription.backlog() == 1
    upstream.subscription.watch()
    upstream.subscription.request(1)
    assert flagged(env) == []
    upstream.subscription.request(1)
    ((rule, message),) = flagged(env)
    assert rule == "2.4"
    assert "one per element sent and not yet answered by a request: 0 of 1; per puppet pull: 1" in message
