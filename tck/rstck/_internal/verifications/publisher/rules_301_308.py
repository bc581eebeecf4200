"""Subscription rules 3.1 to 3.8: re-entrant requests, recursion, cancel, and demand adding up."""

from __future__ import annotations

import contextlib
import functools
import threading
import time
from collections.abc import Callable
from collections.abc import Iterator
from typing import Any

from ....contexts import PublisherContext
from ....errors import NotVerified
from ....errors import RuleViolation
from ....probe import STALL_CONFIRMATION
from ....probe import ProbeSubscriber
from ....registry import Registry
from ....results import Verdict
from ...clock import starved_wait
from ...evidence import cite
from ...evidence import last_seq
from ...matrix import Cover
from ...parity import SAME_UNTESTED
from ...parity import Parity
from ...parity import pub
from ...worker import Worker
from .._racing import ExitPause
from .._racing import aggressive_switching
from ._common import VERIFICATION
from ._common import _multicast
from ._common import _request_ones
from ._common import _stalled

tck_test = Registry(VERIFICATION)
TESTS = tck_test.tests


tck_test.untested(
    "untested_spec301_request_and_cancel_must_only_be_called_inside_subscriber_context",
    "3.1",
    "an obligation on the subscriber, not the publisher; the TCK's probes honour it",
    parity=Parity(
        (), "same",
        SAME_UNTESTED),
)


@tck_test(
    "3.2", "required",
    parity=Parity(
        pub("required_spec302_mustAllowSynchronousRequestCallsFromOnNextAndOnSubscribe"), "stricter",
        "the JVM test only checks that no error follows the requests made inside on_subscribe "
        "and on_next; this one also requires the 6 elements they ask for, as a request() from "
        "inside a signal that returns but is lost does not \"allow\" the call (and breaks 3.8)."),
    covers=(
        Cover("1.1", "on_subscribe"),
        Cover("3.2", "on_subscribe"),
        Cover("3.2", "on_next"),
        Cover("3.8", "on_next"),
    ),
)
def required_spec302_must_allow_synchronous_request_calls_from_on_next_and_on_subscribe(ctx: PublisherContext) -> None:
    """request(1) three times inside on_subscribe and once inside every on_next: 6 elements arrive.

    If this fails, check that request() called from inside a signal neither deadlocks (a
    non-reentrant lock held while signalling) nor raises.
    """

    def thrice(p: ProbeSubscriber, s: Any) -> None:
        for _ in range(3):
            p.request(1)

    def once(p: ProbeSubscriber, e: Any) -> None:
        if p.received < 6:
            p.request(1)

    probe = ctx.probe(on_subscribe=thrice, on_next=once)
    ctx.subscribe(ctx.publisher(6), probe)
    probe.expect_subscription()
    probe.next_elements(6)
    ctx.closing_drain(probe)


@tck_test(
    "3.3", "required",
    parity=Parity(pub("required_spec303_mustNotAllowUnboundedRecursion"), "same"),
    covers=(
        Cover("3.3", "on_next", "request(1)"),
    ),
)
def required_spec303_must_not_allow_unbounded_recursion(ctx: PublisherContext) -> None:
    """request(1) from every on_next must not nest on_next deeper than recursion_depth.

    A synchronous publisher that calls on_next straight from request() recurses once per
    element; trampolining (a drain loop with a work-in-progress counter) keeps the depth at 1.
    """
    bound = ctx.settings.recursion_depth
    elements = min(ctx.settings.max_elements, bound + 10)
    if elements <= bound:
        raise NotVerified(f"needs more than recursion_depth={bound} elements (max_elements)")
    state = {"flagged": False}

    def deeper(p: ProbeSubscriber, e: Any) -> None:
        depth = p.depth()
        if depth > bound:
            if not state["flagged"]:
                state["flagged"] = True
                p.env.violation(
                    "3.3",
                    f"on_next nested at most {bound} deep when request() is called from on_next",
                    f"on_next #{p.received} ran {depth} calls deep on thread {threading.current_thread().name}",
                    hint="trampoline: let a re-entrant request() only add demand for the running loop",
                    setting="recursion_depth",
                )
            return  # stop feeding the recursion
        if p.received < elements:
            p.request(1)

    probe = ctx.subscribed(elements, on_next=deeper)
    probe.request(1)
    probe.wait_progress(lambda: probe.received >= elements or probe.terminal is not None or state["flagged"],
                        ctx.settings.timeout)
    if probe.received < min(elements, bound + 1) and not state["flagged"] and probe.terminal is None:
        raise RuleViolation("3.3", f"{elements} elements requested one by one from on_next",
                            f"only {probe.received} arrived within {ctx.settings.timeout * 1000:.0f} ms",
                            setting="timeout")


@tck_test(
    "3.3", "required",
    parity=Parity(
        pub("required_spec303_mustNotAllowUnboundedRecursion"), "stricter",
        "the JVM test requests 1 from each on_next; this one requests 3, the pattern of a "
        "subscriber topping up its buffer, which a publisher serving it in a loop of its own "
        "turns into one level of recursion per request."),
    covers=(
        Cover("3.3", "bulk", "request(3)"),
    ),
)
def required_spec303_must_not_allow_unbounded_recursion_when_requesting_several_from_on_next(
    ctx: PublisherContext,
) -> None:
    """request(3) from every on_next must not nest on_next deeper than recursion_depth either.

    Requesting one at a time is not the only pattern: a subscriber that tops up its buffer
    asks for several, and a publisher that serves such a request in a loop of its own,
    straight from inside on_next, recurses once per request.
    """
    bound = ctx.settings.recursion_depth
    elements = min(ctx.settings.max_elements, 3 * (bound + 10))
    if elements <= bound:
        raise NotVerified(f"needs more than recursion_depth={bound} elements (max_elements)")
    flagged: list[int] = []

    def deeper(p: ProbeSubscriber, e: Any) -> None:
        depth = p.depth()
        if depth > bound:
            if not flagged:
                flagged.append(depth)
                p.env.violation(
                    "3.3",
                    f"on_next nested at most {bound} deep when request(3) is called from on_next",
                    f"on_next #{p.received} ran {depth} calls deep on thread {threading.current_thread().name}",
                    hint="trampoline every request, whatever its n: a re-entrant request() only "
                    "adds demand for the loop that is running",
                    evidence=cite(last_seq(p.env.trace, p.name, "on_next")),
                    setting="recursion_depth",
                )
            return
        if p.requested < elements:
            p.request(3)

    probe = ctx.subscribed(elements, on_next=deeper, keep_elements=False)
    probe.request(3)
    probe.wait_progress(lambda: probe.received >= elements or probe.terminal is not None or bool(flagged),
                        ctx.settings.timeout)
    ctx.env.check()


tck_test.untested(
    "untested_spec304_request_should_not_perform_heavy_computations",
    "3.4",
    "timeliness cannot be told apart from the synchronous delivery 3.10 allows; a request() that "
    "blocks without signalling is failed in every verification by the TCK's watchdog",
    parity=Parity(
        pub("untested_spec304_requestShouldNotPerformHeavyComputations"), "same",
        SAME_UNTESTED),
)


@tck_test(
    "3.5", "required",
    parity=Parity(
        pub("untested_spec305_cancelMustNotSynchronouslyPerformHeavyComputation"), "new",
        "cancel() from eight threads at once must return promptly and normally, then silence: "
        "rule 3.5's \"idempotent\" and \"thread-safe\", which no JVM test exercises."),
    covers=(
        Cover("3.5", "thread", "eight threads at once"),
        Cover("3.7", "thread"),
        Cover("3.15", "thread"),
    ),
)
def required_spec305_cancel_must_be_idempotent_and_thread_safe(ctx: PublisherContext) -> None:
    """cancel() from eight threads at once: each returns promptly and normally, then silence.

    If this fails, check that cancel() only flips state atomically and never blocks on, or
    races with, the emission loop.
    """
    probe = ctx.subscribed(20)
    probe.request(5)
    probe.next_element()
    subscription = probe.subscription
    assert subscription is not None
    barrier = threading.Barrier(8)
    probe.cancelled = True
    ctx.env.trace.add(probe.name, "cancel", "x8, concurrently")

    def cancel() -> None:
        with contextlib.suppress(threading.BrokenBarrierError):
            barrier.wait(ctx.settings.timeout)
        probe._call("cancel", subscription.cancel)

    threads = [threading.Thread(target=cancel, name=f"rs-tck-cancel-{i}", daemon=True) for i in range(8)]
    with aggressive_switching():
        for t in threads:
            t.start()

        def all_returned(step: float) -> bool:
            until = time.monotonic() + step
            for t in threads:
                t.join(max(0.0, until - time.monotonic()))
            return not any(t.is_alive() for t in threads)

        # Running time, not wall time: eight threads on a starved process are late, not stuck.
        starved_wait(all_returned, ctx.settings.timeout + 1.0)
    stuck = [t.name for t in threads if t.is_alive()]
    ctx.env.count_iterations(len(threads), len(stuck))
    if stuck:
        raise RuleViolation("3.5", "concurrent cancel() calls to return promptly",
                            f"{len(stuck)} of 8 did not return within {ctx.settings.timeout * 1000 + 1000:.0f} ms",
                            setting="timeout", evidence=cite(last_seq(ctx.env.trace, probe.name, "cancel")))
    probe.wait_quiet()
    probe.request(5)
    ctx.closing_quiet(probe, after="after cancel() and a further request(5)")


@tck_test(
    "3.6", "required",
    parity=Parity(
        pub("required_spec306_afterSubscriptionIsCancelledRequestMustBeNops"), "stricter",
        "the JVM test requests only positive amounts after the cancel; this one also requests "
        "0, because 3.6 makes every request after cancel a NOP and 3.9's on_error is owed only "
        "\"While the Subscription is not cancelled\"."),
    covers=(
        Cover("3.6", "test"),
    ),
)
def required_spec306_after_subscription_is_cancelled_request_must_be_nops(ctx: PublisherContext) -> None:
    """cancel() at once, then request(1) three times and request(0): nothing may arrive.

    Not even on_error for request(0): rule 3.9 holds only while the subscription is not
    cancelled. If this fails, check that request() looks at the cancellation before it
    validates n.
    """
    probe = ctx.subscribed(3)
    mark = probe.mark()  # nothing was requested: no signal at all may follow
    probe.cancel()
    for _ in range(3):
        probe.request(1)
    probe.request(0)
    ctx.closing_quiet(probe, after="after cancel(), whatever is requested", since=mark)


@tck_test(
    "3.6", "required",
    parity=Parity(
        pub("required_spec306_afterSubscriptionIsCancelledRequestMustBeNops"), "stricter",
        "the JVM test cancels and requests from the test thread; this one does both inside "
        "on_next, where a cancel is often only noted for later and the request that follows "
        "undoes it."),
    covers=(
        Cover("1.6", "on_next"),
        Cover("3.6", "on_next"),
    ),
)
def required_spec306_requests_after_a_cancel_made_inside_on_next_must_be_nops(ctx: PublisherContext) -> None:
    """cancel() and then request(5), both from inside the first on_next: nothing more may arrive.

    The cancel is made while the publisher is delivering, where some implementations only
    note it for later; the request that follows must not undo it. If this fails, check that
    a cancel made during a delivery takes effect at once and that request() checks for it.
    """

    def cancel_then_request(p: ProbeSubscriber, e: Any) -> None:
        if not p.cancelled:
            p.cancel()
            p.request(5)

    probe = ctx.subscribed(10, on_next=cancel_then_request)
    mark = probe.mark()
    probe.request(1)
    probe.next_element()
    # Everything after the first on_next came after the cancel: one signal since the mark.
    ctx.closing_quiet(probe, after="after cancel() and request(5) made inside on_next", since=mark + 1)


@tck_test(
    "3.7", "required",
    parity=Parity(pub("required_spec307_afterSubscriptionIsCancelledAdditionalCancelationsMustBeNops"), "same"),
    covers=(
        Cover("3.7", "test"),
    ),
)
def required_spec307_after_subscription_is_cancelled_additional_cancels_must_be_nops(ctx: PublisherContext) -> None:
    """cancel() three times: each returns normally and nothing arrives (no on_error either)."""
    probe = ctx.subscribed(1)
    mark = probe.mark()  # nothing was requested: no signal at all may follow
    for _ in range(3):
        probe.cancel()
    ctx.closing_quiet(probe, after="after repeated cancel()", since=mark)


@tck_test(
    "3.8", "required",
    parity=Parity(
        (), "new",
        "the JVM TCK checks 3.8 only on subscribers (whitebox); this one makes ten request(1) "
        "calls in a row on a publisher and expects ten elements, as a subscription that "
        "overwrites demand instead of adding it delivers fewer."),
    covers=(
        Cover("3.8", "test"),
    ),
)
def required_spec308_request_must_register_given_number_elements_to_be_produced(ctx: PublisherContext) -> None:
    """Ten request(1) calls in a row, before any delivery is consumed, yield ten elements.

    Demand adds up: a subscription that overwrites instead of adding delivers fewer.
    """
    probe = ctx.subscribed(12)
    for _ in range(10):
        probe.request(1)
    probe.next_elements(10, rule="3.8")
    ctx.closing_quiet(probe, after="beyond the 10 requested elements")


def _served_or_told(ctx: PublisherContext, probe: ProbeSubscriber, expected: str) -> None:
    """After ``probe.request(1)``: an element or a terminal signal must come; silence is 3.8."""
    if probe.wait_for_signal():
        return
    raise RuleViolation(
        "3.8", expected, f"nothing arrived within {ctx.settings.timeout * 1000:.0f} ms", evidence=probe.evidence(),
        hint="a publisher that shut down (a shared source, a processor whose upstream was "
             "cancelled) must end its remaining and later subscribers with on_error or on_complete",
        setting="timeout",
    )


#: The fast subscriber's demand when a slow one holds a shared buffer back: past the usual
#: multicast buffers (16 to 256).
_HELD_BACK = 600


@tck_test(
    "3.8", "required",
    parity=Parity(
        (), "new",
        "after one of two subscribers cancels, the other's demand must still be served or the "
        "stream ended for it: a publisher that stops a shared source on any cancel leaves it "
        "waiting forever."),
)
def required_spec308_a_cancel_must_not_starve_another_subscriber(ctx: PublisherContext) -> None:
    """After one of two subscribers cancels, the other's request(1) must still be answered.

    The other one's subscription is not cancelled, so its demand must bring an element, or
    the stream must end for it with on_error or on_complete. A publisher that stops a shared
    source on any cancel and tells nobody leaves it waiting forever. Then a slow subscriber
    (request(1)) and a fast one (request(600)) share a stream; once the fast one stops
    (a buffer bounded by the slow one's queue may hold it back, as 1.1 allows) the slow one
    cancels, and the fast one's demand must be served from there. If this fails, check what
    one subscriber's cancel does to the others: the room its queue held must be asked for
    upstream again.
    """
    first, second = _multicast(ctx, 3, False, 2)
    first.cancel()
    second.request(1)
    _served_or_told(ctx, second, "second's request(1) to bring an element or a terminal signal after "
                    "first cancelled")
    ctx.closing_drain(second)
    if ctx.settings.max_elements < _HELD_BACK + 1:
        return
    slow, fast = _multicast(ctx, _HELD_BACK + 1, False, 2)
    slow.request(1)
    fast.request(_HELD_BACK)
    slow.wait_for_signal()
    deadline = time.monotonic() + ctx.settings.timeout

    def moved(seen: int) -> Callable[[], bool]:
        return lambda: fast.signals != seen

    while fast.received < _HELD_BACK and fast.terminal is None and time.monotonic() < deadline:
        with ctx.env.aside():  # a window: the TCK calls nothing meanwhile
            moving = fast._wait(moved(fast.mark()), ctx.settings.no_signal_window)
        if not moving:
            break  # held back by the slow one's queue, or done
    slow.cancel()
    if _stalled(fast, _HELD_BACK, "3.8", f"for sub2's request({_HELD_BACK}) once sub1, which asked for "
                "one, cancelled", ctx, steady=True):
        fast.cancel()
        ctx.closing_drain(fast)


@tck_test(
    "3.8", "required",
    parity=Parity(
        (), "new",
        "3.14 lets a publisher shut down when its last subscriber cancels, but a later "
        "subscriber's request(1) must then be answered (served, or on_error/on_complete), "
        "never met with silence."),
)
def required_spec308_a_subscriber_after_the_last_cancel_must_be_served_or_told(ctx: PublisherContext) -> None:
    """A subscriber that arrives after the only one cancelled must be served or refused, not ignored.

    A publisher may shut down when its last subscriber cancels (rule 3.14), but a later
    subscriber's request(1) must then be answered with on_error (or on_complete), not with
    silence. If this fails, check that a publisher whose source is gone refuses new subscribers.
    """
    publisher = ctx.publisher(3)
    first = ctx.probe("first")
    ctx.subscribe(publisher, first)
    first.expect_subscription()
    first.cancel()
    later = ctx.probe("later")
    ctx.subscribe(publisher, later)
    later.expect_subscription()
    later.request(1)
    _served_or_told(ctx, later, "later's request(1) to bring an element or a terminal signal after "
                    "the only subscriber before it cancelled")
    ctx.closing_drain(later)


@tck_test(
    "3.8", "required",
    parity=Parity(
        (), "new",
        "three request(1) calls inside on_subscribe must bring exactly three elements: a "
        "publisher that keeps only one of the requests made before subscribe() returns "
        "delivers fewer."),
    covers=(
        Cover("1.1", "on_subscribe"),
        Cover("3.8", "on_subscribe"),
    ),
)
def required_spec308_requests_made_inside_on_subscribe_must_add_up(ctx: PublisherContext) -> None:
    """Three request(1) calls inside on_subscribe, and no more: exactly three elements arrive.

    Requests made before subscribe() has returned are demand like any other; a publisher
    that keeps only one of them (overwriting, or taking the largest) delivers fewer.
    """

    def thrice(p: ProbeSubscriber, s: Any) -> None:
        for _ in range(3):
            p.request(1)

    probe = ctx.probe(on_subscribe=thrice)
    ctx.subscribe(ctx.publisher(10), probe)
    probe.expect_subscription()
    ctx.env.check()  # a request() that raised (3.16) explains missing elements better than 3.8
    probe.next_elements(3, rule="3.8")
    ctx.closing_quiet(probe, after="beyond the 3 elements requested inside on_subscribe")


@tck_test(
    "3.8", "required", busy=True,
    parity=Parity(
        (), "new",
        "300 request(1) calls in a row must bring 300 elements: a bounded mailbox or small "
        "counter that drops or wraps requests shows only past a few calls."),
    covers=(
        Cover("1.1", "many"),
        Cover("3.8", "many"),
    ),
)
def required_spec308_hundreds_of_requests_must_add_up(ctx: PublisherContext) -> None:
    """300 request(1) calls in a row from the test thread: 300 elements arrive, then nothing.

    A few calls do not fill a bounded mailbox or wrap a small counter; hundreds do. If this
    fails, check what happens to a request() that arrives while earlier ones are still
    pending: it must add to the demand, never be dropped.
    """
    calls = 300
    if ctx.settings.max_elements < calls:
        raise NotVerified(f"needs a publisher of {calls} elements (max_elements)")
    probe = ctx.subscribed(calls + 10, keep_elements=False)
    for _ in range(calls):
        probe.request(1)
    # Only the end is needed here: a wait woken at each element would cost a thread switch each.
    if not probe.wait_steady(lambda: probe.received >= calls or probe.terminal is not None, ctx.settings.timeout):
        raise RuleViolation("3.8", f"{calls} elements for {calls} request(1) calls, none more than "
                            f"{ctx.settings.timeout * 1000:.0f} ms after the one before",
                            f"{probe.received} arrived",
                            evidence=cite(last_seq(ctx.env.trace, probe.name, "request")),
                            setting="timeout")
    ctx.closing_quiet(probe, after=f"beyond the {calls} requested elements")


#: Amounts requested one after the other in the uneven pattern: each batch size of 16 to 256,
#: one less and one more.
_UNEVEN = (1, 2, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 255, 256, 257)


#: One bulk request: one more than every power of two up to 2048 divides (so a batched
#: emission ends owing exactly one element), past the usual 1024-element prefetch.
_BULK = 2049


@tck_test(
    "3.8", "required", busy=True,
    parity=Parity(
        (), "new",
        "demand crossing every batch, turn or buffer size from 16 to 2048 just under, at and "
        "just over it must keep elements coming: an emission ending a turn with demand left "
        "stalls there."),
)
def required_spec308_long_streams_must_be_served_past_internal_batch_sizes(ctx: PublisherContext) -> None:
    """One request(2049); 2049 request(1), one from each on_next; and 1, 2, 15, 16, 17, ... 257.

    The last amounts are each requested from on_next once the one before is served, so every
    batch, turn or buffer size from 16 to 2048 is crossed just under, at and just over it. The
    elements must keep coming while demand is outstanding. If this fails, look at what the
    emission does when a turn or buffer ends with demand left (exactly one element owed, a
    full buffer just drained): it must go on, not wait for a request that will not come.
    """
    uneven_total = sum(_UNEVEN)
    if ctx.settings.max_elements < _BULK:
        raise NotVerified(f"needs a publisher of {_BULK} elements (max_elements)")
    # Only what reaches the probes is judged: a processor is fed by a counting upstream.
    bulk = ctx.subscribed(_BULK + 1, name="bulk", keep_elements=False, yield_s=None, counted=True)
    bulk.request(_BULK)
    checked = [(bulk, _BULK)] if _stalled(bulk, _BULK, "3.8", f"for one request({_BULK})", ctx) else []
    step = {"next": 1, "due": _UNEVEN[0]}

    def uneven(p: ProbeSubscriber, e: Any) -> None:
        if p.received == step["due"] and step["next"] < len(_UNEVEN):
            amount = _UNEVEN[step["next"]]
            step["next"] += 1
            step["due"] += amount
            p.request(amount)


    def again(p: ProbeSubscriber, e: Any) -> None:
        if p.requested < _BULK:
            p.request(1)

    single = ctx.subscribed(_BULK + 1, name="one-by-one", keep_elements=False, on_next=again,
                            yield_s=None, counted=True)
    single.request(1)
    if _stalled(single, _BULK, "3.8", "for request(1) made from each on_next", ctx):
        checked.append((single, _BULK))
    mixed = ctx.subscribed(uneven_total + 1, name="uneven", keep_elements=False, on_next=uneven,
                           yield_s=None, counted=True)
    mixed.request(_UNEVEN[0])
    if _stalled(mixed, uneven_total, "3.8", f"for requests of {', '.join(map(str, _UNEVEN))}, each "
                "made from on_next once the one before was served", ctx):
        checked.append((mixed, uneven_total))
    for probe, total in checked:
        ctx.closing_quiet(probe, after=f"beyond the {total} requested elements")


#: request(1) calls in one subscription: far past any small counter or log.
_CALLS = 20_000


@tck_test(
    "3.8", "required", busy=True,
    parity=Parity(
        (), "new",
        "20,000 request(1) calls in a row must bring 20,000 elements: a small counter of calls "
        "or pending requests (a byte, 16 bits, a bounded log) fails only past some count."),
    covers=(
        Cover("3.17", "many"),
    ),
)
def required_spec308_tens_of_thousands_of_requests_must_add_up(ctx: PublisherContext) -> None:
    """20,000 request(1) calls in a row from the test thread: 20,000 elements, then nothing.

    A counter of calls or of pending requests that is small (a byte, a 16-bit field, a bounded
    log or mailbox) or that fails past some count shows here as a stream that stops with
    demand outstanding. If this fails, check what request() does on its thousandth and
    ten-thousandth call: it must add to the demand every time.
    """
    if ctx.settings.max_elements < _CALLS:
        raise NotVerified(f"needs a publisher of {_CALLS} elements (max_elements)")
    # Only what reaches the probe is judged: a processor is fed by a counting upstream.
    probe = ctx.subscribed(_CALLS + 1, keep_elements=False, yield_s=None, counted=True)
    _request_ones(probe, _CALLS)
    if _stalled(probe, _CALLS, "3.8", f"for {_CALLS} request(1) calls", ctx):
        ctx.closing_quiet(probe, after=f"beyond the {_CALLS} requested elements")


#: Rounds of the hunt for a request made as the emission loop gives up its turn, and how many
#: lines of the subject's code past on_next #1 its thread is stopped at (swept from 1).
EXIT_SWEEP = 24


#: Then as many rounds stopping it at each of its first bytecode instructions after on_next.
EXIT_OPCODE_SWEEP = 64


EXIT_RACE_ROUNDS = EXIT_SWEEP + EXIT_OPCODE_SWEEP


def _got_one(probe: ProbeSubscriber) -> bool:
    return probe.received >= 1 or probe.terminal is not None


#: How long the TCK waits for the emitting thread to reach its pause before requesting anyway.
_EXIT_REACH_S = 0.01


_EXIT_LOOK_S = 0.0005


def _reached(pause: ExitPause, subscribing: Worker) -> None:
    """Wait (at most ``_EXIT_REACH_S``) for the delivering thread to stop at its pause; sooner
    over when it is done (the subscribe() call returned, or its steps stopped counting down:
    its loop ended before the ``k``-th)."""
    deadline = time.monotonic() + _EXIT_REACH_S
    last, still = pause.left, 0
    while not pause.paused.wait(_EXIT_LOOK_S) and time.monotonic() < deadline:
        if subscribing.wait(0):
            return
        still = still + 1 if pause.left == last else 0
        last = pause.left
        if still >= 6:
            return


@tck_test(
    "3.8", "stochastic",
    parity=Parity(
        (), "new",
        "a request made while the delivering thread is stopped a swept number of lines or "
        "bytecode instructions after on_next returns (counted from on_next #1, and back from "
        "the last line the thread runs after it), or after on_subscribe returns, must still be "
        "served, by one thread at a time: a drain that clears its work counter outright (wip = "
        "0, not wip -= missed) loses it, one that takes off too much delivers it beside "
        "another; the JVM TCK has no race hunts."),
    covers=(
        Cover("3.8", "thread", 
            "the delivering thread paused a swept number of lines after on_next returns, and "
            "back from the last line it runs after it, while the TCK requests (a lost wake-up: "
            "wip = 0 for wip -= missed)"),
        Cover("1.3", "thread",
            "the thread that delivered on_subscribe paused a swept number of lines after it "
            "returns while the TCK requests twice (a work count taken below zero)"),
    ),
)
def stochastic_spec308_a_request_made_as_the_emission_loop_exits_must_not_be_lost(ctx: PublisherContext) -> None:
    """Rounds where request(1) comes from the TCK's thread just as the emission loop, its demand
    used up, gives up its turn: the element it asks for must still come.

    A publisher that emits in a loop ("whoever raises the work count from 0 drains") must
    re-check for work that came while it was finishing: one that clears the count
    (``wip = 0``) instead of taking off what it handled (``wip -= missed``), or reads "no
    demand" and leaves its turn in two steps, loses a request made in between, and the stream
    stalls with demand outstanding. Under the interpreter lock that moment is almost never
    hit, so in each round a fresh probe asks for 1 in on_subscribe, and the thread that
    delivers its on_next #1 (the subject's own, or the one that subscribed) is stopped ``k``
    lines of the subject's code after on_next returns, ``k`` swept over the rounds (then ``k``
    bytecode instructions: a count updated without its lock is one line of several), while
    the TCK requests 1 more; then it goes on. That element must come, with nothing more asked
    for. The TCK's request is its only call on the subscription then (rule 2.7), made once
    on_subscribe and on_next #1 returned; a loop that only ever runs inside the TCK's own
    request() cannot be raced so, and need not be. A thread that runs on after on_next #1 (a
    source that queues its other elements and its end, each followed by a drain) leaves its
    turn for the last time lines further on, as its call ends: a round counts the lines it
    runs, then as many rounds again stop it that many lines after on_next #1, and fewer. Last,
    rounds where on_subscribe requests nothing stop the thread that delivered it, swept from
    where it returns and back from the last line that thread runs, while the TCK requests 1
    twice: a publisher whose subscribe() takes a turn once on_subscribe returned, and takes
    its own entry off its work count twice as it leaves, lets the second request start a
    delivery of its own; the element it delivers asks for one more from inside on_next and
    lets the paused thread go on, and a delivery from that thread now is two threads inside
    the subscriber (rule 1.3). (The JVM TCK has no such hunt; rule 3.8 asks
    that every request register its elements, whenever it comes.) If this fails, check the end of the emission loop:
    subtract what was handled from the work count and loop again while it is not zero.
    """
    if ctx.settings.skip_stochastic:
        raise NotVerified("stochastic verifications are switched off (skip_stochastic)", kind=Verdict.DESELECTED)
    if ctx.settings.max_elements < 3:
        raise NotVerified("needs a publisher of at least 3 elements (max_elements)")
    env = ctx.env
    if env.dispatch is not type(env)._direct:
        raise NotVerified("a subject on an event loop runs each call on the loop's thread: a pause "
                          "there would hold the request it waits for")
    me = threading.get_ident()
    with aggressive_switching():
        for r in range(EXIT_RACE_ROUNDS):
            probe, pause = _exit_race_round(ctx, r, me)
            _exit_race_verdict(ctx, probe, pause, r)
        # Then from the end: a thread that goes on after on_next #1 (a source that queues its
        # other elements and its end, each followed by a drain) last leaves its turn as its
        # call ends, lines past the first sweep. A round that counts its lines, then as many
        # rounds stopping it that many lines, and fewer, after on_next #1.
        probe, pause = _exit_race_round(ctx, EXIT_RACE_ROUNDS, me, k=_UNREACHED)
        _exit_race_verdict(ctx, probe, pause, EXIT_RACE_ROUNDS)
        lines = pause.counted
        for j in range(min(EXIT_TAIL_SWEEP, max(0, lines - EXIT_SWEEP))):
            r = EXIT_RACE_ROUNDS + 1 + j
            probe, pause = _exit_race_round(ctx, r, me, k=lines - j)
            _exit_race_verdict(ctx, probe, pause, r)
        # Last, the thread that subscribed, stopped as it goes on after on_subscribe (which
        # requests nothing): a publisher whose subscribe() then takes a turn to deliver what
        # on_subscribe asked for leaves that turn there, lines from the start or the end.
        r = EXIT_RACE_ROUNDS + 1 + EXIT_TAIL_SWEEP
        probe, pause = _subscribe_exit_round(ctx, r, me, _UNREACHED)
        _exit_race_verdict(ctx, probe, pause, r, after="on_subscribe")
        lines = pause.counted
        ks = sorted({*range(1, min(lines, SUBSCRIBE_EXIT_SWEEP) + 1),
                     *range(max(1, lines - SUBSCRIBE_EXIT_SWEEP + 1), lines + 1)})
        for i, k in enumerate(ks):
            probe, pause = _subscribe_exit_round(ctx, r + 1 + i, me, k)
            _exit_race_verdict(ctx, probe, pause, r + 1 + i, after="on_subscribe")


#: Rounds stopping the subscribing thread a swept number of lines after on_subscribe returns,
#: counted from there and back from the last line it runs.
SUBSCRIBE_EXIT_SWEEP = 16


def _subscribe_exit_round(ctx: PublisherContext, r: int, me: int, k: int) -> tuple[ProbeSubscriber, ExitPause]:
    """Round ``r``: the thread that delivered on_subscribe (which requested nothing) paused ``k``
    lines after it returned, and two request(1) calls made meanwhile, one after the other.

    Where the turn the paused thread had was left with its work count wrong (below zero: its
    own entry taken off twice), the first request finds it at 0 and the second starts a
    delivery of its own on this thread; the element delivered so asks for one more from inside
    on_next (rule 3.2) and lets the paused thread go on: delivering that one now, it is a
    second thread inside the subscriber (rule 1.3). A thread that kept its turn kept this one
    from delivering; one that left it has nothing more to deliver."""
    env, timeout = ctx.env, ctx.settings.timeout
    pause = ExitPause(k, rival=me)
    subscribing_thread: list[int] = []

    def armed(p: ProbeSubscriber, s: Any) -> None:
        subscribing_thread.append(threading.get_ident())
        pause.arm()

    def let_go(p: ProbeSubscriber, e: Any) -> None:
        if (subscribing_thread and threading.get_ident() != subscribing_thread[0]
                and pause.paused.is_set() and not pause.resume.is_set()):
            p.request(1)
            pause.resume.set()
            time.sleep(EXIT_LINGER_S)

    probe = ctx.probe(f"exit{r + 1}", on_subscribe=armed, on_next=let_go, keep_elements=False, yield_s=None)
    subscribing = Worker(functools.partial(ctx.subscribe, ctx.publisher(3), probe), "rs-tck:emitting")
    counting = k == _UNREACHED  # the round that counts the lines: it requests once they ran
    with _paused_round(pause, subscribing, timeout, counting=counting):
        if probe._wait(lambda: probe.subscription is not None, timeout) and not counting:
            _reached(pause, subscribing)
            for _ in range(2):
                if probe.terminal is None:
                    probe.request(1)
    for _ in range(2 if counting and probe.subscription is not None else 0):
        if probe.terminal is None:
            probe.request(1)
    env.check()
    return probe, pause


#: How long an on_next on another thread stays inside the subscriber once it let the paused
#: thread go on: long enough for that thread to deliver, if it wrongly does.
EXIT_LINGER_S = 0.002


#: Rounds stopping the thread counted back from the last line it ran after on_next #1.
EXIT_TAIL_SWEEP = 16


#: A step the counting round never reaches: it runs on, counting its lines.
_UNREACHED = 10**9


def _exit_race_round(ctx: PublisherContext, r: int, me: int,
                     k: int | None = None) -> tuple[ProbeSubscriber, ExitPause]:
    """Round ``r``: on_next #1's thread paused as it leaves (``k`` lines after it, if given),
    and request(1) made meanwhile."""
    env, timeout = ctx.env, ctx.settings.timeout
    # Line by line first, then instruction by instruction (a count updated without its lock).
    opcodes = EXIT_SWEEP <= r < EXIT_RACE_ROUNDS
    if k is None:
        k = 1 + (r - EXIT_SWEEP if opcodes else r) % EXIT_OPCODE_SWEEP
    pause = ExitPause(k, rival=me, opcodes=opcodes)

    def first(p: ProbeSubscriber, e: Any, pause: ExitPause = pause) -> None:
        if p.received == 1:
            pause.arm()

    calling = [False]

    def ask(p: ProbeSubscriber, _: Any, calling: list[bool] = calling) -> None:
        calling[0] = True
        try:
            p.request(1)
        finally:
            calling[0] = False

    probe = ctx.probe(f"exit{r + 1}", on_subscribe=ask, on_next=first, keep_elements=False,
                      yield_s=None)
    publisher = ctx.publisher(3)
    subscribing = Worker(functools.partial(ctx.subscribe, publisher, probe), "rs-tck:emitting")
    counting = k == _UNREACHED  # the round that counts the lines: nothing requested meanwhile
    with _paused_round(pause, subscribing, timeout, counting=counting):
        if probe._wait(functools.partial(_got_one, probe), timeout) and not counting:
            _reached(pause, subscribing)
            # Not beside the request made in on_subscribe (on_next #1 inside it, where the
            # loop belongs to that call): the TCK's calls never overlap (rule 2.7).
            if probe.terminal is None and not calling[0]:
                probe.request(1)
                calling.append(True)  # requested while the loop was paused, or had left
    if len(calling) == 1 and probe.terminal is None and probe.received >= 1:
        probe.request(1)  # once that call returned: an ordinary request
    env.check()
    return probe, pause


@contextlib.contextmanager
def _paused_round(pause: ExitPause, subscribing: Worker, timeout: float, *, counting: bool) -> Iterator[None]:
    """A round's body, which requests while the thread may be paused; then the pause ends (in
    a counting round, only once subscribe() returned: every line it ran is counted) and the
    subscribe() call must return."""
    try:
        yield
    finally:
        pause.resume.set()
        if not counting:
            pause.disarm()
    returned = starved_wait(subscribing.wait, timeout + 1.0)
    pause.disarm()
    if not returned:
        raise RuleViolation("1.9", "subscribe() to return promptly",
                            "it did not return (the call on the TCK's thread)", setting="timeout")
    subscribing.result()


def _exit_race_verdict(ctx: PublisherContext, probe: ProbeSubscriber, pause: ExitPause, r: int,
                       *, after: str = "on_next #1") -> None:
    """The elements round ``r`` asked for must come; then the round's probe is cancelled."""
    env, timeout = ctx.env, ctx.settings.timeout
    owed = 2  # on_next #1 and the TCK's request, or (after on_subscribe) the TCK's two requests

    def served(probe: ProbeSubscriber = probe) -> bool:
        return probe.received >= owed or probe.terminal is not None

    if (probe.received >= 1 or after == "on_subscribe") and not (
            probe._wait(served, timeout) or probe._wait(served, timeout * STALL_CONFIRMATION)):
        env.check()
        raise RuleViolation(
            "3.8", f"the elements requested as the publisher's thread finished {after}, delivered",
            f"{probe.name} got {probe.received}, then nothing for "
            f"{timeout * (1 + STALL_CONFIRMATION) * 1000:.0f} ms with {owed - probe.received} requested "
            f"element(s) outstanding (round {r + 1}: the thread was paused {pause.k} "
            f"{'bytecode instruction(s)' if pause.opcodes else 'line(s)'} of the publisher's code "
            f"after {after} returned)",
            hint="at the end of the emission loop, subtract what was handled from the work count "
            "(wip -= missed) and loop again while it is not zero: clearing it loses a request "
            "made meanwhile",
            evidence=cite(last_seq(env.trace, probe.name, "request"),
                          last_seq(env.trace, probe.name, "on_next")),
            setting="timeout")
    probe.cancel()
    env.count_iterations(r + 1, 0)
