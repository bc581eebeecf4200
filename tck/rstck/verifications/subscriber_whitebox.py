"""Whitebox subscriber verification: section 2 with the subscriber's own account of its processing.

The factory ``f(probe)`` builds the subscriber around a ``WhiteboxProbe``: it registers a
puppet (through which the TCK makes it request or cancel) and reports each signal it has
*processed*. The TCK drives a ``ManualPublisher`` upstream, and waits for those reports, so an
asynchronous subscriber is verified on what its worker did, not on its signal methods having
returned. Everything the blackbox verification flags live (2.3, 2.7, 3.9, 2.13) is flagged here
too, and each report is matched against the signals really sent (2.11).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ..clock import starved_wait
from ..contexts import TckFailure
from ..contexts import WhiteboxStage
from ..contexts import WhiteboxStages
from ..errors import NotVerified
from ..errors import RuleViolation
from ..manual import ManualSubscription
from ..matrix import EVERY_SUBSCRIBER_TEST
from ..matrix import Cover
from ..parity import SAME_UNTESTED
from ..parity import Parity
from ..parity import wb
from ..registry import Registry
from ..registry import TckTest
from ..results import Level
from ..results import Verdict
from ..whitebox import WhiteboxProbe
from ..worker import Worker
from ._racing import PREEMPT_WAIT_S
from ._racing import PROMPT_WAIT_S
from ._racing import RIVAL_HOLD_S
from ._racing import PausedSide
from ._racing import aggressive_switching
from ._racing import out_of_time
from ._racing import paced_deadline
from ._racing import race
from ._racing import race_rounds
from ._racing import race_two_subscriptions

VERIFICATION = "subscriber_whitebox"
tck_test = Registry(VERIFICATION)
TESTS = tck_test.tests


def _failure(rule: str) -> TckFailure:
    return TckFailure(f"failure signalled by the TCK (rule {rule} test)")


# -- sanity ------------------------------------------------------------------------------------


@tck_test(
    None, "required",
    parity=Parity(wb("required_exerciseWhiteboxHappyPath"), "same"),
)
def required_sanity_exercise_whitebox_happy_path(ctx: WhiteboxStages) -> None:
    """Request, receive and process two elements through the puppet and probe, then cancel.

    If this fails, check the test wrapper first: the puppet must make the subscriber request
    and cancel, and every processed element must be reported with ``with probe.next(x):``.
    """
    ctx.needs_demand()
    stage = ctx.stage()
    stage.request(1)
    stage.expect_demand()
    x = stage.send_next()
    stage.probe.expect_next(x)
    stage.request(1)
    stage.expect_demand()
    y = stage.send_next()
    stage.probe.expect_next(y)
    stage.cancel()
    stage.expect_upstream_cancel(needed=False)
    ctx.at_close(stage.upstream.settle)


# -- section 2: Subscriber ---------------------------------------------------------------------


@tck_test(
    "2.1", "required",
    parity=Parity(
        wb("required_spec201_mustSignalDemandViaSubscriptionRequest"), "stricter",
        "the JVM test sends the element once the request arrives and stops there; this one "
        "also requires the subscriber to report processing it to the probe, so that a puppet "
        "whose request reaches the subscription while the element never reaches the processing "
        "shows."),
    covers=(
        Cover("2.1", "test"),
    ),
)
def required_spec201_must_signal_demand_via_subscription_request(ctx: WhiteboxStages) -> None:
    """puppet.request(1) must turn into request(n) on the subscription; the element is processed.

    If this fails, check that the subscriber signals demand with request(n) (rule 2.1) and
    that the puppet's request reaches it.
    """
    ctx.needs_demand()
    stage = ctx.stage()
    stage.request(1)
    stage.expect_demand(rule="2.1")
    x = stage.send_next(rule="2.1")
    stage.probe.expect_next(x, rule="2.1")
    ctx.at_close(stage.upstream.settle)


tck_test.untested(
    "untested_spec202_should_asynchronously_dispatch",
    "2.2",
    "a recommendation that depends on the subscriber's own judgement of its processing; a signal "
    "method that blocks its caller is failed in every test by the TCK's watchdog",
    parity=Parity(
        wb("untested_spec202_shouldAsynchronouslyDispatch"), "same",
        SAME_UNTESTED),
)


def _no_calls_inside(ctx: WhiteboxStages, signal: str) -> None:
    # The terminal signal needs no demand: it is sent whether or not the subscriber asked
    # (one may cancel inside on_subscribe, or never request by design); an element only if it did.
    stage = ctx.stage()
    if not ctx.settings.never_requests:
        stage.request(1)
        if stage.upstream.wait_demand(until_cancelled=True) > 0:
            x = stage.send_next()
            stage.probe.expect_next(x)
    stage.upstream.settle()
    if signal == "on_complete":
        stage.send_complete()
        stage.probe.expect_complete()
    else:
        error = _failure("2.3")
        stage.send_error(error)
        stage.probe.expect_error(error)
    ctx.at_close(stage.upstream.settle)


@tck_test(
    "2.3", "required",
    parity=Parity(wb("required_spec203_mustNotCallMethodsOnSubscriptionOrPublisherInOnComplete"), "same"),
    covers=(
        Cover("2.3", "terminal"),
    ),
)
def required_spec203_must_not_call_methods_on_subscription_or_publisher_in_on_complete(
    ctx: WhiteboxStages,
) -> None:
    """on_complete must not call request, cancel or subscribe (on the same thread, inside it).

    The TCK marks its own on_complete call per thread, so calls the subscriber makes from
    other threads meanwhile are not confused with it. If this fails, check that on_complete
    only records the end of the stream.
    """
    _no_calls_inside(ctx, "on_complete")


@tck_test(
    "2.3", "required",
    parity=Parity(wb("required_spec203_mustNotCallMethodsOnSubscriptionOrPublisherInOnError"), "same"),
    covers=(
        Cover("2.3", "terminal"),
    ),
)
def required_spec203_must_not_call_methods_on_subscription_or_publisher_in_on_error(
    ctx: WhiteboxStages,
) -> None:
    """on_error must not call request, cancel or subscribe (on the same thread, inside it)."""
    _no_calls_inside(ctx, "on_error")


def _cancelled_after(ctx: WhiteboxStages, signal: str) -> None:
    stage = ctx.stage()
    if not ctx.settings.never_requests:
        stage.request(2)
        stage.expect_demand()
        x = stage.send_next()
        stage.probe.expect_next(x)
    stage.upstream.settle()
    # Every request after the signal returned is judged as it begins (``_late``): one that only
    # finishes the subscriber's work on what came before is no breach, whatever that work
    # takes; once it reported processing the end itself, none is explained.
    if signal == "on_complete":
        stage.send_complete()
        stage.probe.expect_complete()
    else:
        error = _failure("2.4")
        stage.send_error(error)
        stage.probe.expect_error(error)
    stage.subscription.seal()
    ctx.at_close(stage.upstream.closing_after_terminal())


@tck_test(
    "2.4", "required",
    parity=Parity(
        wb("untested_spec204_mustConsiderTheSubscriptionAsCancelledInAfterRecievingOnCompleteOrOnError"), "new",
        "once it has processed on_complete the subscriber must request nothing more, the "
        "puppet never being pulled after the end."),
)
def required_spec204_must_consider_the_subscription_cancelled_after_on_complete(
    ctx: WhiteboxStages,
) -> None:
    """After processing on_complete the subscriber must request nothing more.

    The TCK first lets the subscriber's own requests die down, and never pulls the puppet
    after the end, so a request that follows is the subscriber's own doing: one made once it
    reported processing on_complete (``with probe.complete():``) is a breach however soon,
    one before that only if no element still to be worked off explains it. If this fails,
    check that nothing (a worker's "request more", a timer) requests once the stream ended.
    """
    _cancelled_after(ctx, "on_complete")


@tck_test(
    "2.4", "required",
    parity=Parity(
        wb("untested_spec204_mustConsiderTheSubscriptionAsCancelledInAfterRecievingOnCompleteOrOnError"), "new",
        "the same after on_error."),
    covers=(
        Cover("2.4", "terminal"),
    ),
)
def required_spec204_must_consider_the_subscription_cancelled_after_on_error(
    ctx: WhiteboxStages,
) -> None:
    """After processing on_error the subscriber must request nothing more."""
    _cancelled_after(ctx, "on_error")


#: What the whitebox backlog test pulls the puppet for, and the elements it sends at most.
_BACKLOG_PULL = 16


_BACKLOG = 8


@tck_test(
    "2.4", "required",
    parity=Parity(
        wb("untested_spec204_mustConsiderTheSubscriptionAsCancelledInAfterRecievingOnCompleteOrOnError"), "new",
        "elements then on_complete at once: a request made after the subscriber itself "
        "reported processing the end (a refill or a timer's top-up) breaks 2.4; requests while "
        "it still works off the elements before the end are its backlog, not a breach."),
    covers=(
        Cover("2.4", "thread"),
    ),
)
def required_spec204_must_not_request_once_it_processed_on_complete_after_a_backlog(ctx: WhiteboxStages) -> None:
    """Up to 8 elements as fast as the subscriber asks for them (the puppet pulled for 16), then
    on_complete at once: once it reported processing on_complete, no request.

    A subscriber that processes its signals in order reports on_complete only after the
    elements that came before it, and may ask for more while it works them off. One that
    handles on_complete at once (a flag set, a result completed) while a worker, a timer or a
    loop callback still refills for the elements it got has received the end: the refill
    breaks the rule (the subscription counts as cancelled), and so does a top-up. The TCK
    waits for the report as long as elements keep being processed; one that holds elements
    unprocessed and waits (a processor for demand from its subscriber) has no end to judge.
    (The JVM TCK leaves 2.4 untested; the rule's "after having received the signal" is read
    as the subscriber's own report of processing it.) If this fails, process on_complete after the elements before it, or stop the refills once
    it is processed.
    """
    stage = ctx.stage()
    upstream, sub = stage.upstream, stage.subscription
    if not ctx.settings.never_requests:  # (one that never asks gets the end alone)
        stage.request(_BACKLOG_PULL)
        upstream.wait_demand(until_cancelled=True)
    sent = 0
    while sent < _BACKLOG and sub.demand > 0 and sub.terminal is None and not sub.cancelled:
        upstream.send_next()
        sent += 1
    ctx.env.check()
    stage.send_complete()
    probe = stage.probe
    while True:  # a slow in-order subscriber works off its backlog first
        seen = probe.processed_count
        try:
            probe.expect_complete()
            break
        except RuleViolation:
            if probe.processed_count != seen:
                continue
            if probe.wait_pending(0, 0.0):
                raise
            raise NotVerified("the subscriber holds elements it has not processed and waits before "
                              "processing on_complete: no end to judge requests after") from None
    sub.seal()
    ctx.at_close(upstream.closing_after_terminal())


@tck_test(
    "2.5", "required",
    parity=Parity(
        wb("required_spec205_mustCallSubscriptionCancelIfItAlreadyHasAnSubscriptionAndReceivesAnotherOnSubscribeSignal"), "stricter",
        "the JVM test offers one second subscription and checks it is cancelled; this one also "
        "offers a third from another thread and checks the first still carries the puppet's "
        "request and its element, so that a subscriber adopting the newcomer fails."),
    covers=(
        Cover("2.5", "later"),
    ),
)
def required_spec205_must_call_subscription_cancel_if_it_already_has_an_subscription_and_receives_another_on_subscribe_signal(
    ctx: WhiteboxStages,
) -> None:
    """A second on_subscribe (from another publisher) must be cancelled; the first keeps working.

    A third then comes from another thread (a subscriber that keeps its subscription per
    thread adopts that one). Neither may be requested from, nor replace the first:
    afterwards puppet.request(1) must still reach the first one and the element sent there
    must be processed. A subscriber that cancels its first as well (giving up on a protocol
    violation) is within its rights, and the test ends there. If this fails, check that
    on_subscribe cancels a new subscription while one is active, whichever thread it comes on.
    """
    ctx.needs_demand()
    stage = ctx.stage()
    if not (ctx.second_subscription(stage.subscriber, stage.upstream, ctx.upstream("second"), "2.5")
            and not stage.subscription.cancelled
            and ctx.second_subscription(stage.subscriber, stage.upstream, ctx.upstream("third"), "2.5",
                                        elsewhere=True)):
        ctx.at_close(stage.upstream.settle)
        return
    stage.request(1)
    stage.expect_demand(rule="2.5")
    x = stage.send_next(rule="2.5")
    stage.probe.expect_next(x, rule="2.5")
    ctx.at_close(stage.upstream.settle)


@tck_test(
    "2.5", "stochastic",
    parity=Parity(
        (), "new",
        "two on_subscribe calls at the same moment, 24 times: a test and a store apart let "
        "both win and neither is cancelled, which no sequential test can show."),
)
def stochastic_spec205_must_keep_one_of_two_subscriptions_offered_at_the_same_moment(
    ctx: WhiteboxStages,
) -> None:
    """Two publishers call on_subscribe on one fresh subscriber at the same moment, 24 times.

    Rule 2.5 whoever wins: one subscription kept, the other cancelled. If this fails, check
    that on_subscribe decides which subscription is active in one step (under a lock): a test
    and a store apart let both calls win, and neither is ever cancelled.
    """
    if ctx.settings.skip_stochastic:
        raise NotVerified("stochastic verifications are switched off (skip_stochastic)", kind=Verdict.DESELECTED)
    race_two_subscriptions(ctx, lambda: ctx.whitebox_subscriber(WhiteboxProbe(ctx.env)))


tck_test.untested(
    "untested_spec206_must_call_subscription_cancel_if_it_is_no_longer_valid",
    "2.6",
    "only the subscriber knows whether it still needs its subscription; from outside, a "
    "forgotten subscription looks like one that is still in use (a subscriber declared to take at "
    "most k elements is judged by the takes_at_most test)",
    parity=Parity(
        wb("untested_spec206_mustCallSubscriptionCancelIfItIsNoLongerValid"), "same",
        SAME_UNTESTED),
)


@tck_test(
    "2.6", "required",
    parity=Parity(
        wb("untested_spec206_mustCallSubscriptionCancelIfItIsNoLongerValid"), "new",
        "only for a subscriber declared to take at most k elements (takes_at_most): once it "
        "has them the subscription is no longer needed, so 2.6 asks for cancel(); undeclared, "
        "not applicable."),
)
def required_spec206_must_cancel_once_it_has_all_the_elements_it_declared_it_takes(ctx: WhiteboxStages) -> None:
    """A subscriber declared to take at most k elements (``takes_at_most``: a first() or
    take(k)) must cancel once it has processed them: it no longer needs the subscription.

    If it asks for none on its own, the puppet is pulled for k; the TCK sends the elements as
    they are asked for, up to k, waits until they are processed, then for its cancel(). Only
    the subscriber knows what it still needs: undeclared, the test is not applicable, and one
    that stops asking short of k is not judged. (The JVM TCK leaves 2.6 untested.) If this
    fails, cancel the subscription once the last element wanted is processed, instead of just
    asking for no more.
    """
    wanted = ctx.settings.takes_at_most
    if wanted <= 0:
        raise NotVerified("needs a subscriber declared to take at most k elements (takes_at_most): "
                          "otherwise only it knows whether it still needs its subscription")
    ctx.needs_demand()
    stage = ctx.stage()
    upstream, sub = stage.upstream, stage.subscription
    if upstream.wait_demand(until_cancelled=True) <= 0 and not sub.cancelled:
        stage.request(wanted)
    while sub.sent < wanted and not sub.cancelled and not sub.broken:
        if upstream.wait_demand(until_cancelled=True) <= 0 or sub.cancelled:
            break
        stage.send_next(rule="2.6")
    if sub.cancelled or sub.broken:
        return  # it gave the subscription up: rule 2.6 asks no more
    if sub.sent < wanted:
        raise NotVerified(f"the subscriber stopped asking after {sub.sent} of the {wanted} element(s) "
                          "it takes (takes_at_most); whether it still needs its subscription is its own")
    for element in stage.sent[:wanted]:
        stage.probe.expect_next(element)
    upstream.expect_cancel(
        rule="2.6", what=f"cancel() once it had processed the {wanted} element(s) it takes (takes_at_most)",
        hint="a subscriber that no longer needs its subscription must cancel it, not just stop requesting")
    ctx.at_close(upstream.settle)


@tck_test(
    "2.7", "stochastic",
    parity=Parity(
        wb("untested_spec207_mustEnsureAllCallsOnItsSubscriptionTakePlaceFromTheSameThreadOrTakeCareOfSynchronization"), "new",
        "the subscription lingers in every request/cancel so that a second thread entering is "
        "seen, over four rounds of puppet demand."),
    covers=(
        Cover("2.7", "thread"),
    ),
)
def stochastic_spec207_must_ensure_all_calls_on_its_subscription_take_place_from_the_same_thread_or_take_care_of_synchronization(
    ctx: WhiteboxStages,
) -> None:
    """puppet.request(18), then 18 elements as demand allows, four times; no overlap.

    The subscription stays inside every request/cancel a moment (up to a few milliseconds when
    the call comes from one of the subject's own threads, ending as soon as a second thread
    enters) so that a thread racing in is seen; four rounds of demand give a subject that
    requests in bursts four chances to race. Every third element goes out late, the subscriber's
    thread paused a swept number of steps into its own code after its request. If this fails,
    check that request and cancel (the puppet's included) are made from one thread at a time:
    a serial worker, or a lock.
    """
    if ctx.settings.skip_stochastic:
        raise NotVerified("stochastic verifications are switched off (skip_stochastic)", kind=Verdict.DESELECTED)
    ctx.needs_demand()
    stage = ctx.stage(yield_s=0.0005, hold_s=RIVAL_HOLD_S)
    sent: list[Any] = []
    deadline = paced_deadline(ctx.settings)
    with aggressive_switching():
        for _ in range(4):
            stage.request(18)
            race_rounds(ctx.env, stage.upstream, 18, sent, caught_up=lambda t: stage.probe.wait_pending(1, t),
                        deadline=deadline)
            if time.monotonic() >= deadline:
                break
    for element in sent:
        stage.probe.expect_next(element)
    ctx.at_close(stage.upstream.settle)


#: Rounds of the hunt that pulls the puppet on a second thread beside a signal or a second pull.
PUPPET_RACE_ROUNDS = 48


#: How far into the subject's code the pulled request is stopped, swept from 1 step.
PUPPET_SWEEP = 24


def _stopped_or_inside(sub: ManualSubscription) -> Callable[[PausedSide], object]:
    """Wait, briefly, for the pulled request to stop at its step or to be held inside ``sub``."""

    def reached(side: PausedSide) -> None:
        deadline = time.monotonic() + PROMPT_WAIT_S
        while not (side.paused.is_set() or sub.wait_inside(PREEMPT_WAIT_S / 10)) and time.monotonic() < deadline:
            pass

    return reached


def upstream_requested(stage: WhiteboxStage, total: int, timeout: float) -> bool:
    """Wait until the upstream was asked for ``total`` in all."""
    upstream = stage.upstream
    sub = stage.subscription
    with upstream._cond:
        return starved_wait(lambda step: upstream._cond.wait_for(lambda: sub.requested >= total, step), timeout)


@tck_test(
    "2.7", "stochastic",
    parity=Parity(
        wb("untested_spec207_mustEnsureAllCallsOnItsSubscriptionTakePlaceFromTheSameThreadOrTakeCareOfSynchronization"), "new",
        "for a subscriber declaring that its request/cancel may be called from any thread: "
        "those calls must not overlap the ones it makes from its signals, nor drop demand."),
)
def stochastic_spec207_a_puppet_pulled_from_any_thread_must_not_overlap_the_subscribers_own_calls(
    ctx: WhiteboxStages,
) -> None:
    """With ``any_thread_puppet`` declared: the puppet pulled on a TCK thread while an element,
    or a second pull, arrives on another, 48 rounds; no two calls on the subscription at once,
    and every pull reaches the upstream.

    A subscriber that offers request/cancel to other code (a ``cancel()`` for its users, a
    credit API) must serialise those calls with the ones it makes from its signals. The pulled
    request stops at its ``k``-th step in the subject's code (``k`` swept over the rounds), or,
    past them, stays inside the subscription until the rival acts, so that a second thread that
    goes ahead instead of leaving its demand to the one inside is seen, and so is demand that
    the one inside drops as it leaves. The last round cancels from the second thread. If this
    fails, route every request/cancel through one serial path (a lock-free trampoline with a work
    counter, or a lock), re-checked before the thread that drains leaves.
    """
    if ctx.settings.skip_stochastic:
        raise NotVerified("stochastic verifications are switched off (skip_stochastic)", kind=Verdict.DESELECTED)
    if not ctx.settings.any_thread_puppet:
        raise NotVerified("pulls the puppet from two threads at once: switched on for a subscriber "
                          "that declares it allows that (any_thread_puppet)", kind=Verdict.DESELECTED)
    ctx.needs_demand()
    stage = ctx.stage(yield_s=0.0005, hold_s=RIVAL_HOLD_S)
    stage.request(1)
    stage.expect_demand(rule="2.7")
    sub = stage.subscription
    env = ctx.env
    pulls_reach = True
    with aggressive_switching():
        for r in range(PUPPET_RACE_ROUNDS):
            last = r == PUPPET_RACE_ROUNDS - 1
            before = sub.requested
            env.trace.add("tck", "puppet.request", "1 (on a second thread)")

            def rival(last: bool = last, beside_a_signal: bool = r % 2 == 0) -> None:
                if last:
                    stage.cancel()
                elif beside_a_signal and sub.demand > 0:
                    stage.send_next(rule="2.7")  # the subscriber's own request, from on_next
                else:
                    stage.request(1)

            # Stopped k steps into the subject's code, or (k past them) held inside the call.
            race(lambda: stage.puppet.request(1), rival, 1 + (r // 2) % PUPPET_SWEEP, rule="2.7",
                 what="puppet.request(1) to return promptly", timeout=2 * ctx.settings.timeout + 1.0,
                 name="rs-tck:puppet", c_calls=True, watch_rival=True, reached=_stopped_or_inside(sub),
                 after=sub.release)
            env.check()
            if last or r % 2 == 0 or not pulls_reach:
                continue
            # Two pulls of 1 at once: both reach the upstream (possibly as one request of 2).
            if not upstream_requested(stage, before + 2, ctx.settings.timeout):
                got, alone = sub.requested - before, sub.requested
                stage.request(1)  # one pull, alone: does the puppet reach the upstream at all?
                if not upstream_requested(stage, alone + 1, ctx.settings.timeout):
                    env.trace.note("a puppet.request(1) alone does not reach the upstream either: not a "
                                   "race (the tests of the puppet's demand judge that)")
                    pulls_reach = False
                    continue
                raise RuleViolation(
                    "2.7", "two puppet.request(1) made at once, on two threads, to reach the upstream",
                    f"it was asked for {got} after them (round {r + 1}), though one pull alone reaches it: a request "
                    "left for the thread inside the subscription was dropped when that thread left",
                    hint="the thread that drains must look again for demand left meanwhile before it "
                    "leaves (take off what it handled from the work counter, not all of it)",
                    setting="timeout")
    stage.expect_upstream_cancel(rule="2.7")
    ctx.at_close(stage.upstream.settle)


@tck_test(
    "2.8", "required",
    parity=Parity(wb("required_spec208_mustBePreparedToReceiveOnNextSignalsAfterHavingCalledSubscriptionCancel"), "same"),
    covers=(
        Cover("2.8", "test"),
    ),
)
def required_spec208_must_be_prepared_to_receive_on_next_signals_after_having_called_subscription_cancel(
    ctx: WhiteboxStages,
) -> None:
    """An element still in flight after cancel() must be taken without error.

    The TCK waits for demand, makes the subscriber cancel, then sends one element within
    that demand (as rule 3.12 allows), and pulls the puppet twice more. If this fails,
    check that on_next after cancel() is ignored (or processed), never raises.
    """
    ctx.needs_demand()
    stage = ctx.stage()
    stage.request(1)
    stage.expect_demand(rule="2.8")
    stage.cancel()
    stage.expect_upstream_cancel(rule="2.8")
    stage.send_next(rule="2.8")
    stage.request(1)
    stage.request(1)
    ctx.at_close(stage.upstream.settle)


def _terminal_prepared(ctx: WhiteboxStages, signal: str, rule: str, preceding_request: bool) -> None:
    if preceding_request:
        ctx.needs_demand()
    stage = ctx.stage()
    if preceding_request:
        stage.request(1)
        stage.expect_demand(rule=rule)
    if signal == "on_complete":
        stage.send_complete(rule=rule)
        stage.probe.expect_complete(rule=rule)
    else:
        error = _failure(rule)
        stage.send_error(error, rule=rule)
        stage.probe.expect_error(error, rule=rule)
    ctx.at_close(stage.upstream.settle)


@tck_test(
    "2.9", "required",
    parity=Parity(wb("required_spec209_mustBePreparedToReceiveAnOnCompleteSignalWithPrecedingRequestCall"), "same"),
    covers=(
        Cover("2.9", "terminal"),
    ),
)
def required_spec209_must_be_prepared_to_receive_an_on_complete_signal_with_preceding_request_call(
    ctx: WhiteboxStages,
) -> None:
    """on_complete while demand is outstanding must be processed (reported with probe.complete).

    If this fails, check the handling of completion while requested elements are still due.
    """
    _terminal_prepared(ctx, "on_complete", "2.9", True)


@tck_test(
    "2.9", "required",
    parity=Parity(wb("required_spec209_mustBePreparedToReceiveAnOnCompleteSignalWithoutPrecedingRequestCall"), "same"),
)
def required_spec209_must_be_prepared_to_receive_an_on_complete_signal_without_preceding_request_call(
    ctx: WhiteboxStages,
) -> None:
    """on_complete before any request must be processed.

    If this fails, check for handling that assumes an element or a request came first.
    """
    _terminal_prepared(ctx, "on_complete", "2.9", False)


@tck_test(
    "2.10", "required",
    parity=Parity(wb("required_spec210_mustBePreparedToReceiveAnOnErrorSignalWithPrecedingRequestCall"), "same"),
    covers=(
        Cover("2.10", "terminal"),
    ),
)
def required_spec210_must_be_prepared_to_receive_an_on_error_signal_with_preceding_request_call(
    ctx: WhiteboxStages,
) -> None:
    """on_error while demand is outstanding must be processed, carrying the error signalled."""
    _terminal_prepared(ctx, "on_error", "2.10", True)


@tck_test(
    "2.10", "required",
    parity=Parity(wb("required_spec210_mustBePreparedToReceiveAnOnErrorSignalWithoutPrecedingRequestCall"), "same"),
)
def required_spec210_must_be_prepared_to_receive_an_on_error_signal_without_preceding_request_call(
    ctx: WhiteboxStages,
) -> None:
    """on_error before any request must be processed, carrying the error signalled."""
    _terminal_prepared(ctx, "on_error", "2.10", False)


def _on_other_thread(ctx: WhiteboxStages, fn: Any) -> Any:
    """Run ``fn`` on a fresh TCK thread and wait for it: signals still serial, threads differ."""
    sender = Worker(fn, "rs-tck:sender")
    if not sender.wait(2 * ctx.settings.timeout + 1.0):
        raise RuleViolation(None, "a signal to return promptly", "on_next did not return (sender thread)",
                            setting="timeout")
    return sender.result()


@tck_test(
    "2.11", "required",
    parity=Parity(
        wb("untested_spec211_mustMakeSureThatAllCallsOnItsMethodsHappenBeforeTheProcessingOfTheRespectiveEvents"), "new",
        "20 elements from two alternating threads, then on_complete, must each be processed "
        "once and the completion after them: a field the next signal overwrites loses or "
        "repeats one."),
    covers=(
        Cover("2.11", "thread", "alternating sender threads"),
    ),
)
def required_spec211_must_make_sure_that_all_calls_on_its_methods_happen_before_the_processing_of_the_respective_events(
    ctx: WhiteboxStages,
) -> None:
    """20 elements sent back to back from two alternating threads, then on_complete: each processed once.

    The processing must see every signal as it was made: no element lost, none seen twice,
    the completion after being signalled. If this fails, check how signals reach the
    processing logic: a queue per subscriber is safe, a field that the next signal
    overwrites is not.
    """
    ctx.needs_demand()
    stage = ctx.stage()
    stage.request(20)
    sent: list[Any] = []
    for i in range(20):
        if i % 2:
            sent.append(_on_other_thread(ctx, lambda: stage.upstream.send_next(rule="2.11")))
        else:
            sent.append(stage.upstream.send_next(rule="2.11"))
        ctx.env.check()
    stage.send_complete(rule="2.11")
    for element in sent:
        stage.probe.expect_next(element, rule="2.11")
    stage.probe.expect_complete(rule="2.11")
    ctx.at_close(stage.upstream.settle)


@tck_test(
    "2.12", "required",
    parity=Parity(
        wb("untested_spec212_mustNotCallOnSubscribeMoreThanOnceBasedOnObjectEquality_specViolation"), "new",
        "when a caller breaks 2.12 by subscribing the same subscriber again, the subscriber "
        "must still cancel the repeat (2.5) and keep its first working."),
    covers=(
        Cover("2.12", "later"),
    ),
)
def required_spec212_subscribed_twice_must_keep_the_first_subscription_and_cancel_the_second(
    ctx: WhiteboxStages,
) -> None:
    """The same subscriber subscribed to the same publisher again must reject the repeat.

    Rule 2.12 makes subscribing once the caller's duty and lets a subscriber assume it; when
    it is broken, the subscriber must still cancel the new subscription (2.5), never request
    on it, and not trade its first for it: if it goes on with its first, puppet.request must
    still reach that one and its element be processed. Cancelling its first as well (giving
    up) is its right, and ends the test. If this fails, check that on_subscribe does not
    reset the subscriber (adopting the new subscription).
    """
    ctx.needs_demand()
    stage = ctx.stage()
    if not ctx.second_subscription(stage.subscriber, stage.upstream, stage.upstream, "2.12"):
        ctx.at_close(stage.upstream.settle)
        return
    stage.request(1)
    stage.expect_demand(rule="2.12")
    x = stage.send_next(rule="2.12")
    stage.probe.expect_next(x, rule="2.12")
    ctx.at_close(stage.upstream.settle)


@tck_test(
    "2.13", "required",
    parity=Parity(
        wb("untested_spec213_failingOnSignalInvocation"), "new",
        "every signal method called with valid arguments must return normally (2.13)."),
    covers=(
        Cover("2.13", "test"),
    ),
)
def required_spec213_signal_methods_must_return_normally(ctx: WhiteboxStages) -> None:
    """on_subscribe, on_next, on_complete and on_error with valid arguments return normally.

    If this fails, check what the subscriber raises: failures in its processing must be
    handled inside it (and end with cancel()), never raised to the publisher.
    """
    stage = ctx.stage()
    if not ctx.settings.never_requests:
        stage.request(1)
        stage.expect_demand()
        x = stage.send_next()
        stage.probe.expect_next(x)
    stage.send_complete()
    stage.probe.expect_complete()
    failing = ctx.stage("failing")
    error = _failure("2.13")
    failing.send_error(error)
    failing.probe.expect_error(error)
    ctx.at_close(failing.upstream.settle)


@tck_test(
    "2.13", "required",
    parity=Parity(wb("required_spec213_onSubscribe_mustThrowNullPointerExceptionWhenParametersAreNull"), "same"),
)
def required_spec213_on_subscribe_must_raise_type_error_when_parameters_are_none(
    ctx: WhiteboxStages,
) -> None:
    """on_subscribe(None) on a fresh subscriber must raise TypeError (Java's NullPointerException)."""
    subscriber = ctx.whitebox_subscriber(WhiteboxProbe(ctx.env))
    ctx.expect_type_error("on_subscribe(None)", subscriber.on_subscribe, None)


@tck_test(
    "2.13", "required",
    parity=Parity(wb("required_spec213_onNext_mustThrowNullPointerExceptionWhenParametersAreNull"), "same"),
)
def required_spec213_on_next_must_raise_type_error_when_parameters_are_none(ctx: WhiteboxStages) -> None:
    """on_next(None) on a subscribed subscriber must raise TypeError."""
    stage = ctx.stage()
    ctx.expect_type_error("on_next(None)", stage.subscriber.on_next, None)


@tck_test(
    "2.13", "required",
    parity=Parity(wb("required_spec213_onError_mustThrowNullPointerExceptionWhenParametersAreNull"), "same"),
)
def required_spec213_on_error_must_raise_type_error_when_parameters_are_none(ctx: WhiteboxStages) -> None:
    """on_error(None) on a subscribed subscriber must raise TypeError."""
    stage = ctx.stage()
    ctx.expect_type_error("on_error(None)", stage.subscriber.on_error, None)


# -- section 3, from the subscriber's side -----------------------------------------------------


tck_test.untested(
    "untested_spec301_whitebox_must_not_be_called_outside_subscriber_context",
    "3.1",
    "who holds a subscription when request or cancel is called cannot be seen from outside; "
    "calls from two threads at once are caught (rule 2.7)",
    parity=Parity(
        wb("untested_spec301_mustNotBeCalledOutsideSubscriberContext"), "same",
        SAME_UNTESTED),
)


#: Elements sent back to back after one puppet.request: past any worker's turn or batch size.
_BURST = 300


@tck_test(
    "3.8", "required",
    parity=Parity(
        wb("required_spec308_requestMustRegisterGivenNumberElementsToBeProduced"), "stricter",
        "the JVM test lets 2 elements through and then only pulls the puppet for 3 more; this "
        "one also sends those 3, then 300 back to back after a puppet request of 300, which "
        "leaves a subscriber handing signals to a worker far past its turn or batch size, "
        "where demand it drops or caps shows."),
    covers=(
        Cover("3.8", "test"),
    ),
)
def required_spec308_whitebox_request_must_register_given_number_elements_to_be_produced(
    ctx: WhiteboxStages,
) -> None:
    """puppet.request(2) must let two elements through, and then puppet.request(3) three more;
    then puppet.request(300), and the 300 elements sent back to back must all be processed.

    The subscriber may request in smaller parts (for example one more as each element is
    processed), as long as the demand it signals adds up to what it was asked for. The burst
    leaves a subscriber that hands signals to a worker with a backlog far past its turn or
    batch size. Each element waits a timeout for its demand; a subscriber that asks one at a
    time, each a while after the last (the JVM self-test's one-at-a-time subject), gets as
    many of the burst as fit half the time limit: slow is not broken. If this fails, check
    that requested demand is forwarded in full, not dropped or capped, and that a worker that
    yields after a turn comes back for the rest.
    """
    ctx.needs_demand()
    deadline = paced_deadline(ctx.settings)
    stage = ctx.stage()
    for asked in (2, 3):
        stage.request(asked)
        for _ in range(asked):
            x = stage.send_next(rule="3.8")
            stage.probe.expect_next(x, rule="3.8")
    stage.request(_BURST)
    burst: list[Any] = []
    # Each element waits for demand (a timeout each, not one for all): a subscriber that asks
    # one at a time, each a while after the last, gets as many as fit half the time limit.
    while len(burst) < _BURST and not out_of_time(ctx.env, deadline, len(burst), f"the burst of {_BURST}"):
        burst.append(stage.send_next(rule="3.8"))
    for x in burst:
        stage.probe.expect_next(x, rule="3.8")
    ctx.at_close(stage.upstream.settle)


@tck_test(
    "3.10", "required",
    parity=Parity(
        wb("untested_spec310_requestMaySynchronouslyCallOnNextOnSubscriber"), "new",
        "3.10 lets a publisher call on_next inside request(), even inside on_subscribe; all "
        "five elements delivered there must be processed."),
    covers=(
        Cover("2.13", "on_subscribe", EVERY_SUBSCRIBER_TEST),
        Cover("3.10", "on_subscribe"),
    ),
)
def required_spec310_whitebox_must_be_prepared_for_on_next_delivered_synchronously_inside_request(
    ctx: WhiteboxStages,
) -> None:
    """Five elements delivered inside request(), even inside on_subscribe, all processed.

    Rule 3.10 lets a publisher call on_next before request() returns. If this fails, check
    that the subscriber stores its subscription (and any state on_next needs) before calling
    request, and holds no lock that on_next also takes while it calls request.
    """
    ctx.needs_demand()
    stage = ctx.stage(count=5, inline=True, end=None, signal_rule="3.10")
    # Always through the puppet: a subscriber may have requested upstream by itself and still
    # hold the elements for demand from its own downstream (a prefetching processor does).
    stage.request(5)
    stage.upstream.wait_sent(5)
    for element in list(stage.sent):
        stage.probe.expect_next(element, rule="3.10")
    ctx.at_close(stage.upstream.settle)


@tck_test(
    "3.11", "required",
    parity=Parity(
        wb("untested_spec311_requestMaySynchronouslyCallOnCompleteOrOnError"), "new",
        "3.11 lets a publisher terminate inside request(); on_complete and on_error arriving "
        "there must be processed."),
    covers=(
        Cover("2.10", "on_subscribe"),
        Cover("3.11", "on_subscribe"),
    ),
)
def required_spec311_whitebox_must_be_prepared_for_on_complete_or_on_error_delivered_synchronously_inside_request(
    ctx: WhiteboxStages,
) -> None:
    """One element and on_complete, then (on a second subscriber) on_error, inside request().

    Rule 3.11 lets a publisher terminate before request() returns; each must be processed.
    If this fails, check the handling of an end of stream that arrives while the subscriber
    is still inside its own request call.
    """
    ctx.needs_demand()
    error = _failure("3.11")
    for end, count in (("complete", 1), ("error", 0)):
        stage = ctx.stage(f"inline-{end}", count=count, inline=True, end=end, error=error,
                          signal_rule="3.11")
        stage.request(1)  # as in 3.10: demand for what the subscriber may be holding back
        stage.upstream.wait_sent(count + 1)
        if count:
            if not stage.sent:
                raise RuleViolation("3.11", "the element delivered inside request()", "none was delivered")
            stage.probe.expect_next(stage.sent[0], rule="3.11")
        if end == "complete":
            stage.probe.expect_complete(rule="3.11")
        else:
            stage.probe.expect_error(error, rule="3.11")
        stage.upstream.settle()


tck_test.untested(
    "untested_spec314_whitebox_cancel_may_cause_the_publisher_to_shutdown_if_no_other_subscription_exists",
    "3.14",
    "a permission of publishers; here the TCK plays the publisher",
    parity=Parity(
        wb("untested_spec314_cancelMayCauseThePublisherToShutdownIfNoOtherSubscriptionExists"), "same",
        SAME_UNTESTED),
)


tck_test.untested(
    "untested_spec315_whitebox_cancel_must_not_throw_exception_and_must_signal_on_error",
    "3.15",
    "an obligation of the subscription, which the TCK plays here; the publisher verification "
    "checks it",
    parity=Parity(
        wb("untested_spec315_cancelMustNotThrowExceptionAndMustSignalOnError"), "same",
        SAME_UNTESTED),
)


tck_test.untested(
    "untested_spec316_whitebox_request_must_not_throw_exception_and_must_on_error_the_subscriber",
    "3.16",
    "an obligation of the subscription, which the TCK plays here; the publisher verification "
    "checks it",
    parity=Parity(
        wb("untested_spec316_requestMustNotThrowExceptionAndMustOnErrorTheSubscriber"), "same",
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
def fuzz_signal_orders(ctx: WhiteboxStages) -> None:
    """Generated legal signal orders and puppet calls, shrunk to the smallest failing scenario.

    As the blackbox fuzz verification, plus puppet.request(k)/puppet.cancel() at any point and
    the probe's check that each signal is processed exactly once (2.11).
    """
    from ..fuzz import deselected

    deselected(ctx.settings)
    from ..fuzz.verify import fuzz_subscriber

    fuzz_subscriber(ctx, whitebox=True)


def via_processor(test: TckTest) -> bool:
    """Whether a processor's subscriber side takes ``test`` too (through a TCK downstream)."""
    return bool(test.level != Level.FUZZ) and test.name not in (
        "stochastic_spec207_a_puppet_pulled_from_any_thread_must_not_overlap_the_subscribers_own_calls",
        # (a processor is not a take(k): the declaration is a subscriber's)
        "required_spec206_must_cancel_once_it_has_all_the_elements_it_declared_it_takes")
