"""Testing the tester: every broken publisher must fail the verification aimed at it.

Each case runs one publisher test through the engine against one publisher from
``tests/broken/publishers.py`` and checks the verdict, that the failure message cites the
rule the publisher breaks, and (where it is distinctive) a fragment of what was observed.
Positive controls check that conforming publishers pass everything, and coverage checks
check that no executable test or rule is left without a broken publisher that fails it.

Cases marked ``xfail`` are TCK defects: the TCK misses the defect or reports it under the
wrong rule. Each reason says what goes wrong; once the TCK is fixed the case passes and the
strict marker turns that into a failure, so the marker gets removed.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from rstck._internal.one_rule import run_test
from rstck._internal.verifications.publisher import TESTS
from rstck.api import FailedPublisherFactory
from rstck.api import PublisherFactory
from rstck.contexts import PublisherContext
from rstck.reference import async_range_publisher
from rstck.reference import failed_publisher
from rstck.reference import range_publisher
from rstck.registry import TckTest
from rstck.settings import Settings
from rstck.subjects import PublisherSubject

from tests.verdicts.evidence import assert_cites_kept_records

from ..broken import publishers as bp

#: Short timeouts: every case waits at most a few of these, so the whole catalogue stays fast.
#: A lower flood bound after cancel() too, so the hostile cases that ignore it end fast.
SETTINGS = Settings(timeout=0.5, no_signal_window=0.05, gc_window=1.0, after_cancel_limit=10_000)

EXECUTABLE = [t for t in TESTS if t.level != "untested"]
BY_NAME = {t.name: t for t in TESTS}


def named(fragment: str) -> str:
    """The one publisher test whose name contains ``fragment`` (or, failing that, ends so).

    Otherwise the first registered match: the test the later tests of that rule extend to
    other contexts (``spec104`` names the first test of rule 1.4).
    """
    found = [t.name for t in TESTS if fragment in t.name]
    if len(found) > 1:
        found = [name for name in found if name.endswith(fragment)] or found[:1]
    if len(found) != 1:
        raise LookupError(f"{fragment!r} names {len(found)} tests: {found}")
    return found[0]


def rule_key(test: TckTest) -> str:
    return test.rule_id or "sanity"


@dataclass(frozen=True)
class Case:
    """One broken publisher and what the TCK must say about it."""

    id: str
    factory: PublisherFactory
    failed_factory: FailedPublisherFactory | None
    test: str  # the test that must fail
    rule: str | None  # the rule the message must cite; None: a sanity test
    fragment: str = ""  # must appear in the message
    verdict: str = "failed"  # or "optional_unsupported"
    first_line: bool = True  # False where the TCK rightly leads with a related rule
    within: float | None = None  # hostile ones: the run must end within this many seconds
    test_limit: float | None = None  # a shorter hard limit for runs expected to overrun it
    loop: str | None = None  # "asyncio": every call made on the kit's event loop

    @property
    def cites(self) -> str:
        return "[sanity]" if self.rule is None else f"[rule {self.rule}]"


def case(
    id: str,
    factory: PublisherFactory,
    test: str,
    rule: str | None,
    fragment: str = "",
    *,
    failed: FailedPublisherFactory | None = None,
    verdict: str = "failed",
    first_line: bool = True,
    within: float | None = None,
    test_limit: float | None = None,
    defect: str = "",
    loop: str | None = None,
) -> object:
    """A parametrised case; ``defect`` describes a TCK defect and marks the case xfail."""
    marks = [pytest.mark.xfail(strict=True, reason=f"TCK defect: {defect}")] if defect else []
    spec = Case(id, factory, failed, named(test), rule, fragment, verdict, first_line, within,
                test_limit, loop)
    return pytest.param(spec, id=id, marks=marks)


f = bp.factory
FAILED = bp.FailedPublisher


CASES = [
    # -- sanity -----------------------------------------------------------------------------
    case("short-by-one", f(bp.ShortByOne), "sanity_factory_1", None, "on_complete() first"),
    case("short-by-one-3", f(bp.ShortByOne), "sanity_factory_3", None, "element 3 of 3"),
    # -- 1.1 --------------------------------------------------------------------------------
    case("extra-element", f(bp.ExtraElement), "spec101", "1.1", "with no outstanding demand"),
    case("pooled-extra-element", f(bp.PooledExtraElement), "spec101", "1.1",
         "with no outstanding demand"),
    case("eager", f(bp.Eager), "spec101", "1.1", "on_next #1 (0) with no outstanding demand"),
    case("noop", f(bp.Noop), "spec101", "3.8", "nothing arrived"),
    case("storm", f(bp.Storm), "spec101", "1.1", "with no outstanding demand", within=5.0),
    case("pooled-storm", f(bp.PooledStorm), "spec101", "1.1", "with no outstanding demand",
         within=5.0),
    case("blocking-request", f(bp.BlockingRequest), "spec101", "1.1",
         "`request(1)` neither returned nor signalled", within=3.0),
    # -- 1.2 --------------------------------------------------------------------------------
    case("all-or-nothing", f(bp.AllOrNothing), "spec102", "1.2", "element 1 of 3 within"),
    # -- 1.3 --------------------------------------------------------------------------------
    case("concurrent-on-next", f(bp.ConcurrentOnNext), "stochastic_spec103", "1.3",
         "was running on thread"),
    # -- 1.4 --------------------------------------------------------------------------------
    case("failed-silent", f(bp.RangeSubscription), "spec104", "1.4", "no terminal signal",
         failed=bp.SilentFailedPublisher),
    case("failed-completes", f(bp.RangeSubscription), "spec104", "1.4", "observed on_complete()",
         failed=bp.CompletingFailedPublisher),
    case("failed-raises", f(bp.RangeSubscription), "spec104", "1.9",
         "subscribe() to return normally", failed=bp.RaisingFailedPublisher),
    # -- 1.5 --------------------------------------------------------------------------------
    case("never-completes", f(bp.NeverCompletes), "required_spec105", "1.5",
         "on_complete within"),
    # A stream that never ends, met by the 1.3 hunt (which waits for the end): reported as 1.5.
    case("never-completes-in-the-serial-signals-hunt", f(bp.NeverCompletes), "stochastic_spec103", "1.5",
         "on_complete within 500 ms of a further request(1)"),
    case("empty-never-completes", f(bp.NeverCompletes), "optional_spec105", "1.5",
         "on_complete within", verdict="optional_unsupported"),
    case("empty-without-on-subscribe", bp.EmptyWithoutOnSubscribe, "optional_spec105", "1.9",
         "on_complete() before on_subscribe"),
    # -- 1.6 --------------------------------------------------------------------------------
    case("validates-after-complete", f(bp.ValidatesAfterComplete), "spec106_must_consider_"
         "subscription_cancelled_after_on_complete", "1.6", first_line=False),
    case("raises-when-used-after-complete", f(bp.RaisesWhenUsedAfterComplete),
         "spec106_must_consider_subscription_cancelled_after_on_complete", "3.16",
         "the stream has already completed"),
    case("failed-validates-after-error", f(bp.RangeSubscription),
         "spec106_must_consider_subscription_cancelled_after_on_error", "1.6",
         failed=bp.ValidatesAfterErrorFailedPublisher, first_line=False),
    case("failed-raises-after-error", f(bp.RangeSubscription),
         "spec106_must_consider_subscription_cancelled_after_on_error", "3.16",
         "the publisher has failed", failed=bp.RaisingAfterErrorFailedPublisher),
    # -- 1.7 --------------------------------------------------------------------------------
    case("emits-after-complete", f(bp.EmitsAfterComplete), "spec107_must_not_emit_further_"
         "signals_once_on_complete", "1.7", "after on_complete"),
    case("failed-completes-after-error", f(bp.RangeSubscription), "spec107_must_not_emit_"
         "further_signals_once_on_error", "1.7", "on_complete() after on_error",
         failed=bp.CompletesAfterErrorFailedPublisher),
    # -- 1.8 --------------------------------------------------------------------------------
    case("ignores-cancel", f(bp.IgnoresCancel), "spec108", "1.8", "still flowing"),
    case("pooled-ignores-cancel", f(bp.PooledIgnoresCancel), "spec108", "1.8", "after cancel()"),
    # -- 1.9 --------------------------------------------------------------------------------
    case("accepts-none-subscriber", bp.AcceptsNoneSubscriber, "spec109_subscribe_none", "1.9",
         "it returned normally"),
    case("failed-accepts-none-subscriber", f(bp.RangeSubscription), "spec109_subscribe_none", "1.9",
         "the failed publisher's subscribe(None) to raise TypeError", failed=bp.AcceptsNoneFailedPublisher),
    case("raising-subscribe", bp.RaisingSubscribe, "spec109_subscribe_must_return_normally",
         "1.9", "subscriber limit reached"),
    case("no-on-subscribe", bp.NoOnSubscribe, "spec109_must_issue_on_subscribe", "1.9",
         "no on_subscribe"),
    case("second-on-subscribe", bp.SecondOnSubscribe, "spec109_must_issue_on_subscribe", "1.9",
         "a second on_subscribe"),
    case("next-before-on-subscribe", bp.NextBeforeOnSubscribe, "spec109_must_issue_on_subscribe",
         "1.9", "on_next(0) before on_subscribe"),
    case("complete-before-on-subscribe", bp.CompleteBeforeOnSubscribe,
         "spec109_must_issue_on_subscribe", "1.9", "on_complete() before on_subscribe"),
    case("error-before-on-subscribe", bp.ErrorBeforeOnSubscribe,
         "spec109_must_issue_on_subscribe", "1.9", "before on_subscribe"),
    case("failed-silent-rejects", f(bp.RangeSubscription), "spec109_may_reject", "1.9",
         "no terminal signal", failed=bp.SilentFailedPublisher),
    case("validates-after-cancel", f(bp.ValidatesAfterCancel), "required_spec306_after_subscription_is_cancelled",
         "3.6", "whatever is requested"),
    # -- 3.8: cancel must not silence other or later subscribers ------------------------------
    case("stops-all-on-any-cancel", bp.StopsAllOnAnyCancel, "spec308_a_cancel_must_not_starve", "3.8",
         "after first cancelled"),
    case("silent-after-shut-down", bp.SilentAfterShutDown, "spec308_a_subscriber_after_the_last_cancel",
         "3.8", "the only subscriber before it cancelled"),
    # -- 1.11 (optional) ----------------------------------------------------------------------
    case("drops-first-subscriber", bp.DropsFirstSubscriber, "spec111_may_support_multi", "1.11",
         "sub1 to get an element or on_complete", verdict="optional_unsupported"),
    case("rejects-second-subscriber", bp.RejectsSecondSubscriber, "spec111_registered", "1.11",
         "only one subscriber is supported", verdict="optional_unsupported"),
    case("random-one-by-one", f(bp.RandomElements), "requesting_one_by_one", "1.11",
         "differ at element", verdict="optional_unsupported"),
    case("random-upfront", f(bp.RandomElements), "requesting_many_upfront", "1.11",
         "differ at element", verdict="optional_unsupported"),
    case("random-upfront-complete", f(bp.RandomElements), "requesting_many_upfront_and_complete",
         "1.11", "differ at element", verdict="optional_unsupported"),
    # -- 3.2 --------------------------------------------------------------------------------
    case("deadlocks-on-reentrant-request", f(bp.DeadlocksOnReentrantRequest), "spec302", "3.2",
         "neither returned nor signalled", within=3.0),
    case("raises-on-reentrant-request", f(bp.RaisesOnReentrantRequest), "spec302", "3.2",
         "request() called re-entrantly", first_line=False),
    case("errors-on-every-request", f(bp.ErrorsOnEveryRequest), "spec302", "3.2", "Boom!"),
    # -- 3.3 --------------------------------------------------------------------------------
    case("recursive", f(bp.Recursive), "spec303", "3.3", "calls deep"),
    # -- 3.5 --------------------------------------------------------------------------------
    case("cancel-not-thread-safe", f(bp.CancelNotThreadSafe), "spec305", "3.15",
         "already running on another thread"),
    case("cancel-blocks-when-concurrent", f(bp.CancelBlocksWhenConcurrent), "spec305", "3.5",
         "did not return within", within=3.0),
    # -- 3.6 --------------------------------------------------------------------------------
    case("request-after-cancel-delivers", f(bp.RequestAfterCancelDelivers), "spec306", "3.6",
         first_line=False),
    case("errors-on-request-after-cancel", f(bp.ErrorsOnRequestAfterCancel), "spec306", "3.6",
         "request() after cancel()"),
    case("pooled-errors-on-request-after-cancel", f(bp.PooledErrorsOnRequestAfterCancel),
         "spec306", "3.6", "request() after cancel()"),
    # -- 3.7 --------------------------------------------------------------------------------
    case("cancel-signals-error", f(bp.CancelSignalsError), "spec307", "3.7", "cancelled"),
    case("pooled-cancel-signals-error", f(bp.PooledCancelSignalsError), "spec307", "3.7",
         "cancelled"),
    case("second-cancel-signals-error", f(bp.SecondCancelSignalsError), "spec307", "3.7",
         "already cancelled"),
    case("pooled-second-cancel-signals-error", f(bp.PooledSecondCancelSignalsError), "spec307",
         "3.7", "already cancelled"),
    # -- 3.8 --------------------------------------------------------------------------------
    case("overwrites-demand", f(bp.OverwritesDemand), "spec308", "3.8", "of 10 within"),
    # -- 3.9 --------------------------------------------------------------------------------
    case("noop-request-zero", f(bp.Noop), "spec309_request_zero", "3.9", "no terminal signal"),
    case("ignores-request-zero", f(bp.IgnoresRequestZero), "spec309_request_zero", "3.9",
         "no terminal signal"),
    case("wrong-error-type", f(bp.WrongErrorType), "spec309_request_zero", "3.9",
         "observed on_error(RuntimeError"),
    case("raises-from-request", f(bp.RaisesFromRequest), "spec309_request_zero", "3.9",
         "raised ValueError", first_line=False),
    case("checks-only-zero", f(bp.ChecksOnlyZero), "required_spec309_request_negative", "3.9",
         "no terminal signal"),
    case("unexplained-error", f(bp.UnexplainedError), "optional_spec309", "3.9", "bad argument",
         verdict="optional_unsupported"),
    # -- 3.12 -------------------------------------------------------------------------------
    # A cancel() that is a no-op while demand is honoured passes 3.12 by design: the spec
    # lets requested elements still arrive after cancel ("eventually"), and under bounded
    # demand they all may. Under unbounded demand it does not stop: the 1.8 cases catch it.
    case("flushes-on-cancel", f(bp.FlushesOnCancel), "spec312", "3.12",
         "at most the 15 requested elements", first_line=False),
    # -- 3.13 -------------------------------------------------------------------------------
    case("registry", bp.Registry, "spec313", "3.13", "still referenced"),
    case("idle-timer-leak", f(bp.IdleTimerLeak), "spec313", "3.13", "still referenced"),
    # -- 3.15 / 3.16 ------------------------------------------------------------------------
    case("cancel-raises", f(bp.CancelRaises), "spec315", "3.15", "NotImplementedError"),
    case("request-raises-after-cancel", f(bp.RequestRaisesAfterCancel), "spec316", "3.16",
         "subscription is cancelled"),
    # -- 3.17 -------------------------------------------------------------------------------
    case("thirty-two-bit-demand", f(bp.ThirtyTwoBitDemand), "spec317_must_support_a_pending",
         "3.17", "does not fit in 32 bits"),
    case("errors-on-overflow", f(bp.ErrorsOnOverflow), "spec317_must_not_signal_on_error", "3.17",
         "OverflowError"),
    case("errors-at-exactly-max", f(bp.ErrorsAtExactlyMax), "spec317_must_support_a_cumulative",
         "3.17", "OverflowError"),
    case("pooled-errors-at-exactly-max", f(bp.PooledErrorsAtExactlyMax),
         "spec317_must_support_a_cumulative", "3.17", "OverflowError"),
    # -- hostile: floods the flood guard does not see ---------------------------------------
    case("ignores-cancel-unbounded", f(bp.IgnoresCancel), "spec317_must_not_signal_on_error",
         "1.8", "elements after cancel() and still flowing", within=2.0, test_limit=3.0),
    case("floods-after-complete", f(bp.FloodsAfterComplete),
         "spec317_must_support_a_pending", "1.7", "after on_complete", within=2.0, test_limit=3.0,
         first_line=False),
    # -- defects that hide in one calling context -------------------------------------------
    case("signals-while-on-subscribe-runs", f(bp.SignalsWhileOnSubscribeRuns),
         "required_spec103_must_not_signal_while_on_subscribe_is_still_running", "1.3",
         "while on_subscribe was running"),
    case("fails-only-first-subscriber", f(bp.RangeSubscription),
         "spec104_failed_publisher_must_signal_on_error_to_every_subscriber", "1.4",
         "no terminal signal", failed=bp.FailsOnlyFirstSubscriber),
    case("serves-after-request-zero-error", f(bp.ServesAfterRequestZeroError),
         "spec107_must_not_emit_further_signals_after_the_on_error_caused_by_request_zero", "1.7",
         "after on_error"),
    case("ignores-later-subscribers", bp.IgnoresLaterSubscribers,
         "spec109_must_issue_on_subscribe_to_a_later_subscriber_too", "1.9", "no on_subscribe"),
    case("nests-bulk-requests", f(bp.NestsBulkRequests),
         "spec303_must_not_allow_unbounded_recursion_when_requesting_several_from_on_next", "3.3",
         "calls deep"),
    case("takes-largest-early-request", f(bp.TakesLargestEarlyRequest),
         "spec308_requests_made_inside_on_subscribe_must_add_up", "3.8", "element 2 of 3"),
    case("keeps-subscriber-when-cancelled-inside-on-next", f(bp.KeepsSubscriberWhenCancelledInsideOnNext),
         "spec313_cancel_from_inside_on_next_must_make_the_publisher_drop_all_references", "3.13",
         "still referenced"),
    case("drops-requests-when-mailbox-full", f(bp.DropsRequestsWhenMailboxFull),
         "spec308_hundreds_of_requests_must_add_up", "3.8", "arrived"),
    case("ignores-non-positive-requests-while-delivering", f(bp.IgnoresNonPositiveRequestsWhileDelivering),
         "spec309_request_zero_from_inside_on_next_must_signal_value_error", "3.9",
         "no terminal signal"),
    # -- sanity: factories that ignore n (appended) ------------------------------------------
    # factory(0) giving an element: the empty stream is optional, as in the JVM TCK.
    case("at-least-one", f(bp.AtLeastOne), "optional_spec105", None,
         "factory(0) cannot make an empty stream", verdict="optional_unsupported"),
    case("capped-at-twenty", f(bp.CappedAtTwenty), "sanity_factory_n_produces_exactly_n", None,
         "then on_complete (the factory contract)"),
    case("capped-at-twenty-fuzz", f(bp.CappedAtTwenty), "fuzz_demand_cancel_orders", None,
         "from factory(64), then on_complete (the factory contract)"),
    case("one-too-many-from-three", f(bp.OneTooManyFromThree), "sanity_factory_n_produces_exactly_n",
         None, "exactly 3 element(s) from factory(3)"),
    case("one-too-many-from-three-fuzz", f(bp.OneTooManyFromThree), "fuzz_demand_cancel_orders", None,
         "exactly 3 element(s) from factory(3)"),
    # -- 2.13 from the publisher's side: raising subscribers (appended) -----------------------
    case("delivers-past-raising-on-next", f(bp.DeliversPastRaisingOnNext), "spec213_publisher_must_"
         "consider_the_subscription_cancelled_when_on_next_raises", "2.13", "element(s) followed"),
    case("unbound-after-raising-on-next", f(bp.UnboundAfterRaisingOnNext), "spec213_publisher_must_"
         "consider_the_subscription_cancelled_when_on_next_raises", "3.16", "UnboundLocalError"),
    case("own-error-when-on-subscribe-raises", bp.OwnErrorWhenOnSubscribeRaises, "spec213_publisher_"
         "must_consider_the_subscription_cancelled_when_a_terminal", "1.9", "subscriber rejected"),
    case("name-error-after-raising-on-error", f(bp.RangeSubscription), "spec213_publisher_must_"
         "consider_the_subscription_cancelled_when_a_terminal", "1.9", "NameError",
         failed=bp.NameErrorAfterRaisingOnError),
    case("request-undoes-cancel-made-while-delivering", f(bp.RequestUndoesCancelMadeWhileDelivering),
         "spec306_requests_after_a_cancel_made_inside_on_next_must_be_nops", "3.6",
         "after cancel() and request(5) made inside on_next"),
    # -- races on the subscription from several threads ------------------------------------
    # The unlocked decrement loses the other thread's additions more often than it adds an
    # element: either breaks a rule (3.8 or 1.1); the catalogue's own timing shows the first.
    case("unlocked-emission", f(bp.UnlockedEmission),
         "requests_from_another_thread_during_emission_must_add_up_exactly", "3.8",
         "a request lost to a concurrent emission"),
    # -- past internal sizes: turns, call counters, sums reaching 2**63-1 -------------------
    case("stops-when-one-owed-after-turn", f(bp.StopsWhenOneOwedAfterTurn),
         "spec308_long_streams_must_be_served_past_internal_batch_sizes", "3.8",
         "2048 arrived, then nothing"),
    case("drops-requests-after-sixteen-thousand-calls", f(bp.DropsRequestsAfterSixteenThousandCalls),
         "spec308_tens_of_thousands_of_requests_must_add_up", "3.8",
         "16384 arrived, then nothing"),
    *(case(label, f(cls), "spec317_must_support_an_unbounded_number_of_request_calls", "3.17",
           f"{arrived} arrived, then nothing")
      for label, cls, arrived in (
          ("drops-requests-past-a-pending-log-of-2**16", bp.DropsRequestsPastAPendingLogOfSixtyFourThousand,
           1 + 64 + 2**16),
          ("ignores-requests-past-100000-calls", bp.IgnoresRequestsPastAHundredThousandCalls, 100_000),
          ("sixteen-bit-call-counter", bp.SixteenBitCallCounter, 2**15 - 1))),
    *(case(label, f(cls), "a_request_made_as_the_emission_loop_exits_must_not_be_lost", "3.8",
           "then nothing for") for label, cls in (
        ("clears-its-work-count-on-exit", bp.ClearsItsWorkCountOnExit),
        ("leaves-its-turn-without-the-lock", bp.LeavesItsTurnWithoutTheLock),
        ("pooled-clears-its-work-count-on-exit", bp.PooledClearsItsWorkCountOnExit))),
    case("queues-its-source-and-leaves-in-two-steps", bp.QueuesItsSourceAndLeavesInTwoSteps,
         "a_request_made_as_the_emission_loop_exits_must_not_be_lost", "3.8", "then nothing for"),
    case("takes-off-one-too-many-after-subscribe", f(bp.TakesOffOneTooManyAfterSubscribe),
         "a_request_made_as_the_emission_loop_exits_must_not_be_lost", "1.3", "while on_next was running"),
    case("wraps-demand-like-a-java-long", f(bp.WrapsDemandLikeAJavaLong),
         "spec317_demand_reaching_long_max_value_from_a_small_outstanding_demand_must_keep_flowing",
         "3.17", "1 arrived, then nothing"),
    case("buffers-a-source-and-wraps-demand", bp.BuffersASourceAndWrapsDemand,
         "spec317_demand_reaching_long_max_value_from_a_small_outstanding_demand_must_keep_flowing",
         "3.17", "2 arrived, then nothing"),
    # -- terminal signals owed where a turn ends; demand of a raising on_subscribe (appended) --
    case("no-complete-when-a-turn-ends-at-the-last", f(bp.NoCompleteWhenATurnEndsAtTheLast),
         "required_spec105_must_signal_on_complete_when_finite_stream_terminates", "1.5",
         "of a further request(1)"),
    case("no-complete-when-an-odd-turn-ends-at-the-last", f(bp.NoCompleteWhenAnOddTurnEndsAtTheLast),
         "required_spec105_must_signal_on_complete_when_finite_stream_terminates", "1.5",
         "of a further request(1)"),
    case("skips-validation-once-unbounded", f(bp.SkipsValidationOnceUnbounded),
         "spec309_request_zero_from_inside_on_next_must_signal_value_error", "3.9",
         "with unbounded demand outstanding"),
    # On an event loop a cancel() runs only when the loop gets to it: one that never does is
    # said as such (3.5), not taken for elements after a cancel that happened (1.8).
    case("hogs-the-loop", bp.loop_factory(bp.HogsTheLoop), "required_spec108_cancelled_subscription_must_eventually_stop_"
         "being_signalled", "3.5", "has not run: the event loop was busy in the publisher", loop="asyncio",
         within=10.0),
    case("defers-a-cancel-from-another-thread", f(bp.DefersACancelFromAnotherThread),
         "required_spec108_cancelled_subscription_must_eventually_stop_being_signalled", "1.8",
         "elements after cancel()"),
    case("loses-the-error-when-a-turn-ends-owing-it", f(bp.LosesTheErrorWhenATurnEndsOwingIt),
         "spec309_request_zero_from_inside_on_next_must_signal_value_error", "3.9", "zero-at-1000"),
    case("serves-what-a-raising-on-subscribe-requested", bp.ServesWhatARaisingOnSubscribeRequested,
         "spec213_publisher_must_consider_the_subscription_cancelled_when_a_terminal", "2.13",
         "requesting-then-raising-on-subscribe"),
]


@pytest.fixture(autouse=True)
def _halt_leftovers() -> Iterator[None]:
    """Stop whatever a case's publisher left running (abandoned hostile loops included)."""
    yield
    bp.halt_all()


def _spec(param: object) -> Case:
    spec = getattr(param, "values", (None,))[0]
    assert isinstance(spec, Case)
    return spec


@pytest.mark.parametrize("spec", CASES)
def test_broken_publisher_fails_its_test(spec: Case) -> None:
    subject = PublisherSubject(spec.factory, spec.failed_factory, label=spec.id)
    settings = SETTINGS if spec.test_limit is None else SETTINGS.replace(test_limit=spec.test_limit)
    if spec.loop is not None:
        settings = settings.replace(loop=spec.loop)
    result = run_test(BY_NAME[spec.test], lambda env: PublisherContext(env, subject), settings,
                      subject_label=spec.id)
    message = result.message
    headline = message.splitlines()[0] if message else ""
    assert result.verdict == spec.verdict, f"{result.verdict}: {message[:2000]}"
    assert spec.cites in message, message[:2000]
    if spec.first_line:
        assert spec.cites in headline, headline
    assert spec.fragment in message, message[:2000]
    assert_cites_kept_records(result)
    if spec.within is not None:
        assert result.duration_s < spec.within, f"took {result.duration_s:.1f} s: {headline}"


def _reference_subjects() -> list[object]:
    return [
        pytest.param(PublisherSubject(range_publisher, failed_publisher), Settings(), id="range"),
        pytest.param(PublisherSubject(async_range_publisher, failed_publisher), Settings(),
                     id="async-range"),
        # The catalogue's own correct base, so each broken class differs from it by one defect.
        pytest.param(PublisherSubject(f(bp.RangeSubscription), FAILED), SETTINGS, id="base"),
        pytest.param(PublisherSubject(f(bp.PooledRangeSubscription), FAILED), SETTINGS,
                     id="pooled-base"),
    ]


@pytest.mark.parametrize("test", EXECUTABLE, ids=lambda t: t.name)
@pytest.mark.parametrize(("subject", "settings"), _reference_subjects())
def test_conforming_publisher_passes(test: TckTest, subject: PublisherSubject,
                                     settings: Settings) -> None:
    result = run_test(test, lambda env: PublisherContext(env, subject), settings,
                      subject_label=subject.label)
    assert result.verdict in ("passed", "not_applicable"), result.message[:2000]


def test_every_executable_test_has_a_case() -> None:
    aimed = {_spec(c).test for c in CASES}
    # The fuzz verification's broken cases are the order-dependent ones, in tests/verdicts/test_fuzz.py.
    assert [t.name for t in EXECUTABLE if t.name not in aimed and t.level != "fuzz"] == []


def test_every_rule_has_a_case() -> None:
    aimed = {rule_key(BY_NAME[_spec(c).test]) for c in CASES}
    assert sorted({rule_key(t) for t in EXECUTABLE} - aimed) == []


def test_case_ids_are_unique() -> None:
    ids = [_spec(c).id for c in CASES]
    assert len(ids) == len(set(ids))


def test_every_broken_class_is_used() -> None:
    """A class in the catalogue that no case exercises is a defect nobody checks."""
    source = Path(__file__).read_text(encoding="utf-8")
    unused = [
        name
        for name, obj in vars(bp).items()
        if isinstance(obj, type) and obj.__module__ == bp.__name__
        and (obj.__doc__ or "").startswith(("Rule", "Sanity"))
        and not re.search(rf"\bbp\.{name}\b", source)
    ]
    assert unused == []
