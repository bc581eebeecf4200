"""Whitebox subscriber rules 2.1 to 2.7: demand, terminal signals, a second subscription, cancel,
serial calls on the subscription, each with the subscriber's own account of its processing."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ....contexts import WhiteboxStage
from ....contexts import WhiteboxStages
from ....errors import NotVerified
from ....errors import RuleViolation
from ....manual import ManualSubscription
from ....registry import Registry
from ....results import Verdict
from ....whitebox import WhiteboxProbe
from ...clock import starved_wait
from ...matrix import Cover
from ...parity import SAME_UNTESTED
from ...parity import Parity
from ...parity import wb
from .._racing import PREEMPT_WAIT_S
from .._racing import PROMPT_WAIT_S
from .._racing import RIVAL_HOLD_S
from .._racing import PausedSide
from .._racing import aggressive_switching
from .._racing import paced_deadline
from .._racing import race
from .._racing import race_rounds
from .._racing import race_two_subscriptions
from ._common import VERIFICATION
from ._common import _failure

tck_test = Registry(VERIFICATION)
TESTS = tck_test.tests


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
