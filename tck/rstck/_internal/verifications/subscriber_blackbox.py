"""Blackbox subscriber verification: the rules of section 2 seen from the subscriber's publisher.

Each test subscribes a fresh subscriber from the user's factory to a ``ManualPublisher`` that
the test drives. The TCK sees only what the subscriber does to its subscription, and whether
its signal methods return; so besides the checks of each test, every test flags live a call
from inside the TCK's own on_complete/on_error (2.3), two threads inside the subscription at
once (2.7), a non-positive request (3.9) and a signal method that raises (2.13). Elements are
only ever sent within the demand the subscriber signalled.
"""

from __future__ import annotations

from ...contexts import BlackboxContext
from ...contexts import TckFailure
from ...errors import NotVerified
from ...registry import Registry
from ...results import Verdict
from ..matrix import EVERY_SUBSCRIBER_TEST
from ..matrix import Cover
from ..parity import SAME_UNTESTED
from ..parity import WAITS_TOO_WHY
from ..parity import Parity
from ..parity import bb
from ._racing import RACE_ROUNDS
from ._racing import RIVAL_HOLD_S
from ._racing import aggressive_switching
from ._racing import race_rounds
from ._racing import race_two_subscriptions

VERIFICATION = "subscriber_blackbox"
tck_test = Registry(VERIFICATION)
TESTS = tck_test.tests



# -- section 2: Subscriber ---------------------------------------------------------------------


# -- section 2: Subscriber ---------------------------------------------------------------------


@tck_test(
    "2.1", "required",
    parity=Parity(
        bb("required_spec201_blackbox_mustSignalDemandViaSubscriptionRequest"), "stricter",
        "the JVM test's send loop runs only while the subscription is cancelled, so it sends "
        "no element; this one sends up to 16 within the demand signalled, then on_complete, "
        "and each signal must return normally (2.13)."),
    covers=(
        Cover("2.1", "test"),
    ),
)
def required_spec201_blackbox_must_signal_demand_via_subscription_request(ctx: BlackboxContext) -> None:
    """After on_subscribe the subscriber must request; the TCK then sends what it asked for.

    Up to 16 elements go out, each within the demand signalled, then on_complete; each signal
    must return normally. If this fails, check that the subscriber calls request(n) once it has
    its subscription (or give a trigger_request hook if it waits for an outside event).
    """
    subscriber, upstream = ctx.stage()
    demand = ctx.requested(subscriber, upstream, "2.1")
    for _ in range(min(demand, 16)):
        upstream.send_next(rule="2.1")
        ctx.env.check()
    upstream.send_complete()
    ctx.at_close(upstream.settle)


tck_test.untested(
    "untested_spec202_blackbox_should_asynchronously_dispatch",
    "2.2",
    "a recommendation that depends on the subscriber's own judgement of its processing; a signal "
    "method that blocks its caller is failed in every test by the TCK's watchdog",
    parity=Parity(
        bb("untested_spec202_blackbox_shouldAsynchronouslyDispatch"), "same",
        SAME_UNTESTED),
)


def _terminal_inside(ctx: BlackboxContext, signal: str) -> None:
    subscriber, upstream = ctx.stage()
    ctx.warm_up(subscriber, upstream)
    upstream.settle()
    if signal == "on_complete":
        upstream.send_complete()
    else:
        upstream.send_error(TckFailure("failure signalled by the TCK (rule 2.3 test)"))
    ctx.at_close(upstream.settle)


@tck_test(
    "2.3", "required",
    parity=Parity(bb("required_spec203_blackbox_mustNotCallMethodsOnSubscriptionOrPublisherInOnComplete"), "same"),
    covers=(
        Cover("2.3", "terminal"),
    ),
)
def required_spec203_blackbox_must_not_call_methods_on_subscription_or_publisher_in_on_complete(
    ctx: BlackboxContext,
) -> None:
    """on_complete must not call request, cancel or subscribe (on the same thread, inside it).

    The TCK marks its own on_complete call per thread, so calls the subscriber makes from
    other threads meanwhile are not confused with it. If this fails, check that on_complete
    only records the end of the stream.
    """
    _terminal_inside(ctx, "on_complete")


@tck_test(
    "2.3", "required",
    parity=Parity(bb("required_spec203_blackbox_mustNotCallMethodsOnSubscriptionOrPublisherInOnError"), "same"),
    covers=(
        Cover("2.3", "terminal"),
    ),
)
def required_spec203_blackbox_must_not_call_methods_on_subscription_or_publisher_in_on_error(
    ctx: BlackboxContext,
) -> None:
    """on_error must not call request, cancel or subscribe (on the same thread, inside it)."""
    _terminal_inside(ctx, "on_error")


def _cancelled_after(ctx: BlackboxContext, signal: str) -> None:
    subscriber, upstream = ctx.stage()
    ctx.warm_up(subscriber, upstream, most=3)
    upstream.settle()
    if signal == "on_complete":
        upstream.send_complete()
    else:
        upstream.send_error(TckFailure("failure signalled by the TCK (rule 2.4 test)"))
    # Every request after the signal returned is judged as it begins (``_late``): one that only
    # finishes the subscriber's work on the elements it got before is no breach, whatever that
    # work takes; the watch looks on for a second.
    ctx.at_close(upstream.closing_after_terminal())


@tck_test(
    "2.4", "required",
    parity=Parity(
        bb("untested_spec204_blackbox_mustConsiderTheSubscriptionAsCancelledInAfterRecievingOnCompleteOrOnError"), "new",
        "once it has settled and received on_complete, the subscriber must request nothing "
        "more, bar one request per element it was still working off."),
    covers=(
        Cover("2.4", "terminal"),
    ),
)
def required_spec204_blackbox_must_consider_the_subscription_cancelled_after_on_complete(
    ctx: BlackboxContext,
) -> None:
    """Once it has settled and received on_complete, the subscriber must request nothing more.

    The TCK first lets the subscriber's own requests die down, so a request that follows is
    caused by the end of the stream; only a subscriber still working off elements sent before
    it (its thread in its code) may ask for more: one request per such element at most, and
    no more elements than those its demand had not yet covered (a credit timer that tops up
    what it already got is caught so). If this fails, check that a subscriber stops asking for elements (from any thread, e.g. a
    worker's "request more" or a retry timer) once the stream has ended.
    """
    _cancelled_after(ctx, "on_complete")


@tck_test(
    "2.4", "required",
    parity=Parity(
        bb("untested_spec204_blackbox_mustConsiderTheSubscriptionAsCancelledInAfterRecievingOnCompleteOrOnError"), "new",
        "the same after on_error."),
    covers=(
        Cover("2.4", "thread", 
            "a worker's late request is judged by the backlog it still had (in calls and in "
            "elements its demand had not covered) and by whether it is still at work, not by a "
            "window; in the whitebox, by its own report of the end: a refill or top-up after "
            "it is a breach"),
    ),
)
def required_spec204_blackbox_must_consider_the_subscription_cancelled_after_on_error(
    ctx: BlackboxContext,
) -> None:
    """Once it has settled and received on_error, the subscriber must request nothing more."""
    _cancelled_after(ctx, "on_error")


#: Elements sent at most before on_complete in the backlog test: past a worker's usual batch.
_BACKLOG = 256


@tck_test(
    "2.4", "required",
    parity=Parity(
        bb("untested_spec204_blackbox_mustConsiderTheSubscriptionAsCancelledInAfterRecievingOnCompleteOrOnError"), "new",
        "a subscriber handing elements to a worker is left with a backlog at the end of the "
        "stream; its \"request more\" may follow each processed element, but no request beyond "
        "those or once idle."),
)
def required_spec204_blackbox_must_not_request_after_on_complete_while_draining_a_backlog(
    ctx: BlackboxContext,
) -> None:
    """As much as the subscriber asks for, as fast as it asks, then on_complete at once.

    A subscriber that hands elements to a worker (or a queue, or a timer that grants credit)
    is left with a backlog when the stream ends. One that processes its signals in order
    receives on_complete only after that backlog, and may ask for more as it works it off:
    one request per element processed (or per batch) at most, however long an element takes,
    asking for no more elements than it still had to work off. Any request beyond those, or once it has gone idle (a quiet window with nothing sent to it
    and none of its threads in its code), breaks the rule. The TCK watches for one second
    after the end (a closing window, overlapped with the next tests), or until, once it is
    idle, no thread but its own is left to make a request (a worker, a timer, a pool's or a
    loop's thread keeps it watching). A subscriber that handles on_complete at once while a
    worker or a loop callback still refills for elements it got before looks, from outside,
    exactly like such an actor: the whitebox report of the end tells them apart (the whitebox
    backlog test). If this fails, check that the worker's "request more" and any periodic
    top-up or retry stop at the end of the stream.
    """
    subscriber, upstream = ctx.stage()
    ctx.trigger(subscriber)
    upstream.wait_demand()
    sub = upstream.subscription
    sent = 0
    while sent < _BACKLOG and sub.demand > 0 and sub.terminal is None and not sub.cancelled:
        upstream.send_next()
        sent += 1
    ctx.env.check()
    upstream.send_complete()
    ctx.at_close(upstream.closing_after_terminal())


@tck_test(
    "2.5", "required",
    parity=Parity(
        bb("required_spec205_blackbox_mustCallSubscriptionCancelIfItAlreadyHasAnSubscriptionAndReceivesAnotherOnSubscribeSignal"), "stricter",
        "the JVM test offers a second subscription right after subscribing; this one offers it "
        "once the subscriber has requested, then a third from another thread, and the "
        "subscriber must not trade its first for either (a subscriber keeping one subscription "
        "per thread adopts it)."),
    covers=(
        Cover("2.5", "later", 
            "a third from another thread too; cancelling the first as well is legal, keeping "
            "or using a new one is not"),
    ),
)
def required_spec205_blackbox_must_call_subscription_cancel_if_it_already_has_an_subscription_and_receives_another_on_subscribe_signal(
    ctx: BlackboxContext,
) -> None:
    """A second on_subscribe (from another publisher) must be answered by cancelling it.

    The second arrives once the subscriber has requested on its first, before any element
    (so a ``first()`` or ``take(n)`` still holds it); a third then comes from another thread
    (a subscriber that keeps its subscription per thread adopts that one). The subscriber
    must never request on either, and must not trade its first for one of them: cancelling
    its first as well (giving up on a protocol violation) is its right, and ends the test.
    If this fails, check that on_subscribe cancels the new subscription when one is active,
    whichever thread it comes on.
    """
    subscriber, upstream = ctx.stage()
    ctx.trigger(subscriber)
    if not ctx.settings.never_requests:
        upstream.wait_demand(until_cancelled=True)
    if (ctx.second_subscription(subscriber, upstream, ctx.upstream("second"), "2.5")
            and not upstream.subscription.cancelled
            and ctx.second_subscription(subscriber, upstream, ctx.upstream("third"), "2.5", elsewhere=True,
                                        settle=False)):
        # on_complete is legal whether or not the first was given up a moment after the third:
        # the closing window serves both (a request on the third is flagged whenever it comes).
        upstream.send_complete()
    ctx.at_close(upstream.settle)


@tck_test(
    "2.5", "stochastic",
    parity=Parity(
        (), "new",
        "two on_subscribe calls at the same moment, 24 times: a test and a store apart let "
        "both win and neither is cancelled, which no sequential test can show."),
)
def stochastic_spec205_blackbox_must_keep_one_of_two_subscriptions_offered_at_the_same_moment(
    ctx: BlackboxContext,
) -> None:
    """Two publishers call on_subscribe on one fresh subscriber at the same moment, 24 times.

    Rule 2.5 whoever wins: one subscription kept, the other cancelled. If this fails, check
    that on_subscribe decides which subscription is active in one step (under a lock): a test
    and a store apart let both calls win, and neither is ever cancelled.
    """
    if ctx.settings.skip_stochastic:
        raise NotVerified("stochastic verifications are switched off (skip_stochastic)", kind=Verdict.DESELECTED)
    race_two_subscriptions(ctx, ctx.subscriber)


tck_test.untested(
    "untested_spec206_blackbox_must_call_subscription_cancel_if_it_is_no_longer_valid",
    "2.6",
    "only the subscriber knows whether it still needs its subscription; from outside, a "
    "forgotten subscription looks like one that is still in use (a subscriber declared to take at "
    "most k elements is judged by the takes_at_most test)",
    parity=Parity(
        bb("untested_spec206_blackbox_mustCallSubscriptionCancelIfItIsNoLongerValid"), "same",
        SAME_UNTESTED),
)


@tck_test(
    "2.6", "required",
    parity=Parity(
        bb("untested_spec206_blackbox_mustCallSubscriptionCancelIfItIsNoLongerValid"), "new",
        "only for a subscriber declared to take at most k elements (takes_at_most): once it "
        "has them the subscription is no longer needed, so 2.6 asks for cancel(); undeclared, "
        "not applicable."),
    covers=(
        Cover("2.6", "test", 
            "only for a subscriber declared to take at most k elements (takes_at_most): "
            "otherwise only it knows whether it still needs its subscription, and one that "
            "stops requesting may still need it"),
    ),
)
def required_spec206_blackbox_must_cancel_once_it_has_all_the_elements_it_declared_it_takes(
    ctx: BlackboxContext,
) -> None:
    """A subscriber declared to take at most k elements (``takes_at_most``: a first() or
    take(k)) must cancel once it has them: it no longer needs the subscription (rule 2.6).

    The TCK sends the elements as the subscriber asks for them, up to k, then waits for its
    cancel(). Rule 2.6 binds what the subscriber no longer needs, which only it knows: one that
    simply stops requesting may still need its subscription (a pause, a buffer to drain), so
    without the declaration the test is not applicable, and one that cancels sooner is within
    its rights. (The JVM TCK leaves 2.6 untested; nothing is judged here that the subscriber
    did not declare.) If this fails, cancel the subscription once the last element wanted
    arrived (an ended loop, a found element), instead of just asking for no more.
    """
    wanted = ctx.settings.takes_at_most
    if wanted <= 0:
        raise NotVerified("needs a subscriber declared to take at most k elements (takes_at_most): "
                          "otherwise only it knows whether it still needs its subscription")
    ctx.needs_demand()
    subscriber, upstream = ctx.stage()
    ctx.trigger(subscriber)
    sub = upstream.subscription
    while sub.sent < wanted and not sub.cancelled and not sub.broken:
        if upstream.wait_demand(until_cancelled=True) <= 0 or sub.cancelled:
            break
        upstream.send_next(rule="2.6")
        ctx.env.check()
    if sub.cancelled or sub.broken:
        return  # it gave the subscription up: rule 2.6 asks no more
    if sub.sent < wanted:
        # Short of what it takes, it may still need the subscription: not for rule 2.6 to judge.
        raise NotVerified(f"the subscriber stopped asking after {sub.sent} of the {wanted} element(s) "
                          "it takes (takes_at_most); whether it still needs its subscription is its own")
    upstream.expect_cancel(
        rule="2.6", what=f"cancel() once it had the {wanted} element(s) it takes (takes_at_most)",
        hint="a subscriber that no longer needs its subscription must cancel it, not just stop requesting")
    ctx.at_close(upstream.settle)


@tck_test(
    "2.7", "stochastic",
    parity=Parity(
        bb("untested_spec207_blackbox_mustEnsureAllCallsOnItsSubscriptionTakePlaceFromTheSameThreadOrTakeCareOfSynchronization"), "new",
        "the subscription lingers in every request/cancel so that a second thread entering is "
        "seen, with some elements delivered while the subscriber's own thread is mid-way in "
        "its code."),
    covers=(
        Cover("2.7", "thread", EVERY_SUBSCRIBER_TEST),
    ),
)
def stochastic_spec207_blackbox_must_ensure_all_calls_on_its_subscription_take_place_from_the_same_thread_or_take_care_of_synchronization(
    ctx: BlackboxContext,
) -> None:
    """Up to 72 elements as demand allows, watching for two threads inside the subscription.

    The subscription stays inside every request/cancel a moment (up to a few milliseconds when
    the call comes from one of the subject's own threads, ending as soon as a second thread
    enters) so that a thread racing in is seen. Every third element goes out late: the
    subscriber's thread, back from its request, is paused a swept number of steps into its own
    code while the element is delivered, so that it lands where a delivery loop has given up its
    turn but still has work in hand. Calls from several threads one after the other are fine.
    If this fails, check that request and cancel are made from one thread at a time (a serial
    worker or a lock), and that a worker making calls holds its turn until it is done.
    """
    if ctx.settings.skip_stochastic:
        raise NotVerified("stochastic verifications are switched off (skip_stochastic)", kind=Verdict.DESELECTED)
    subscriber, upstream = ctx.stage(yield_s=0.0005, hold_s=RIVAL_HOLD_S)
    ctx.requested(subscriber, upstream)
    with aggressive_switching():
        race_rounds(ctx.env, upstream, RACE_ROUNDS)
    upstream.settle()
    upstream.send_complete()
    ctx.at_close(upstream.settle)


tck_test.untested(
    "untested_spec208_blackbox_must_be_prepared_to_receive_on_next_signals_after_having_called_subscription_cancel",
    "2.8",
    "needs the subscriber to cancel when the TCK asks; the whitebox verification checks it",
    parity=Parity(
        bb("untested_spec208_blackbox_mustBePreparedToReceiveOnNextSignalsAfterHavingCalledSubscriptionCancel"), "same",
        SAME_UNTESTED),
)


def _terminal_prepared(ctx: BlackboxContext, signal: str, rule: str, preceding_request: bool) -> None:
    subscriber, upstream = ctx.stage()
    if preceding_request:
        ctx.requested(subscriber, upstream, rule)
    if signal == "on_complete":
        upstream.send_complete(rule=rule)
    else:
        upstream.send_error(TckFailure(f"failure signalled by the TCK (rule {rule} test)"), rule=rule)
    ctx.env.check()
    ctx.at_close(upstream.settle)


@tck_test(
    "2.9", "required",
    parity=Parity(
        bb("required_spec209_blackbox_mustBePreparedToReceiveAnOnCompleteSignalWithPrecedingRequestCall"), "stricter",
        WAITS_TOO_WHY),
)
def required_spec209_blackbox_must_be_prepared_to_receive_an_on_complete_signal_with_preceding_request_call(
    ctx: BlackboxContext,
) -> None:
    """on_complete after the subscriber requested: it must return normally and cause no error.

    A quiet window follows, in which an exception on one of the subscriber's own threads
    (its asynchronous handling of the end of the stream) is caught too. If this fails,
    check the code that handles completion while demand is still outstanding.
    """
    _terminal_prepared(ctx, "on_complete", "2.9", True)


@tck_test(
    "2.9", "required",
    parity=Parity(
        bb("required_spec209_blackbox_mustBePreparedToReceiveAnOnCompleteSignalWithoutPrecedingRequestCall"), "stricter",
        WAITS_TOO_WHY),
    covers=(
        Cover("2.9", "terminal"),
    ),
)
def required_spec209_blackbox_must_be_prepared_to_receive_an_on_complete_signal_without_preceding_request_call(
    ctx: BlackboxContext,
) -> None:
    """on_complete straight after on_subscribe, before any request, must be handled.

    If this fails, check for handling that assumes an element or a request came first.
    """
    _terminal_prepared(ctx, "on_complete", "2.9", False)


@tck_test(
    "2.10", "required",
    parity=Parity(
        bb("required_spec210_blackbox_mustBePreparedToReceiveAnOnErrorSignalWithPrecedingRequestCall"), "stricter",
        WAITS_TOO_WHY),
)
def required_spec210_blackbox_must_be_prepared_to_receive_an_on_error_signal_with_preceding_request_call(
    ctx: BlackboxContext,
) -> None:
    """on_error after the subscriber requested: it must return normally and cause no error."""
    _terminal_prepared(ctx, "on_error", "2.10", True)


@tck_test(
    "2.10", "required",
    parity=Parity(
        bb("required_spec210_blackbox_mustBePreparedToReceiveAnOnErrorSignalWithoutPrecedingRequestCall"), "stricter",
        WAITS_TOO_WHY),
    covers=(
        Cover("2.10", "terminal"),
    ),
)
def required_spec210_blackbox_must_be_prepared_to_receive_an_on_error_signal_without_preceding_request_call(
    ctx: BlackboxContext,
) -> None:
    """on_error straight after on_subscribe, before any request, must be handled."""
    _terminal_prepared(ctx, "on_error", "2.10", False)


tck_test.untested(
    "untested_spec211_blackbox_must_make_sure_that_all_calls_on_its_methods_happen_before_the_processing_of_the_respective_events",
    "2.11",
    "processing happens inside the subscriber; the whitebox verification checks it from the "
    "probe's reports",
    parity=Parity(
        bb("untested_spec211_blackbox_mustMakeSureThatAllCallsOnItsMethodsHappenBeforeTheProcessingOfTheRespectiveEvents"), "same",
        SAME_UNTESTED),
)


@tck_test(
    "2.12", "required",
    parity=Parity(
        bb("untested_spec212_blackbox_mustNotCallOnSubscribeMoreThanOnceBasedOnObjectEquality"), "new",
        "when a caller breaks 2.12 by subscribing the same subscriber again, the subscriber "
        "must still cancel the repeat (2.5) and not reset itself onto it."),
    covers=(
        Cover("2.12", "later"),
    ),
)
def required_spec212_blackbox_subscribed_twice_must_keep_the_first_subscription_and_cancel_the_second(
    ctx: BlackboxContext,
) -> None:
    """The same subscriber subscribed to the same publisher again must reject the repeat.

    Rule 2.12 makes subscribing once the caller's duty and lets a subscriber assume it; when
    it is broken, the subscriber must still cancel the new subscription (2.5), never request
    on it, and not trade its first for it. If it goes on with its first, that one then still
    delivers and completes; cancelling its first as well (giving up) is its right. If this
    fails, check that on_subscribe does not reset the subscriber's state (adopting the new
    subscription) while one is active.
    """
    subscriber, upstream = ctx.stage()
    ctx.trigger(subscriber)
    demand = 0 if ctx.settings.never_requests else upstream.wait_demand(until_cancelled=True)
    if ctx.second_subscription(subscriber, upstream, upstream, "2.12"):
        if demand:
            upstream.send_next()
        upstream.send_complete()
        ctx.env.check()
    ctx.at_close(upstream.settle)


@tck_test(
    "2.13", "required",
    parity=Parity(
        bb("untested_spec213_blackbox_failingOnSignalInvocation"), "new",
        "every signal method called with valid arguments must return normally (2.13)."),
    covers=(
        Cover("2.13", "test"),
    ),
)
def required_spec213_blackbox_signal_methods_must_return_normally(ctx: BlackboxContext) -> None:
    """on_subscribe, on_next, on_complete and on_error with valid arguments must return normally.

    If this fails, check what the subscriber raises: failures in its processing must be
    handled inside it (and end with cancel()), never raised to the publisher.
    """
    subscriber, upstream = ctx.stage()
    ctx.warm_up(subscriber, upstream, most=3)
    upstream.send_complete()
    ctx.env.check()
    subscriber, failing = ctx.stage("failing")
    ctx.warm_up(subscriber, failing)
    failing.send_error(TckFailure("failure signalled by the TCK (rule 2.13 test)"))
    ctx.env.check()
    ctx.at_close(failing.settle)


@tck_test(
    "2.13", "required",
    parity=Parity(bb("required_spec213_blackbox_onSubscribe_mustThrowNullPointerExceptionWhenParametersAreNull"), "same"),
    covers=(
        Cover("2.13", "test"),
    ),
)
def required_spec213_blackbox_on_subscribe_must_raise_type_error_when_parameters_are_none(
    ctx: BlackboxContext,
) -> None:
    """on_subscribe(None) on a fresh subscriber must raise TypeError (Java's NullPointerException)."""
    subscriber = ctx.subscriber()
    ctx.expect_type_error("on_subscribe(None)", subscriber.on_subscribe, None)


@tck_test(
    "2.13", "required",
    parity=Parity(bb("required_spec213_blackbox_onNext_mustThrowNullPointerExceptionWhenParametersAreNull"), "same"),
)
def required_spec213_blackbox_on_next_must_raise_type_error_when_parameters_are_none(
    ctx: BlackboxContext,
) -> None:
    """on_next(None) on a subscribed subscriber must raise TypeError."""
    subscriber, _ = ctx.stage()
    ctx.expect_type_error("on_next(None)", subscriber.on_next, None)


@tck_test(
    "2.13", "required",
    parity=Parity(bb("required_spec213_blackbox_onError_mustThrowNullPointerExceptionWhenParametersAreNull"), "same"),
)
def required_spec213_blackbox_on_error_must_raise_type_error_when_parameters_are_none(
    ctx: BlackboxContext,
) -> None:
    """on_error(None) on a subscribed subscriber must raise TypeError."""
    subscriber, _ = ctx.stage()
    ctx.expect_type_error("on_error(None)", subscriber.on_error, None)


# -- section 3, from the subscriber's side -----------------------------------------------------


tck_test.untested(
    "untested_spec301_blackbox_must_not_be_called_outside_subscriber_context",
    "3.1",
    "who holds a subscription when request or cancel is called cannot be seen from outside; "
    "calls from two threads at once are caught (rule 2.7)",
    parity=Parity(
        bb("untested_spec301_blackbox_mustNotBeCalledOutsideSubscriberContext"), "same",
        SAME_UNTESTED),
)


tck_test.untested(
    "untested_spec308_blackbox_request_must_register_given_number_elements_to_be_produced",
    "3.8",
    "needs the TCK to ask the subscriber for a given demand; the whitebox verification checks it",
    parity=Parity(
        bb("untested_spec308_blackbox_requestMustRegisterGivenNumberElementsToBeProduced"), "same",
        SAME_UNTESTED),
)


@tck_test(
    "3.10", "required",
    parity=Parity(
        bb("untested_spec310_blackbox_requestMaySynchronouslyCallOnNextOnSubscriber"), "new",
        "3.10 lets a publisher call on_next inside request(), even inside on_subscribe; a "
        "subscriber must handle it (2.13: return normally), which the JVM TCK never exercises."),
    covers=(
        Cover("2.7", "on_next", "same-thread nesting is serial and allowed"),
        Cover("3.10", "on_subscribe", "a processor is given downstream demand through the puppet"),
    ),
)
def required_spec310_blackbox_must_be_prepared_for_on_next_delivered_synchronously_inside_request(
    ctx: BlackboxContext,
) -> None:
    """Elements delivered inside request(), even inside on_subscribe, must be handled.

    Rule 3.10 lets a publisher call on_next before request() returns; up to 10 elements are
    delivered that way. If this fails, check that the subscriber stores its subscription
    (and any state on_next needs) before calling request, and holds no lock that on_next also
    takes while it calls request.
    """
    ctx.needs_demand()
    subscriber, upstream = ctx.stage(count=10, inline=True, end=None, signal_rule="3.10")
    ctx.trigger(subscriber)
    upstream.expect_request(rule="2.1")
    upstream.wait_sent(10)
    upstream.settle()
    ctx.env.check()
    upstream.send_complete()
    ctx.at_close(upstream.settle)


@tck_test(
    "3.11", "required",
    parity=Parity(
        bb("untested_spec311_blackbox_requestMaySynchronouslyCallOnCompleteOrOnError"), "new",
        "3.11 lets a publisher terminate inside request(); a subscriber must handle "
        "on_complete and on_error arriving there."),
    covers=(
        Cover("2.9", "on_subscribe"),
        Cover("3.11", "on_subscribe"),
    ),
)
def required_spec311_blackbox_must_be_prepared_for_on_complete_or_on_error_delivered_synchronously_inside_request(
    ctx: BlackboxContext,
) -> None:
    """on_complete, then (on a second subscriber) on_error, delivered inside request(), handled.

    Rule 3.11 lets a publisher terminate before request() returns: one element and
    on_complete, or on_error at once. If this fails, check the subscriber's handling of an
    end of stream that arrives while it is still inside its own request call.
    """
    ctx.needs_demand()
    for end, count in (("complete", 1), ("error", 0)):
        subscriber, upstream = ctx.stage(
            f"inline-{end}", count=count, inline=True, end=end, signal_rule="3.11",
            error=TckFailure("failure signalled inside request() by the TCK (rule 3.11 test)"),
        )
        ctx.trigger(subscriber)
        upstream.expect_request(rule="2.1")
        upstream.wait_sent(count + 1)
        ctx.env.check()
        upstream.settle()


tck_test.untested(
    "untested_spec314_blackbox_cancel_may_cause_the_publisher_to_shutdown_if_no_other_subscription_exists",
    "3.14",
    "a permission of publishers; here the TCK plays the publisher",
    parity=Parity(
        bb("untested_spec314_blackbox_cancelMayCauseThePublisherToShutdownIfNoOtherSubscriptionExists"), "same",
        SAME_UNTESTED),
)


tck_test.untested(
    "untested_spec315_blackbox_cancel_must_not_throw_exception_and_must_signal_on_error",
    "3.15",
    "an obligation of the subscription, which the TCK plays here; the publisher verification "
    "checks it",
    parity=Parity(
        bb("untested_spec315_blackbox_cancelMustNotThrowExceptionAndMustSignalOnError"), "same",
        SAME_UNTESTED),
)


tck_test.untested(
    "untested_spec316_blackbox_request_must_not_throw_exception_and_must_on_error_the_subscriber",
    "3.16",
    "an obligation of the subscription, which the TCK plays here; the publisher verification "
    "checks it",
    parity=Parity(
        bb("untested_spec316_blackbox_requestMustNotThrowExceptionAndMustOnErrorTheSubscriber"), "same",
        SAME_UNTESTED),
)


@tck_test(
    None, "fuzz",
    parity=Parity(
        (), "new",
        "generated legal signal orders (bursts, other threads, inside request(), early "
        "terminals), shrunk to the smallest that breaks a rule; the JVM TCK sends fixed orders "
        "only."),
)
def fuzz_signal_orders(ctx: BlackboxContext) -> None:
    """Generated legal signal orders, shrunk to the smallest scenario that breaks a rule.

    The TCK's upstream sends elements within demand in bursts or one by one, from the test
    thread, another thread or inside request(), and on_complete/on_error at any point. Every
    live check holds (2.3, 2.7, 3.9, 2.13), and the subscriber keeps asking for elements as it
    does when fed one at a time (2.1). If this fails, replay the printed scenario
    (--rs-fuzz-replay) and follow its numbered steps.
    """
    from ...fuzz import deselected

    deselected(ctx.settings)
    from ..fuzz.verify import fuzz_subscriber

    fuzz_subscriber(ctx, whitebox=False)
