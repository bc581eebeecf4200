"""Publisher verification: every rule of sections 1 and 3 that a publisher can be seen to break.

Each test subscribes ``ProbeSubscriber``s to fresh publishers from the user's factory. The
probes flag order, demand, termination and serial-delivery violations (1.1, 1.3, 1.7, 1.9) in
*every* test as they happen; the bodies below add what is specific to their rule. A test's
docstring is the diagnosis shown to users: what it does, and what to check when it fails.
"""

from __future__ import annotations

import contextlib
import gc
import threading
import time
import weakref
from typing import Any

from ..api import MAX_DEMAND
from ..api import Publisher
from ..contexts import PublisherContext
from ..errors import NotVerified
from ..errors import RuleViolation
from ..probe import ProbeAbort
from ..probe import ProbeSubscriber
from ..trace import short_repr
from ._base import Registry
from ._base import aggressive_switching

VERIFICATION = "publisher"
tck_test = Registry(VERIFICATION)
TESTS = tck_test.tests


# -- sanity ------------------------------------------------------------------------------------


@tck_test(None, "required")
def required_sanity_factory_1_produces_exactly_1_element(ctx: PublisherContext) -> None:
    """factory(1) must give one element, then on_complete.

    If this fails, check that the factory honours its contract: ``factory(n)`` returns a
    publisher of exactly n elements followed by on_complete.
    """
    probe = ctx.subscribed(1, completes=True)
    probe.request(1)
    probe.next_element(what="the only element")
    probe.request(1)
    probe.expect_completion()


@tck_test(None, "required")
def required_sanity_factory_3_produces_exactly_3_elements(ctx: PublisherContext) -> None:
    """factory(3) must give three elements, one per request(1), then on_complete."""
    probe = ctx.subscribed(3, completes=True)
    for i in range(3):
        probe.request(1)
        probe.next_element(what=f"element {i + 1} of 3")
    probe.request(1)
    probe.expect_completion()


# -- section 1: Publisher ----------------------------------------------------------------------


@tck_test("1.1", "required")
def required_spec101_request_must_result_in_the_correct_number_of_elements(ctx: PublisherContext) -> None:
    """Never more on_next than requested, under three demand patterns.

    One at a time, in bulk, and re-entrant from on_next. Nothing may arrive before the first
    request or beyond the total requested. If this fails, check the demand accounting: is it
    decremented per element, and read under the same lock that request() updates?
    """
    probe = ctx.subscribed(5)
    probe.expect_quiet(after="before the first request(n)")
    probe.request(1)
    probe.next_element()
    probe.expect_quiet(after="beyond the requested 1 element")
    probe.request(1)
    probe.request(2)
    probe.next_elements(3)
    probe.expect_quiet(after="beyond the requested 4 elements")
    probe.cancel()

    def again(p: ProbeSubscriber, element: Any) -> None:
        if p.received < 5:
            p.request(1)

    reentrant = ctx.subscribed(10, name="reentrant", on_next=again)
    reentrant.request(1)
    reentrant.next_elements(5)
    reentrant.expect_quiet(after="beyond the 5 elements requested one by one from on_next")


@tck_test("1.2", "required")
def required_spec102_may_signal_fewer_than_requested_and_terminate(ctx: PublisherContext) -> None:
    """request(10) on a 3-element stream: three elements, then on_complete.

    If this fails, check that the publisher completes when its source runs dry even though
    demand is left over.
    """
    probe = ctx.subscribed(3, completes=True)
    probe.request(10)
    probe.next_elements(3)
    probe.expect_completion()


@tck_test("1.3", "stochastic")
def stochastic_spec103_must_signal_on_methods_sequentially(ctx: PublisherContext) -> None:
    """Many fresh streams, each watched for two threads inside the subscriber at once.

    Each iteration requests from on_subscribe and from every on_next (or in one bulk request,
    every other iteration), while the probe pauses inside each signal so that a second thread
    racing in is seen. Same-thread nesting (a synchronous publisher) is allowed. If this
    fails, check that signals from several threads are serialised (a lock or a serial queue).
    """
    if ctx.settings.skip_stochastic:
        raise NotVerified("stochastic verifications are switched off (skip_stochastic)", kind="deselected")
    elements = min(10, ctx.settings.max_elements)
    if elements < 2:
        raise NotVerified("needs a publisher of at least 2 elements (max_elements)")
    completes = ctx.settings.can_complete
    with aggressive_switching():
        _signal_sequentially(ctx, elements, completes)


def _signal_sequentially(ctx: PublisherContext, elements: int, completes: bool) -> None:
    showed = 0
    for i in range(ctx.settings.stochastic_iterations):
        bulk = i % 2 == 1

        def first(p: ProbeSubscriber, s: Any, bulk: bool = bulk) -> None:
            p.request(elements if bulk else 1)

        def more(p: ProbeSubscriber, e: Any, bulk: bool = bulk) -> None:
            if not bulk and p.received < elements:
                p.request(1)

        probe = ctx.probe(f"run{i}", on_subscribe=first, on_next=more, yield_s=0.0002)
        try:
            ctx.subscribe(ctx.publisher(elements, completes=completes), probe)
            probe.expect_subscription()
            probe.next_elements(elements)
            if completes:
                probe.expect_completion()
            else:
                probe.cancel()
        finally:
            showed += probe.concurrent_entries > 0
            ctx.env.count_iterations(i + 1, showed)
        ctx.env.check()  # stop at the first iteration that showed a race


@tck_test("1.4", "required")
def required_spec104_must_signal_on_error_when_failing(ctx: PublisherContext) -> None:
    """The failed publisher must signal on_subscribe, then on_error, and nothing more.

    If this fails, check that a publisher that cannot serve a subscriber calls on_error on
    it (after on_subscribe) rather than raising from subscribe() or staying silent.
    """
    probe = ctx.failed_subscription("1.4")
    probe.expect_quiet(after="after on_error")


@tck_test("1.5", "required")
def required_spec105_must_signal_on_complete_when_finite_stream_terminates(ctx: PublisherContext) -> None:
    """A 3-element stream, requested one at a time, must end with on_complete.

    If this fails, check that on_complete is signalled once the last element was delivered,
    even when it is requested separately.
    """
    probe = ctx.subscribed(3, completes=True)
    for _ in range(3):
        probe.request(1)
        probe.next_element()
    probe.request(1)
    probe.expect_completion()
    probe.expect_quiet(after="after on_complete")


@tck_test("1.5", "optional")
def optional_spec105_empty_stream_must_terminate_by_signalling_on_complete(ctx: PublisherContext) -> None:
    """factory(0): an empty stream must complete, at the latest after a request.

    on_complete sent from inside subscribe(), right after on_subscribe, is fine.
    """
    probe = ctx.subscribed(0, completes=True)
    probe.request(1)
    probe.expect_completion()
    probe.expect_quiet(after="after on_complete")


@tck_test("1.6", "required")
def required_spec106_must_consider_subscription_cancelled_after_on_complete(ctx: PublisherContext) -> None:
    """After on_complete, request(1), request(0), request(-1) and cancel() are all no-ops.

    A subscription that still honoured request(0) would answer with on_error (rule 3.9
    only applies "while the subscription is not cancelled"). If this fails, check that
    the subscription marks itself cancelled when it signals on_complete.
    """
    probe = ctx.subscribed(1, completes=True)
    probe.request(2)
    probe.next_element()
    probe.expect_completion()
    mark = probe.mark()
    for n in (1, 0, -1):
        probe.request(n)
    probe.cancel()
    probe.expect_quiet(after="after on_complete, whatever is requested", since=mark)


@tck_test("1.6", "required")
def required_spec106_must_consider_subscription_cancelled_after_on_error(ctx: PublisherContext) -> None:
    """After the failed publisher's on_error, request and cancel are no-ops."""
    probe = ctx.failed_subscription("1.4")
    mark = probe.mark()
    for n in (1, 0, -1):
        probe.request(n)
    probe.cancel()
    probe.expect_quiet(after="after on_error, whatever is requested", since=mark)


@tck_test("1.7", "required")
def required_spec107_must_not_emit_further_signals_once_on_complete_has_been_signalled(ctx: PublisherContext) -> None:
    """After on_complete nothing else may arrive, even when more is requested."""
    probe = ctx.subscribed(1, completes=True)
    probe.request(10)
    probe.next_element()
    probe.expect_completion()
    mark = probe.mark()
    probe.request(10)
    probe.expect_quiet(after="after on_complete", since=mark)


@tck_test("1.7", "required")
def required_spec107_must_not_emit_further_signals_once_on_error_has_been_signalled(ctx: PublisherContext) -> None:
    """After the failed publisher's on_error nothing else may arrive, even on request."""
    probe = ctx.failed_subscription("1.4")
    mark = probe.mark()
    probe.request(10)
    probe.expect_quiet(after="after on_error", since=mark)


@tck_test("1.8", "required")
def required_spec108_cancelled_subscription_must_eventually_stop_being_signalled(ctx: PublisherContext) -> None:
    """Unbounded demand on a long stream, cancelled from inside the first on_next.

    A few elements already in flight may follow the cancel; a stream that keeps flowing
    (more than 1000 elements after cancel, or for longer than the timeout) does not stop.
    If this fails, check that the emission loop re-reads the cancelled flag per element.
    """
    elements = min(ctx.settings.max_elements, 1_000_000)
    if elements < 2:
        raise NotVerified("needs a publisher of at least 2 elements (max_elements)")
    after: dict[str, float] = {}
    allowance = 1000

    def cancel_first(p: ProbeSubscriber, e: Any) -> None:
        if "t" not in after:
            after["t"] = time.monotonic()
            p.cancel()
        elif p.received - 1 > allowance and "flagged" not in after:
            after["flagged"] = 1
            p.env.violation(
                "1.8",
                "signals to stop soon after cancel()",
                f"{p.received - 1} elements after cancel() and still flowing",
            )
            raise ProbeAbort("cancel ignored")

    probe = ctx.subscribed(elements, keep_elements=False, on_next=cancel_first, yield_s=None)
    probe.request(MAX_DEMAND)
    _, quiet = probe.wait_quiet()
    if not quiet:
        raise RuleViolation(
            "1.8",
            "signals to stop soon after cancel()",
            f"still signalling {ctx.settings.timeout * 1000:.0f} ms after cancel() "
            f"({probe.received} element(s) in total)",
        )


@tck_test("1.9", "required")
def required_spec109_subscribe_must_return_normally(ctx: PublisherContext) -> None:
    """subscribe() returns normally, for the regular and (if given) the failed publisher."""
    ctx.subscribed(1)
    if ctx.subject.failed_factory is not None:
        probe = ctx.probe("failed")
        ctx.subscribe(ctx.failed_publisher(), probe)
        probe.expect_subscription()


@tck_test("1.9", "required")
def required_spec109_subscribe_none_must_raise_type_error(ctx: PublisherContext) -> None:
    """subscribe(None) must raise TypeError (the binding's NullPointerException)."""
    publisher = ctx.publisher(0)
    ctx.env.trace.add("tck", "subscribe", "None")
    try:
        ctx.call("subscribe(None)", publisher.subscribe, None)
    except TypeError:
        return
    except Exception as exc:
        raise RuleViolation(
            "1.9", "subscribe(None) to raise TypeError", f"it raised {type(exc).__name__}: {short_repr(exc)}"
        ) from exc
    raise RuleViolation("1.9", "subscribe(None) to raise TypeError", "it returned normally")


@tck_test("1.9", "required")
def required_spec109_must_issue_on_subscribe_for_non_null_subscriber(ctx: PublisherContext) -> None:
    """subscribe() must lead to exactly one on_subscribe, before any other signal."""
    probe = ctx.probe()
    ctx.subscribe(ctx.publisher(1), probe)
    probe.expect_subscription()
    probe.wait_quiet()


@tck_test("1.9", "required")
def required_spec109_may_reject_subscribe_with_on_error_after_on_subscribe(ctx: PublisherContext) -> None:
    """The failed publisher rejects a subscriber with on_subscribe first, then on_error once."""
    probe = ctx.failed_subscription("1.9")
    probe.expect_quiet(after="after on_error")


tck_test.untested(
    "untested_spec110_subscribe_may_be_called_many_times_with_different_subscribers",
    "1.10",
    "an obligation on the caller of subscribe(); the TCK never subscribes the same subscriber "
    "twice, and a publisher has nothing to show (1.11 covers several subscribers)",
)


def _multicast(ctx: PublisherContext, elements: int, completes: bool, count: int) -> list[ProbeSubscriber]:
    ctx.subscribers_needed(count)
    publisher = ctx.publisher(elements, completes=completes)
    probes = []
    for i in range(count):
        probe = ctx.probe(f"sub{i + 1}")
        ctx.subscribe(publisher, probe)
        probes.append(probe)
    for probe in probes:
        probe.expect_subscription(timeout=ctx.settings.timeout)
    return probes


def _same_sequences(sequences: dict[str, list[Any]]) -> None:
    names = list(sequences)
    base = sequences[names[0]]
    for name in names[1:]:
        other = sequences[name]
        if other != base:
            at = next((i for i, (a, b) in enumerate(zip(base, other, strict=False)) if a != b), min(len(base), len(other)))
            raise RuleViolation(
                "1.11",
                "every subscriber of a multicast publisher to see the same elements in the same order",
                f"{names[0]} and {name} differ at element {at}: {short_repr(base[at:at + 3])} vs "
                f"{short_repr(other[at:at + 3])}",
            )


@tck_test("1.11", "optional")
def optional_spec111_may_support_multi_subscribe(ctx: PublisherContext) -> None:
    """Two subscribers both get on_subscribe, and the first still works after the second.

    A publisher that silently drops its first subscriber when a second arrives does not
    support several subscribers.
    """
    first, second = _multicast(ctx, 1, False, 2)
    for probe in (first, second):
        probe.request(1)
        probe.wait_for_signal()
        if not probe.elements and probe.terminal != "on_complete":
            raise RuleViolation(
                "1.11", f"{probe.name} to get an element or on_complete after request(1)",
                (probe.terminal and probe._terminal_text()) or "nothing",
            )


@tck_test("1.11", "optional")
def optional_spec111_registered_subscribers_must_receive_on_next_or_on_complete(ctx: PublisherContext) -> None:
    """Two subscribers each request 1 and must see an element or on_complete (unicast allowed)."""
    probes = _multicast(ctx, 1, False, 2)
    for probe in probes:
        probe.request(1)
    for probe in probes:
        probe.wait_for_signal()
        if not probe.elements and probe.terminal != "on_complete":
            raise RuleViolation(
                "1.11", f"{probe.name} to get an element or on_complete after request(1)",
                (probe.terminal and probe._terminal_text()) or "nothing",
            )
    probes[0].wait_quiet()


@tck_test("1.11", "optional")
def optional_spec111_multicast_must_produce_the_same_elements_in_the_same_sequence_when_requesting_one_by_one(
    ctx: PublisherContext,
) -> None:
    """Three subscribers with interleaved request patterns see the same 5 elements, then complete."""
    probes = _multicast(ctx, 5, True, 3)
    patterns = [(1, 1, 2, 1), (2, 3), (3, 1, 1)]
    got: dict[str, list[Any]] = {p.name: [] for p in probes}
    for step in range(4):
        for probe, pattern in zip(probes, patterns, strict=True):
            if step < len(pattern):
                probe.request(pattern[step])
                got[probe.name] += probe.next_elements(pattern[step], rule="1.11")
    for probe in probes:
        probe.request(1)
        probe.expect_completion(rule="1.11")
    _same_sequences(got)


@tck_test("1.11", "optional")
def optional_spec111_multicast_must_produce_the_same_elements_in_the_same_sequence_when_requesting_many_upfront(
    ctx: PublisherContext,
) -> None:
    """Three subscribers each request 4 of a 3-element stream and see the same 3 elements."""
    probes = _multicast(ctx, 3, False, 3)
    for probe in probes:
        probe.request(4)
    _same_sequences({p.name: p.next_elements(3, rule="1.11") for p in probes})


@tck_test("1.11", "optional")
def optional_spec111_multicast_must_produce_the_same_elements_in_the_same_sequence_when_requesting_many_upfront_and_complete(
    ctx: PublisherContext,
) -> None:
    """As above, and every subscriber then sees on_complete."""
    probes = _multicast(ctx, 3, True, 3)
    for probe in probes:
        probe.request(4)
    sequences = {p.name: p.next_elements(3, rule="1.11") for p in probes}
    for probe in probes:
        probe.expect_completion(rule="1.11")
    _same_sequences(sequences)


# -- section 3: Subscription -------------------------------------------------------------------


tck_test.untested(
    "untested_spec301_request_and_cancel_must_only_be_called_inside_subscriber_context",
    "3.1",
    "an obligation on the subscriber, not the publisher; the TCK's probes honour it",
)


@tck_test("3.2", "required")
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
    probe.wait_quiet()


@tck_test("3.3", "required")
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
    probe._wait(lambda: probe.received >= elements or probe.terminal is not None or state["flagged"], ctx.settings.timeout)
    if probe.received < min(elements, bound + 1) and not state["flagged"] and probe.terminal is None:
        raise RuleViolation("3.3", f"{elements} elements requested one by one from on_next",
                            f"only {probe.received} arrived within {ctx.settings.timeout * 1000:.0f} ms")


tck_test.untested(
    "untested_spec304_request_should_not_perform_heavy_computations",
    "3.4",
    "timeliness cannot be told apart from the synchronous delivery 3.10 allows; a request() that "
    "blocks without signalling is failed in every verification by the TCK's watchdog",
)


@tck_test("3.5", "required")
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
        deadline = time.monotonic() + ctx.settings.timeout + 1.0
        for t in threads:
            t.join(max(0.0, deadline - time.monotonic()))
    stuck = [t.name for t in threads if t.is_alive()]
    ctx.env.count_iterations(len(threads), len(stuck))
    if stuck:
        raise RuleViolation("3.5", "concurrent cancel() calls to return promptly",
                            f"{len(stuck)} of 8 did not return within {ctx.settings.timeout * 1000 + 1000:.0f} ms",
                            setting="timeout")
    probe.wait_quiet()
    probe.request(5)
    probe.expect_quiet(after="after cancel() and a further request(5)")


@tck_test("3.6", "required")
def required_spec306_after_subscription_is_cancelled_request_must_be_nops(ctx: PublisherContext) -> None:
    """cancel() at once, then request(1) three times: nothing may arrive."""
    probe = ctx.subscribed(3)
    mark = probe.mark()  # nothing was requested: no signal at all may follow
    probe.cancel()
    for _ in range(3):
        probe.request(1)
    probe.expect_quiet(after="after cancel(), whatever is requested", since=mark)


@tck_test("3.7", "required")
def required_spec307_after_subscription_is_cancelled_additional_cancels_must_be_nops(ctx: PublisherContext) -> None:
    """cancel() three times: each returns normally and nothing arrives (no on_error either)."""
    probe = ctx.subscribed(1)
    mark = probe.mark()  # nothing was requested: no signal at all may follow
    for _ in range(3):
        probe.cancel()
    probe.expect_quiet(after="after repeated cancel()", since=mark)


@tck_test("3.8", "required")
def required_spec308_request_must_register_given_number_elements_to_be_produced(ctx: PublisherContext) -> None:
    """Ten request(1) calls in a row, before any delivery is consumed, yield ten elements.

    Demand adds up: a subscription that overwrites instead of adding delivers fewer.
    """
    probe = ctx.subscribed(12)
    for _ in range(10):
        probe.request(1)
    probe.next_elements(10, rule="3.8")
    probe.expect_quiet(after="beyond the 10 requested elements")


@tck_test("3.9", "required")
def required_spec309_request_zero_must_signal_value_error(ctx: PublisherContext) -> None:
    """request(0) must be answered with on_error(ValueError), not by raising.

    If this fails, check that request() validates n and signals the ValueError through
    on_error (and then treats the subscription as cancelled).
    """
    probe = ctx.subscribed(10)
    probe.request(0)
    probe.expect_error(ValueError, rule="3.9")


@tck_test("3.9", "required")
def required_spec309_request_negative_number_must_signal_value_error(ctx: PublisherContext) -> None:
    """request(-1) and request(-2**63) must each be answered with on_error(ValueError)."""
    for n in (-1, -(2**63)):
        probe = ctx.subscribed(10, name=f"req{n}" if n == -1 else "req-2**63")
        probe.request(n)
        probe.expect_error(ValueError, rule="3.9")


_EXPLAINS = ("3.9", "positive", "negative", "> 0", ">0", "greater than 0", "greater than zero")


@tck_test("3.9", "optional")
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
            f"ValueError({short_repr(str(error))})",
        )


tck_test.untested(
    "untested_spec310_request_may_synchronously_call_on_next_on_subscriber",
    "3.10",
    "a permission, not an obligation: the probes accept on_next delivered inside request()",
)
tck_test.untested(
    "untested_spec311_request_may_synchronously_call_on_complete_or_on_error",
    "3.11",
    "a permission, not an obligation: the probes accept terminal signals delivered inside request()",
)


@tck_test("3.12", "required")
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
    _, quiet = probe.wait_quiet()
    if not quiet:
        raise RuleViolation("3.12", "signals to stop after cancel()",
                            f"still signalling {ctx.settings.timeout * 1000:.0f} ms after cancel()")
    if probe.received > 15:
        raise RuleViolation("3.12", "at most the 15 requested elements", f"{probe.received} elements")


@tck_test("3.13", "required")
def required_spec313_cancel_must_make_the_publisher_eventually_drop_all_references_to_the_subscriber(
    ctx: PublisherContext,
) -> None:
    """After cancel() the subscriber must become garbage: only a weakref is kept by the TCK.

    The check collects garbage and waits on the weakref's callback, up to the GC window.
    If this fails, check that cancel() clears the subscription's reference to its
    subscriber, and that no registry, queue or closure of the publisher keeps it.
    """
    publisher = ctx.publisher(3)
    collected = threading.Event()
    ref, received = _subscribe_then_cancel(ctx, publisher, collected)
    deadline = time.monotonic() + ctx.settings.gc_window
    while ref() is not None and time.monotonic() < deadline:
        gc.collect()
        collected.wait(min(0.05, max(0.0, deadline - time.monotonic())))
    if ref() is not None:
        holders = [short_repr(h, 60) for h in gc.get_referrers(ref()) if not isinstance(h, type(gc.get_referrers))][:3]
        raise RuleViolation(
            "3.13",
            f"the cancelled subscriber to be garbage-collectable within {ctx.settings.gc_window * 1000:.0f} ms",
            f"it is still referenced (after receiving {received} element(s)); referrers include: "
            + ("; ".join(holders) or "unknown"),
            setting="gc_window",
        )
    ctx.env.check()


def _subscribe_then_cancel(
    ctx: PublisherContext, publisher: Publisher[Any], collected: threading.Event
) -> tuple[weakref.ref[ProbeSubscriber], int]:
    # A separate frame, so no local of the test body keeps the probe alive.
    probe = ProbeSubscriber(ctx.env, "weak")
    ref = weakref.ref(probe, lambda _: collected.set())
    ctx.subscribe(publisher, probe)
    probe.expect_subscription()
    probe.request(1)
    probe.next_element()
    probe.cancel()
    return ref, probe.received


tck_test.untested(
    "untested_spec314_cancel_may_cause_the_publisher_to_shutdown_if_no_other_subscription_exists",
    "3.14",
    "a permission: whether a stateful publisher shuts down is its own choice",
)


@tck_test("3.15", "required")
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
    fresh.expect_quiet(after="after cancel() with nothing requested", since=mark)


@tck_test("3.16", "required")
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
    cancelled.wait_quiet()


@tck_test("3.17", "required")
def required_spec317_must_support_a_pending_element_count_up_to_long_max_value(ctx: PublisherContext) -> None:
    """request(2**63-1) on a 3-element stream: three elements and on_complete, no error."""
    probe = ctx.subscribed(3, completes=True)
    probe.request(MAX_DEMAND)
    probe.next_elements(3)
    probe.expect_completion()


@tck_test("3.17", "required")
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


@tck_test("3.17", "required")
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
    probe.wait_quiet()
    if probe.terminal == "on_error":
        raise RuleViolation("3.17", "no on_error when the total demand exceeds 2**63-1", probe._terminal_text())
    if probe.received < 10:
        raise RuleViolation("3.17", "elements to keep flowing under a demand above 2**63-1",
                            f"only {probe.received} arrived")


# -- fuzzing -----------------------------------------------------------------------------------


@tck_test(None, "fuzz")
def fuzz_demand_cancel_orders(ctx: PublisherContext) -> None:
    """Generated request/cancel orders, shrunk to the smallest scenario that breaks a rule.

    Scenarios request small, boundary, non-positive and huge amounts (sums crossing 2**63-1),
    cancel, from the test thread, another thread or re-entrantly from on_subscribe/on_next,
    add subscribers, pause, and keep calling after terminal signals. Every probe check holds,
    plus: nothing after cancel beyond what was in flight (3.6/1.8), demand served (3.8/3.17),
    on_error after a non-positive request (3.9), no element lost, duplicated or reordered. If
    this fails, replay the scenario it prints (--rs-fuzz-replay) and follow its numbered steps.
    """
    from ..fuzz.verify import fuzz_publisher

    fuzz_publisher(ctx)
