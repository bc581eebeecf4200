"""Where each test stands against the JVM TCK (reactive-streams-jvm, ``tck/``): data only.

Test name -> the JVM TCK test(s) it corresponds to and how the two compare:

- ``same``: it checks what the JVM test checks (in the Python binding's terms);
- ``stricter``: it checks that and more, and ``why`` says what more and which sentence asks it;
- ``looser``: it accepts something the JVM test rejects, and ``why`` says which sentence allows it;
- ``new``: the JVM TCK has no executable test for it (none, or only an ``untested_`` stub), and
  ``why`` says what it catches.

docs/verifications.md shows it under each test; tests/quality checks that every registered
test has an entry and that no entry outlives its test.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Relation = Literal["same", "stricter", "looser", "new"]
RELATIONS: tuple[Relation, ...] = ("same", "stricter", "looser", "new")
JVM_TCK_URL = "https://github.com/reactive-streams/reactive-streams-jvm/tree/master/tck/src/main/java/org/reactivestreams/tck"


@dataclass(frozen=True)
class Parity:
    """One test's JVM counterparts (``Class.method``), its relation to them, and why."""

    jvm: tuple[str, ...]
    relation: Relation
    why: str = ""


def _pub(*methods: str) -> tuple[str, ...]:
    return tuple(f"PublisherVerification.{m}" for m in methods)


def _bb(*methods: str) -> tuple[str, ...]:
    return tuple(f"SubscriberBlackboxVerification.{m}" for m in methods)


def _wb(*methods: str) -> tuple[str, ...]:
    return tuple(f"SubscriberWhiteboxVerification.{m}" for m in methods)


def _proc(*methods: str) -> tuple[str, ...]:
    return tuple(f"IdentityProcessorVerification.{m}" for m in methods)


_NONE: tuple[str, ...] = ()
_SAME_UNTESTED = "neither kit can observe it; both report it as untested"
_WAITS_TOO: Relation = "stricter"
_WAITS_TOO_WHY = (
    "the JVM test ends once the signal has returned; this one then watches a quiet window in which "
    "an exception on one of the subscriber's own threads (its asynchronous handling of the signal) "
    "fails it too: the rule asks the subscriber to be prepared, not only to return."
)

PARITY: dict[str, Parity] = {
    # -- publisher (IdentityProcessorVerification forwards the same JVM tests) ---------------
    "required_sanity_factory_1_produces_exactly_1_element": Parity(
        _pub("required_createPublisher1MustProduceAStreamOfExactly1Element"), "same"),
    "required_sanity_factory_3_produces_exactly_3_elements": Parity(
        _pub("required_createPublisher3MustProduceAStreamOfExactly3Elements"), "same"),
    "required_sanity_factory_n_produces_exactly_n_elements_for_every_size_used": Parity(
        _NONE, "new",
        "every factory size the kit uses is checked up front, asked for one more element than n, so "
        "that a factory ignoring n is reported as such, not as the rule (1.5, 3.8) a later test trips."),
    "required_spec101_request_must_result_in_the_correct_number_of_elements": Parity(
        _pub("required_spec101_subscriptionRequestMustResultInTheCorrectNumberOfProducedElements"), "stricter",
        "the JVM test requests 1, then 1 and 2, from the test thread; this one also requests one at a "
        "time from inside on_next, where request() runs inside the publisher's own emission and "
        "takes another path through its demand accounting, and rule 1.1 holds \"at all times\"."),
    "required_spec102_may_signal_fewer_than_requested_and_terminate": Parity(
        _pub("required_spec102_maySignalLessThanRequestedAndTerminateSubscription"), "same"),
    "stochastic_spec103_must_signal_on_methods_sequentially": Parity(
        _pub("stochastic_spec103_mustSignalOnMethodsSequentially"), "stricter",
        "the JVM test only notices two threads in a signal when they happen to meet; this one pauses "
        "inside every signal so that a second thread racing in is seen, and alternates one-by-one "
        "with bulk requests, each a different emission path of a multi-threaded publisher."),
    "stochastic_spec101_requests_from_another_thread_during_emission_must_add_up_exactly": Parity(
        _NONE, "new",
        "requests from two threads (one after the other, as rule 2.7 lets a subscriber make them) "
        "landing while an emission runs: a demand update lost to a concurrent decrement delivers "
        "one more than requested (1.1) or one fewer (3.8); every JVM test requests from one thread."),
    "required_spec104_must_signal_on_error_when_failing": Parity(
        _pub("optional_spec104_mustSignalOnErrorWhenFails"), "same",
        "the JVM test is named optional but fails, not skips, when the failed publisher misbehaves."),
    "required_spec105_must_signal_on_complete_when_finite_stream_terminates": Parity(
        _pub("required_spec105_mustSignalOnCompleteWhenFiniteStreamTerminates"), "stricter",
        "the JVM test ends a 3-element stream; this one also ends streams of 33 to 64, 1000 and 1024 "
        "elements asked for in one request of exactly their length, so that the demand runs out "
        "where an internal batch or turn ends, the place a publisher forgets to look for the end "
        "(with the same one further request(1) the JVM's requestEndOfStream makes)."),
    "optional_spec105_empty_stream_must_terminate_by_signalling_on_complete": Parity(
        _pub("optional_spec105_emptyStreamMustTerminateBySignallingOnComplete"), "same"),
    "required_spec106_must_consider_subscription_cancelled_after_on_complete": Parity(
        _pub("untested_spec106_mustConsiderSubscriptionCancelledAfterOnErrorOrOnCompleteHasBeenCalled"), "new",
        "after on_complete, request(1), request(0), request(-1) and cancel() must be NOPs (3.6, 3.7): "
        "a request(0) still honoured would draw an on_error that 3.9 owes only while not cancelled."),
    "required_spec106_must_consider_subscription_cancelled_after_on_error": Parity(
        _pub("untested_spec106_mustConsiderSubscriptionCancelledAfterOnErrorOrOnCompleteHasBeenCalled"), "new",
        "the same after the failed publisher's on_error, which the JVM TCK leaves unchecked."),
    "required_spec107_must_not_emit_further_signals_once_on_complete_has_been_signalled": Parity(
        _pub("required_spec107_mustNotEmitFurtherSignalsOnceOnCompleteHasBeenSignalled"), "same"),
    "required_spec107_must_not_emit_further_signals_once_on_error_has_been_signalled": Parity(
        _pub("untested_spec107_mustNotEmitFurtherSignalsOnceOnErrorHasBeenSignalled"), "new",
        "run on the failed publisher, as the JVM stub's own text suggests and never did: "
        "nothing may follow its on_error, even on request."),
    "required_spec108_cancelled_subscription_must_eventually_stop_being_signalled": Parity(
        _pub("untested_spec108_possiblyCanceledSubscriptionShouldNotReceiveOnErrorOrOnCompleteSignals"), "new",
        "a cancel from inside the first on_next of an unboundedly requested long stream: the signals "
        "must stop within a named bound of time or elements (what was in flight may still come)."),
    "required_spec109_subscribe_must_return_normally": Parity(
        _pub("untested_spec109_subscribeShouldNotThrowNonFatalThrowable"), "new",
        "subscribe() must return normally (1.9), for the regular and the failed publisher; the JVM "
        "TCK only notices a raise where its own helpers happen to call subscribe."),
    "required_spec109_subscribe_none_must_raise_type_error": Parity(
        _pub("required_spec109_subscribeThrowNPEOnNullSubscriber"), "stricter",
        "the JVM test asks the regular publisher only; this one also asks the failed one, which has "
        "nowhere but its caller to report a missing subscriber either."),
    "required_spec109_must_issue_on_subscribe_for_non_null_subscriber": Parity(
        _pub("required_spec109_mustIssueOnSubscribeForNonNullSubscriber"), "same"),
    "required_spec109_may_reject_subscribe_with_on_error_after_on_subscribe": Parity(
        _pub("required_spec109_mayRejectCallsToSubscribeIfPublisherIsUnableOrUnwillingToServeThem"
             "RejectionMustTriggerOnErrorAfterOnSubscribe"), "same"),
    "untested_spec110_subscribe_may_be_called_many_times_with_different_subscribers": Parity(
        _pub("untested_spec110_rejectASubscriptionRequestIfTheSameSubscriberSubscribesTwice"), "same",
        _SAME_UNTESTED),
    "optional_spec111_may_support_multi_subscribe": Parity(
        _pub("optional_spec111_maySupportMultiSubscribe"), "stricter",
        "the JVM test only waits for both on_subscribe calls and a quiet window; this one also checks that the first "
        "subscriber still works after the second arrived, since dropping it is not supporting two."),
    "optional_spec111_registered_subscribers_must_receive_on_next_or_on_complete": Parity(
        _pub("optional_spec111_registeredSubscribersMustReceiveOnNextOrOnCompleteSignals"), "same"),
    "optional_spec111_multicast_must_produce_the_same_elements_in_the_same_sequence_when_requesting_one_by_one":
        Parity(_pub("optional_spec111_multicast_mustProduceTheSameElementsInTheSameSequenceToAllOfIts"
                    "SubscribersWhenRequestingOneByOne"), "same"),
    "optional_spec111_multicast_must_produce_the_same_elements_in_the_same_sequence_when_requesting_many_upfront":
        Parity(_pub("optional_spec111_multicast_mustProduceTheSameElementsInTheSameSequenceToAllOfIts"
                    "SubscribersWhenRequestingManyUpfront"), "same"),
    "optional_spec111_multicast_must_produce_the_same_elements_in_the_same_sequence_when_requesting_many_upfront"
    "_and_complete": Parity(
        _pub("optional_spec111_multicast_mustProduceTheSameElementsInTheSameSequenceToAllOfIts"
             "SubscribersWhenRequestingManyUpfrontAndCompleteAsExpected"), "same"),
    "untested_spec301_request_and_cancel_must_only_be_called_inside_subscriber_context": Parity(
        _NONE, "same", _SAME_UNTESTED),
    "required_spec302_must_allow_synchronous_request_calls_from_on_next_and_on_subscribe": Parity(
        _pub("required_spec302_mustAllowSynchronousRequestCallsFromOnNextAndOnSubscribe"), "stricter",
        "the JVM test only checks that no error follows the requests made inside on_subscribe and "
        "on_next; this one also requires the 6 elements they ask for, as a request() from inside a "
        "signal that returns but is lost does not \"allow\" the call (and breaks 3.8)."),
    "required_spec303_must_not_allow_unbounded_recursion": Parity(
        _pub("required_spec303_mustNotAllowUnboundedRecursion"), "same"),
    "untested_spec304_request_should_not_perform_heavy_computations": Parity(
        _pub("untested_spec304_requestShouldNotPerformHeavyComputations"), "same", _SAME_UNTESTED),
    "required_spec305_cancel_must_be_idempotent_and_thread_safe": Parity(
        _pub("untested_spec305_cancelMustNotSynchronouslyPerformHeavyComputation"), "new",
        "cancel() from eight threads at once must return promptly and normally, then silence: rule "
        "3.5's \"idempotent\" and \"thread-safe\", which no JVM test exercises."),
    "required_spec306_after_subscription_is_cancelled_request_must_be_nops": Parity(
        _pub("required_spec306_afterSubscriptionIsCancelledRequestMustBeNops"), "stricter",
        "the JVM test requests only positive amounts after the cancel; this one also requests 0, "
        "because 3.6 makes every request after cancel a NOP and 3.9's on_error is owed only "
        "\"While the Subscription is not cancelled\"."),
    "required_spec307_after_subscription_is_cancelled_additional_cancels_must_be_nops": Parity(
        _pub("required_spec307_afterSubscriptionIsCancelledAdditionalCancelationsMustBeNops"), "same"),
    "required_spec308_request_must_register_given_number_elements_to_be_produced": Parity(
        _NONE, "new",
        "the JVM TCK checks 3.8 only on subscribers (whitebox); this one makes ten request(1) calls "
        "in a row on a publisher and expects ten elements, as a subscription that overwrites "
        "demand instead of adding it delivers fewer."),
    "required_spec309_request_zero_must_signal_value_error": Parity(
        _pub("required_spec309_requestZeroMustSignalIllegalArgumentException"), "same"),
    "required_spec309_request_negative_number_must_signal_value_error": Parity(
        _pub("required_spec309_requestNegativeNumberMustSignalIllegalArgumentException"), "stricter",
        "the JVM test asks once with a random negative int; this one asks with both ends of the "
        "range, -1 and -2**63, so that a check catching only part of \"<= 0\" shows every time."),
    "optional_spec309_request_negative_number_should_signal_value_error_with_explanation": Parity(
        _pub("optional_spec309_requestNegativeNumberMaySignalIllegalArgumentExceptionWithSpecificMessage"),
        "looser",
        "the JVM test accepts only messages containing \"3.9\", \"non-positive subscription request\" "
        "or \"negative subscription request\"; this one accepts any that names the bound "
        "(\"positive\", \"negative\", \"> 0\", ...), as the SHOULD asks for an explanation, not for words."),
    "untested_spec310_request_may_synchronously_call_on_next_on_subscriber": Parity(
        _NONE, "same", "a permission; neither kit's publisher tests can fail on it"),
    "untested_spec311_request_may_synchronously_call_on_complete_or_on_error": Parity(
        _NONE, "same", "a permission; neither kit's publisher tests can fail on it"),
    "required_spec312_cancel_must_make_the_publisher_eventually_stop_signalling": Parity(
        _pub("required_spec312_cancelMustMakeThePublisherToEventuallyStopSignaling"), "same"),
    "required_spec313_cancel_must_make_the_publisher_eventually_drop_all_references_to_the_subscriber": Parity(
        _pub("required_spec313_cancelMustMakeThePublisherEventuallyDropAllReferencesToTheSubscriber"), "same"),
    "untested_spec314_cancel_may_cause_the_publisher_to_shutdown_if_no_other_subscription_exists": Parity(
        _NONE, "same", "a permission; neither kit's publisher tests can fail on it"),
    "required_spec315_cancel_must_return_normally": Parity(
        _wb("untested_spec315_cancelMustNotThrowExceptionAndMustSignalOnError"), "new",
        "cancel() must return normally before any request, after one and after completion; the JVM "
        "TCK has only a subscriber-side stub for 3.15."),
    "required_spec316_request_must_return_normally": Parity(
        _wb("untested_spec316_requestMustNotThrowExceptionAndMustOnErrorTheSubscriber"), "new",
        "request() must return normally for 1, 2**63-1, 0, -1, after cancel and after completion; "
        "the JVM TCK has only a subscriber-side stub for 3.16."),
    "required_spec317_must_support_a_pending_element_count_up_to_long_max_value": Parity(
        _pub("required_spec317_mustSupportAPendingElementCountUpToLongMaxValue"), "same"),
    "required_spec317_must_support_a_cumulative_pending_element_count_up_to_long_max_value": Parity(
        _pub("required_spec317_mustSupportACumulativePendingElementCountUpToLongMaxValue"), "stricter",
        "the JVM test makes its three requests from the test thread, where a synchronous publisher "
        "delivers between them; this one makes them inside on_subscribe, so that the whole sum of "
        "2**63-1 is outstanding at once."),
    "required_spec317_must_not_signal_on_error_when_pending_above_long_max_value": Parity(
        _pub("required_spec317_mustNotSignalOnErrorWhenPendingAboveLongMaxValue"), "stricter",
        "the JVM test only checks that no on_error comes; this one also requires the ten elements the "
        "overflowing demand covers, as a demand past 2**63-1 is \"effectively unbounded\", not void."),
    "required_spec103_must_not_signal_while_on_subscribe_is_still_running": Parity(
        _pub("stochastic_spec103_mustSignalOnMethodsSequentially"), "stricter",
        "a request made inside on_subscribe, which then keeps running for a window: a signal from "
        "another thread overlaps it every time, where the JVM's stochastic test sees that race "
        "only when it happens to fall in a few microseconds."),
    "required_spec104_failed_publisher_must_signal_on_error_to_every_subscriber": Parity(
        _pub("optional_spec104_mustSignalOnErrorWhenFails"), "stricter",
        "the JVM test subscribes once; this one subscribes three times in turn, as a failed "
        "publisher whose error is a one-shot flag leaves every later subscriber waiting forever."),
    "required_spec107_must_not_emit_further_signals_after_the_on_error_caused_by_request_zero": Parity(
        _pub("untested_spec107_mustNotEmitFurtherSignalsOnceOnErrorHasBeenSignalled"), "new",
        "after the on_error that answers request(0) or request(-1), a further request(5) must yield "
        "nothing: a publisher that signals the 3.9 error without marking itself done revives."),
    "required_spec109_must_issue_on_subscribe_to_a_later_subscriber_too": Parity(
        _pub("required_spec109_mustIssueOnSubscribeForNonNullSubscriber"), "stricter",
        "the JVM test subscribes one subscriber; this one also subscribes a second while the first "
        "is active, as 1.9 owes on_subscribe to every subscriber, not only the first."),
    "required_spec308_a_cancel_must_not_starve_another_subscriber": Parity(
        _NONE, "new",
        "after one of two subscribers cancels, the other's demand must still be served or the stream "
        "ended for it: a publisher that stops a shared source on any cancel leaves it waiting forever."),
    "required_spec308_a_subscriber_after_the_last_cancel_must_be_served_or_told": Parity(
        _NONE, "new",
        "3.14 lets a publisher shut down when its last subscriber cancels, but a later subscriber's "
        "request(1) must then be answered (served, or on_error/on_complete), never met with silence."),
    "required_spec303_must_not_allow_unbounded_recursion_when_requesting_several_from_on_next": Parity(
        _pub("required_spec303_mustNotAllowUnboundedRecursion"), "stricter",
        "the JVM test requests 1 from each on_next; this one requests 3, the pattern of a subscriber "
        "topping up its buffer, which a publisher serving it in a loop of its own turns into one "
        "level of recursion per request."),
    "required_spec308_requests_made_inside_on_subscribe_must_add_up": Parity(
        _NONE, "new",
        "three request(1) calls inside on_subscribe must bring exactly three elements: a publisher "
        "that keeps only one of the requests made before subscribe() returns delivers fewer."),
    "required_spec313_cancel_from_inside_on_next_must_make_the_publisher_drop_all_references": Parity(
        _pub("required_spec313_cancelMustMakeThePublisherEventuallyDropAllReferencesToTheSubscriber"), "stricter",
        "the JVM test cancels from the test thread; this one also cancels from inside on_next, where "
        "the cancel takes another path through the publisher (a flag, a deferred clean-up)."),
    "required_spec308_hundreds_of_requests_must_add_up": Parity(
        _NONE, "new",
        "300 request(1) calls in a row must bring 300 elements: a bounded mailbox or small counter "
        "that drops or wraps requests shows only past a few calls."),
    "required_spec306_requests_after_a_cancel_made_inside_on_next_must_be_nops": Parity(
        _pub("required_spec306_afterSubscriptionIsCancelledRequestMustBeNops"), "stricter",
        "the JVM test cancels and requests from the test thread; this one does both inside on_next, "
        "where a cancel is often only noted for later and the request that follows undoes it."),
    "required_spec309_request_zero_from_inside_on_next_must_signal_value_error": Parity(
        _pub("required_spec309_requestZeroMustSignalIllegalArgumentException"), "stricter",
        "the JVM test requests 0 from the test thread; this one does it from inside on_next, where "
        "a re-entrant request() often only adds demand, at batch boundaries and with unbounded "
        "demand outstanding: 3.9 holds on every path while the subscription is not cancelled."),
    "required_spec213_publisher_must_consider_the_subscription_cancelled_when_on_next_raises": Parity(
        _wb("untested_spec213_failingOnSignalInvocation"), "new",
        "2.13's last sentence binds the caller: once on_next raises, its subscription counts as "
        "cancelled, so no element may follow and request() must still return normally."),
    "required_spec213_publisher_must_consider_the_subscription_cancelled_when_a_terminal_or_on_subscribe_raises":
        Parity(_wb("untested_spec213_failingOnSignalInvocation"), "new",
               "the same for a raising on_subscribe, on_complete and on_error: subscribe() and "
               "request() return normally and no element follows."),
    "required_spec308_long_streams_must_be_served_past_internal_batch_sizes": Parity(
        _NONE, "new",
        "demand crossing every batch, turn or buffer size from 16 to 2048 just under, at and just "
        "over it must keep elements coming: an emission ending a turn with demand left stalls there."),
    "required_spec308_tens_of_thousands_of_requests_must_add_up": Parity(
        _NONE, "new",
        "20,000 request(1) calls in a row must bring 20,000 elements: a small counter of calls or "
        "pending requests (a byte, 16 bits, a bounded log) fails only past some count."),
    "required_spec317_demand_reaching_long_max_value_from_a_small_outstanding_demand_must_keep_flowing": Parity(
        _pub("required_spec317_mustSupportACumulativePendingElementCountUpToLongMaxValue",
             "required_spec317_mustNotSignalOnErrorWhenPendingAboveLongMaxValue"), "stricter",
        "the JVM tests reach 2**63-1 with nothing yet delivered, or only check for on_error past it; "
        "this one reaches or passes it from on_next with a few elements outstanding and requires "
        "the stream to keep flowing, where a sum that wraps as a Java long does goes negative and stops."),
    "fuzz_demand_cancel_orders": Parity(
        _NONE, "new",
        "generated request/cancel orders from several threads and re-entrantly, shrunk to the "
        "smallest that breaks a rule; the JVM TCK runs fixed scenarios only."),
    # -- subscriber, blackbox ----------------------------------------------------------------
    "required_spec201_blackbox_must_signal_demand_via_subscription_request": Parity(
        _bb("required_spec201_blackbox_mustSignalDemandViaSubscriptionRequest"), "stricter",
        "the JVM test's send loop runs only while the subscription is cancelled, so it sends no "
        "element; this one sends up to 16 within the demand signalled, then on_complete, and each "
        "signal must return normally (2.13)."),
    "untested_spec202_blackbox_should_asynchronously_dispatch": Parity(
        _bb("untested_spec202_blackbox_shouldAsynchronouslyDispatch"), "same", _SAME_UNTESTED),
    "required_spec203_blackbox_must_not_call_methods_on_subscription_or_publisher_in_on_complete": Parity(
        _bb("required_spec203_blackbox_mustNotCallMethodsOnSubscriptionOrPublisherInOnComplete"), "same"),
    "required_spec203_blackbox_must_not_call_methods_on_subscription_or_publisher_in_on_error": Parity(
        _bb("required_spec203_blackbox_mustNotCallMethodsOnSubscriptionOrPublisherInOnError"), "same"),
    "required_spec204_blackbox_must_consider_the_subscription_cancelled_after_on_complete": Parity(
        _bb("untested_spec204_blackbox_mustConsiderTheSubscriptionAsCancelledInAfterRecievingOnCompleteOrOnError"),
        "new",
        "once it has settled and received on_complete, the subscriber must request nothing more, "
        "bar one request per element it was still working off."),
    "required_spec204_blackbox_must_consider_the_subscription_cancelled_after_on_error": Parity(
        _bb("untested_spec204_blackbox_mustConsiderTheSubscriptionAsCancelledInAfterRecievingOnCompleteOrOnError"),
        "new", "the same after on_error."),
    "required_spec204_blackbox_must_not_request_after_on_complete_while_draining_a_backlog": Parity(
        _bb("untested_spec204_blackbox_mustConsiderTheSubscriptionAsCancelledInAfterRecievingOnCompleteOrOnError"),
        "new",
        "a subscriber handing elements to a worker is left with a backlog at the end of the stream; "
        "its \"request more\" may follow each processed element, but no request beyond those or "
        "once idle."),
    "required_spec205_blackbox_must_call_subscription_cancel_if_it_already_has_an_subscription_and_receives_another"
    "_on_subscribe_signal": Parity(
        _bb("required_spec205_blackbox_mustCallSubscriptionCancelIfItAlreadyHasAnSubscriptionAndReceives"
            "AnotherOnSubscribeSignal"), "stricter",
        "the JVM test offers a second subscription right after subscribing; this one offers it once the "
        "subscriber has requested, then a third from another thread, and the subscriber must not "
        "trade its first for either (a subscriber keeping one subscription per thread adopts it)."),
    "untested_spec206_blackbox_must_call_subscription_cancel_if_it_is_no_longer_valid": Parity(
        _bb("untested_spec206_blackbox_mustCallSubscriptionCancelIfItIsNoLongerValid"), "same", _SAME_UNTESTED),
    "stochastic_spec205_blackbox_must_keep_one_of_two_subscriptions_offered_at_the_same_moment": Parity(
        _NONE, "new",
        "two on_subscribe calls at the same moment, 24 times: a test and a store apart let both "
        "win and neither is cancelled, which no sequential test can show."),
    "stochastic_spec207_blackbox_must_ensure_all_calls_on_its_subscription_take_place_from_the_same_thread_or"
    "_take_care_of_synchronization": Parity(
        _bb("untested_spec207_blackbox_mustEnsureAllCallsOnItsSubscriptionTakePlaceFromTheSameThreadOr"
            "TakeCareOfSynchronization"), "new",
        "the subscription lingers in every request/cancel so that a second thread entering is seen, "
        "with some elements delivered while the subscriber's own thread is mid-way in its code."),
    "untested_spec208_blackbox_must_be_prepared_to_receive_on_next_signals_after_having_called_subscription_cancel":
        Parity(_bb("untested_spec208_blackbox_mustBePreparedToReceiveOnNextSignalsAfterHavingCalled"
                   "SubscriptionCancel"), "same", _SAME_UNTESTED),
    "required_spec209_blackbox_must_be_prepared_to_receive_an_on_complete_signal_with_preceding_request_call": Parity(
        _bb("required_spec209_blackbox_mustBePreparedToReceiveAnOnCompleteSignalWithPrecedingRequestCall"),
        _WAITS_TOO, _WAITS_TOO_WHY),
    "required_spec209_blackbox_must_be_prepared_to_receive_an_on_complete_signal_without_preceding_request_call":
        Parity(_bb("required_spec209_blackbox_mustBePreparedToReceiveAnOnCompleteSignalWithoutPrecedingRequestCall"),
               _WAITS_TOO, _WAITS_TOO_WHY),
    "required_spec210_blackbox_must_be_prepared_to_receive_an_on_error_signal_with_preceding_request_call": Parity(
        _bb("required_spec210_blackbox_mustBePreparedToReceiveAnOnErrorSignalWithPrecedingRequestCall"),
        _WAITS_TOO, _WAITS_TOO_WHY),
    "required_spec210_blackbox_must_be_prepared_to_receive_an_on_error_signal_without_preceding_request_call": Parity(
        _bb("required_spec210_blackbox_mustBePreparedToReceiveAnOnErrorSignalWithoutPrecedingRequestCall"),
        _WAITS_TOO, _WAITS_TOO_WHY),
    "untested_spec211_blackbox_must_make_sure_that_all_calls_on_its_methods_happen_before_the_processing_of_the"
    "_respective_events": Parity(
        _bb("untested_spec211_blackbox_mustMakeSureThatAllCallsOnItsMethodsHappenBeforeTheProcessingOfThe"
            "RespectiveEvents"), "same", _SAME_UNTESTED),
    "required_spec212_blackbox_subscribed_twice_must_keep_the_first_subscription_and_cancel_the_second": Parity(
        _bb("untested_spec212_blackbox_mustNotCallOnSubscribeMoreThanOnceBasedOnObjectEquality"), "new",
        "when a caller breaks 2.12 by subscribing the same subscriber again, the subscriber must "
        "still cancel the repeat (2.5) and not reset itself onto it."),
    "required_spec213_blackbox_signal_methods_must_return_normally": Parity(
        _bb("untested_spec213_blackbox_failingOnSignalInvocation"), "new",
        "every signal method called with valid arguments must return normally (2.13)."),
    "required_spec213_blackbox_on_subscribe_must_raise_type_error_when_parameters_are_none": Parity(
        _bb("required_spec213_blackbox_onSubscribe_mustThrowNullPointerExceptionWhenParametersAreNull"), "same"),
    "required_spec213_blackbox_on_next_must_raise_type_error_when_parameters_are_none": Parity(
        _bb("required_spec213_blackbox_onNext_mustThrowNullPointerExceptionWhenParametersAreNull"), "same"),
    "required_spec213_blackbox_on_error_must_raise_type_error_when_parameters_are_none": Parity(
        _bb("required_spec213_blackbox_onError_mustThrowNullPointerExceptionWhenParametersAreNull"), "same"),
    "untested_spec301_blackbox_must_not_be_called_outside_subscriber_context": Parity(
        _bb("untested_spec301_blackbox_mustNotBeCalledOutsideSubscriberContext"), "same", _SAME_UNTESTED),
    "untested_spec308_blackbox_request_must_register_given_number_elements_to_be_produced": Parity(
        _bb("untested_spec308_blackbox_requestMustRegisterGivenNumberElementsToBeProduced"), "same", _SAME_UNTESTED),
    "required_spec310_blackbox_must_be_prepared_for_on_next_delivered_synchronously_inside_request": Parity(
        _bb("untested_spec310_blackbox_requestMaySynchronouslyCallOnNextOnSubscriber"), "new",
        "3.10 lets a publisher call on_next inside request(), even inside on_subscribe; a subscriber "
        "must handle it (2.13: return normally), which the JVM TCK never exercises."),
    "required_spec311_blackbox_must_be_prepared_for_on_complete_or_on_error_delivered_synchronously_inside_request":
        Parity(_bb("untested_spec311_blackbox_requestMaySynchronouslyCallOnCompleteOrOnError"), "new",
               "3.11 lets a publisher terminate inside request(); a subscriber must handle on_complete "
               "and on_error arriving there."),
    "untested_spec314_blackbox_cancel_may_cause_the_publisher_to_shutdown_if_no_other_subscription_exists": Parity(
        _bb("untested_spec314_blackbox_cancelMayCauseThePublisherToShutdownIfNoOtherSubscriptionExists"), "same",
        _SAME_UNTESTED),
    "untested_spec315_blackbox_cancel_must_not_throw_exception_and_must_signal_on_error": Parity(
        _bb("untested_spec315_blackbox_cancelMustNotThrowExceptionAndMustSignalOnError"), "same", _SAME_UNTESTED),
    "untested_spec316_blackbox_request_must_not_throw_exception_and_must_on_error_the_subscriber": Parity(
        _bb("untested_spec316_blackbox_requestMustNotThrowExceptionAndMustOnErrorTheSubscriber"), "same",
        _SAME_UNTESTED),
    "fuzz_signal_orders": Parity(
        _NONE, "new",
        "generated legal signal orders (bursts, other threads, inside request(), early terminals), "
        "shrunk to the smallest that breaks a rule; the JVM TCK sends fixed orders only."),
    # -- subscriber, whitebox (IdentityProcessorVerification forwards the same JVM tests) ----
    "required_sanity_exercise_whitebox_happy_path": Parity(_wb("required_exerciseWhiteboxHappyPath"), "same"),
    "required_spec201_must_signal_demand_via_subscription_request": Parity(
        _wb("required_spec201_mustSignalDemandViaSubscriptionRequest"), "stricter",
        "the JVM test sends the element once the request arrives and stops there; this one also "
        "requires the subscriber to report processing it to the probe, so that a puppet whose "
        "request reaches the subscription while the element never reaches the processing shows."),
    "untested_spec202_should_asynchronously_dispatch": Parity(
        _wb("untested_spec202_shouldAsynchronouslyDispatch"), "same", _SAME_UNTESTED),
    "required_spec203_must_not_call_methods_on_subscription_or_publisher_in_on_complete": Parity(
        _wb("required_spec203_mustNotCallMethodsOnSubscriptionOrPublisherInOnComplete"), "same"),
    "required_spec203_must_not_call_methods_on_subscription_or_publisher_in_on_error": Parity(
        _wb("required_spec203_mustNotCallMethodsOnSubscriptionOrPublisherInOnError"), "same"),
    "required_spec204_must_consider_the_subscription_cancelled_after_on_complete": Parity(
        _wb("untested_spec204_mustConsiderTheSubscriptionAsCancelledInAfterRecievingOnCompleteOrOnError"), "new",
        "once it has processed on_complete the subscriber must request nothing more, the puppet "
        "never being pulled after the end."),
    "required_spec204_must_consider_the_subscription_cancelled_after_on_error": Parity(
        _wb("untested_spec204_mustConsiderTheSubscriptionAsCancelledInAfterRecievingOnCompleteOrOnError"), "new",
        "the same after on_error."),
    "required_spec205_must_call_subscription_cancel_if_it_already_has_an_subscription_and_receives_another_on"
    "_subscribe_signal": Parity(
        _wb("required_spec205_mustCallSubscriptionCancelIfItAlreadyHasAnSubscriptionAndReceivesAnother"
            "OnSubscribeSignal"), "stricter",
        "the JVM test offers one second subscription and checks it is cancelled; this one also offers "
        "a third from another thread and checks the first still carries the puppet's request and "
        "its element, so that a subscriber adopting the newcomer fails."),
    "untested_spec206_must_call_subscription_cancel_if_it_is_no_longer_valid": Parity(
        _wb("untested_spec206_mustCallSubscriptionCancelIfItIsNoLongerValid"), "same", _SAME_UNTESTED),
    "stochastic_spec205_must_keep_one_of_two_subscriptions_offered_at_the_same_moment": Parity(
        _NONE, "new",
        "two on_subscribe calls at the same moment, 24 times: a test and a store apart let both "
        "win and neither is cancelled, which no sequential test can show."),
    "stochastic_spec207_must_ensure_all_calls_on_its_subscription_take_place_from_the_same_thread_or_take_care_of"
    "_synchronization": Parity(
        _wb("untested_spec207_mustEnsureAllCallsOnItsSubscriptionTakePlaceFromTheSameThreadOrTakeCareOf"
            "Synchronization"), "new",
        "the subscription lingers in every request/cancel so that a second thread entering is seen, "
        "over four rounds of puppet demand."),
    "stochastic_spec207_a_puppet_pulled_from_any_thread_must_not_overlap_the_subscribers_own_calls": Parity(
        _wb("untested_spec207_mustEnsureAllCallsOnItsSubscriptionTakePlaceFromTheSameThreadOrTakeCareOf"
            "Synchronization"), "new",
        "for a subscriber declaring that its request/cancel may be called from any thread: those calls "
        "must not overlap the ones it makes from its signals, nor drop demand."),
    "required_spec208_must_be_prepared_to_receive_on_next_signals_after_having_called_subscription_cancel": Parity(
        _wb("required_spec208_mustBePreparedToReceiveOnNextSignalsAfterHavingCalledSubscriptionCancel"), "same"),
    "required_spec209_must_be_prepared_to_receive_an_on_complete_signal_with_preceding_request_call": Parity(
        _wb("required_spec209_mustBePreparedToReceiveAnOnCompleteSignalWithPrecedingRequestCall"), "same"),
    "required_spec209_must_be_prepared_to_receive_an_on_complete_signal_without_preceding_request_call": Parity(
        _wb("required_spec209_mustBePreparedToReceiveAnOnCompleteSignalWithoutPrecedingRequestCall"), "same"),
    "required_spec210_must_be_prepared_to_receive_an_on_error_signal_with_preceding_request_call": Parity(
        _wb("required_spec210_mustBePreparedToReceiveAnOnErrorSignalWithPrecedingRequestCall"), "same"),
    "required_spec210_must_be_prepared_to_receive_an_on_error_signal_without_preceding_request_call": Parity(
        _wb("required_spec210_mustBePreparedToReceiveAnOnErrorSignalWithoutPrecedingRequestCall"), "same"),
    "required_spec211_must_make_sure_that_all_calls_on_its_methods_happen_before_the_processing_of_the_respective"
    "_events": Parity(
        _wb("untested_spec211_mustMakeSureThatAllCallsOnItsMethodsHappenBeforeTheProcessingOfTheRespective"
            "Events"), "new",
        "20 elements from two alternating threads, then on_complete, must each be processed once and "
        "the completion after them: a field the next signal overwrites loses or repeats one."),
    "required_spec212_subscribed_twice_must_keep_the_first_subscription_and_cancel_the_second": Parity(
        _wb("untested_spec212_mustNotCallOnSubscribeMoreThanOnceBasedOnObjectEquality_specViolation"), "new",
        "when a caller breaks 2.12 by subscribing the same subscriber again, the subscriber must "
        "still cancel the repeat (2.5) and keep its first working."),
    "required_spec213_signal_methods_must_return_normally": Parity(
        _wb("untested_spec213_failingOnSignalInvocation"), "new",
        "every signal method called with valid arguments must return normally (2.13)."),
    "required_spec213_on_subscribe_must_raise_type_error_when_parameters_are_none": Parity(
        _wb("required_spec213_onSubscribe_mustThrowNullPointerExceptionWhenParametersAreNull"), "same"),
    "required_spec213_on_next_must_raise_type_error_when_parameters_are_none": Parity(
        _wb("required_spec213_onNext_mustThrowNullPointerExceptionWhenParametersAreNull"), "same"),
    "required_spec213_on_error_must_raise_type_error_when_parameters_are_none": Parity(
        _wb("required_spec213_onError_mustThrowNullPointerExceptionWhenParametersAreNull"), "same"),
    "untested_spec301_whitebox_must_not_be_called_outside_subscriber_context": Parity(
        _wb("untested_spec301_mustNotBeCalledOutsideSubscriberContext"), "same", _SAME_UNTESTED),
    "required_spec308_whitebox_request_must_register_given_number_elements_to_be_produced": Parity(
        _wb("required_spec308_requestMustRegisterGivenNumberElementsToBeProduced"), "stricter",
        "the JVM test lets 2 elements through and then only pulls the puppet for 3 more; this one "
        "also sends those 3, then 300 back to back after a puppet request of 300, which leaves a "
        "subscriber handing signals to a worker far past its turn or batch size, where demand it "
        "drops or caps shows."),
    "required_spec310_whitebox_must_be_prepared_for_on_next_delivered_synchronously_inside_request": Parity(
        _wb("untested_spec310_requestMaySynchronouslyCallOnNextOnSubscriber"), "new",
        "3.10 lets a publisher call on_next inside request(), even inside on_subscribe; all five "
        "elements delivered there must be processed."),
    "required_spec311_whitebox_must_be_prepared_for_on_complete_or_on_error_delivered_synchronously_inside_request":
        Parity(_wb("untested_spec311_requestMaySynchronouslyCallOnCompleteOrOnError"), "new",
               "3.11 lets a publisher terminate inside request(); on_complete and on_error arriving "
               "there must be processed."),
    "untested_spec314_whitebox_cancel_may_cause_the_publisher_to_shutdown_if_no_other_subscription_exists": Parity(
        _wb("untested_spec314_cancelMayCauseThePublisherToShutdownIfNoOtherSubscriptionExists"), "same",
        _SAME_UNTESTED),
    "untested_spec315_whitebox_cancel_must_not_throw_exception_and_must_signal_on_error": Parity(
        _wb("untested_spec315_cancelMustNotThrowExceptionAndMustSignalOnError"), "same", _SAME_UNTESTED),
    "untested_spec316_whitebox_request_must_not_throw_exception_and_must_on_error_the_subscriber": Parity(
        _wb("untested_spec316_requestMustNotThrowExceptionAndMustOnErrorTheSubscriber"), "same", _SAME_UNTESTED),
    # -- processor's own ---------------------------------------------------------------------
    "required_spec104_must_call_on_error_on_all_its_subscribers_if_it_encounters_a_non_recoverable_error": Parity(
        _proc("required_spec104_mustCallOnErrorOnAllItsSubscribersIfItEncountersANonRecoverableError"), "looser",
        "the JVM test demands the upstream's error on both subscribers; this one also accepts a "
        "processor that recovers, treats the failed subscription as cancelled and still serves its "
        "subscribers, as rule 4.2 allows (\"MAY choose to recover an onError signal\")."),
    "required_spec201_processor_must_request_from_upstream_for_elements_that_have_been_requested_long_ago": Parity(
        _proc("required_mustRequestFromUpstreamForElementsThatHaveBeenRequestedLongAgo"), "same"),
    "required_spec201_processor_must_keep_requesting_upstream_for_subscribers_at_different_paces": Parity(
        _NONE, "new",
        "a fast and a slow subscriber over 1393 elements: the room the slow one frees in a full "
        "buffer must be asked of the upstream again, or the stream stalls with demand outstanding."),
    "required_spec401_must_obey_the_publisher_and_subscriber_contracts_while_relaying_a_stream": Parity(
        _NONE, "new",
        "the JVM TCK covers 4.1 only by running the publisher and subscriber tests on the processor; "
        "this one relays five elements with both sides checked at once, demand reaching upstream."),
    "required_spec402_must_immediately_pass_on_on_error_events_received_from_its_upstream_or_recover": Parity(
        _proc("mustImmediatelyPassOnOnErrorEventsReceivedFromItsUpstreamToItsDownstream"), "looser",
        "the JVM test demands the error downstream; this one also accepts a recovery that treats "
        "the failed subscription as cancelled and still serves the subscriber, as rule 4.2 allows."),
    "required_spec308_processor_must_honour_demand_signalled_before_its_upstream_subscription": Parity(
        _NONE, "new",
        "demand a downstream subscriber signals before the processor has an upstream must be "
        "forwarded once it has one, not lost."),
    "stochastic_spec105_a_subscriber_joining_as_the_stream_ends_must_still_be_told": Parity(
        _NONE, "new",
        "a subscriber joining at the moment the upstream completes (or the last subscriber cancels) "
        "must still be told: joining and ending decided in two steps leave it waiting forever."),
    "stochastic_spec308_an_element_arriving_while_a_subscriber_requests_must_still_be_delivered": Parity(
        _NONE, "new",
        "request(1) downstream racing on_next from upstream: every request must be served, where a "
        "delivery loop left a moment after the other side found it busy strands an element."),
    # -- added with the checks of the missed classes ----------------------------------------
    "required_spec317_must_support_an_unbounded_number_of_request_calls": Parity(
        _NONE, "new",
        "\"A Subscription MUST support an unbounded number of calls to request\": the JVM's 3.17 tests "
        "make a few calls of large sums; this one makes 131,073 request(1) calls from inside on_next "
        "(65,537 through a processor), past a 16-bit call counter or a bounded log of pending requests."),
    "stochastic_spec308_a_request_made_as_the_emission_loop_exits_must_not_be_lost": Parity(
        _NONE, "new",
        "a request made while the delivering thread is stopped a swept number of lines or bytecode "
        "instructions after on_next returns must still be served: a drain that clears its work "
        "counter outright (wip = 0, not wip -= missed) loses it; the JVM TCK has no race hunts."),
    "required_spec206_blackbox_must_cancel_once_it_has_all_the_elements_it_declared_it_takes": Parity(
        _bb("untested_spec206_blackbox_mustCallSubscriptionCancelIfItIsNoLongerValid"), "new",
        "only for a subscriber declared to take at most k elements (takes_at_most): once it has them "
        "the subscription is no longer needed, so 2.6 asks for cancel(); undeclared, not applicable."),
    "required_spec206_must_cancel_once_it_has_all_the_elements_it_declared_it_takes": Parity(
        _wb("untested_spec206_mustCallSubscriptionCancelIfItIsNoLongerValid"), "new",
        "only for a subscriber declared to take at most k elements (takes_at_most): once it has them "
        "the subscription is no longer needed, so 2.6 asks for cancel(); undeclared, not applicable."),
    "required_spec204_must_not_request_once_it_processed_on_complete_after_a_backlog": Parity(
        _wb("untested_spec204_mustConsiderTheSubscriptionAsCancelledInAfterRecievingOnCompleteOrOnError"), "new",
        "elements then on_complete at once: a request made after the subscriber itself reported "
        "processing the end (a refill or a timer's top-up) breaks 2.4; requests while it still works "
        "off the elements before the end are its backlog, not a breach."),
    "required_spec206_single_subscriber_processor_must_cancel_its_upstream_once_its_subscriber_cancelled": Parity(
        _NONE, "new",
        "a processor that declared one subscriber (max_subscribers=1) no longer needs its upstream once "
        "that subscriber cancelled, so 2.6 asks it to cancel; one that can take new subscribers is "
        "not judged (the rule's note on processors)."),
}


def missing(names: list[str]) -> list[str]:
    """The registered test names without an entry."""
    return [n for n in names if n not in PARITY]


def stale(names: list[str]) -> list[str]:
    """The entries whose test no longer exists."""
    known = set(names)
    return [n for n in PARITY if n not in known]
