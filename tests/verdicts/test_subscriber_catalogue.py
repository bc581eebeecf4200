"""The subscriber verifications catch every broken subscriber, and pass the correct ones.

Each broken subscriber of ``tests/broken/subscribers.py`` is run through the one TCK test of
its rule (blackbox, whitebox or both): the verdict must be "failed" and the failure must open
by citing that rule. The reference subscribers and the catalogue's correct base must pass every
test, repeatedly. The reference subscribers' own behaviour is tested at the end.
"""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from rstck._internal.environment import Environment
from rstck._internal.one_rule import run_test
from rstck._internal.verifications import subscriber_blackbox
from rstck._internal.verifications import subscriber_whitebox
from rstck.manual import ManualPublisher
from rstck.reference import AsyncSubscriber
from rstck.reference import SerialSubscription
from rstck.reference import SyncSubscriber
from rstck.reference import async_subscriber
from rstck.reference import async_whitebox_subscriber
from rstck.reference import sync_subscriber
from rstck.reference import sync_whitebox_subscriber
from rstck.results import TestResult
from rstck.run_api import run_verification
from rstck.settings import Settings
from rstck.subjects import SubscriberSubject
from rstck.subjects import WhiteboxSubject
from rstck.verifications import VERIFICATIONS
from rstck.whitebox import WhiteboxProbe

from tests.broken import subscribers as broken
from tests.verdicts.evidence import assert_cites_kept_records

FAST = Settings(timeout=0.3, no_signal_window=0.05, gc_window=0.5, test_limit=10.0,
                stochastic_iterations=10)

BB = subscriber_blackbox.VERIFICATION
WB = subscriber_whitebox.VERIFICATION


def run_one(verification: str, name: str, subject: Any, settings: Settings = FAST) -> TestResult:
    """Run one TCK test, by name, against ``subject``, the way the engine does."""
    v = VERIFICATIONS[verification]
    (test,) = [t for t in v.tests if t.name == name]
    return run_test(test, lambda env: v.make_context(env, subject), subject.apply(settings),
                    subject_label=subject.label)


def named(verification: str, rule: str, contains: str = "") -> str:
    """The one test of ``verification`` for ``rule`` whose name contains ``contains``."""
    found = [t.name for t in VERIFICATIONS[verification].tests
             if t.rule_id == rule and t.level != "untested" and contains in t.name]
    assert len(found) == 1, found
    return found[0]


def both(cls: type[broken.GoodSubscriber], rule: str, contains: str = "") -> list[Any]:
    return [
        pytest.param(BB, named(BB, rule, contains), broken.blackbox(cls), rule,
                     id=f"blackbox-{cls.__name__}-{rule}"),
        pytest.param(WB, named(WB, rule, contains), broken.whitebox(cls), rule,
                     id=f"whitebox-{cls.__name__}-{rule}"),
    ]


def white(cls: type[broken.GoodSubscriber], rule: str, contains: str = "") -> list[Any]:
    return [pytest.param(WB, named(WB, rule, contains), broken.whitebox(cls), rule,
                         id=f"whitebox-{cls.__name__}-{rule}")]


BROKEN = [
    *both(broken.NeverRequests, "2.1"),
    *both(broken.RequestsInOnComplete, "2.3", "on_complete"),
    *both(broken.CancelsInOnComplete, "2.3", "on_complete"),
    *both(broken.RequestsInOnError, "2.3", "on_error"),
    *both(broken.CancelsInOnError, "2.3", "on_error"),
    *both(broken.RequestsAfterComplete, "2.4", "cancelled_after_on_complete"),
    *both(broken.RetriesAfterError, "2.4", "on_error"),
    *both(broken.AcceptsSecondSubscription, "2.5", "already_has"),
    *both(broken.AcceptsTwoAtOnce, "2.5", "same_moment"),
    *both(broken.ConcurrentRequests, "2.7", "same_thread"),
    *white(broken.RaisesAfterCancel, "2.8"),
    *both(broken.FailsOnEmptyComplete, "2.9", "with_preceding"),
    *both(broken.FailsOnEmptyComplete, "2.9", "without_preceding"),
    *both(broken.FailsOnEarlyError, "2.10", "with_preceding"),
    *both(broken.FailsOnEarlyError, "2.10", "without_preceding"),
    *white(broken.ReportsAnotherError, "2.10", "without_preceding"),
    *white(broken.LosesElements, "2.11"),
    *both(broken.ResetsOnResubscribe, "2.12"),
    *both(broken.RaisesFromOnNext, "2.13", "return_normally"),
    *both(broken.AcceptsNoneSubscription, "2.13", "on_subscribe"),
    *both(broken.AcceptsNoneElement, "2.13", "on_next"),
    *both(broken.AcceptsNoneError, "2.13", "on_error"),
    *white(broken.RequestsOneWhateverAsked, "3.8"),
    *both(broken.RequestsBeforeStoring, "3.10"),
    *white(broken.DeadlocksOnInlineNext, "3.10"),
    *both(broken.FailsOnInlineEnd, "3.11"),
    *both(broken.SwapsToSecondSubscription, "2.5", "already_has"),
    *both(broken.SwapsToSecondSubscription, "2.12"),
    *both(broken.KeepsSubscriptionPerThread, "2.5", "already_has"),
    *(pytest.param(BB, named(BB, "2.4", f"cancelled_after_{end}"), SubscriberSubject(
        broken.loop_requests_after_end, loop="asyncio", label="LoopRequestsAfterEnd"), "2.4",
        id=f"blackbox-LoopRequestsAfterEnd-2.4-{end}") for end in ("on_complete", "on_error")),
    *(pytest.param(WB, named(WB, "2.4", f"cancelled_after_{end}"), WhiteboxSubject(
        broken.loop_requests_after_end_whitebox, loop="asyncio", label="LoopRequestsAfterEnd"), "2.4",
        id=f"whitebox-LoopRequestsAfterEnd-2.4-{end}") for end in ("on_complete", "on_error")),
    *both(broken.CreditTimer, "2.4", "cancelled_after_on_complete"),
    *both(broken.LateRetryAfterEnd, "2.4", "cancelled_after_on_complete"),
    *both(broken.LateRetryAfterEnd, "2.4", "cancelled_after_on_error"),
    *both(broken.LateRequestFromItsPool, "2.4", "cancelled_after_on_complete"),
    *both(broken.ExtraPassAfterTurn, "2.7", "same_thread"),
    *both(broken.ActorExtraPass, "2.7", "same_thread"),
    *both(broken.CancelsBesideItsWorker, "2.7", "same_thread"),
    pytest.param(BB, named(BB, "2.4", "backlog"), broken.blackbox(broken.RequestsAgainWhenIdle),
                 "2.4", id="blackbox-RequestsAgainWhenIdle-2.4-backlog"),
    *(pytest.param(BB, named(BB, "2.6", "takes"), SubscriberSubject(
        lambda cls=cls: cls(), takes_at_most=taken, label=cls.__name__), "2.6", id=f"blackbox-{cls.__name__}-2.6")
      for cls, taken in ((broken.TakesThreeWithoutCancelling, 3), (broken.TakesFirstFromAWorker, 1))),
    *(pytest.param(WB, named(WB, "2.6", "takes"), WhiteboxSubject(
        lambda probe, cls=cls: cls(probe), takes_at_most=taken, label=cls.__name__), "2.6",
        id=f"whitebox-{cls.__name__}-2.6")
      for cls, taken in ((broken.TakesThreeWithoutCancelling, 3), (broken.TakesFirstFromAWorker, 1))),
    *both(broken.CreditTopUpAfterReset, "2.4", "cancelled_after_on_complete"),
    *both(broken.CreditTopUpAfterReset, "2.4", "cancelled_after_on_error"),
    *white(broken.RefillsAfterHandlingTheEnd, "2.4", "after_a_backlog"),
    pytest.param(WB, named(WB, "2.4", "after_a_backlog"), WhiteboxSubject(
        broken.loop_refills_later_whitebox, loop="asyncio", label="LoopRefillsLater"), "2.4",
        id="whitebox-LoopRefillsLater-2.4-backlog"),
    *white(broken.StrandsTheRestAfterATurn, "3.8"),
    *(pytest.param(WB, named(WB, "2.7", "from_any_thread"), broken.any_thread(cls), "2.7",
                   id=f"whitebox-{cls.__name__}-2.7-any-thread")
      for cls in (broken.UnserialisedPuppet, broken.DropsDemandLeftForItsDrain)),
]


@pytest.mark.parametrize(("verification", "test_name", "subject", "rule"), BROKEN)
def test_broken_subscriber_fails_the_test_of_its_rule(
    verification: str, test_name: str, subject: Any, rule: str
) -> None:
    result = run_one(verification, test_name, subject)
    # A race hunt (a stochastic test) gives evidence when it sees the race, and its rounds are
    # fewer on a loaded machine: the case must be caught in one of three runs (each run alone
    # catches it in 20 of 20 on a quiet machine; 23 of 30 at load 13 for the subtlest one).
    for _ in range(2 if test_name.startswith("stochastic_") else 0):
        if result.verdict == "failed":
            break
        result = run_one(verification, test_name, subject)
    assert result.verdict == "failed", result.message
    headline = result.message.splitlines()[0]
    assert headline.startswith(f"[rule {rule}]"), result.message
    assert subject.label in result.message
    assert_cites_kept_records(result)


@pytest.mark.parametrize(
    ("cls", "fragment"),
    [(broken.NeverRegisters, "probe.register"), (broken.ReportsWithoutWith, "with probe.next")],
)
def test_a_broken_whitebox_wrapper_is_named_as_such(cls: type[broken.GoodSubscriber], fragment: str) -> None:
    result = run_one(WB, "required_sanity_exercise_whitebox_happy_path", broken.whitebox(cls))
    assert result.verdict == "failed"
    assert fragment in result.message


def test_every_verified_subscriber_rule_has_a_broken_subscriber() -> None:
    for verification in (BB, WB):
        verified = {t.rule_id for t in VERIFICATIONS[verification].tests
                    if t.level != "untested" and t.rule_id is not None}
        caught = {p.values[3] for p in BROKEN if p.values[0] == verification}
        assert verified <= caught, f"{verification}: no broken subscriber for {verified - caught}"


@pytest.mark.parametrize("verification", [BB, WB])
def test_giving_up_the_first_subscription_on_a_second_is_legal_and_noted(verification: str) -> None:
    """Rule 2.5 asks only that the second subscription be cancelled: a fail-fast subscriber that
    cancels its own first one too passes 2.5 and 2.12, the trace saying why."""
    from tests.conforming import subscribers as conforming

    subject = (SubscriberSubject(conforming.fail_fast_subscriber, label="fail_fast") if verification == BB
               else WhiteboxSubject(conforming.fail_fast_whitebox, label="fail_fast"))
    for rule, contains in (("2.5", "already_has"), ("2.12", "")):
        result = run_one(verification, named(verification, rule, contains), subject)
        assert result.verdict == "passed", result.message
        notes = [r["detail"] for r in result.trace if r["signal"] == "note"]
        assert any("cancelled its first subscription too" in note and "legal" in note for note in notes), notes


@pytest.mark.parametrize("verification", [BB, WB])
def test_trading_the_first_subscription_for_the_second_cites_both_records(verification: str) -> None:
    subject = (broken.blackbox if verification == BB else broken.whitebox)(broken.SwapsToSecondSubscription)
    result = run_one(verification, named(verification, "2.5", "already_has"), subject)
    assert result.verdict == "failed"
    assert "kept the second: it adopted it" in result.message
    second_on_subscribe, first_cancel = result.failures[0].evidence
    by_seq = {r["seq"]: r for r in result.trace}
    assert (by_seq[second_on_subscribe]["actor"], by_seq[second_on_subscribe]["signal"]) == ("second", "on_subscribe")
    assert (by_seq[first_cancel]["actor"], by_seq[first_cancel]["signal"]) == ("upstream", "cancel")


@pytest.mark.parametrize("verification", [BB, WB])
def test_the_required_2_5_test_offers_one_more_subscription_from_another_thread(verification: str) -> None:
    subject = (broken.blackbox if verification == BB else broken.whitebox)(broken.GoodSubscriber)
    result = run_one(verification, named(verification, "2.5", "already_has"), subject)
    assert result.verdict == "passed", result.message
    offered = {r["actor"]: r["thread"] for r in result.trace if r["signal"] == "on_subscribe"}
    assert offered["second"] == offered["upstream"] != offered["third"] == "rs-tck:other-thread"
    assert [r["actor"] for r in result.trace if r["signal"] == "cancel"] == ["second", "third"]


# -- subscribers that must pass ----------------------------------------------------------------

CORRECT = [
    pytest.param(BB, SubscriberSubject(sync_subscriber, label="sync"), id="blackbox-sync"),
    pytest.param(BB, SubscriberSubject(async_subscriber, label="async"), id="blackbox-async"),
    pytest.param(BB, broken.blackbox(broken.GoodSubscriber), id="blackbox-good"),
    pytest.param(BB, broken.blackbox(broken.CancelsFromAnotherThreadAfterEnd), id="blackbox-cancel-thread"),
    pytest.param(WB, WhiteboxSubject(sync_whitebox_subscriber, label="sync"), id="whitebox-sync"),
    pytest.param(WB, WhiteboxSubject(async_whitebox_subscriber, label="async"), id="whitebox-async"),
    pytest.param(WB, broken.whitebox(broken.GoodSubscriber), id="whitebox-good"),
    pytest.param(WB, broken.whitebox(broken.CancelsFromAnotherThreadAfterEnd), id="whitebox-cancel-thread"),
    pytest.param(WB, broken.whitebox(broken.RequestsInParts), id="whitebox-in-parts"),
    # Their puppets are serialised with their own calls: the hunt that pulls them beside signals.
    pytest.param(WB, WhiteboxSubject(sync_whitebox_subscriber, any_thread_puppet=True, label="sync-any"),
                 id="whitebox-sync-any-thread-puppet"),
    pytest.param(WB, WhiteboxSubject(async_whitebox_subscriber, any_thread_puppet=True, label="async-any"),
                 id="whitebox-async-any-thread-puppet"),
]


@pytest.mark.parametrize(("verification", "subject"), CORRECT)
@pytest.mark.parametrize("attempt", range(3))
def test_correct_subscribers_pass_every_test(verification: str, subject: Any, attempt: int) -> None:
    # The first attempt runs one test at a time, the others four at once: both modes must pass.
    failures = []
    # The default timeout: a positive control asserts no false accusation under load, and its
    # waits end when the signal arrives, so a longer bound costs nothing when all is well.
    for result in run_verification(verification, subject, FAST.replace(timeout=Settings().timeout),
                                   concurrency=1 if attempt == 0 else 4):
        # ("deselected": the hunt for a puppet pulled from any thread, which they do not declare;
        # "not_applicable": the 2.6 test of a subscriber declared to take at most k elements)
        declared = result.verdict == "not_applicable" and "takes_at_most" in result.message
        if (result.outcome not in ("passed", "skipped")
                or result.verdict not in ("passed", "untested", "deselected")) and not declared:
            failures.append(f"{result.test}: {result.verdict}\n{result.message}")
    assert not failures, "\n\n".join(failures)


@pytest.mark.parametrize("verification", [BB, WB])
def test_a_take_that_cancels_passes_the_declared_2_6_test_and_undeclared_it_is_not_judged(verification: str) -> None:
    name = named(verification, "2.6", "takes")
    make = broken.blackbox if verification == BB else broken.whitebox
    declared = make(broken.TakesThreeAndCancels)
    declared.takes_at_most = 3
    assert run_one(verification, name, declared).verdict == "passed"
    assert run_one(verification, name, make(broken.TakesThreeWithoutCancelling)).verdict == "not_applicable"


def test_the_counts_next_to_the_jvm_tck() -> None:
    # JVM 1.0.4: blackbox 26, whitebox 27; here rule 2.4 gets two tests in each (and a third,
    # the backlog, in the blackbox), 2.5 a second (two on_subscribe at once), and each has a
    # fuzz verification besides; 2.6 a test for a subscriber declared to take at most k elements.
    assert len([t for t in subscriber_blackbox.TESTS if t.level != "fuzz"]) == 30
    # The whitebox has a second 2.7 hunt, for a puppet that may be pulled from any thread, and a
    # third 2.4 test, the backlog; and 2.6, as in the blackbox.
    assert len([t for t in subscriber_whitebox.TESTS if t.level != "fuzz"]) == 32


# -- the TCK's own upstream --------------------------------------------------------------------


@pytest.fixture
def env() -> Any:
    with Environment(FAST) as environment:
        yield environment


def flagged(env: Environment) -> list[str | None]:
    return [getattr(getattr(p.error, "rule", None), "id", None) for p in env.problems]


def test_manual_publisher_never_sends_beyond_demand(env: Environment) -> None:
    upstream = ManualPublisher(env)
    subscriber = broken.GoodSubscriber()
    upstream.subscribe(subscriber)
    assert upstream.subscription.demand == 1
    assert upstream.send_next() == 0
    assert upstream.send_next() == 1  # GoodSubscriber asks for the next one in on_next
    subscriber.request = lambda n: None  # type: ignore[method-assign]
    upstream.send_next()
    with pytest.raises(AssertionError, match=r"a request\(n\) for element 4"):
        upstream.send_next(timeout=0.05)
    assert flagged(env) == []


def test_calls_from_inside_the_tcks_terminal_signals_are_flagged_per_thread(env: Environment) -> None:
    upstream = ManualPublisher(env)
    subscriber = broken.CancelsInOnComplete()
    upstream.subscribe(subscriber)
    upstream.send_complete()
    assert flagged(env) == ["2.3"]
    other = ManualPublisher(env, "other")
    late = broken.CancelsFromAnotherThreadAfterEnd()
    other.subscribe(late)
    other.send_complete()
    other.settle()
    assert flagged(env) == ["2.3"]


def test_a_request_by_an_idle_subscriber_after_the_terminal_signal_is_flagged_as_2_4(env: Environment) -> None:
    upstream = ManualPublisher(env)
    subscriber = broken.GoodSubscriber()
    upstream.subscribe(subscriber)
    assert upstream.settle()  # idle: no work left that could explain a request
    upstream.send_complete()
    subscription = upstream.subscription
    subscription.cancel()  # cancelling what counts as cancelled: the no-op of rule 3.7
    assert flagged(env) == []
    closing = upstream.closing_after_terminal(window=5.0)
    timer = threading.Timer(0.05, subscription.request, (1,))
    timer.start()
    started = time.monotonic()
    closing()  # ends at the late request, not after the whole window
    assert time.monotonic() - started < 2.0
    timer.join()
    subscription.request(1)
    assert flagged(env) == ["2.4"]  # told once


def test_a_request_for_an_on_subscribe_handled_after_the_end_is_not_flagged(env: Environment) -> None:
    """A subscriber handing its signals to a slow pool: on_subscribe is handled after a quiet
    window, and after on_complete was sent; its request then is for a signal before the end."""

    class Deferred:
        subscription: Any = None

        def on_subscribe(self, subscription: Any) -> None:
            self.subscription = subscription  # handled later, on the pool

        def on_next(self, element: Any) -> None:
            pass

        def on_error(self, exc: BaseException) -> None:
            pass

        def on_complete(self) -> None:
            pass

    upstream = ManualPublisher(env)
    subscriber = Deferred()
    upstream.subscribe(subscriber)
    assert upstream.settle()  # quiet: the pool has not run yet
    upstream.send_complete()
    subscriber.subscription.request(16)  # the pool handles on_subscribe now, in order
    assert flagged(env) == []
    upstream.closing_after_terminal(window=0.2)()  # once worked off, a request would be told
    subscriber.subscription.request(1)
    assert flagged(env) == ["2.4"]


class _ProcessesLater(broken.GoodSubscriber):
    """on_next only takes the element: its processing, and the request that answers it, come later."""

    def process(self, element: Any) -> None:
        self.received.append(element)


def test_late_requests_that_work_or_the_tck_explain_are_not_flagged(env: Environment) -> None:
    busy = ManualPublisher(env, "busy")
    busy.subscribe(_ProcessesLater())
    busy.settle()
    busy.send_next()
    busy.send_complete()
    busy.subscription.request(1)  # processing an element sent before the end, later, in order
    pulled = ManualPublisher(env, "pulled")
    pulled.subscribe(broken.GoodSubscriber())
    pulled.settle()
    pulled.send_complete()
    pulled.subscription.excuse()  # a whitebox puppet pulled after the end
    pulled.subscription.request(1)
    assert flagged(env) == []
    # A thread of someone else's that could still call: the watch does not end early (rstck._internal.reach).
    threading.Thread(target=time.sleep, args=(0.5,), name="Thread-other", daemon=True).start()
    started = time.monotonic()
    busy.closing_after_terminal(window=0.2)()  # watches the whole window, then stops
    assert 0.1 < time.monotonic() - started < 1.0
    busy.subscription.request(1)  # the backlog was worked off meanwhile: now unexplained
    assert flagged(env) == ["2.4"]


def test_overlapping_calls_and_illegal_requests_are_flagged(env: Environment) -> None:
    upstream = ManualPublisher(env, yield_s=0.01)
    subscriber = broken.GoodSubscriber()
    upstream.subscribe(subscriber)
    subscription = upstream.subscription
    threads = [threading.Thread(target=subscription.request, args=(1,)) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    subscription.request(0)
    assert flagged(env) == ["2.7", "3.9"]


def test_a_subscriber_raising_from_a_signal_is_flagged_with_the_rule_asked_for(env: Environment) -> None:
    upstream = ManualPublisher(env)
    upstream.subscribe(broken.FailsOnEmptyComplete())
    assert upstream.send_complete(rule="2.9") is False
    assert flagged(env) == ["2.9"]


def test_whitebox_reports_are_matched_against_the_signals_sent(env: Environment) -> None:
    probe = WhiteboxProbe(env)
    probe.signalled("on_next", "a")
    with probe.next("a"):
        pass
    with probe.next("a"):  # a second time
        pass
    with probe.complete():  # never signalled
        pass
    assert flagged(env) == ["2.11", "2.11"]
    probe.expect_next("a")


def test_whitebox_report_that_raises_does_not_count(env: Environment) -> None:
    probe = WhiteboxProbe(env)
    probe.signalled("on_next", 1)
    with pytest.raises(ZeroDivisionError), probe.next(1):
        _ = 1 / 0
    with pytest.raises(AssertionError, match="processing of on_next"):
        probe.expect_next(1, timeout=0.01)


def test_whitebox_register_refuses_what_is_not_a_puppet(env: Environment) -> None:
    probe = WhiteboxProbe(env)
    with pytest.raises(TypeError, match="request"):
        probe.register(request=None, cancel=lambda: None)
    calls: list[Any] = []
    probe.register(request=calls.append, cancel=lambda: calls.append("cancel"))
    probe.register(request=lambda n: None, cancel=lambda: None)  # ignored: only the first counts
    puppet = probe.expect_puppet()
    puppet.request(3)
    puppet.cancel()
    assert calls == [3, "cancel"]
    assert probe.registrations == 2


# -- the reference subscribers' own behaviour --------------------------------------------------


class Recorder:
    """A subscription that records calls, optionally delivering inside request."""

    def __init__(self) -> None:
        self.calls: list[Any] = []
        self.on_request: Any = None

    def request(self, n: int) -> None:
        self.calls.append(n)
        if self.on_request is not None:
            self.on_request(n)

    def cancel(self) -> None:
        self.calls.append("cancel")


def test_sync_subscriber_requests_in_batches_and_stops_at_the_end() -> None:
    seen: list[int] = []
    subscriber = SyncSubscriber(seen.append, batch=4)
    subscription = Recorder()
    subscriber.on_subscribe(subscription)
    for i in range(3):
        subscriber.on_next(i)
    subscriber.on_complete()
    subscriber.on_next(99)  # after the end: ignored
    assert seen == [0, 1, 2]
    assert subscription.calls == [4, 2]  # refilled once half the batch had arrived
    assert subscriber.completed


def test_sync_subscriber_takes_elements_delivered_inside_request() -> None:
    subscriber = SyncSubscriber(batch=2)
    subscription = Recorder()

    def deliver(n: int) -> None:
        for _ in range(n):
            if subscriber.received < 5:
                subscriber.on_next(subscriber.received)

    subscription.on_request = deliver
    subscriber.on_subscribe(subscription)
    assert subscriber.received == 5
    assert subscription.calls[0] == 2


def test_sync_subscriber_cancels_when_processing_fails_and_a_second_subscription() -> None:
    def boom(element: Any) -> None:
        raise ValueError(element)

    subscriber = SyncSubscriber(boom)
    first, second = Recorder(), Recorder()
    subscriber.on_subscribe(first)
    subscriber.on_subscribe(second)
    assert second.calls == ["cancel"]
    subscriber.on_next(1)  # must not raise
    assert first.calls[-1] == "cancel"
    for method in (subscriber.on_subscribe, subscriber.on_next, subscriber.on_error):
        with pytest.raises(TypeError):
            method(None)


def test_async_subscriber_processes_in_order_on_its_worker() -> None:
    seen: list[Any] = []
    names: set[str] = set()
    done = threading.Event()

    def handle(element: Any) -> None:
        seen.append(element)
        names.add(threading.current_thread().name)

    subscriber = AsyncSubscriber(handle, batch=8)
    subscription = Recorder()
    subscriber.on_subscribe(subscription)
    for i in range(20):
        subscriber.on_next(i)
    subscriber.on_complete()
    for _ in range(100):
        if subscriber.completed:
            done.set()
            break
        threading.Event().wait(0.01)
    assert done.is_set()
    assert seen == list(range(20))
    assert threading.current_thread().name not in names
    assert all(isinstance(c, int) for c in subscription.calls)


def test_serial_subscription_never_overlaps_and_stops_after_close() -> None:
    inside = threading.Lock()
    overlaps: list[int] = []

    class Slow:
        def request(self, n: int) -> None:
            if not inside.acquire(blocking=False):
                overlaps.append(n)
                return
            threading.Event().wait(0.001)
            inside.release()

        def cancel(self) -> None:
            pass

    serial = SerialSubscription(Slow())
    threads = [threading.Thread(target=lambda: [serial.request(1) for _ in range(20)]) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert overlaps == []
    serial.close()
    assert not serial.active


# -- the documented example --------------------------------------------------------------------


def test_the_example_in_the_whitebox_docs_passes_both_verifications(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = (Path(__file__).resolve().parents[2] / "docs" / "whitebox.md").read_text()
    for block in re.findall(r"```python\n(# (\w+)\.py\n.*?)```", text, flags=re.DOTALL):
        (tmp_path / f"{block[1]}.py").write_text(block[0])
    monkeypatch.syspath_prepend(str(tmp_path))
    import orders  # type: ignore[import-not-found]
    import whitebox_orders  # type: ignore[import-not-found]

    monkeypatch.setattr(orders, "print", lambda *args: None, raising=False)
    for verification, subject in (
        (BB, SubscriberSubject(orders.order_sink, label="orders:order_sink")),
        (WB, WhiteboxSubject(whitebox_orders.whitebox_order_sink, label="whitebox_orders")),
    ):
        for test in VERIFICATIONS[verification].tests:
            result = run_one(verification, test.name, subject)
            # (not applicable: the 2.6 test of a subscriber declared to take at most k elements)
            declared = result.verdict == "not_applicable" and "takes_at_most" in result.message
            assert result.verdict in ("passed", "untested", "deselected") or declared, result.message


# -- subscribers that never ask ----------------------------------------------------------------


@pytest.mark.parametrize("signal", ["on_complete", "on_error"])
def test_a_whitebox_subscriber_cancelling_in_on_subscribe_passes_2_3_undeclared(signal: str) -> None:
    """on_complete and on_error need no demand: the 2.3 tests send them all the same."""
    from tests.conforming.subscribers import cancel_at_once_whitebox

    subject = WhiteboxSubject(cancel_at_once_whitebox, label="cancel_at_once")
    result = run_one(WB, named(WB, "2.3", signal), subject)
    assert result.verdict == "passed", result.message
    assert any(r["signal"] == signal for r in result.trace), result.trace


NEEDS_DEMAND = {
    BB: [("2.1", ""), ("2.9", "with_preceding"), ("2.10", "with_preceding"), ("3.10", ""), ("3.11", "")],
    WB: [("2.1", ""), ("2.9", "with_preceding"), ("2.10", "with_preceding"), ("3.10", ""), ("3.11", ""),
         ("3.8", "")],
}


@pytest.mark.parametrize("verification", [BB, WB])
def test_a_declared_never_requesting_subscriber_makes_the_demand_tests_not_applicable(verification: str) -> None:
    from tests.conforming import subscribers as conforming

    for factory, white in ((conforming.cancel_at_once_sink, conforming.cancel_at_once_whitebox),
                           (conforming.ignoring_sink, conforming.ignoring_whitebox)):
        declared = (SubscriberSubject(factory, never_requests=True, label="sink") if verification == BB
                    else WhiteboxSubject(white, never_requests=True, label="sink"))
        for rule, contains in NEEDS_DEMAND[verification]:
            result = run_one(verification, named(verification, rule, contains), declared)
            assert result.verdict == "not_applicable", result.message
            assert "never_requests" in result.message
    # Undeclared, the same sink fails 2.1: the capability is what makes the difference.
    undeclared = (SubscriberSubject(conforming.ignoring_sink, label="sink") if verification == BB
                  else WhiteboxSubject(conforming.ignoring_whitebox, label="sink"))
    result = run_one(verification, named(verification, "2.1"), undeclared)
    assert result.verdict == "failed", result.message
    assert result.message.startswith("[rule 2.1]"), result.message


def test_never_requests_is_a_knob_with_every_spelling() -> None:
    from rstck.settings import CAPABILITY_KNOBS
    from rstck.settings import KNOBS_BY_NAME

    knob = KNOBS_BY_NAME["never_requests"]
    assert (knob.option, knob.env, knob.ini) == ("--rs-never-requests", "RS_TCK_NEVER_REQUESTS",
                                                 "rs_never_requests")
    assert "never_requests" in CAPABILITY_KNOBS
    assert SubscriberSubject(lambda: None, never_requests=True).apply(Settings()).never_requests
    explicit = Settings(explicit=frozenset({"never_requests"}))
    assert not WhiteboxSubject(lambda p: None, never_requests=True).apply(explicit).never_requests
