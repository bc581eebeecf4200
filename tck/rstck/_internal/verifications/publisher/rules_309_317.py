"""Subscription rules 3.9 to 3.17: invalid requests, cancel's effects, returning normally, 2**63-1."""

from __future__ import annotations

import gc
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

from ....api import MAX_DEMAND
from ....api import Publisher
from ....contexts import PublisherContext
from ....errors import NotVerified
from ....errors import RuleViolation
from ....probe import ProbeSubscriber
from ....registry import Registry
from ...evidence import cite
from ...evidence import last_seq
from ...evidence import seqs
from ...matrix import Cover
from ...parity import Parity
from ...parity import pub
from ...parity import wb
from ...trace import short_repr
from ._common import _BOUNDARY_LENGTHS
from ._common import VERIFICATION
from ._common import _nth
from ._common import _request_ones
from ._common import _stalled

tck_test = Registry(VERIFICATION)
TESTS = tck_test.tests


@tck_test(
    "3.9", "required",
    parity=Parity(pub("required_spec309_requestZeroMustSignalIllegalArgumentException"), "same"),
    covers=(
        Cover("3.9", "test"),
    ),
    left_out_of={"rs": "JVM 3.9 not applicable"},
)
def required_spec309_request_zero_must_signal_value_error(ctx: PublisherContext) -> None:
    """request(0) must be answered with on_error(ValueError), not by raising.

    If this fails, check that request() validates n and signals the ValueError through
    on_error (and then treats the subscription as cancelled).
    """
    probe = ctx.subscribed(10)
    probe.request(0)
    probe.expect_error(ValueError, rule="3.9")


@tck_test(
    "3.9", "required",
    parity=Parity(
        pub("required_spec309_requestNegativeNumberMustSignalIllegalArgumentException"), "stricter",
        "the JVM test asks once with a random negative int; this one asks with both ends of "
        "the range, -1 and -2**63, so that a check catching only part of \"<= 0\" shows every "
        "time."),
    covers=(
        Cover("3.9", "test"),
    ),
    left_out_of={"rs": "JVM 3.9 not applicable"},
)
def required_spec309_request_negative_number_must_signal_value_error(ctx: PublisherContext) -> None:
    """request(-1) and request(-2**63) must each be answered with on_error(ValueError)."""
    for n in (-1, -(2**63)):
        probe = ctx.subscribed(10, name=f"req{n}" if n == -1 else "req-2**63")
        probe.request(n)
        probe.expect_error(ValueError, rule="3.9")


_EXPLAINS = ("3.9", "positive", "negative", "> 0", ">0", "greater than 0", "greater than zero")


@tck_test(
    "3.9", "optional",
    parity=Parity(
        pub("optional_spec309_requestNegativeNumberMaySignalIllegalArgumentExceptionWithSpecificMessage"), "looser",
        "the JVM test accepts only messages containing \"3.9\", \"non-positive subscription "
        "request\" or \"negative subscription request\"; this one accepts any that names the "
        "bound (\"positive\", \"negative\", \"> 0\", ...), as the SHOULD asks for an explanation, "
        "not for words."),
    left_out_of={"rs": "JVM 3.9 not applicable"},
)
def optional_spec309_request_negative_number_should_signal_value_error_with_explanation(ctx: PublisherContext) -> None:
    """The ValueError's message SHOULD say that non-positive requests are illegal."""
    probe = ctx.subscribed(10)
    probe.request(-1)
    error = probe.expect_error(ValueError, rule="3.9")
    text = str(error).lower()
    if not any(fragment in text for fragment in _EXPLAINS):
        raise RuleViolation(
            "3.9",
            f"a message mentioning one of {', '.join(repr(f) for f in _EXPLAINS)}",
            f"ValueError({short_repr(str(error))})", evidence=probe._terminal_evidence(),
        )


#: Elements after request(0) with unbounded demand before the probe gives up and cancels: more
#: than any batch in flight when the request came.
_IN_FLIGHT_CAP = 10_000


def _zero_with_unbounded_demand(ctx: PublisherContext) -> None:
    at = 3

    def zero_then_cap(p: ProbeSubscriber, e: Any) -> None:
        if p.received == at:
            p.request(0)
        elif p.received == at + _IN_FLIGHT_CAP and p.terminal is None:
            p.cancel()  # re-entrant: unwinds a synchronous publisher that ignored the request(0)

    probe = ctx.subscribed(MAX_DEMAND - 1, name="zero-unbounded", keep_elements=False, yield_s=None,
                           on_next=zero_then_cap)
    probe.request(MAX_DEMAND)
    probe._wait(lambda: probe.terminal is not None or probe.cancelled, ctx.settings.timeout)
    if probe.terminal == "on_error" and isinstance(probe.error, ValueError):
        return
    after = max(0, probe.received - at)
    if probe.terminal is None and not probe.cancelled:
        probe.cancel()
    ctx.env.check()
    raise RuleViolation(
        "3.9",
        f"on_error(ValueError) for request(0) made from on_next #{at} with unbounded demand "
        f"outstanding (elements in flight may come first)",
        f"{after} element(s) after it{' (then the TCK cancelled)' if after >= _IN_FLIGHT_CAP else ''}, "
        f"and {probe._terminal_text() if probe.terminal else 'no on_error'}",
        hint="validate n before any shortcut for unbounded demand: request(0) is illegal whatever the "
        "demand",
        evidence=cite(last_seq(ctx.env.trace, probe.name, "request")),
        setting="timeout",
    )


@tck_test(
    "3.9", "required",
    parity=Parity(
        pub("required_spec309_requestZeroMustSignalIllegalArgumentException"), "stricter",
        "the JVM test requests 0 from the test thread; this one does it from inside on_next, "
        "where a re-entrant request() often only adds demand, at batch boundaries and with "
        "unbounded demand outstanding: 3.9 holds on every path while the subscription is not "
        "cancelled."),
    covers=(
        Cover("1.6", "on_next"),
        Cover("3.9", "on_next"),
    ),
    left_out_of={"rs": "JVM 3.9 not applicable"},
)
def required_spec309_request_zero_from_inside_on_next_must_signal_value_error(ctx: PublisherContext) -> None:
    """request(0) from inside the first on_next must be answered with on_error(ValueError).

    Made while the publisher is delivering, where a re-entrant request() often takes a short
    path that only adds demand. After the on_error, a further request(5) yields nothing
    (rules 1.6, 1.7). Then request(n) and request(0) from on_next #n, for n of 64, 1000 and
    1024: the on_error is owed, with no demand left, exactly where a batch or turn of a size
    dividing n ends. Last, with unbounded demand outstanding (request(2**63-1) on a stream
    of 2**63-2 that cannot end first): request(0) from on_next #3, where a request() that
    stops looking once demand is unbounded skips the check; elements in flight may come
    first, then the on_error. If this fails, check that request() validates n on every path,
    and that a turn ending with an error pending still delivers it.
    """

    def zero(p: ProbeSubscriber, e: Any) -> None:
        if p.received == 1:
            p.request(0)

    probe = ctx.subscribed(10, on_next=zero)
    probe.request(3)
    probe.expect_error(ValueError, rule="3.9")
    mark = probe.mark()
    probe.request(5)
    ctx.closing_quiet(probe, after="after the on_error that answered request(0)", since=mark)

    def zero_at(n: int) -> Callable[[ProbeSubscriber, Any], None]:
        def hook(p: ProbeSubscriber, e: Any) -> None:
            if p.received == n:
                p.request(0)
        return hook

    lengths = [n for n in _BOUNDARY_LENGTHS if n + 1 <= ctx.settings.max_elements]
    late = [ctx.subscribed(n + 1, name=f"zero-at-{n}", keep_elements=False, yield_s=None, on_next=zero_at(n))
            for n in lengths]
    for long, n in zip(late, lengths, strict=True):
        long.request(n)
    for long, n in zip(late, lengths, strict=True):
        if _stalled(long, n, "3.9", f"for request({n}), then request(0) from on_next #{n}", ctx):
            long.expect_error(ValueError, rule="3.9")
    if ctx.settings.max_elements < MAX_DEMAND - 1:
        ctx.env.trace.note("request(0) with unbounded demand outstanding: not tried, it needs a "
                           f"stream of {MAX_DEMAND - 1} elements (max_elements)")
        return
    _zero_with_unbounded_demand(ctx)


tck_test.untested(
    "untested_spec310_request_may_synchronously_call_on_next_on_subscriber",
    "3.10",
    "a permission, not an obligation: the probes accept on_next delivered inside request()",
    parity=Parity(
        (), "same",
        "a permission; neither kit's publisher tests can fail on it"),
)


tck_test.untested(
    "untested_spec311_request_may_synchronously_call_on_complete_or_on_error",
    "3.11",
    "a permission, not an obligation: the probes accept terminal signals delivered inside request()",
    parity=Parity(
        (), "same",
        "a permission; neither kit's publisher tests can fail on it"),
)


@tck_test(
    "3.12", "required",
    parity=Parity(pub("required_spec312_cancelMustMakeThePublisherToEventuallyStopSignaling"), "same"),
    covers=(
        Cover("1.8", "test"),
        Cover("3.12", "test"),
    ),
)
def required_spec312_cancel_must_make_the_publisher_eventually_stop_signalling(ctx: PublisherContext) -> None:
    """request(10) + request(5), take one element, cancel(): the stream must go quiet.

    Elements already in flight may still arrive (never more than the 15 requested); the
    stream must then fall silent. The wait ends one quiet window after the last signal.
    """
    probe = ctx.subscribed(20)
    probe.request(10)
    probe.request(5)
    probe.next_element()
    probe.cancel()

    def stopped() -> None:
        _, quiet = probe.wait_quiet()
        if not quiet:
            raise RuleViolation("3.12", "signals to stop after cancel()",
                                f"still signalling {ctx.settings.timeout * 1000:.0f} ms after cancel()",
                                setting="timeout")
        if probe.received > 15:
            raise RuleViolation("3.12", "at most the 15 requested elements", f"{probe.received} elements",
                                evidence=cite(_nth(seqs(ctx.env.trace, probe.name, "on_next"), 15)))

    ctx.at_close(stopped)


def _subscribe_then_cancel(
    ctx: PublisherContext, publisher: Publisher[Any], collected: threading.Event, *, inside: bool = False
) -> tuple[weakref.ref[ProbeSubscriber], int]:
    # A separate frame, so no local of the test body keeps the probe alive.
    def cancel_inside(p: ProbeSubscriber, e: Any) -> None:
        if not p.cancelled:
            p.cancel()

    probe = ProbeSubscriber(ctx.env, "weak", on_next=cancel_inside if inside else None)
    ref = weakref.ref(probe, lambda _: collected.set())
    ctx.subscribe(publisher, probe)
    probe.expect_subscription()
    probe.request(2 if inside else 1)
    probe.next_element()
    if inside:
        probe.wait_quiet()  # the cancel happened inside on_next; let the publisher unwind
    else:
        probe.cancel()
    return ref, probe.received


def _still_held(ctx: PublisherContext, ref: weakref.ref[ProbeSubscriber], collected: threading.Event) -> list[str] | None:
    """None once the probe is collected within the GC window; else what holds it (empty: nothing
    the collector can see).

    A reference the collector cannot see is a frame still running on another thread (a local
    of a delivery that has not returned yet: a starved thread on a loaded machine), so that case
    gets one more window: "eventually" (3.13) is not "by the first deadline". A reference that
    outlives both is reported.
    """
    collections = 0  # full ones
    young = True
    for window in (1, 2):
        deadline = time.monotonic() + ctx.settings.gc_window
        while ref() is not None and time.monotonic() < deadline:
            if young:
                # The young generations first, then a moment for a delivery still returning on
                # another thread: one or the other most often frees it, and a walk of every
                # object of the process (what follows) costs a hundred times more.
                young = False
                gc.collect(1)
                collected.wait(min(0.05, max(0.0, deadline - time.monotonic())))
                continue
            gc.collect()
            collections += 1
            if ref() is not None and collections > 1 and gc.get_freeze_count():
                # Frozen objects (gc.freeze: the pytest host's start-up, or the user's) are left
                # out of every collection: one that turned to garbage holding the subscriber
                # (a registry made at import, replaced by a copy) would keep it for good. Not
                # at the first collection: a delivery still returning on another thread is the
                # usual holder then, and what stays frozen keeps the run's last collections short.
                gc.unfreeze()
                continue
            collected.wait(min(0.05, max(0.0, deadline - time.monotonic())))
        probe = ref()
        if probe is None:
            return None
        holders = [short_repr(h, 60) for h in gc.get_referrers(probe) if not isinstance(h, type(gc.get_referrers))][:3]
        del probe
        if holders or window == 2:
            return holders
        ctx.env.trace.note("3.13: the cancelled probe is held by nothing the collector sees (a frame still "
                           "running on another thread?): waiting one more GC window")
    return None


@tck_test(
    "3.13", "required",
    parity=Parity(pub("required_spec313_cancelMustMakeThePublisherEventuallyDropAllReferencesToTheSubscriber"), "same"),
    covers=(
        Cover("3.13", "test"),
    ),
)
def required_spec313_cancel_must_make_the_publisher_eventually_drop_all_references_to_the_subscriber(
    ctx: PublisherContext,
) -> None:
    """After cancel() the subscriber must become garbage: only a weakref is kept by the TCK.

    The check collects garbage and waits on the weakref's callback, up to the GC window (one
    more when nothing the collector can see holds it: a frame still running on a starved
    thread). If this fails, check that cancel() clears the subscription's reference to its
    subscriber, and that no registry, queue or closure of the publisher keeps it.
    """
    publisher = ctx.publisher(3)
    collected = threading.Event()
    ref, received = _subscribe_then_cancel(ctx, publisher, collected)
    holders = _still_held(ctx, ref, collected)
    if holders is not None:
        raise RuleViolation(
            "3.13",
            f"the cancelled subscriber to be garbage-collectable within {ctx.settings.gc_window * 1000:.0f} ms",
            f"it is still referenced (after receiving {received} element(s)); referrers include: "
            + ("; ".join(holders) or "unknown"),
            setting="gc_window", evidence=cite(last_seq(ctx.env.trace, "weak", "cancel")),
        )
    ctx.env.check()


@tck_test(
    "3.13", "required",
    parity=Parity(
        pub("required_spec313_cancelMustMakeThePublisherEventuallyDropAllReferencesToTheSubscriber"), "stricter",
        "the JVM test cancels from the test thread; this one also cancels from inside on_next, "
        "where the cancel takes another path through the publisher (a flag, a deferred "
        "clean-up)."),
    covers=(
        Cover("3.13", "on_next"),
    ),
)
def required_spec313_cancel_from_inside_on_next_must_make_the_publisher_drop_all_references(
    ctx: PublisherContext,
) -> None:
    """As the other 3.13 test, but the subscriber cancels from inside its on_next.

    A cancel that arrives while the publisher is delivering takes another path through
    its code (a flag the running loop checks, a clean-up deferred to the end of the
    delivery) than one made from outside. If this fails, check that the path taken when
    cancel() is called during on_next also forgets the subscriber.
    """
    publisher = ctx.publisher(3)
    collected = threading.Event()
    ref, received = _subscribe_then_cancel(ctx, publisher, collected, inside=True)
    if _still_held(ctx, ref, collected) is not None:
        raise RuleViolation(
            "3.13",
            f"the subscriber, cancelled from inside on_next, to be garbage-collectable within "
            f"{ctx.settings.gc_window * 1000:.0f} ms",
            f"it is still referenced (after receiving {received} element(s))",
            evidence=cite(last_seq(ctx.env.trace, "weak", "cancel")),
            setting="gc_window",
        )
    ctx.env.check()


tck_test.untested(
    "untested_spec314_cancel_may_cause_the_publisher_to_shutdown_if_no_other_subscription_exists",
    "3.14",
    "a permission: whether a stateful publisher shuts down is its own choice",
    parity=Parity(
        (), "same",
        "a permission; neither kit's publisher tests can fail on it"),
)


@tck_test(
    "3.15", "required",
    parity=Parity(
        wb("untested_spec315_cancelMustNotThrowExceptionAndMustSignalOnError"), "new",
        "cancel() must return normally before any request, after one and after completion; the "
        "JVM TCK has only a subscriber-side stub for 3.15."),
    covers=(
        Cover("3.15", "test"),
        Cover("3.15", "terminal", "after on_complete"),
    ),
)
def required_spec315_cancel_must_return_normally(ctx: PublisherContext) -> None:
    """cancel() returns normally before any request, after a request, and after completion."""
    fresh = ctx.subscribed(3, name="fresh")
    mark = fresh.mark()
    fresh.cancel()
    busy = ctx.subscribed(3, name="busy")
    busy.request(1)
    busy.next_element()
    busy.cancel()
    if ctx.settings.can_complete:
        done = ctx.subscribed(1, completes=True, name="done")
        done.request(2)
        done.next_element()
        done.expect_completion()
        done.cancel()
    ctx.closing_quiet(fresh, after="after cancel() with nothing requested", since=mark)


@tck_test(
    "3.16", "required",
    parity=Parity(
        wb("untested_spec316_requestMustNotThrowExceptionAndMustOnErrorTheSubscriber"), "new",
        "request() must return normally for 1, 2**63-1, 0, -1, after cancel and after "
        "completion; the JVM TCK has only a subscriber-side stub for 3.16."),
    covers=(
        Cover("3.16", "test"),
        Cover("3.16", "terminal", "after cancel and on_complete"),
    ),
)
def required_spec316_request_must_return_normally(ctx: PublisherContext) -> None:
    """request() returns normally for 1, 2**63-1, 0, -1, after cancel and after completion."""
    probe = ctx.subscribed(3, name="valid")
    probe.request(1)
    probe.next_element()
    probe.request(MAX_DEMAND)
    probe.next_elements(2)
    invalid = ctx.subscribed(3, name="invalid")
    invalid.request(0)
    invalid.expect_terminal()  # whether it answers with on_error is 3.9's business, not ours
    invalid.request(-1)
    cancelled = ctx.subscribed(3, name="cancelled")
    cancelled.cancel()
    cancelled.request(1)
    if ctx.settings.can_complete:
        done = ctx.subscribed(1, completes=True, name="done")
        done.request(5)
        done.next_element()
        done.expect_completion()
        done.request(1)
    ctx.closing_drain(cancelled)


@tck_test(
    "3.17", "required",
    parity=Parity(pub("required_spec317_mustSupportAPendingElementCountUpToLongMaxValue"), "same"),
    covers=(
        Cover("1.2", "bulk"),
        Cover("3.17", "bulk"),
    ),
)
def required_spec317_must_support_a_pending_element_count_up_to_long_max_value(ctx: PublisherContext) -> None:
    """request(2**63-1) on a 3-element stream: three elements and on_complete, no error."""
    probe = ctx.subscribed(3, completes=True)
    probe.request(MAX_DEMAND)
    probe.next_elements(3)
    probe.expect_completion()


@tck_test(
    "3.17", "required",
    parity=Parity(
        pub("required_spec317_mustSupportACumulativePendingElementCountUpToLongMaxValue"), "stricter",
        "the JVM test makes its three requests from the test thread, where a synchronous "
        "publisher delivers between them; this one makes them inside on_subscribe, so that the "
        "whole sum of 2**63-1 is outstanding at once."),
    covers=(
        Cover("3.17", "on_subscribe"),
    ),
)
def required_spec317_must_support_a_cumulative_pending_element_count_up_to_long_max_value(ctx: PublisherContext) -> None:
    """request(2**62-1) twice and request(1): a total of exactly 2**63-1 is legal.

    The three requests are made inside on_subscribe, before anything can be delivered, so
    that even a synchronous publisher holds the whole sum as outstanding demand at once.
    """

    def accumulate(p: ProbeSubscriber, s: Any) -> None:
        p.request(MAX_DEMAND // 2)
        p.request(MAX_DEMAND // 2)
        p.request(1)

    probe = ctx.probe(on_subscribe=accumulate)
    ctx.subscribe(ctx.publisher(3, completes=True), probe)
    probe.expect_subscription()
    probe.next_elements(3)
    probe.expect_completion()


@tck_test(
    "3.17", "required",
    parity=Parity(
        pub("required_spec317_mustNotSignalOnErrorWhenPendingAboveLongMaxValue"), "stricter",
        "the JVM test only checks that no on_error comes; this one also requires the ten "
        "elements the overflowing demand covers, as a demand past 2**63-1 is \"effectively "
        "unbounded\", not void."),
    covers=(
        Cover("1.8", "on_next"),
        Cover("3.17", "on_next"),
    ),
)
def required_spec317_must_not_signal_on_error_when_pending_above_long_max_value(ctx: PublisherContext) -> None:
    """Ten request(2**63-2) from on_next push demand far past 2**63-1: no on_error allowed.

    A demand at or above 2**63-1 may be treated as unbounded; it must not overflow into an
    error (or, in Python, into an ever-growing integer that some check then rejects).
    """
    elements = min(ctx.settings.max_elements, 2**31 - 1)
    if elements < 11:
        raise NotVerified("needs a publisher of at least 11 elements (max_elements)")

    def overflow(p: ProbeSubscriber, e: Any) -> None:
        if p.received < 10:
            p.request(MAX_DEMAND - 1)
        elif p.received == 10:
            p.cancel()

    probe = ctx.subscribed(elements, keep_elements=False, on_next=overflow, yield_s=None)
    probe.request(1)
    probe._wait(lambda: probe.received >= 10 or probe.terminal is not None, ctx.settings.timeout)

    def no_error() -> None:
        probe.wait_quiet()
        if probe.terminal == "on_error":
            raise RuleViolation("3.17", "no on_error when the total demand exceeds 2**63-1", probe._terminal_text(),
                                evidence=probe._terminal_evidence())
        if probe.received < 10:
            raise RuleViolation("3.17", "elements to keep flowing under a demand above 2**63-1",
                                f"only {probe.received} arrived", evidence=probe.evidence())

    ctx.at_close(no_error)


#: (name, first request, request from every on_next (None: none), requests from on_next #1
#: instead): each pushes the outstanding demand from a few elements to 2**63-1 or past it; the
#: last two pass it twice over, then ask for 3 more: a sum that wraps as a Java long does comes
#: back to a small positive count (-2 + 3, or 1 - 2**63 + 2**63 - 1 + 3), and the stream stops
#: a few elements on. The first of the two makes its first request from on_subscribe, before a
#: source that fills a buffer has produced: the elements then come one at a time, each counted
#: against the wrapped sum (a loop that emits while its count differs from the demand it read
#: takes a negative one for unbounded, and runs on until its queue is empty).
_SUMS: tuple[tuple[str, int, int | None, tuple[int, ...]], ...] = (
    ("2+(2**63-2)", 2, MAX_DEMAND - 1, ()),
    ("1+(2**63-1)", 1, MAX_DEMAND, ()),
    ("3+(2**63-4)+1", 3, 1, (MAX_DEMAND - 3,)),
    ("(2**63-1)+(2**63-1)+3", MAX_DEMAND, None, (MAX_DEMAND, 3)),
    ("1+(2**63-1)+(2**63-1)+3", 1, None, (MAX_DEMAND, MAX_DEMAND, 3)),
)
_FIRST_FROM_ON_SUBSCRIBE = "(2**63-1)+(2**63-1)+3"


def _sum_text(first: int, every: int | None, once: tuple[int, ...], *, from_on_subscribe: bool = False) -> str:
    calls = " and ".join(f"request({n})" for n in once)
    later = f"request({every}) from every {'later ' if once else ''}on_next" if every is not None else ""
    where = " from on_subscribe" if from_on_subscribe else ""
    return f"when request({first}){where} is followed by " + ", ".join(
        part for part in (f"{calls} from on_next #1" if once else "", later) if part)


@tck_test(
    "3.17", "required",
    parity=Parity(
        pub("required_spec317_mustSupportACumulativePendingElementCountUpToLongMaxValue", "required_spec317_mustNotSignalOnErrorWhenPendingAboveLongMaxValue"), "stricter",
        "the JVM tests reach 2**63-1 with nothing yet delivered, or only check for on_error "
        "past it; this one reaches or passes it from on_next with a few elements outstanding "
        "and requires the stream to keep flowing, where a sum that wraps as a Java long does "
        "goes negative and stops."),
)
def required_spec317_demand_reaching_long_max_value_from_a_small_outstanding_demand_must_keep_flowing(
    ctx: PublisherContext,
) -> None:
    """Requests of about 2**63-1 made from on_next while a few elements are still outstanding.

    request(2), then request(2**63-2) from every on_next; request(1), then request(2**63-1)
    from every on_next; request(3), then request(2**63-4) from the first on_next and request(1)
    from every later one; request(2**63-1) from on_subscribe, then request(2**63-1) and
    request(3) from the first on_next; request(1), then request(2**63-1) twice and request(3)
    from the first on_next. Each sum reaches 2**63-1 or passes it; the stream must keep flowing (a counter
    that wraps round, as a Java long does, goes negative and stops it, or comes back to a few
    elements with the last request), on a finite stream to its on_complete and on a longer one
    for 50 elements. If this fails, check the addition in request(): saturate at 2**63-1 (or
    treat it as unbounded) before adding.
    """
    taken = 50
    if ctx.settings.max_elements < 2 * taken:
        raise NotVerified(f"needs a publisher of {2 * taken} elements (max_elements)")
    for i, (name, first, every, once) in enumerate(_SUMS):
        finite = ctx.settings.can_complete and i % 2 == 0

        def more(p: ProbeSubscriber, e: Any, every: int | None = every, once: tuple[int, ...] = once) -> None:
            if p.cancelled or p.received > taken:
                return
            for n in (once if once and p.received == 1 else () if every is None else (every,)):
                p.request(n)

        inside = name == _FIRST_FROM_ON_SUBSCRIBE

        def ask(p: ProbeSubscriber, s: Any, first: int = first) -> None:
            p.request(first)

        probe = ctx.subscribed(taken if finite else 2 * taken, completes=finite, name=name, keep_elements=False,
                               on_next=more, on_subscribe=ask if inside else None, yield_s=None)
        if not inside:
            probe.request(first)
        if not _stalled(probe, taken, "3.17", _sum_text(first, every, once, from_on_subscribe=inside), ctx):
            continue
        if finite:
            probe.expect_completion(rule="3.17")
            ctx.closing_quiet(probe, after="after on_complete")
        else:
            probe.cancel()
            ctx.closing_drain(probe)


#: request(1) calls made from inside one on_next: past a signed or unsigned 16-bit count
#: (2**15, 2**16) and 100,000, the sizes a bounded log, mailbox or table of requests takes
#: (each call costs an element: none beyond the largest size a class is known to take).
_PILED_CALLS = 100_000 + 1


#: The same through a processor (``PublisherContext.relayed``): past 2**15 and 2**16.
_RELAYED_PILED_CALLS = 2**16 + 1


#: The calls made first, from inside on_next #1: a few, whose loss is rule 3.8's (a request
#: that replaces the demand left instead of adding to it), not a limit on the count of calls.
_FIRST_PILE = 64


@tck_test(
    "3.17", "required", busy=True,
    parity=Parity(
        (), "new",
        "\"A Subscription MUST support an unbounded number of calls to request\": the JVM's 3.17 "
        "tests make a few calls of large sums; this one makes 100,001 request(1) calls from "
        "inside on_next (65,537 through a processor), past a 16-bit call counter or a bounded "
        "log of pending requests."),
    covers=(
        Cover("3.17", "many", 
            "100,001 request(1) calls from inside one on_next, after 64 from another (65,537 "
            "through a processor): past 16-bit counts and pending-request logs of 2**16 or "
            "100,000 slots; a 32-bit count is out of reach"),
    ),
)
def required_spec317_must_support_an_unbounded_number_of_request_calls(ctx: PublisherContext) -> None:
    """64 request(1) calls from inside on_next #1, then 100,001 from inside on_next #65: as many
    elements, then nothing.

    Rule 3.17 asks for an unbounded number of request calls. A count of calls in a 16-bit
    field, or requests kept pending in a bounded log or mailbox (2**16 slots, 100,000) until the
    emission loop takes them, fails past its size; made from inside on_next, the calls pile up
    while that loop waits for on_next to return, so a pending-request limit is reached too.
    The first 64 going unserved is rule 3.8's (a request replacing the demand left instead of
    adding to it), not a limit on calls. The calls are counted by the TCK once, not one by one, and the elements are not kept: the
    cost is the subject's own (a processor, fed by a counting upstream and relaying each
    element at some ten times a plain publisher's cost, gets 65,537 calls). The JVM TCK makes a handful of calls for 3.17; "an unbounded
    number of calls" is read here past the sizes real counters and logs take (a 32-bit count is
    out of reach). If this fails, check what request() does once it was called
    65,536 or 100,000 times, and where pending requests are kept: add them to one demand count.
    """
    # A processor relays each element, at ten times the cost: past 2**16.
    calls = _RELAYED_PILED_CALLS if ctx.relayed else _PILED_CALLS
    if ctx.settings.max_elements < calls + _FIRST_PILE + 1:
        raise NotVerified(f"needs a publisher of {calls + _FIRST_PILE + 1} elements (max_elements)")
    first = _FIRST_PILE
    total = 1 + first + calls

    def pile(p: ProbeSubscriber, e: Any) -> None:
        if p.received == 1:
            _request_ones(p, first)
        elif p.received == 1 + first:
            # The hook's work is done: the elements that follow take the probe's fast path.
            p.on_next_hook = None
            _request_ones(p, calls)

    probe = ctx.subscribed(total + 1, keep_elements=False, on_next=pile, yield_s=None, counted=True)
    probe.request(1)
    if not _stalled(probe, 1 + first, "3.8", f"for request(1) then {first} request(1) calls from inside "
                    "on_next #1", ctx):
        return
    if _stalled(probe, total, "3.17", f"for request(1), {first} request(1) calls from inside on_next #1 "
                f"and {calls} from inside on_next #{1 + first}", ctx):
        ctx.closing_quiet(probe, after=f"beyond the {total} requested elements")
