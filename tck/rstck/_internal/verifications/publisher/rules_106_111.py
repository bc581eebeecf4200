"""Publisher rules 1.6 to 1.11 (after the end, after cancel, subscribe, several subscribers), each
from every calling context that can break it."""

from __future__ import annotations

import threading
import time
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
from ...matrix import EVERY_PUBLISHER_TEST
from ...matrix import Cover
from ...one_rule import stall_limit
from ...parity import SAME_UNTESTED
from ...parity import Parity
from ...parity import pub
from ...trace import Trace
from ...trace import short_repr
from ...worker import Worker
from ._common import VERIFICATION
from ._common import _multicast
from ._common import _nth

tck_test = Registry(VERIFICATION)
TESTS = tck_test.tests


@tck_test(
    "1.6", "required",
    parity=Parity(
        pub("untested_spec106_mustConsiderSubscriptionCancelledAfterOnErrorOrOnCompleteHasBeenCalled"), "new",
        "after on_complete, request(1), request(0), request(-1) and cancel() must be NOPs "
        "(3.6, 3.7): a request(0) still honoured would draw an on_error that 3.9 owes only "
        "while not cancelled."),
    covers=(
        Cover("1.6", "terminal"),
    ),
)
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


@tck_test(
    "1.6", "required",
    parity=Parity(
        pub("untested_spec106_mustConsiderSubscriptionCancelledAfterOnErrorOrOnCompleteHasBeenCalled"), "new",
        "the same after the failed publisher's on_error, which the JVM TCK leaves unchecked."),
    covers=(
        Cover("1.6", "terminal"),
    ),
)
def required_spec106_must_consider_subscription_cancelled_after_on_error(ctx: PublisherContext) -> None:
    """After the failed publisher's on_error, request and cancel are no-ops."""
    probe = ctx.failed_subscription("1.4")
    mark = probe.mark()
    for n in (1, 0, -1):
        probe.request(n)
    probe.cancel()
    ctx.closing_quiet(probe, after="after on_error, whatever is requested", since=mark)


@tck_test(
    "1.7", "required",
    parity=Parity(pub("required_spec107_mustNotEmitFurtherSignalsOnceOnCompleteHasBeenSignalled"), "same"),
    covers=(
        Cover("1.1", "terminal"),
        Cover("1.7", "terminal"),
    ),
)
def required_spec107_must_not_emit_further_signals_once_on_complete_has_been_signalled(ctx: PublisherContext) -> None:
    """After on_complete nothing else may arrive, even when more is requested."""
    probe = ctx.subscribed(1, completes=True)
    probe.request(10)
    probe.next_element()
    probe.expect_completion()
    mark = probe.mark()
    probe.request(10)
    ctx.closing_quiet(probe, after="after on_complete", since=mark)


@tck_test(
    "1.7", "required",
    parity=Parity(
        pub("untested_spec107_mustNotEmitFurtherSignalsOnceOnErrorHasBeenSignalled"), "new",
        "run on the failed publisher, as the JVM stub's own text suggests and never did: "
        "nothing may follow its on_error, even on request."),
    covers=(
        Cover("1.7", "terminal"),
    ),
)
def required_spec107_must_not_emit_further_signals_once_on_error_has_been_signalled(ctx: PublisherContext) -> None:
    """After the failed publisher's on_error nothing else may arrive, even on request."""
    probe = ctx.failed_subscription("1.4")
    mark = probe.mark()
    probe.request(10)
    ctx.closing_quiet(probe, after="after on_error", since=mark)


@tck_test(
    "1.7", "required",
    parity=Parity(
        pub("untested_spec107_mustNotEmitFurtherSignalsOnceOnErrorHasBeenSignalled"), "new",
        "after the on_error that answers request(0) or request(-1), a further request(5) must "
        "yield nothing: a publisher that signals the 3.9 error without marking itself done "
        "revives."),
    covers=(
        Cover("1.6", "terminal"),
        Cover("1.7", "terminal"),
        Cover("3.9", "terminal", "request(-1) after two elements"),
    ),
    left_out_of={"rs": "it provokes the error with request(0), which the edition does not define"},
)
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


@tck_test(
    "1.8", "required",
    parity=Parity(
        pub("untested_spec108_possiblyCanceledSubscriptionShouldNotReceiveOnErrorOrOnCompleteSignals"), "new",
        "a cancel from inside the first on_next of an unboundedly requested long stream: the "
        "signals must stop within a named bound of time or elements (what was in flight may "
        "still come)."),
    covers=(
        Cover("1.8", "on_next", "unbounded demand; bounded by the timeout and after_cancel_limit settings"),
        Cover("1.8", "bulk"),
        Cover("3.5", "on_next"),
    ),
)
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


@tck_test(
    "1.9", "required",
    parity=Parity(
        pub("untested_spec109_subscribeShouldNotThrowNonFatalThrowable"), "new",
        "subscribe() must return normally (1.9), for the regular and the failed publisher; the "
        "JVM TCK only notices a raise where its own helpers happen to call subscribe."),
    covers=(
        Cover("1.9", "test"),
    ),
)
def required_spec109_subscribe_must_return_normally(ctx: PublisherContext) -> None:
    """subscribe() returns normally, for the regular and (if given) the failed publisher."""
    ctx.subscribed(1)
    if ctx.subject.failed_factory is not None:
        probe = ctx.probe("failed")
        ctx.subscribe(ctx.failed_publisher(), probe)
        probe.expect_subscription()


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


@tck_test(
    "1.9", "required",
    parity=Parity(
        pub("required_spec109_subscribeThrowNPEOnNullSubscriber"), "stricter",
        "the JVM test asks the regular publisher only; this one also asks the failed one, "
        "which has nowhere but its caller to report a missing subscriber either."),
    covers=(
        Cover("1.9", "test"),
    ),
    left_out_of={"rs": "no None subscriber to refuse"},
)
def required_spec109_subscribe_none_must_raise_type_error(ctx: PublisherContext) -> None:
    """subscribe(None) must raise TypeError (the binding's NullPointerException), on the
    regular publisher and (if given) the failed one: a publisher that rejects every subscriber
    still has nowhere but its caller to report a missing one.
    """
    _subscribe_none(ctx, ctx.publisher(0), "")
    if ctx.subject.failed_factory is not None:
        _subscribe_none(ctx, ctx.failed_publisher(), "the failed publisher's ")


@tck_test(
    "1.9", "required",
    parity=Parity(pub("required_spec109_mustIssueOnSubscribeForNonNullSubscriber"), "same"),
    covers=(
        Cover("1.9", "test"),
    ),
    left_out_of={"rs": "no on_subscribe"},
)
def required_spec109_must_issue_on_subscribe_for_non_null_subscriber(ctx: PublisherContext) -> None:
    """subscribe() must lead to exactly one on_subscribe, before any other signal."""
    probe = ctx.probe()
    ctx.subscribe(ctx.publisher(1), probe)
    probe.expect_subscription()
    ctx.closing_drain(probe)


@tck_test(
    "1.9", "required",
    parity=Parity(pub("required_spec109_mayRejectCallsToSubscribeIfPublisherIsUnableOrUnwillingToServeThemRejectionMustTriggerOnErrorAfterOnSubscribe"), "same"),
    covers=(
        Cover("1.9", "terminal", EVERY_PUBLISHER_TEST + " (no signal before on_subscribe)"),
    ),
)
def required_spec109_may_reject_subscribe_with_on_error_after_on_subscribe(ctx: PublisherContext) -> None:
    """The failed publisher rejects a subscriber with on_subscribe first, then on_error once."""
    probe = ctx.failed_subscription("1.9")
    ctx.closing_quiet(probe, after="after on_error")


@tck_test(
    "1.9", "required",
    parity=Parity(
        pub("required_spec109_mustIssueOnSubscribeForNonNullSubscriber"), "stricter",
        "the JVM test subscribes one subscriber; this one also subscribes a second while the "
        "first is active, as 1.9 owes on_subscribe to every subscriber, not only the first."),
    covers=(
        Cover("1.9", "later"),
    ),
    left_out_of={"rs": "no on_subscribe"},
)
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


tck_test.untested(
    "untested_spec110_subscribe_may_be_called_many_times_with_different_subscribers",
    "1.10",
    "an obligation on the caller of subscribe(); the TCK never subscribes the same subscriber "
    "twice, and a publisher has nothing to show (1.11 covers several subscribers)",
    parity=Parity(
        pub("untested_spec110_rejectASubscriptionRequestIfTheSameSubscriberSubscribesTwice"), "same",
        SAME_UNTESTED),
    left_out_of={"rs": "JVM 1.10 not applicable"},
)


@tck_test(
    "1.11", "optional",
    parity=Parity(
        pub("optional_spec111_maySupportMultiSubscribe"), "stricter",
        "the JVM test only waits for both on_subscribe calls and a quiet window; this one also "
        "checks that the first subscriber still works after the second arrived, since dropping "
        "it is not supporting two."),
    covers=(
        Cover("1.11", "later"),
    ),
)
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


@tck_test(
    "1.11", "optional",
    parity=Parity(pub("optional_spec111_registeredSubscribersMustReceiveOnNextOrOnCompleteSignals"), "same"),
)
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


@tck_test(
    "1.11", "optional",
    parity=Parity(pub("optional_spec111_multicast_mustProduceTheSameElementsInTheSameSequenceToAllOfItsSubscribersWhenRequestingOneByOne"), "same"),
    covers=(
        Cover("1.11", "later"),
    ),
)
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


@tck_test(
    "1.11", "optional",
    parity=Parity(pub("optional_spec111_multicast_mustProduceTheSameElementsInTheSameSequenceToAllOfItsSubscribersWhenRequestingManyUpfront"), "same"),
)
def optional_spec111_multicast_must_produce_the_same_elements_in_the_same_sequence_when_requesting_many_upfront(
    ctx: PublisherContext,
) -> None:
    """Three subscribers each request 4 of a 3-element stream and see the same 3 elements."""
    probes = _multicast(ctx, 3, False, 3)
    for probe in probes:
        probe.request(4)
    _same_sequences({p.name: p.next_elements(3, rule="1.11") for p in probes}, ctx.env.trace)


@tck_test(
    "1.11", "optional",
    parity=Parity(pub("optional_spec111_multicast_mustProduceTheSameElementsInTheSameSequenceToAllOfItsSubscribersWhenRequestingManyUpfrontAndCompleteAsExpected"), "same"),
)
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
