"""Publisher verification: every rule of sections 1 and 3 that a publisher can be seen to break.

Each test subscribes ``ProbeSubscriber``s to fresh publishers from the user's factory. The
probes flag order, demand, termination and serial-delivery violations (1.1, 1.3, 1.7, 1.9) in
*every* test as they happen; the bodies below add what is specific to their rule. A test's
docstring is the diagnosis shown to users: what it does, and what to check when it fails.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

from ..api import MAX_DEMAND
from ..api import Publisher
from ..clock import starved_wait
from ..contexts import PublisherContext
from ..errors import NotVerified
from ..errors import RuleViolation
from ..evidence import cite
from ..evidence import last_seq
from ..evidence import seqs
from ..probe import STALL_CONFIRMATION
from ..probe import ProbeSubscriber
from ..probe import RaisingProbe
from ..registry import Registry
from ..results import Verdict
from ..runner import stall_limit
from ..trace import Trace
from ..trace import short_repr
from ..worker import Worker
from ._racing import ExitPause
from ._racing import aggressive_switching

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


#: Stream sizes the verification drains to their end: those of the tests below and of the fuzz
#: verification (its ``_SIZES``); larger ones are cancelled early, so only their start is used.
#: Not 0: the empty stream is optional (``optional_spec105_empty_stream_...``), as in the JVM TCK.
_DRAINED_SIZES = (1, 2, 3, 4, 5, 6, 7, 10, 11, 12, 16, 20, 64, 310)


def _kit_sizes(ctx: PublisherContext) -> list[int]:
    from ..fuzz.publisher_side import _SIZES

    bound = ctx.settings.recursion_depth
    sizes = set(_DRAINED_SIZES) | set(_SIZES) | {bound + 10, 3 * (bound + 10)}
    return sorted(n for n in sizes if 1 <= n <= min(ctx.settings.max_elements, 10_000))


@tck_test(None, "required", busy=True)
def required_sanity_factory_n_produces_exactly_n_elements_for_every_size_used(ctx: PublisherContext) -> None:
    """factory(n) must give exactly n elements, then on_complete, for every n >= 1 the TCK uses.

    Each is asked for one element more than n at once, so an extra one shows. A factory that
    ignores n (a fixed-size stream, one element too many) would otherwise be reported as the
    rule some later test happens to trip (1.5, 3.8). If this fails, check the factory:
    ``factory(n)`` returns a publisher of exactly n elements followed by on_complete, or raises
    for an n it cannot produce (then declare max_elements). factory(0) is not held to it: the
    empty stream is optional, as in the JVM TCK (the optional 1.5 test reports it; the required
    tests only subscribe to factory(0), without requesting).
    """
    ctx.factory_contract(_kit_sizes(ctx))


# -- section 1: Publisher ----------------------------------------------------------------------


@tck_test("1.1", "required")
def required_spec101_request_must_result_in_the_correct_number_of_elements(ctx: PublisherContext) -> None:
    """Never more on_next than requested, under three demand patterns.

    One at a time, in bulk, and re-entrant from on_next. Nothing may arrive before the first
    request or beyond the total requested. If this fails, check the demand accounting: is it
    decremented per element, and read under the same lock that request() updates?
    """
    # Each pattern on a subscription of its own, so that the claims that nothing more arrives
    # share two windows: nothing before the first request, on all three at once; then the test
    # ends with the three "nothing beyond what was requested".
    single = ctx.subscribed(5, name="single")
    summed = ctx.subscribed(5, name="summed")

    def again(p: ProbeSubscriber, element: Any) -> None:
        if p.received < 5:
            p.request(1)

    reentrant = ctx.subscribed(10, name="reentrant", on_next=again)
    marks = [(other, other.mark()) for other in (summed, reentrant)]
    single.expect_quiet(after="before the first request(n)")
    for other, mark in marks:
        other.expect_quiet(window=0.0, after="before the first request(n)", since=mark)
    single.request(1)
    single.next_element()
    ctx.closing_quiet(single, after="beyond the requested 1 element")
    summed.request(1)
    summed.next_element()
    summed.request(1)
    summed.request(2)
    summed.next_elements(3)
    ctx.closing_quiet(summed, after="beyond the requested 4 elements")
    reentrant.request(1)
    reentrant.next_elements(5)
    ctx.closing_quiet(reentrant, after="beyond the 5 elements requested one by one from on_next")


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
    racing in is seen, then waits for on_complete (asking for one more element once the demand
    is spent, as the 1.5 test does; a stream that never ends is reported under 1.5, not here).
    Same-thread nesting (a synchronous publisher) is allowed. If this fails, check that
    signals from several threads are serialised (a lock or a serial queue).
    """
    if ctx.settings.skip_stochastic:
        raise NotVerified("stochastic verifications are switched off (skip_stochastic)", kind=Verdict.DESELECTED)
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
            # A stall is 3.8's and a missing end 1.5's: this test's own verdict is overlaps (1.3).
            probe.next_elements(elements, rule="3.8")
            if completes:
                probe.expect_completion(rule="1.5")
            else:
                probe.cancel()
        finally:
            showed += probe.concurrent_entries > 0
            ctx.env.count_iterations(i + 1, showed)
        ctx.env.check()  # stop at the first iteration that showed a race


@tck_test("1.1", "stochastic")
def stochastic_spec101_requests_from_another_thread_during_emission_must_add_up_exactly(
    ctx: PublisherContext,
) -> None:
    """Short rounds (stochastic_iterations): request(1) eight times here and eight on another thread.

    Each round subscribes afresh, and the requests land while an emission runs. In one round of
    two, both threads request; in the other, the other thread subscribes and requests eight from
    on_subscribe, and this thread requests once the first element has come (an emission that
    subscribe() or the publisher's own thread still runs). The kit's calls on a subscription
    never overlap (rule 2.7: a publisher may rely on that); they come from two threads, one after
    the other, and a call from this thread waits until on_subscribe has returned on the other,
    as a conforming subscriber defers it (else a publisher that emits on the requesting thread,
    the JVM's RangePublisher, would be made to overlap on_subscribe). Exactly 16 elements must arrive: one more means a decrement of the demand lost to
    a concurrent addition, one fewer an addition lost to a decrement. The rounds stop at the first
    that shows it. If this fails, check that the demand is read, decremented and added to under
    one lock (or atomically), on the emission path as well as in request().
    """
    if ctx.settings.skip_stochastic:
        raise NotVerified("stochastic verifications are switched off (skip_stochastic)", kind=Verdict.DESELECTED)
    each = 8
    total = 2 * each
    if ctx.settings.max_elements < total + 1:
        raise NotVerified(f"needs a publisher of {total + 1} elements (max_elements)")
    rounds = ctx.settings.stochastic_iterations
    timeout = ctx.settings.timeout
    serial = threading.Lock()  # rule 2.7: one call on the subscription at a time, whichever thread
    go = threading.Semaphore(0)
    begun = threading.Semaphore(0)
    done = threading.Semaphore(0)
    current: list[Callable[[], None]] = []
    failed: list[BaseException] = []
    stop = threading.Event()

    def ask(probe: ProbeSubscriber) -> None:
        with serial:
            probe.request(1)

    def rival() -> None:
        while go.acquire(timeout=timeout) and not stop.is_set():
            try:
                current[0]()
            except BaseException as exc:  # reported on the test's thread
                failed.append(exc)
                begun.release()
            done.release()

    def requests_here(probe: ProbeSubscriber) -> None:
        for k in range(each):
            ask(probe)
            if k == 0:
                begun.release()  # the rest land while the emission the first one started runs

    def subscribes_here(probe: ProbeSubscriber) -> None:
        ctx.subscribe(ctx.publisher(total + 1), probe)

    helper = threading.Thread(target=rival, name="rs-tck-rival", daemon=True)
    helper.start()
    showed = 0
    try:
        with aggressive_switching():
            for i in range(rounds):
                ctx.env.count_iterations(i + 1, showed)  # round i + 1 under way: a failure in it counts it
                if i % 2 == 0:
                    probe = ctx.subscribed(total + 1, name=f"round{i}", keep_elements=False, yield_s=None)
                    current[:] = [functools.partial(requests_here, probe)]
                else:
                    def first(p: ProbeSubscriber, s: Any) -> None:
                        with serial:
                            p.request(each)

                    def came(p: ProbeSubscriber, e: Any) -> None:
                        if p.received == 1:
                            begun.release()

                    probe = ctx.probe(f"round{i}", on_subscribe=first, on_next=came,
                                      keep_elements=False, yield_s=None)
                    current[:] = [functools.partial(subscribes_here, probe)]
                go.release()
                if not begun.acquire(timeout=timeout) and not failed and probe.subscription is None:
                    # A loaded machine may hold the other thread back that long: on_subscribe
                    # must come (1.9), given the longer wait of a call that is not blocked.
                    probe.expect_subscription(timeout=stall_limit(ctx.settings))
                if failed:
                    raise failed[0]
                for _ in range(each):
                    ask(probe)
                if not starved_wait(lambda step: done.acquire(timeout=step), timeout):
                    raise RuleViolation("1.1", "the other thread's calls (subscribe(), request(1)) to return",
                                        "they did not return", setting="timeout")
                if failed:
                    raise failed[0]
                if not probe.wait_progress(_has(probe, total), timeout):
                    ctx.env.check()
                    raise RuleViolation(
                        "3.8", f"{total} elements for {total} requested, half of them from another thread",
                        f"{probe.received} arrived in round {i + 1}: a request lost to a concurrent "
                        "emission", evidence=cite(last_seq(ctx.env.trace, probe.name, "on_next")),
                        setting="timeout")
                showed += probe.excess > 0
                ctx.env.count_iterations(i + 1, showed)
                ctx.env.check()  # the probe flags an element beyond demand as it arrives
                with serial:
                    probe.cancel()
    finally:
        stop.set()
        go.release()
    ctx.closing_drain(probe)


@tck_test("1.4", "required")
def required_spec104_must_signal_on_error_when_failing(ctx: PublisherContext) -> None:
    """The failed publisher must signal on_subscribe, then on_error, and nothing more.

    If this fails, check that a publisher that cannot serve a subscriber calls on_error on
    it (after on_subscribe) rather than raising from subscribe() or staying silent.
    """
    probe = ctx.failed_subscription("1.4")
    ctx.closing_quiet(probe, after="after on_error")


@tck_test("1.5", "required")
def required_spec105_must_signal_on_complete_when_finite_stream_terminates(ctx: PublisherContext) -> None:
    """A 3-element stream, requested one at a time, must end with on_complete; so must streams
    of every length from 33 to 64, and of 1000 and 1024, each asked for in one request of
    exactly its length.

    "If a Publisher terminates successfully (finite stream) it MUST signal an onComplete": the
    rule asks for the end, not for it to be known before more is asked for. So, as in the JVM
    TCK (``requestEndOfStream``), once every requested element has arrived without the end,
    one more element is requested, and only a stream still silent ``timeout`` after that
    breaks the rule. The long streams are requested once nothing has arrived for a window
    after subscribing, so that each request starts an emission of its own, ending with no
    demand left where a batch or turn of a size dividing their length ends (every size up to
    64 divides one of 33 to 64; 1000 and 1024 add 100, 125, 200, 250, 500 and the powers of
    two to 1024): the further request must then still reach an emission that can end the
    stream. The JVM TCK's test is the 3-element stream alone; the long ones apply the same
    sentence where internal sizes end. If this fails, check that on_complete is signalled
    once the source is exhausted, at the latest when more is requested, and that a request
    arriving after the last element still looks for the end.
    """
    probe = ctx.subscribed(3, completes=True)
    for _ in range(3):
        probe.request(1)
        probe.next_element()
    probe.request(1)
    probe.expect_completion()
    ctx.closing_quiet(probe, after="after on_complete")
    lengths = [n for n in (*_BATCH_MULTIPLES, *_BOUNDARY_LENGTHS) if n <= ctx.settings.max_elements]
    exact = [ctx.subscribed(n, completes=True, name=f"exactly{n}", keep_elements=False, yield_s=None)
             for n in lengths]
    # A window first, shared by all: work subscribe() started has ended, and each request
    # starts an emission of its own (one joining a run already under way would not stop there).
    marks = [(long, long.mark()) for long in exact]
    exact[0].expect_quiet(rule="1.1", after="before the first request(n)")
    for long, mark in marks[1:]:
        long.expect_quiet(window=0.0, rule="1.1", after="before the first request(n)", since=mark)
    for long, n in zip(exact, lengths, strict=True):
        long.request(n)
    for long, n in zip(exact, lengths, strict=True):
        if _stalled(long, n, "1.5", f"for one request({n}) on a stream of {n}", ctx):
            long.expect_completion(rule="1.5")
            ctx.closing_quiet(long, after="after on_complete")


@tck_test("1.5", "optional")
def optional_spec105_empty_stream_must_terminate_by_signalling_on_complete(ctx: PublisherContext) -> None:
    """factory(0): an empty stream must complete, at the latest after a request.

    on_complete sent from inside subscribe(), right after on_subscribe, is fine. A factory that
    cannot make an empty stream (an element for factory(0), as RxJava's ``Flowable.just``) is
    reported as not supporting it, as in the JVM TCK: no required test requests from
    factory(0), and the fuzz verification then leaves it out.
    """
    probe = ctx.subscribed(0, completes=True)
    probe.request(1)
    try:
        probe.expect_completion()
    except RuleViolation as violation:
        if not probe.received:
            raise
        raise RuleViolation(
            None, "an empty stream from factory(0): no element, then on_complete, after request(1)",
            f"{violation.observed}: factory(0) cannot make an empty stream",
            hint="an empty stream is optional, as in the JVM TCK: no required test requests from "
            "factory(0), and the fuzz then leaves the size 0 out",
            evidence=violation.evidence or probe.evidence()) from None
    ctx.closing_quiet(probe, after="after on_complete")


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
    ctx.closing_quiet(probe, after="after on_complete, whatever is requested", since=mark)


@tck_test("1.6", "required")
def required_spec106_must_consider_subscription_cancelled_after_on_error(ctx: PublisherContext) -> None:
    """After the failed publisher's on_error, request and cancel are no-ops."""
    probe = ctx.failed_subscription("1.4")
    mark = probe.mark()
    for n in (1, 0, -1):
        probe.request(n)
    probe.cancel()
    ctx.closing_quiet(probe, after="after on_error, whatever is requested", since=mark)


@tck_test("1.7", "required")
def required_spec107_must_not_emit_further_signals_once_on_complete_has_been_signalled(ctx: PublisherContext) -> None:
    """After on_complete nothing else may arrive, even when more is requested."""
    probe = ctx.subscribed(1, completes=True)
    probe.request(10)
    probe.next_element()
    probe.expect_completion()
    mark = probe.mark()
    probe.request(10)
    ctx.closing_quiet(probe, after="after on_complete", since=mark)


@tck_test("1.7", "required")
def required_spec107_must_not_emit_further_signals_once_on_error_has_been_signalled(ctx: PublisherContext) -> None:
    """After the failed publisher's on_error nothing else may arrive, even on request."""
    probe = ctx.failed_subscription("1.4")
    mark = probe.mark()
    probe.request(10)
    ctx.closing_quiet(probe, after="after on_error", since=mark)


@tck_test("1.8", "required")
def required_spec108_cancelled_subscription_must_eventually_stop_being_signalled(ctx: PublisherContext) -> None:
    """Unbounded demand on a long stream, cancelled from inside the first on_next: signals must stop.

    What was already under way may still arrive: a batch in progress, or elements queued ahead
    of the cancel in a mailbox (the JVM's AsyncIterablePublisher delivers up to 1023 more).
    Rule 1.8 asks only that the signals stop, so the verdict rests on one of two named bounds:
    signals still arriving ``timeout`` after cancel(), or more than ``after_cancel_limit``
    elements after it. If this fails, check that the emission loop re-reads the cancelled flag
    at least once per batch.

    On an event loop (``--rs-loop=asyncio``) every call runs on the subject's loop, so a cancel()
    from outside a signal runs only when the loop gets to it. The probe notes when it was made
    and when it ran; one that has not run while elements kept coming for ``timeout`` (or past
    ``after_cancel_limit``) is reported under rule 3.5 (cancel returns in a timely manner), with
    how long the loop stayed busy in the publisher: the subscription was never cancelled, so
    rule 1.8 cannot be judged. If that fails, give the loop back between batches.
    """
    limit = ctx.settings.after_cancel_limit
    elements = min(ctx.settings.max_elements, max(1_000_000, 2 * limit + 2))
    if elements < 2:
        raise NotVerified("needs a publisher of at least 2 elements (max_elements)")
    cancelled_at: list[float] = []
    cancelled = threading.Event()

    def cancel_first(p: ProbeSubscriber, e: Any) -> None:
        if not cancelled_at:
            cancelled_at.append(time.monotonic())
            p.cancel()
            cancelled.set()

    probe = ctx.subscribed(elements, keep_elements=False, on_next=cancel_first, yield_s=None)
    probe.request(MAX_DEMAND)
    ctx.env.check()  # the probe flags a flood beyond after_cancel_limit as it happens
    if not probe._wait(lambda: probe.received > 0 or probe.terminal is not None, ctx.settings.timeout):
        raise RuleViolation("1.8", f"an element within {ctx.settings.timeout * 1000:.0f} ms of "
                            "request(2**63-1), to cancel from", f"nothing arrived ({probe._seen()})",
                            setting="timeout")
    if not probe.received or not cancelled.wait(ctx.settings.timeout):
        return  # the stream ended before its first element: nothing to cancel
    deadline = cancelled_at[0] + ctx.settings.timeout
    window = ctx.settings.no_signal_window
    _, quiet = probe.wait_quiet(limit=max(0.0, deadline - time.monotonic()) + window)
    ctx.env.check()
    if not quiet:
        raise RuleViolation(
            "1.8",
            f"signals to stop within {ctx.settings.timeout * 1000:.0f} ms of cancel()",
            f"still signalling {(time.monotonic() - cancelled_at[0]) * 1000:.0f} ms after cancel(), "
            f"{probe.after_cancel} element(s) after it so far",
            evidence=cite(probe.cancel_seq, last_seq(ctx.env.trace, probe.name, "on_next")),
            setting="timeout",
        )
    ctx.env.trace.note(f"{probe.after_cancel} element(s) followed cancel(), then the signals stopped")
    _cancelled_from_outside_a_signal(ctx, elements)


#: Elements a publisher may deliver inside request(2**63-1) before the probe cancels from on_next.
_INSIDE_REQUEST = 2_000


def _cancelled_from_outside_a_signal(ctx: PublisherContext, elements: int) -> None:
    """Unbounded demand again, cancelled this time from the test's thread while elements flow.

    A cancel that arrives from outside the publisher's own loop takes another path than one
    made inside on_next (a flag the loop checks only at a point a steady stream never reaches,
    say). The request is made on another TCK thread; once it has returned (an asynchronous
    publisher) and elements flow, cancel() comes from here: the two calls never overlap (2.7).
    A publisher still delivering inside request() is cancelled from on_next instead, as above.
    """
    timeout = ctx.settings.timeout
    returned = threading.Event()

    def inside(p: ProbeSubscriber, e: Any) -> None:
        # Inside request() as the subject runs it: on an event loop the request has returned
        # once the loop ran it, whenever the requesting thread gets to notice.
        if p.received == _INSIDE_REQUEST and p.requesting and not p.cancelled:
            p.cancel()

    probe = ctx.subscribed(elements, name="cancelled-later", keep_elements=False, on_next=inside, yield_s=None)

    def ask() -> None:
        try:
            probe.request(MAX_DEMAND)
        finally:
            returned.set()

    asking = Worker(ask, "rs-tck-requester")
    if not asking.wait(stall_limit(ctx.settings)):
        return  # the watchdog reports a request() that never returns
    asking.result()
    ctx.env.check()
    if probe.cancelled or not probe._wait(lambda: probe.received >= 100 or probe.terminal is not None, timeout):
        return  # delivered inside request() (cancelled from on_next), or a trickle the other tests judge
    if probe.terminal is not None:
        return
    cancelled_at = time.monotonic()
    probe.cancel()
    _, quiet = probe.wait_quiet(limit=timeout + ctx.settings.no_signal_window)
    ctx.env.check()
    if not quiet:
        raise RuleViolation(
            "1.8",
            f"signals to stop within {timeout * 1000:.0f} ms of cancel() made from outside a signal, "
            "once request(2**63-1) had returned",
            f"still signalling {(time.monotonic() - cancelled_at) * 1000:.0f} ms after cancel(), "
            f"{probe.after_cancel} element(s) after it so far",
            hint="a cancel from another thread must reach the emission loop: check the cancelled flag "
            "in the loop itself, not only where a signal method returns",
            evidence=cite(probe.cancel_seq, last_seq(ctx.env.trace, probe.name, "on_next")),
            setting="timeout",
        )
    ctx.env.trace.note(f"cancelled from the test's thread: {probe.after_cancel} element(s) followed "
                       "cancel(), then the signals stopped")


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
    """subscribe(None) must raise TypeError (the binding's NullPointerException), on the
    regular publisher and (if given) the failed one: a publisher that rejects every subscriber
    still has nowhere but its caller to report a missing one.
    """
    _subscribe_none(ctx, ctx.publisher(0), "")
    if ctx.subject.failed_factory is not None:
        _subscribe_none(ctx, ctx.failed_publisher(), "the failed publisher's ")


def _subscribe_none(ctx: PublisherContext, publisher: Publisher[Any], whose: str) -> None:
    call = ctx.env.trace.add("tck", "subscribe", "None").seq
    expected = f"{whose}subscribe(None) to raise TypeError"
    try:
        ctx.call(f"{whose}subscribe(None)", publisher.subscribe, None)
    except TypeError:
        return
    except Exception as exc:
        raise RuleViolation(
            "1.9", expected, f"it raised {type(exc).__name__}: {short_repr(exc)}", evidence=(call,)
        ) from exc
    raise RuleViolation("1.9", expected, "it returned normally", evidence=(call,))


@tck_test("1.9", "required")
def required_spec109_must_issue_on_subscribe_for_non_null_subscriber(ctx: PublisherContext) -> None:
    """subscribe() must lead to exactly one on_subscribe, before any other signal."""
    probe = ctx.probe()
    ctx.subscribe(ctx.publisher(1), probe)
    probe.expect_subscription()
    ctx.closing_drain(probe)


@tck_test("1.9", "required")
def required_spec109_may_reject_subscribe_with_on_error_after_on_subscribe(ctx: PublisherContext) -> None:
    """The failed publisher rejects a subscriber with on_subscribe first, then on_error once."""
    probe = ctx.failed_subscription("1.9")
    ctx.closing_quiet(probe, after="after on_error")


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


def _same_sequences(sequences: dict[str, list[Any]], trace: Trace | None = None) -> None:
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
                evidence=() if trace is None else cite(*(_nth(seqs(trace, who, "on_next"), at) for who in (names[0], name))),
            )


def _nth(found: list[int], at: int) -> int | None:
    return found[at] if at < len(found) else (found[-1] if found else None)


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
                (probe.terminal and probe._terminal_text()) or "nothing", evidence=probe.evidence(),
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
                (probe.terminal and probe._terminal_text()) or "nothing", evidence=probe.evidence(),
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
    _same_sequences(got, ctx.env.trace)


@tck_test("1.11", "optional")
def optional_spec111_multicast_must_produce_the_same_elements_in_the_same_sequence_when_requesting_many_upfront(
    ctx: PublisherContext,
) -> None:
    """Three subscribers each request 4 of a 3-element stream and see the same 3 elements."""
    probes = _multicast(ctx, 3, False, 3)
    for probe in probes:
        probe.request(4)
    _same_sequences({p.name: p.next_elements(3, rule="1.11") for p in probes}, ctx.env.trace)


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
    _same_sequences(sequences, ctx.env.trace)


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
    ctx.closing_drain(probe)


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
    probe.wait_progress(lambda: probe.received >= elements or probe.terminal is not None or state["flagged"],
                        ctx.settings.timeout)
    if probe.received < min(elements, bound + 1) and not state["flagged"] and probe.terminal is None:
        raise RuleViolation("3.3", f"{elements} elements requested one by one from on_next",
                            f"only {probe.received} arrived within {ctx.settings.timeout * 1000:.0f} ms",
                            setting="timeout")


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
                            setting="timeout", evidence=cite(last_seq(ctx.env.trace, probe.name, "cancel")))
    probe.wait_quiet()
    probe.request(5)
    ctx.closing_quiet(probe, after="after cancel() and a further request(5)")


@tck_test("3.6", "required")
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


@tck_test("3.7", "required")
def required_spec307_after_subscription_is_cancelled_additional_cancels_must_be_nops(ctx: PublisherContext) -> None:
    """cancel() three times: each returns normally and nothing arrives (no on_error either)."""
    probe = ctx.subscribed(1)
    mark = probe.mark()  # nothing was requested: no signal at all may follow
    for _ in range(3):
        probe.cancel()
    ctx.closing_quiet(probe, after="after repeated cancel()", since=mark)


@tck_test("3.8", "required")
def required_spec308_request_must_register_given_number_elements_to_be_produced(ctx: PublisherContext) -> None:
    """Ten request(1) calls in a row, before any delivery is consumed, yield ten elements.

    Demand adds up: a subscription that overwrites instead of adding delivers fewer.
    """
    probe = ctx.subscribed(12)
    for _ in range(10):
        probe.request(1)
    probe.next_elements(10, rule="3.8")
    ctx.closing_quiet(probe, after="beyond the 10 requested elements")


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
            f"ValueError({short_repr(str(error))})", evidence=probe._terminal_evidence(),
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
            setting="gc_window", evidence=cite(last_seq(ctx.env.trace, "weak", "cancel")),
        )
    ctx.env.check()


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
    ctx.closing_quiet(fresh, after="after cancel() with nothing requested", since=mark)


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
    ctx.closing_drain(cancelled)


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

    def no_error() -> None:
        probe.wait_quiet()
        if probe.terminal == "on_error":
            raise RuleViolation("3.17", "no on_error when the total demand exceeds 2**63-1", probe._terminal_text(),
                                evidence=probe._terminal_evidence())
        if probe.received < 10:
            raise RuleViolation("3.17", "elements to keep flowing under a demand above 2**63-1",
                                f"only {probe.received} arrived", evidence=probe.evidence())

    ctx.at_close(no_error)


# -- contexts the tests above do not create ----------------------------------------------------
#
# A rule a publisher keeps when called one way can break when called another: from inside a
# signal rather than from the test thread, with several elements at once rather than one,
# after a terminal signal, for a later subscriber. Each test below creates one such context.


@tck_test("1.3", "required")
def required_spec103_must_not_signal_while_on_subscribe_is_still_running(ctx: PublisherContext) -> None:
    """request(n) from inside on_subscribe, which then stays running for a no-signal window.

    A signal delivered synchronously inside request() nests on the same thread, which is
    serial and fine. A signal from another thread while on_subscribe has not returned
    overlaps it: that is what this catches every time, where a race of a few microseconds
    would catch it now and then. Done with request(1) and with request(5). If this fails,
    check that the emission started by a request made inside on_subscribe waits until
    on_subscribe has returned (deliver on_subscribe from the same serial loop).
    """
    elements = min(5, ctx.settings.max_elements)
    if elements < 1:
        raise NotVerified("needs a publisher of at least 1 element (max_elements)")
    for n in (1, elements):

        def linger(p: ProbeSubscriber, s: Any, n: int = n) -> None:
            before = p.mark()
            p.request(n)
            p._wait(lambda: p.signals != before, ctx.settings.no_signal_window)

        probe = ctx.probe(f"request{n}", on_subscribe=linger)
        ctx.subscribe(ctx.publisher(elements), probe)
        probe.expect_subscription()
        # Whether the elements come is other tests' business; this one only watches for overlap.
        probe._wait(_has(probe, n), ctx.settings.timeout)
        ctx.env.check()
        probe.cancel()


def _has(probe: ProbeSubscriber, elements: int) -> Callable[[], bool]:
    return lambda: probe.received >= elements or probe.terminal is not None


@tck_test("1.4", "required")
def required_spec104_failed_publisher_must_signal_on_error_to_every_subscriber(ctx: PublisherContext) -> None:
    """Three subscribers of one failed publisher, one after the other: each gets on_subscribe, on_error.

    A publisher that has failed fails every subscriber, not only the first; a later one left
    without a terminal signal waits forever. If this fails, check for a flag or a one-shot
    error that is consumed by the first subscriber.
    """
    publisher = ctx.failed_publisher()
    for i in range(3):
        probe = ctx.probe(f"sub{i + 1}")
        ctx.subscribe(publisher, probe)
        probe.expect_subscription()
        ctx.expect_failure_signal(probe, "1.4")
    ctx.closing_quiet(probe, after="after on_error")


@tck_test("1.7", "required")
def required_spec107_must_not_emit_further_signals_after_the_on_error_caused_by_request_zero(
    ctx: PublisherContext,
) -> None:
    """After the on_error that answers request(0) (or request(-1)), later requests yield nothing.

    Once before any element and once after two: the on_error ends the stream (rule 1.6), so
    request(5) that follows must not revive it. If this fails, check that signalling the 3.9
    error also marks the subscription cancelled.
    """
    for name, taken, invalid in (("at-once", 0, 0), ("after-2", 2, -1)):
        probe = ctx.subscribed(10, name=name)
        if taken:
            probe.request(taken)
            probe.next_elements(taken)
        probe.request(invalid)
        if probe.expect_terminal() != "on_error":
            raise NotVerified(f"request({invalid}) was not answered with on_error (rule 3.9 is "
                              "checked by its own tests); there is no error to continue after")
        mark = probe.mark()
        probe.request(5)
        ctx.closing_quiet(probe, after=f"after the on_error that answered request({invalid})", since=mark)


@tck_test("1.9", "required")
def required_spec109_must_issue_on_subscribe_to_a_later_subscriber_too(ctx: PublisherContext) -> None:
    """A second subscriber of the same publisher, while the first is still subscribed, gets on_subscribe.

    A publisher may refuse it (with on_error after on_subscribe), but must not ignore it.
    If this fails, check that subscribe() answers every subscriber, not only the first.
    """
    publisher = ctx.publisher(1)
    first = ctx.probe("first")
    ctx.subscribe(publisher, first)
    first.expect_subscription()
    later = ctx.probe("later")
    ctx.subscribe(publisher, later)
    later.expect_subscription()
    later.wait_quiet()


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


@tck_test("3.8", "required")
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
                "one, cancelled", ctx):
        fast.cancel()
        ctx.closing_drain(fast)


#: The fast subscriber's demand when a slow one holds a shared buffer back: past the usual
#: multicast buffers (16 to 256).
_HELD_BACK = 600


@tck_test("3.8", "required")
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


@tck_test("3.3", "required")
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


@tck_test("3.8", "required")
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


@tck_test("3.13", "required")
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
    deadline = time.monotonic() + ctx.settings.gc_window
    while ref() is not None and time.monotonic() < deadline:
        gc.collect()
        collected.wait(min(0.05, max(0.0, deadline - time.monotonic())))
    if ref() is not None:
        raise RuleViolation(
            "3.13",
            f"the subscriber, cancelled from inside on_next, to be garbage-collectable within "
            f"{ctx.settings.gc_window * 1000:.0f} ms",
            f"it is still referenced (after receiving {received} element(s))",
            evidence=cite(last_seq(ctx.env.trace, "weak", "cancel")),
            setting="gc_window",
        )
    ctx.env.check()


@tck_test("3.8", "required", busy=True)
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
    if not probe.wait_progress(lambda: probe.received >= calls or probe.terminal is not None, ctx.settings.timeout):
        raise RuleViolation("3.8", f"{calls} elements for {calls} request(1) calls, none more than "
                            f"{ctx.settings.timeout * 1000:.0f} ms after the one before",
                            f"{probe.received} arrived",
                            evidence=cite(last_seq(ctx.env.trace, probe.name, "request")),
                            setting="timeout")
    ctx.closing_quiet(probe, after=f"beyond the {calls} requested elements")


@tck_test("3.6", "required")
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


@tck_test("3.9", "required")
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


# -- 2.13 from the publisher's side: subscribers that raise ---------------------------------------
#
# Rule 2.13 makes a subscriber that raises from a signal method the one at fault, and says what
# its caller then does: "any associated Subscription to the Subscriber MUST be considered as
# cancelled, and the caller MUST raise this error condition in a fashion that is adequate for
# the runtime environment". So the verdicts are required, and cite:
#  - 2.13 for elements after the raise (the subscription counts as cancelled: as after cancel(),
#    a terminal signal telling the subscriber of its own failure is tolerated, elements are not);
#  - 3.16 for request(), 1.9 for subscribe(), raising anything else (a NameError of the
#    publisher's own, say): they MUST return normally. Passing the subscriber's own exception on
#    (as it is, or wrapped with it as the cause) is the "adequate" report 2.13 asks for, and is
#    not held against a synchronous publisher; neither is it escaping a publisher's own thread.


def _raising(ctx: PublisherContext, name: str, signal: str, at: int = 1, **options: Any) -> RaisingProbe:
    probe = RaisingProbe(ctx.env, name, raise_on=signal, at=at, **options)
    ctx.keep(probe)
    return probe


def _raised(ctx: PublisherContext, probe: RaisingProbe, signal: str) -> None:
    """The probe must have raised from ``signal``; closing: no element may follow the raise."""
    # The signal may have arrived with its hook still running (an actor's thread, under load).
    if not probe.raised:
        with ctx.env.aside():
            probe._wait(lambda: bool(probe.raised), ctx.settings.timeout)
    if not probe.raised:
        raise RuleViolation(None, f"{signal} to reach the subscriber, which then raises", f"it did not "
                            f"({probe._seen()})", setting="timeout")

    # A claim about a no-signal window from now, waited out with the test's other closing claims.
    deadline = time.monotonic() + ctx.settings.no_signal_window
    before = probe.received_at_raise or 0

    def check() -> None:
        remaining = deadline - time.monotonic()
        if remaining > 0:
            with ctx.env.aside():
                probe._wait(lambda: probe.received > before, remaining)
        extra = probe.received - before
        if extra > 0:
            raise RuleViolation(
                "2.13", f"no element after {probe.raised} raised (the subscription counts as cancelled)",
                f"{extra} element(s) followed ({probe._seen()})",
                hint="when a subscriber's signal method raises, stop signalling it: treat the "
                "exception as cancel()",
                evidence=cite(probe.raised_seq, last_seq(ctx.env.trace, probe.name, "on_next")))

    ctx.at_close(check)


@tck_test("2.13", "required")
def required_spec213_publisher_must_consider_the_subscription_cancelled_when_on_next_raises(
    ctx: PublisherContext,
) -> None:
    """request(10) on a stream of 20, the second on_next raises: no element may follow, and
    request() must still return normally.

    Then request(5) again: it must return normally and deliver nothing. If this fails, check
    the delivery loop's handling of a subscriber's exception: it must mark the subscription
    cancelled (and may log or re-raise the exception), and code after it must still run
    (a name bound only on the normal path raises NameError there).
    """
    elements = min(20, ctx.settings.max_elements)
    if elements < 3:
        raise NotVerified("needs a publisher of at least 3 elements (max_elements)")
    probe = _raising(ctx, "raising", "on_next", 2)
    ctx.subscribe(ctx.publisher(elements), probe)
    probe.expect_subscription()
    probe.request(10)
    probe.wait_progress(lambda: bool(probe.raised) or probe.terminal is not None, ctx.settings.timeout)
    _raised(ctx, probe, "on_next #2")
    probe.request(5)


@tck_test("2.13", "required")
def required_spec213_publisher_must_consider_the_subscription_cancelled_when_a_terminal_or_on_subscribe_raises(
    ctx: PublisherContext,
) -> None:
    """on_subscribe, on_complete and on_error (answering request(0), and from the failed
    publisher) each raise: subscribe() and request() must return normally, no element may follow.

    After a raising on_subscribe nothing is requested: the JVM's own RangePublisher only logs
    such a failure and would serve a request made afterwards, and a subscriber requesting after
    its own on_subscribe failed is at fault twice; what is judged there is that subscribe()
    returns (1.9) and signals nothing unasked. A second on_subscribe requests 3 and then
    raises: what request() delivered before the raise is fine, an element after it is not (the
    demand belongs to a subscription that now counts as cancelled). If this fails, check that
    every call of a subscriber's method is guarded: a raise from on_subscribe cancels what it
    requested, one from on_complete or on_error ends the stream as it was ending anyway, and
    none turns into an exception of the publisher's own.
    """
    probes = []
    subscribing = _raising(ctx, "raising-on-subscribe", "on_subscribe")
    ctx.subscribe(ctx.publisher(min(3, ctx.settings.max_elements)), subscribing)
    subscribing.expect_subscription()
    probes.append((subscribing, "on_subscribe"))
    if ctx.settings.max_elements >= 1 and ctx.has_on_subscribe:
        asking = _raising(ctx, "requesting-then-raising-on-subscribe", "on_subscribe",
                          on_subscribe=lambda p, s: p.request(3))
        ctx.subscribe(ctx.publisher(min(6, ctx.settings.max_elements)), asking)
        asking.expect_subscription()
        probes.append((asking, "on_subscribe"))
    if ctx.settings.can_complete and ctx.settings.max_elements >= 1:
        completing = _raising(ctx, "raising-on-complete", "on_complete")
        ctx.subscribe(ctx.publisher(1, completes=True), completing)
        completing.expect_subscription()
        completing.request(2)
        if completing.wait_progress(lambda: bool(completing.raised), ctx.settings.timeout):
            completing.request(1)
            probes.append((completing, "on_complete"))  # 1.5's own test judges one that never ends
    erring = _raising(ctx, "raising-on-error", "on_error")
    ctx.subscribe(ctx.publisher(min(3, ctx.settings.max_elements)), erring)
    erring.expect_subscription()
    erring.request(0)
    if erring.wait_progress(lambda: bool(erring.raised), ctx.settings.timeout):
        erring.request(1)
        probes.append((erring, "on_error"))  # 3.9's own test judges a publisher that does not answer
    if ctx.subject.failed_factory is not None:
        failing = _raising(ctx, "failed-raising-on-error", "on_error")
        ctx.subscribe(ctx.failed_publisher(), failing)
        failing.expect_subscription()
        if not failing.wait_progress(lambda: bool(failing.raised), ctx.settings.timeout):
            failing.request(1)  # a publisher that fails lazily, on the first request (see 1.4)
            failing.wait_progress(lambda: bool(failing.raised), ctx.settings.timeout)
        probes.append((failing, "on_error"))
    for probe, signal in probes:
        _raised(ctx, probe, signal)
# -- past internal sizes: long streams, many calls, sums reaching 2**63-1 ----------------------
#
# A publisher's batches, turns, buffers and prefetch windows are powers of two (16 to 1024)
# almost everywhere, and their bugs sit at the edges: one element owed after a full turn, a
# buffer refilled only while it is not full, a window never topped up. So the streams below
# cross those sizes with amounts just under, at and just over each, and every verdict rests on
# a stall (demand outstanding, nothing for ``timeout``), never on the total time.

#: Amounts requested one after the other in the uneven pattern: each batch size of 16 to 256,
#: one less and one more.
_UNEVEN = (1, 2, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 255, 256, 257)
#: One bulk request: one more than every power of two up to 2048 divides (so a batched
#: emission ends owing exactly one element), past the usual 1024-element prefetch.
_BULK = 2049
#: Streams asked for in one request of exactly their length, where a terminal signal is owed
#: with no demand left: their divisors are the usual batch sizes (16 to 1024, 100, 125, 250).
_BOUNDARY_LENGTHS = (64, 1000, 1024)
#: Each batch size from 1 to 64 divides one of these (a size up to 32 twice or more).
_BATCH_MULTIPLES = tuple(range(33, 64))
#: request(1) calls in one subscription: far past any small counter or log.
_CALLS = 20_000


def _stalled(probe: ProbeSubscriber, total: int, rule: str, what: str, ctx: PublisherContext) -> bool:
    """Wait for ``total`` elements on ``probe``; a stall with demand outstanding breaks ``rule``.

    True once they all arrived; False if the time ran out first (see below): the probe is then
    cancelled, and the caller claims nothing more about it.

    A stream that keeps flowing, however slowly, is no stall, nor is a subject still busy
    with the TCK's calls (a processor relaying thousands of requests upstream before the first
    element comes back: the environment's progress counter moves): if half the test's limit
    runs out first, what arrived so far is all that is checked (a trace note says so); a
    verdict on the rest would be the machine's, not the rule's.
    """
    def done() -> bool:
        return probe.received >= total or probe.terminal is not None

    deadline = time.monotonic() + ctx.settings.test_limit / 2
    def moved(seen: int) -> Callable[[], bool]:
        return lambda: done() or probe.signals != seen

    env = ctx.env
    silence = ctx.settings.timeout
    while not done():
        busy = env.progress
        if not probe._wait(moved(probe.mark()), ctx.settings.timeout) and env.progress == busy:
            # Nothing for ``timeout``. Over thousands of gaps a loaded machine pauses that long
            # now and then, and such a pause ends; a stall (demand lost, emission not
            # rescheduled) lasts. So the silence must last ``STALL_CONFIRMATION`` times longer.
            confirm = ctx.settings.timeout * STALL_CONFIRMATION
            if not probe._wait(moved(probe.mark()), confirm) and env.progress == busy:
                silence += confirm
                break
            env.trace.note(f"a pause of over {ctx.settings.timeout * 1000:.0f} ms after {probe.received} "
                           f"element(s) {what}, then the stream went on: not a stall")
        if time.monotonic() >= deadline and not done():
            ctx.env.trace.note(f"still flowing when half the test limit ran out: {probe.received} of "
                               f"{total} elements {what} checked")
            probe.cancel()
            return False
    if probe.received >= total or probe.terminal == "on_error":
        return True  # an early on_error is the probe's business (it flags it), not a stall
    ctx.env.check()
    raise RuleViolation(
        rule,
        f"{total} elements {what}, the stream never silent for "
        f"{ctx.settings.timeout * (1 + STALL_CONFIRMATION) * 1000:.0f} ms",
        f"{probe.received} arrived, then nothing for {silence * 1000:.0f} ms with "
        f"{_outstanding(probe)} outstanding{'; then ' + probe._terminal_text() if probe.terminal else ''}",
        hint="look for an internal batch, turn, buffer or window size the stream has just crossed: the "
        "emission must carry on (reschedule, refill, request upstream again) while demand is left",
        evidence=cite(last_seq(ctx.env.trace, probe.name, "request"),
                      last_seq(ctx.env.trace, probe.name, "on_next")),
        setting="timeout",
    )


def _request_ones(probe: ProbeSubscriber, calls: int) -> None:
    """``calls`` request(1) calls in a row, counted by the probe at once and traced as one record.

    The demand is the probe's before the first call (so elements delivered inside the calls
    are within it, and one beyond the total is still flagged); a call that raises ends the
    loop and breaks 3.16, as from ``probe.request``.
    """
    subscription = probe._require_subscription("request")
    with probe._lock:
        probe._fast_end()
        probe.demand = min(MAX_DEMAND, probe.demand + calls)
        probe.requested = min(MAX_DEMAND, probe.requested + calls)
        demand = probe.demand
    probe.env.trace.add(probe.name, "request", f"1, {calls} times in a row", demand)

    env = probe.env

    def ones() -> None:
        for _ in range(calls):
            subscription.request(1)
            # env.bump(), inlined: a subject slow with a pile of calls (a loaded machine, a
            # processor relaying each) is busy, not stalled (``_stalled`` reads the count).
            env._progress += 1

    probe._call("request", ones)


def _outstanding(probe: ProbeSubscriber) -> str:
    return "unbounded demand" if probe.demand >= MAX_DEMAND else f"{probe.demand} requested element(s)"


@tck_test("3.8", "required", busy=True)
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


@tck_test("3.8", "required", busy=True)
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


#: (name, first request, request from every on_next, from on_next #1 only): each pushes the
#: outstanding demand from a few elements to 2**63-1 or past it.
_SUMS = (
    ("2+(2**63-2)", 2, MAX_DEMAND - 1, None),
    ("1+(2**63-1)", 1, MAX_DEMAND, None),
    ("3+(2**63-4)+1", 3, 1, MAX_DEMAND - 3),
)


@tck_test("3.17", "required")
def required_spec317_demand_reaching_long_max_value_from_a_small_outstanding_demand_must_keep_flowing(
    ctx: PublisherContext,
) -> None:
    """Requests of about 2**63-1 made from on_next while a few elements are still outstanding.

    request(2), then request(2**63-2) from every on_next; request(1), then request(2**63-1)
    from every on_next; request(3), then request(2**63-4) from the first on_next and request(1)
    from every later one. Each sum reaches 2**63-1 or passes it; the stream must keep flowing
    (a counter that wraps round, as a Java long does, goes negative and stops it), on a finite
    stream to its on_complete and on a longer one for 50 elements. If this fails, check the
    addition in request(): saturate at 2**63-1 (or treat it as unbounded) before adding.
    """
    taken = 50
    if ctx.settings.max_elements < 2 * taken:
        raise NotVerified(f"needs a publisher of {2 * taken} elements (max_elements)")
    for i, (name, first, every, once) in enumerate(_SUMS):
        finite = ctx.settings.can_complete and i % 2 == 0

        def more(p: ProbeSubscriber, e: Any, every: int = every, once: int | None = once) -> None:
            if p.cancelled or p.received > taken:
                return
            p.request(once if once is not None and p.received == 1 else every)

        probe = ctx.subscribed(taken if finite else 2 * taken, completes=finite, name=name,
                               keep_elements=False, on_next=more, yield_s=None)
        probe.request(first)
        if not _stalled(probe, taken, "3.17", f"when request({first}) is followed by "
                        + (f"request({once}) from on_next #1 and request({every}) from every later one"
                           if once is not None else f"request({every}) from every on_next"), ctx):
            continue
        if finite:
            probe.expect_completion(rule="3.17")
            ctx.closing_quiet(probe, after="after on_complete")
        else:
            probe.cancel()
            ctx.closing_drain(probe)


#: The calls made first, from inside on_next #1: a few, whose loss is rule 3.8's (a request
#: that replaces the demand left instead of adding to it), not a limit on the count of calls.
_FIRST_PILE = 64
#: request(1) calls made from inside one on_next: past a signed or unsigned 16-bit count
#: (2**15, 2**16) and 100,000, the sizes a bounded log, mailbox or table of requests takes
#: (each call costs an element: none beyond the largest size a class is known to take).
_PILED_CALLS = 100_000 + 1
#: The same through a processor (``PublisherContext.relayed``): past 2**15 and 2**16.
_RELAYED_PILED_CALLS = 2**16 + 1


@tck_test("3.17", "required", busy=True)
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


#: Rounds of the hunt for a request made as the emission loop gives up its turn, and how many
#: lines of the subject's code past on_next #1 its thread is stopped at (swept from 1).
EXIT_SWEEP = 24
#: Then as many rounds stopping it at each of its first bytecode instructions after on_next.
EXIT_OPCODE_SWEEP = 64
EXIT_RACE_ROUNDS = EXIT_SWEEP + EXIT_OPCODE_SWEEP
#: How long the TCK waits for the emitting thread to reach its pause before requesting anyway.
_EXIT_REACH_S = 0.01
_EXIT_LOOK_S = 0.0005


def _got_one(probe: ProbeSubscriber) -> bool:
    return probe.received >= 1 or probe.terminal is not None


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


@tck_test("3.8", "stochastic")
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
    request() cannot be raced so, and need not be. (The JVM TCK has no such hunt; rule 3.8 asks
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
    timeout = ctx.settings.timeout
    me = threading.get_ident()
    with aggressive_switching():
        for r in range(EXIT_RACE_ROUNDS):
            # Line by line first, then instruction by instruction (a count updated without its lock).
            opcodes = r >= EXIT_SWEEP
            pause = ExitPause(1 + (r - EXIT_SWEEP if opcodes else r) % EXIT_OPCODE_SWEEP, rival=me,
                              opcodes=opcodes)

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
            try:
                if probe._wait(functools.partial(_got_one, probe), timeout):
                    _reached(pause, subscribing)
                    # Not beside the request made in on_subscribe (on_next #1 inside it, where the
                    # loop belongs to that call): the TCK's calls never overlap (rule 2.7).
                    if probe.terminal is None and not calling[0]:
                        probe.request(1)
                        calling.append(True)  # requested while the loop was paused, or had left
            finally:
                pause.resume.set()
                pause.disarm()
            if not starved_wait(subscribing.wait, timeout + 1.0):
                raise RuleViolation("1.9", "subscribe() to return promptly",
                                    "it did not return (the call on the TCK's thread)", setting="timeout")
            subscribing.result()
            if len(calling) == 1 and probe.terminal is None and probe.received >= 1:
                probe.request(1)  # once that call returned: an ordinary request
            env.check()

            def served(probe: ProbeSubscriber = probe) -> bool:
                return probe.received >= 2 or probe.terminal is not None

            if probe.received >= 1 and not (probe._wait(served, timeout)
                                             or probe._wait(served, timeout * STALL_CONFIRMATION)):
                env.check()
                raise RuleViolation(
                    "3.8", "the element asked for by request(1), made as the emission loop finished "
                    "on_next #1, delivered",
                    f"{probe.name} got {probe.received}, then nothing for "
                    f"{timeout * (1 + STALL_CONFIRMATION) * 1000:.0f} ms with 1 requested element "
                    f"outstanding (round {r + 1}: the delivering thread was paused {pause.k} "
                    f"{'bytecode instruction(s)' if pause.opcodes else 'line(s)'} of the publisher's code "
                    "after on_next returned)",
                    hint="at the end of the emission loop, subtract what was handled from the work count "
                    "(wip -= missed) and loop again while it is not zero: clearing it loses a request "
                    "made meanwhile",
                    evidence=cite(last_seq(env.trace, probe.name, "request"),
                                  last_seq(env.trace, probe.name, "on_next")),
                    setting="timeout")
            probe.cancel()
            env.count_iterations(r + 1, 0)


# -- fuzzing -----------------------------------------------------------------------------------


@tck_test(None, "fuzz")
def fuzz_demand_cancel_orders(ctx: PublisherContext) -> None:
    """Generated request/cancel orders, shrunk to the smallest scenario that breaks a rule.

    Scenarios request small, boundary, non-positive and huge amounts (sums crossing 2**63-1),
    cancel, from the test thread, another thread or re-entrantly from on_subscribe/on_next,
    add subscribers, pause, keep calling after terminal signals, and make a subscriber fail
    (its on_next or on_error raises). Every probe check holds, plus: nothing after cancel
    beyond what was in flight (3.6/1.8), nothing after a raising on_next (2.13; request() and
    subscribe() still return normally, 3.16/1.9), demand served (3.8/3.17), on_error after a
    non-positive request (3.9), and on_complete once every element arrived (1.5: "If a
    Publisher terminates successfully (finite stream) it MUST signal an onComplete"), at the
    latest after a further request(1) the kit makes when the demand is spent, as the JVM
    TCK's requestEndOfStream does. Element values and order are not judged (the factory
    promises n elements, not which), unless the subject declares deterministic_sequence:
    then no element may be lost, duplicated or reordered. If this fails, replay the scenario
    it prints (--rs-fuzz-replay) and follow its numbered steps.
    """
    from ..fuzz import deselected

    deselected(ctx.settings)
    from ..fuzz.verify import fuzz_publisher

    fuzz_publisher(ctx)
