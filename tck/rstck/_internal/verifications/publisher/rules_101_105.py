"""Publisher rules 1.1 to 1.5 (demand, serial signals, on_error, on_complete), each from every
calling context that can break it."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any

from ....contexts import PublisherContext
from ....errors import NotVerified
from ....errors import RuleViolation
from ....probe import ProbeSubscriber
from ....registry import Registry
from ....results import Verdict
from ...clock import starved_wait
from ...evidence import cite
from ...evidence import last_seq
from ...matrix import EVERY_PUBLISHER_TEST
from ...matrix import Cover
from ...one_rule import stall_limit
from ...parity import Parity
from ...parity import pub
from .._racing import aggressive_switching
from ._common import _BOUNDARY_LENGTHS
from ._common import VERIFICATION
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
    # An element that never comes is not this rule's (it forbids more, not fewer): it is 3.8's.
    single.request(1)
    single.next_element(rule="3.8")
    ctx.closing_quiet(single, after="beyond the requested 1 element")
    summed.request(1)
    summed.next_element(rule="3.8")
    summed.request(1)
    summed.request(2)
    summed.next_elements(3, rule="3.8")
    ctx.closing_quiet(summed, after="beyond the requested 4 elements")
    reentrant.request(1)
    reentrant.next_elements(5, rule="3.8")
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
    rival = _Rival(ctx.settings.timeout, ctx.settings.test_limit)
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

    def __init__(self, timeout: float, idle_limit: float) -> None:
        self.timeout = timeout
        #: How long it waits for the next round: the test's thread may take long between two on a
        #: loaded machine, and the rounds left would then find nobody to run them.
        self.idle_limit = idle_limit
        self.serial = threading.Lock()  # rule 2.7: one call on the subscription at a time, whichever thread
        self.go = threading.Semaphore(0)
        #: Released when this round's emission is under way; a round's own, so that a release
        #: that came late for the round before cannot start the next before its subscription.
        self.begun = threading.Semaphore(0)
        self.done = threading.Semaphore(0)
        self.current: list[tuple[Callable[[], None], threading.Semaphore]] = []
        self.failed: list[BaseException] = []
        self.stop = threading.Event()

    def ask(self, probe: ProbeSubscriber) -> None:
        with self.serial:
            probe.request(1)

    def run(self) -> None:
        while self.go.acquire(timeout=self.idle_limit) and not self.stop.is_set():
            job, begun = self.current[0]
            try:
                job()
            except BaseException as exc:  # reported on the test's thread
                self.failed.append(exc)
                begun.release()
            self.done.release()

    def start_round(self, ctx: PublisherContext, i: int, each: int) -> ProbeSubscriber:
        """Round ``i``'s probe, with the other thread set off on its part of the round."""
        total = 2 * each
        begun = self.begun = threading.Semaphore(0)
        if i % 2 == 0:
            probe = ctx.subscribed(total + 1, name=f"round{i}", keep_elements=False, yield_s=None)
            self.current[:] = [(functools.partial(self._requests_here, probe, each, begun), begun)]
        else:
            def first(p: ProbeSubscriber, s: Any) -> None:
                with self.serial:
                    p.request(each)

            def came(p: ProbeSubscriber, e: Any) -> None:
                if p.received == 1:
                    begun.release()

            probe = ctx.probe(f"round{i}", on_subscribe=first, on_next=came,
                              keep_elements=False, yield_s=None)
            self.current[:] = [(functools.partial(_subscribes_here, ctx, probe, total), begun)]
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

    def _requests_here(self, probe: ProbeSubscriber, each: int, begun: threading.Semaphore) -> None:
        for k in range(each):
            self.ask(probe)
            if k == 0:
                begun.release()  # the rest land while the emission the first one started runs


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
    # Only what reaches the probes is judged: a processor is fed by a counting upstream.
    exact = [ctx.subscribed(n, completes=True, name=f"exactly{n}", keep_elements=False, yield_s=None,
                            counted=True) for n in lengths]
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
