"""Publisher rules 1.1 to 1.11, each from every calling context that can break it."""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable
from typing import Any

from ...api import MAX_DEMAND
from ...api import Publisher
from ...clock import starved_wait
from ...contexts import PublisherContext
from ...errors import NotVerified
from ...errors import RuleViolation
from ...evidence import cite
from ...evidence import last_seq
from ...evidence import seqs
from ...matrix import EVERY_PUBLISHER_TEST
from ...matrix import Cover
from ...parity import SAME_UNTESTED
from ...parity import Parity
from ...parity import pub
from ...probe import ProbeSubscriber
from ...registry import Registry
from ...results import Verdict
from ...runner import stall_limit
from ...trace import Trace
from ...trace import short_repr
from ...worker import Worker
from .._racing import aggressive_switching
from ._common import _BOUNDARY_LENGTHS
from ._common import VERIFICATION
from ._common import _multicast
from ._common import _nth
from ._common import _stalled

tck_test = Registry(VERIFICATION)
TESTS = tck_test.tests


@tck_test(
    "1.1", "required",
    parity=Parity(
        pub("required_spec101_subscriptionRequestMustResultInTheCorrectNumberOfProducedElements"), "stricter",
        "the JVM test requests 1, then 1 and 2, from the test thread; this one also requests "
        "one at a time from inside on_next, where request() runs inside the publisher's own "
        "emission and takes another path through its demand accounting, and rule 1.1 holds \"at "
        "all times\"."),
    covers=(
        Cover("1.1", "test"),
        Cover("1.1", "on_next", "one request(1) per on_next"),
        Cover("1.1", "bulk", "request(1) then request(2)"),
    ),
)
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


def _has(probe: ProbeSubscriber, elements: int) -> Callable[[], bool]:
    return lambda: probe.received >= elements or probe.terminal is not None


@tck_test(
    "1.1", "stochastic",
    parity=Parity(
        (), "new",
        "requests from two threads (one after the other, as rule 2.7 lets a subscriber make "
        "them) landing while an emission runs: a demand update lost to a concurrent decrement "
        "delivers one more than requested (1.1) or one fewer (3.8); every JVM test requests "
        "from one thread."),
)
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
    rival = _Rival(ctx.settings.timeout)
    helper = threading.Thread(target=rival.run, name="rs-tck-rival", daemon=True)
    helper.start()
    showed = 0
    try:
        with aggressive_switching():
            for i in range(rounds):
                ctx.env.count_iterations(i + 1, showed)  # round i + 1 under way: a failure in it counts it
                probe = rival.start_round(ctx, i, each)
                rival.finish_round(ctx, probe, i, each)
                showed += probe.excess > 0
                ctx.env.count_iterations(i + 1, showed)
                ctx.env.check()  # the probe flags an element beyond demand as it arrives
                with rival.serial:
                    probe.cancel()
    finally:
        rival.stop.set()
        rival.go.release()
    ctx.closing_drain(probe)


class _Rival:
    """The other thread of ``stochastic_spec101_...``: each round, it subscribes or requests
    while this thread requests, their calls serial (rule 2.7) but on two threads."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self.serial = threading.Lock()  # rule 2.7: one call on the subscription at a time, whichever thread
        self.go = threading.Semaphore(0)
        self.begun = threading.Semaphore(0)
        self.done = threading.Semaphore(0)
        self.current: list[Callable[[], None]] = []
        self.failed: list[BaseException] = []
        self.stop = threading.Event()

    def ask(self, probe: ProbeSubscriber) -> None:
        with self.serial:
            probe.request(1)

    def run(self) -> None:
        while self.go.acquire(timeout=self.timeout) and not self.stop.is_set():
            try:
                self.current[0]()
            except BaseException as exc:  # reported on the test's thread
                self.failed.append(exc)
                self.begun.release()
            self.done.release()

    def start_round(self, ctx: PublisherContext, i: int, each: int) -> ProbeSubscriber:
        """Round ``i``'s probe, with the other thread set off on its part of the round."""
        total = 2 * each
        if i % 2 == 0:
            probe = ctx.subscribed(total + 1, name=f"round{i}", keep_elements=False, yield_s=None)
            self.current[:] = [functools.partial(self._requests_here, probe, each)]
        else:
            def first(p: ProbeSubscriber, s: Any) -> None:
                with self.serial:
                    p.request(each)

            def came(p: ProbeSubscriber, e: Any) -> None:
                if p.received == 1:
                    self.begun.release()

            probe = ctx.probe(f"round{i}", on_subscribe=first, on_next=came,
                              keep_elements=False, yield_s=None)
            self.current[:] = [functools.partial(_subscribes_here, ctx, probe, total)]
        self.go.release()
        return probe

    def finish_round(self, ctx: PublisherContext, probe: ProbeSubscriber, i: int, each: int) -> None:
        """This thread's requests of round ``i``, then every element requested must arrive."""
        total, timeout = 2 * each, self.timeout
        if not self.begun.acquire(timeout=timeout) and not self.failed and probe.subscription is None:
            # A loaded machine may hold the other thread back that long: on_subscribe
            # must come (1.9), given the longer wait of a call that is not blocked.
            probe.expect_subscription(timeout=stall_limit(ctx.settings))
        if self.failed:
            raise self.failed[0]
        for _ in range(each):
            self.ask(probe)
        if not starved_wait(lambda step: self.done.acquire(timeout=step), timeout):
            raise RuleViolation("1.1", "the other thread's calls (subscribe(), request(1)) to return",
                                "they did not return", setting="timeout")
        if self.failed:
            raise self.failed[0]
        if not probe.wait_progress(_has(probe, total), timeout):
            ctx.env.check()
            raise RuleViolation(
                "3.8", f"{total} elements for {total} requested, half of them from another thread",
                f"{probe.received} arrived in round {i + 1}: a request lost to a concurrent "
                "emission", evidence=cite(last_seq(ctx.env.trace, probe.name, "on_next")),
                setting="timeout")

    def _requests_here(self, probe: ProbeSubscriber, each: int) -> None:
        for k in range(each):
            self.ask(probe)
            if k == 0:
                self.begun.release()  # the rest land while the emission the first one started runs


def _subscribes_here(ctx: PublisherContext, probe: ProbeSubscriber, total: int) -> None:
    ctx.subscribe(ctx.publisher(total + 1), probe)


@tck_test(
    "1.2", "required",
    parity=Parity(pub("required_spec102_maySignalLessThanRequestedAndTerminateSubscription"), "same"),
    covers=(
        Cover("1.2", "bulk"),
        Cover("1.5", "bulk"),
    ),
)
def required_spec102_may_signal_fewer_than_requested_and_terminate(ctx: PublisherContext) -> None:
    """request(10) on a 3-element stream: three elements, then on_complete.

    If this fails, check that the publisher completes when its source runs dry even though
    demand is left over.
    """
    probe = ctx.subscribed(3, completes=True)
    probe.request(10)
    probe.next_elements(3)
    probe.expect_completion()


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


@tck_test(
    "1.3", "stochastic",
    parity=Parity(
        pub("stochastic_spec103_mustSignalOnMethodsSequentially"), "stricter",
        "the JVM test only notices two threads in a signal when they happen to meet; this one "
        "pauses inside every signal so that a second thread racing in is seen, and alternates "
        "one-by-one with bulk requests, each a different emission path of a multi-threaded "
        "publisher."),
    covers=(
        Cover("1.1", "thread", EVERY_PUBLISHER_TEST),
        Cover("1.3", "on_next", "request(1) from every on_next; the probe pauses inside each signal"),
        Cover("1.3", "thread", EVERY_PUBLISHER_TEST),
        Cover("1.3", "bulk", "every other iteration requests all elements at once"),
        Cover("1.3", "terminal", 
            "each iteration waits for on_complete while the probe pauses inside on_next"),
        Cover("1.3", "many", "stochastic_iterations fresh streams"),
    ),
)
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


@tck_test(
    "1.3", "required",
    parity=Parity(
        pub("stochastic_spec103_mustSignalOnMethodsSequentially"), "stricter",
        "a request made inside on_subscribe, which then keeps running for a window: a signal "
        "from another thread overlaps it every time, where the JVM's stochastic test sees that "
        "race only when it happens to fall in a few microseconds."),
    covers=(
        Cover("1.3", "on_subscribe", 
            "on_subscribe stays running for a no-signal window, so a signal from another "
            "thread overlaps it every time"),
    ),
    left_out_of={"rs": "no on_subscribe"},
)
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


@tck_test(
    "1.4", "required",
    parity=Parity(
        pub("optional_spec104_mustSignalOnErrorWhenFails"), "same",
        "the JVM test is named optional but fails, not skips, when the failed publisher "
        "misbehaves."),
    covers=(
        Cover("1.4", "test"),
    ),
)
def required_spec104_must_signal_on_error_when_failing(ctx: PublisherContext) -> None:
    """The failed publisher must signal on_subscribe, then on_error, and nothing more.

    If this fails, check that a publisher that cannot serve a subscriber calls on_error on
    it (after on_subscribe) rather than raising from subscribe() or staying silent.
    """
    probe = ctx.failed_subscription("1.4")
    ctx.closing_quiet(probe, after="after on_error")


@tck_test(
    "1.4", "required",
    parity=Parity(
        pub("optional_spec104_mustSignalOnErrorWhenFails"), "stricter",
        "the JVM test subscribes once; this one subscribes three times in turn, as a failed "
        "publisher whose error is a one-shot flag leaves every later subscriber waiting "
        "forever."),
    covers=(
        Cover("1.4", "later"),
    ),
)
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


#: Each batch size from 1 to 64 divides one of these (a size up to 32 twice or more).
_BATCH_MULTIPLES = tuple(range(33, 64))


@tck_test(
    "1.5", "required",
    parity=Parity(
        pub("required_spec105_mustSignalOnCompleteWhenFiniteStreamTerminates"), "stricter",
        "the JVM test ends a 3-element stream; this one also ends streams of 33 to 64, 1000 "
        "and 1024 elements asked for in one request of exactly their length, so that the "
        "demand runs out where an internal batch or turn ends, the place a publisher forgets "
        "to look for the end (with the same one further request(1) the JVM's "
        "requestEndOfStream makes)."),
    covers=(
        Cover("1.5", "test"),
    ),
)
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


@tck_test(
    "1.5", "optional",
    parity=Parity(pub("optional_spec105_emptyStreamMustTerminateBySignallingOnComplete"), "same"),
    covers=(
        Cover("1.2", "terminal"),
        Cover("1.5", "terminal"),
    ),
)
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
