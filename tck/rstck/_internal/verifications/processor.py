"""Identity-processor verification: both contracts (rule 4.1) and the handling of errors (4.2).

A processor is verified three ways, in one registry:

* as a publisher: every publisher test, where ``publisher(n)`` is a fresh processor subscribed
  to a TCK upstream that feeds it ``n`` elements on demand (and the failed publisher is a
  processor whose upstream fails);
* as a subscriber: every whitebox test, where the subscriber under test is a fresh processor
  with a TCK downstream subscribed to it, so the puppet's demand flows through the processor
  to the upstream and the probe sees what came out the other side;
* on its own rules: errors reach every subscriber at once or are recovered from, demand from
  long ago is still honoured, and elements pass through unchanged.

The upstream checks the processor's subscriber side (2.3, 2.7, 2.13) and the probes its
publisher side (1.1, 1.3, 1.7, 1.9) in every test. A request(n <= 0) that reaches the upstream
is answered as a conforming publisher answers it, with on_error(ValueError) (rule 3.9): a
processor may pass its subscriber's requests on unchanged, and 3.9 is judged on what its
subscriber then gets. A processor may also end its stream with an on_error of its own (a
publisher may fail, rule 1.4): the whitebox tests' downstream counts only a relay of the TCK's
own exceptions as the processing of an on_error.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from ...contexts import ProcessorContext
from ...contexts import TckFailure
from ...errors import NotVerified
from ...errors import RuleViolation
from ...manual import ManualPublisher
from ...probe import STALL_CONFIRMATION
from ...probe import ProbeSubscriber
from ...registry import Registry
from ...results import Verdict
from ..clock import starved_wait
from ..evidence import cite
from ..matrix import Cover
from ..parity import Parity
from ..parity import proc
from ..trace import short_repr
from . import publisher
from . import subscriber_whitebox
from ._processor_races import RAN_THROUGH_ENOUGH
from ._processor_races import RELAY_RACE_ROUNDS
from ._processor_races import RELAY_SWEEP
from ._processor_races import ArrivingRounds
from ._processor_races import race_sides
from ._processor_races import way_of
from ._racing import aggressive_switching

VERIFICATION = "processor"
tck_test = Registry(VERIFICATION)
TESTS = tck_test.tests

#: Rule 4.2 leaves a processor free to recover from an upstream error, as long as it then
#: treats that subscription as cancelled; swallowing it silently is neither.
_PROPAGATE_OR_RECOVER = (
    "on_error propagated at once to every subscriber, or (recovering, rule 4.2) the "
    "subscribers still served"
)


# The publisher and whitebox tests, unchanged and under their own names, each on its view.
tck_test.include(publisher.TESTS, via=ProcessorContext.publisher_view)


# The processor is fuzzed as a publisher; its subscriber side through a downstream is not. Its
# puppet is the TCK's own downstream, which calls from one thread at a time (rule 2.7 binds the
# TCK there too): the hunt that pulls a puppet from two threads at once is not for it.
tck_test.include([t for t in subscriber_whitebox.TESTS if subscriber_whitebox.via_processor(t)],
                 via=ProcessorContext.subscriber_view)


# -- the processor's own tests, in rule order -------------------------------------------------


def _same(got: Any, sent: Any) -> bool:
    return got is sent or got == sent


#: Where an element must pass while another subscriber has no demand: a processor that waits
#: for every subscriber's demand (as the JVM TCK's doesCoordinatedEmission) says so.
_COORDINATED_HINT = ("a processor that emits (or requests upstream) only once every subscriber has demand "
                     "must declare coordinated_emission (--rs-coordinated-emission)")


def _expect_relayed(probe: ProbeSubscriber, sent: Any, rule: str, hint: str = "") -> None:
    got = probe.next_element(rule=rule, what=f"element {short_repr(sent)} relayed", hint=hint)
    if not _same(got, sent):
        raise RuleViolation(rule, f"{probe.name} to receive {short_repr(sent)}, the element sent upstream",
                            f"it received {short_repr(got)}", evidence=probe.evidence())


def _served(probe: ProbeSubscriber) -> Callable[[], bool]:
    return lambda: bool(probe.elements) or probe.terminal is not None


def _terminals(probes: list[ProbeSubscriber]) -> str:
    return "; ".join(f"{p.name}: {p._terminal_text() or 'nothing'}" for p in probes)


def _chains(reported: BaseException | None, error: BaseException) -> bool:
    seen: set[int] = set()
    while reported is not None and id(reported) not in seen:
        if reported is error:
            return True
        seen.add(id(reported))
        reported = reported.__cause__ or reported.__context__
    return False


def _propagated_or_recovered(ctx: ProcessorContext, upstream: ManualPublisher,
                             probes: list[ProbeSubscriber], error: BaseException, rule: str) -> None:
    """After the upstream's on_error: every subscriber gets it, or the processor recovered."""
    for probe in probes:
        probe.expect_terminal()
    errored = [p for p in probes if p.terminal == "on_error"]
    if errored:
        silent = [p.name for p in probes if p.terminal != "on_error"]
        if silent:
            raise RuleViolation(rule, "on_error propagated to every subscriber",
                                f"{', '.join(silent)} got {_terminals(probes)}",
                                evidence=cite(*(s for p in probes for s in p.evidence()),
                                              upstream.subscription.signal_seq))
        for probe in errored:
            if not _chains(probe.error, error):
                raise RuleViolation(rule, f"the upstream's error, {short_repr(error)}, propagated",
                                    f"{probe.name} got {probe._terminal_text()}",
                                    evidence=cite(*probe._terminal_evidence(), upstream.subscription.signal_seq))
        return
    ctx.env.trace.note("no on_error downstream: checking that the processor recovered (rule 4.2)")
    upstream.expect_no_request(rule=rule, after="after the upstream's on_error (a processor that "
                               "recovers treats that subscription as cancelled)")
    for probe in probes:
        if probe.terminal is None and not probe.elements:
            probe.request(1)
            probe._wait(_served(probe), ctx.settings.timeout)
        if probe.terminal is None and not probe.elements:
            raise RuleViolation(
                rule, _PROPAGATE_OR_RECOVER,
                f"{probe.name} got no on_error within {ctx.settings.timeout * 1000:.0f} ms of the "
                "upstream's, and nothing when it then requested 1: the error was swallowed",
                hint="propagate on_error to every subscriber at once, even those without demand",
                evidence=cite(*probe.evidence(), upstream.subscription.signal_seq),
            )


@tck_test(
    "1.4", "required",
    parity=Parity(
        proc("required_spec104_mustCallOnErrorOnAllItsSubscribersIfItEncountersANonRecoverableError"), "looser",
        "the JVM test demands the upstream's error on both subscribers; this one also accepts "
        "a processor that recovers, treats the failed subscription as cancelled and still "
        "serves its subscribers, as rule 4.2 allows (\"MAY choose to recover an onError "
        "signal\")."),
    covers=(
        Cover("1.4", "later"),
        Cover("4.2", "later"),
    ),
)
def required_spec104_must_call_on_error_on_all_its_subscribers_if_it_encounters_a_non_recoverable_error(
    ctx: ProcessorContext,
) -> None:
    """An upstream on_error must reach both subscribers, the one without demand included.

    One element first goes through to the first subscriber (to both, with
    coordinated_emission). Then the upstream fails: both must get on_error with that
    exception, at once. A processor that recovers instead (rule 4.2) must stop using the
    failed subscription and still serve its subscribers. If this fails, check that on_error
    is relayed to every subscriber right away, without waiting for demand.
    """
    ctx.subscribers_needed(2)
    upstream, _, (first, second) = ctx.relay(2)
    hint = _COORDINATED_HINT
    first.request(1)
    if ctx.settings.coordinated_emission:
        second.request(1)
    upstream.expect_demand(rule="1.4", what="a request upstream once a subscriber requested", hint=hint)
    x = upstream.send_next(rule="1.4")
    _expect_relayed(first, x, "1.4", hint)
    if ctx.settings.coordinated_emission:
        _expect_relayed(second, x, "1.4")
    first.request(1)
    error = TckFailure("the upstream failed, as the TCK asked (rule 1.4 test)")
    upstream.send_error(error)
    ctx.env.check()
    _propagated_or_recovered(ctx, upstream, [first, second], error, "1.4")


#: Rounds of the hunt for a subscriber joining as the stream ends: each of the four ways (the
#: upstream completes or the last subscriber cancels; either side paused) at every depth.
JOIN_RACE_ROUNDS = 64


#: How far into its own code the paused side is stopped, swept from 1 line.
JOIN_SWEEP = 16


def _told_or_served(ctx: ProcessorContext, upstream: ManualPublisher, joiner: ProbeSubscriber) -> bool:
    """The joiner got a terminal signal, or (the stream goes on) an element it asked for."""
    timeout = ctx.settings.timeout
    if joiner.terminal is not None:
        return True
    joiner.request(1)  # a processor that ends a stream only on demand is for other tests to judge
    sub = upstream.subscription
    if sub.terminal is None and not sub.cancelled:
        joiner._wait(lambda: joiner.terminal is not None or sub.demand > 0 or sub.cancelled, timeout)
        if joiner.terminal is None and sub.demand > 0 and not sub.cancelled:
            upstream.send_next(rule="1.5")
    return joiner._wait(lambda: joiner.terminal is not None or joiner.received > 0, timeout)


def _compare_with_a_later_subscriber(ctx: ProcessorContext, processor: Any, upstream: ManualPublisher,
                                     joiner: ProbeSubscriber, by_cancel: bool, r: int) -> None:
    ended = "its last subscriber cancelled" if by_cancel else "its upstream completed"
    later = ctx.as_publisher.probe(f"later{r + 1}")
    ctx.as_publisher.subscribe(processor, later)
    later.expect_subscription()
    if not _told_or_served(ctx, upstream, later):
        ctx.env.trace.note(f"a subscriber arriving after {ended} is not told either: not a race "
                           "(whether it must be is for the tests of an ended stream)")
        raise NotVerified(f"the processor does not tell a subscriber that arrives after {ended}")
    raise RuleViolation(
        "3.8" if by_cancel else "1.5",
        f"a subscriber joining as {ended} to be told (on_complete or on_error) or served",
        f"{joiner.name} got on_subscribe, then nothing for {ctx.settings.timeout * 1000:.0f} ms, "
        f"even when it requested (round {r + 1}); {later.name}, subscribing a moment later, "
        f"got {later._terminal_text() or 'served'}",
        hint="decide under one lock whether a new subscriber joins the stream or is told it ended: "
        "one that reads the end and joins the list in two steps can be missed by the end",
        setting="timeout", evidence=cite(*joiner.evidence(), *later.evidence()))


@tck_test(
    "1.5", "stochastic",
    parity=Parity(
        (), "new",
        "a subscriber joining at the moment the upstream completes (or the last subscriber "
        "cancels) must still be told: joining and ending decided in two steps leave it waiting "
        "forever."),
)
def stochastic_spec105_a_subscriber_joining_as_the_stream_ends_must_still_be_told(ctx: ProcessorContext) -> None:
    """Rounds where a subscriber joins at the moment the upstream completes, or the moment the
    last subscriber cancels: it must still be told (or, if the stream goes on, served).

    A processor that reads "has my stream ended?" and joins the subscriber to its list in two
    steps, apart from where its end takes that list, leaves a subscriber that joins in between
    listed but never told: it waits forever. Under the interpreter lock the two sides almost
    never interleave on their own, so one of them (alternately the subscribe() and the ending
    call) runs on a TCK thread that stops at its ``k``-th line of the processor's code,
    ``k`` swept over the rounds, while the other runs. A subscriber that is not told is then
    compared with one that subscribes afterwards: only when that one is told is it a race. If
    this fails, decide under one lock whether a subscriber joins the stream or is told it ended.
    """
    if ctx.settings.skip_stochastic:
        raise NotVerified("stochastic verifications are switched off (skip_stochastic)", kind=Verdict.DESELECTED)
    env = ctx.env
    direct = env.dispatch is type(env)._direct
    cancels = ctx.settings.max_subscribers >= 2
    with aggressive_switching():
        rounds = JOIN_RACE_ROUNDS if direct else 2
        for r in range(rounds):
            env.count_iterations(r + 1, 0)  # round r + 1 under way: a failure in it counts it
            # The upstream's end first, then (a second half) the last subscriber's cancel.
            by_cancel = cancels and 2 * r >= rounds
            processor = ctx.processor()
            leaving = None
            if by_cancel:
                leaving = ctx.as_publisher.probe(f"leaving{r + 1}")
                ctx.as_publisher.subscribe(processor, leaving)
            upstream = ctx.as_subscriber.upstream(f"upstream{r + 1}")
            ctx.as_subscriber.attach(upstream, processor)
            if leaving is not None:
                leaving.expect_subscription()
            env.check()
            joiner = ctx.as_publisher.probe(f"joiner{r + 1}")

            def join(joiner: ProbeSubscriber = joiner, processor: Any = processor) -> None:
                ctx.as_publisher.subscribe(processor, joiner)

            def end(leaving: ProbeSubscriber | None = leaving, upstream: ManualPublisher = upstream) -> None:
                if leaving is not None:
                    leaving.cancel()
                else:
                    upstream.send_complete(rule="1.5")

            first, second = (join, end) if r % 2 == 0 else (end, join)
            race_sides(ctx, first, second, 1 + (r // 2) % JOIN_SWEEP, rule="1.5",
                  what="subscribe() and cancel() to return promptly", watch_rival=True)
            joiner.expect_subscription()
            if not _told_or_served(ctx, upstream, joiner):
                ctx.env.check()
                _compare_with_a_later_subscriber(ctx, processor, upstream, joiner, by_cancel, r)


@tck_test(
    "2.1", "required",
    parity=Parity(proc("required_mustRequestFromUpstreamForElementsThatHaveBeenRequestedLongAgo"), "same"),
    covers=(
        Cover("2.1", "later"),
    ),
)
def required_spec201_processor_must_request_from_upstream_for_elements_that_have_been_requested_long_ago(
    ctx: ProcessorContext,
) -> None:
    """Demand a subscriber signalled long ago must still be served after a late subscriber joins.

    The first subscriber requests 20 and gets two elements; a second one subscribes late.
    The next element must still be requested upstream and reach the first subscriber; the
    late one sees nothing until it requests, then gets that same element (with
    coordinated_emission: nothing moves until it requests, then both get it). Then both
    complete. If this fails, check that the processor keeps requesting upstream while any
    subscriber has outstanding demand, and keeps elements for subscribers without demand.
    """
    ctx.subscribers_needed(2)
    upstream, processor, (first,) = ctx.relay(1)
    first.request(20)
    for _ in range(2):
        _expect_relayed(first, upstream.send_next(rule="2.1"), "2.1")
    late = ctx.late_subscriber(processor, "late")
    if ctx.settings.coordinated_emission:
        late.expect_quiet(after="before it requested")
        late.request(1)
        z = upstream.send_next(rule="2.1")
        _expect_relayed(first, z, "2.1")
        _expect_relayed(late, z, "2.1")
    else:
        z = upstream.send_next(rule="2.1")
        _expect_relayed(first, z, "2.1", _COORDINATED_HINT)
        late.expect_quiet(after="before it requested")
        late.request(1)
        _expect_relayed(late, z, "2.1")
    upstream.send_complete()
    first.expect_completion(rule="2.1")
    late.expect_completion(rule="2.1")


#: Elements relayed to two subscribers at different paces: many times the usual 16 to 256
#: element buffers and prefetch windows.
_PACES_TOTAL = 1393


#: What the slow subscriber asks for, one amount after the other, each once the last is served.
_PACES = (1, 2, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 255, 256, 257)


@tck_test(
    "2.1", "required",
    parity=Parity(
        (), "new",
        "a fast and a slow subscriber over 1393 elements: the room the slow one frees in a "
        "full buffer must be asked of the upstream again, or the stream stalls with demand "
        "outstanding."),
)
def required_spec201_processor_must_keep_requesting_upstream_for_subscribers_at_different_paces(
    ctx: ProcessorContext,
) -> None:
    """Two subscribers, one requesting 1393 at once, one 1, 2, 15, 16, 17, ... 257 from on_next.

    The fast one runs ahead until the processor's buffer for the slow one is full (the test waits
    for it to stop); the slow one's next request is then served from that full buffer, and
    the room it frees must be asked of the upstream again. Both must get all 1393 elements, then on_complete, and the stream
    must never stall while demand is outstanding (with coordinated_emission, it moves at the
    slow one's pace). If this fails, check that delivering from a full buffer, as well as
    receiving an element, leads to a request upstream.
    """
    ctx.subscribers_needed(2)
    total = _PACES_TOTAL
    step = {"next": 1, "due": _PACES[0]}

    def paced(p: ProbeSubscriber, e: Any) -> None:
        if p.received == step["due"] and step["next"] < len(_PACES):
            amount = _PACES[step["next"]]
            step["next"] += 1
            step["due"] += amount
            p.request(amount)

    processor = ctx.processor()
    fast = ctx.as_publisher.probe("fast", keep_elements=False, yield_s=None)
    slow = ctx.as_publisher.probe("slow", keep_elements=False, on_next=paced, yield_s=None)
    for probe in (fast, slow):
        ctx.as_publisher.subscribe(processor, probe)
        probe.expect_subscription()
    upstream = ctx.as_subscriber.upstream("upstream", count=total, end="complete")
    ctx.as_subscriber.attach(upstream, processor)
    fast.request(total)
    step["next"] = len(_PACES)  # the hook waits until the fast one has gone ahead
    slow.request(_PACES[0])
    timeout = ctx.settings.timeout
    slow._wait(lambda: slow.received >= _PACES[0] or slow.terminal is not None, timeout)
    fast.wait_quiet()  # as far ahead as the processor lets it: the slow one's buffer is full
    step["next"] = 2
    step["due"] += _PACES[1]
    slow.request(_PACES[1])

    def done() -> bool:
        return all(p.received >= total or p.terminal is not None for p in (fast, slow))

    def moved(before: tuple[int, int]) -> Callable[[], bool]:
        return lambda: done() or (fast.received, slow.received) != before

    while not done():
        progressed = moved((fast.received, slow.received))
        if not (slow._wait(progressed, timeout) or fast._wait(progressed, 0.0)):
            # A loaded machine's pause ends; a stall lasts (see the publisher's long streams).
            if slow._wait(progressed, timeout * STALL_CONFIRMATION) or fast._wait(progressed, 0.0):
                ctx.env.trace.note(f"a pause of over {timeout * 1000:.0f} ms, then the streams went on: "
                                   "not a stall")
                continue
            silence = timeout * (1 + STALL_CONFIRMATION)
            ctx.env.check()
            raise RuleViolation(
                "2.1",
                f"{total} elements to each subscriber, the streams never silent for {silence * 1000:.0f} ms",
                f"fast got {fast.received} (requested {fast.requested}), slow got {slow.received} "
                f"(requested {slow.requested}), then nothing for {silence * 1000:.0f} ms; upstream: "
                f"{upstream.subscription.describe()}",
                hint="the processor must ask its upstream for more while a subscriber has "
                "outstanding demand, also after delivering from a full buffer",
                setting="timeout", evidence=cite(*fast.evidence(), *slow.evidence()),
            )
    ctx.env.check()
    for probe in (fast, slow):
        probe.expect_completion(rule="2.1")


@tck_test(
    "2.6", "required",
    parity=Parity(
        (), "new",
        "a processor that declared one subscriber (max_subscribers=1) no longer needs its "
        "upstream once that subscriber cancelled, so 2.6 asks it to cancel; one that can take "
        "new subscribers is not judged (the rule's note on processors)."),
    covers=(
        Cover("2.6", "later", 
            "a processor that declared max_subscribers=1, once its only subscriber cancelled; "
            "one that can take new subscribers may keep its upstream"),
    ),
)
def required_spec206_single_subscriber_processor_must_cancel_its_upstream_once_its_subscriber_cancelled(
    ctx: ProcessorContext,
) -> None:
    """A processor that declared one subscriber (``max_subscribers=1``) must cancel its upstream
    once that subscriber cancelled: the subscription is no longer needed (rule 2.6, a MUST).

    The subscriber asks for 2 and gets one element relayed, then cancels. A processor that can
    still take new subscribers may keep its upstream for them (the spec's note to 2.6), so for
    one that declared more than one (the default) the test is not applicable. A processor that
    cancels only on its upstream's next signal is given one, if it asked for it. (The JVM TCK
    leaves 2.6 untested; a declared single subscriber makes the "no longer needed" of the rule
    visible.) If this fails, check that the subscription handed downstream passes cancel() on
    to the upstream.
    """
    if ctx.settings.max_subscribers != 1:
        raise NotVerified("a processor that can still take new subscribers may keep its upstream after "
                          "its subscriber cancelled (2.6); declare max_subscribers=1 for a "
                          "single-subscriber processor")
    upstream, _, (downstream,) = ctx.relay(1)
    downstream.request(2)
    upstream.expect_demand(rule="2.6", what="a request upstream once the subscriber requested 2")
    _expect_relayed(downstream, upstream.send_next(rule="2.6"), "2.6")
    downstream.cancel()
    ctx.env.check()
    timeout = ctx.settings.timeout
    sub = upstream.subscription
    if (not upstream.wait_cancel(timeout=timeout) and sub.demand > 0 and sub.terminal is None
            and not sub.cancelled):
        upstream.send_next(rule="2.6")  # one that cancels lazily, on its upstream's next signal
    ctx.env.check()
    upstream.expect_cancel(
        rule="2.6", timeout=timeout,
        what="cancel() on the upstream once the processor's only subscriber cancelled",
        hint="a single-subscriber processor has no use for its upstream once its subscriber left: "
        "pass cancel() on to it")


def _waking(holder: list[ManualPublisher]) -> Callable[[ProbeSubscriber, Any], None]:
    """An on_next hook that wakes a wait on the upstream in ``holder`` (``_serve_as_asked``)."""

    def hook(_: ProbeSubscriber, __: Any) -> None:
        for upstream in holder:
            with upstream._cond:
                upstream._cond.notify_all()

    return hook


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms"


def _serve_as_asked(ctx: ProcessorContext, upstream: ManualPublisher, probe: ProbeSubscriber,
                    wanted: int, rule: str, asked: str) -> list[Any]:
    """Send ``wanted`` elements upstream as the processor asks for them, until ``probe`` has them.

    A processor need not pass its subscriber's demand on whole, nor at once: it may ask its
    upstream for one element at a time, asking again as each arrives or is delivered (a Netty
    handler reads one message per read), or for more than asked (a prefetch). So the TCK sends
    within what it is asked for, never more than ``wanted``, as the requests come, and waits,
    woken by each request upstream and each element downstream (``probe``'s on_next hook is
    ``_waking``, given the upstream), while the processor works. A silence of
    ``timeout`` (confirmed over STALL_CONFIRMATION times longer again) with the elements still
    owed downstream is a stall: the demand ``asked`` was lost. Returns the elements sent.
    """
    sub = upstream.subscription
    timeout = ctx.settings.timeout
    base = probe.received
    sent: list[Any] = []

    def served() -> bool:
        return probe.received - base >= wanted or probe.terminal is not None or sub.cancelled

    def moved(seen: int, calls: int) -> Callable[[], bool]:
        return lambda: (served() or probe.received != seen or sub.calls != calls
                        or (len(sent) < wanted and sub.demand > 0))

    while not served():
        if len(sent) < wanted and sub.demand > 0:
            sent.append(upstream.send_next(rule=rule))
            continue
        with upstream._cond:
            ahead = moved(probe.received, sub.calls)
            # A loaded machine's pause ends; a stall lasts (see the publisher's long streams).
            until_ahead = functools.partial(upstream._cond.wait_for, ahead)
            if starved_wait(until_ahead, timeout) or starved_wait(until_ahead, timeout * STALL_CONFIRMATION):
                continue
        ctx.env.check()
        silence = timeout * (1 + STALL_CONFIRMATION)
        raise RuleViolation(
            rule,
            f"the {wanted} element(s) {asked} delivered, the TCK sending each as the processor asks "
            "its upstream for it",
            f"{probe.name} got {probe.received - base} of them, then nothing for {_ms(silence)}; "
            f"{sub.describe()}",
            hint="demand a subscriber signalled must reach the upstream, in full or a part at a time, "
            "for as long as elements are owed",
            setting="timeout", evidence=cite(*probe.evidence(), *sub.evidence()),
        )
    ctx.env.check()
    if len(sent) < wanted and probe.terminal is None:
        raise RuleViolation(rule, f"the {wanted} element(s) {asked} delivered",
                            f"the processor cancelled its upstream after {len(sent)} ({sub.describe()})")
    return sent


@tck_test(
    "3.8", "required",
    parity=Parity(
        (), "new",
        "demand a downstream subscriber signals before the processor has an upstream must be "
        "forwarded once it has one, not lost."),
    covers=(
        Cover("3.8", "later", "downstream demand before the processor's upstream subscription"),
    ),
)
def required_spec308_processor_must_honour_demand_signalled_before_its_upstream_subscription(
    ctx: ProcessorContext,
) -> None:
    """Demand from downstream that arrives before the processor has an upstream is not lost.

    The downstream subscribes and, if the processor already answers with on_subscribe,
    requests 3 before the upstream is attached. Once it is, the processor must ask the
    upstream for elements, at once or a part at a time (one more as each arrives, say): the
    TCK sends each as it is asked for, up to 3, and all 3 must come out. (A processor that
    holds back on_subscribe until it has an upstream cannot be given demand early: then the
    test checks the ordinary order.) If this fails, check where request(n) goes while there
    is no upstream subscription yet: it must be kept and forwarded once there is.
    """
    processor = ctx.processor()
    woken: list[ManualPublisher] = []
    downstream = ctx.as_publisher.probe("downstream", on_next=_waking(woken))
    ctx.as_publisher.subscribe(processor, downstream)
    with ctx.env.aside():  # a window: the TCK calls nothing meanwhile
        early = downstream._wait(lambda: downstream.subscription is not None, ctx.settings.no_signal_window)
    if early:
        ctx.env.trace.note("the processor answered on_subscribe before it had an upstream: requesting now")
        downstream.request(3)
    upstream = ctx.as_subscriber.upstream("upstream")
    woken.append(upstream)
    ctx.as_subscriber.attach(upstream, processor)
    ctx.env.check()
    if not early:
        downstream.expect_subscription()
        downstream.request(3)
    sent = _serve_as_asked(ctx, upstream, downstream, 3, "3.8", "requested downstream")
    for element in sent:
        _expect_relayed(downstream, element, "3.8")
    downstream.cancel()


@tck_test(
    "3.8", "stochastic",
    parity=Parity(
        (), "new",
        "request(1) downstream racing on_next from upstream: every request must be served, "
        "where a delivery loop left a moment after the other side found it busy strands an "
        "element; and two elements arriving while a request's delivery loop finishes, or two "
        "requests while an element's does, must not start a second delivery beside it (1.3), "
        "where a loop that takes too much off its work count lets them."),
    covers=(
        Cover("1.3", "thread",
            "a request() paused a swept number of steps into the processor while two elements "
            "arrive from upstream, and an on_next paused so while the subscriber, elements "
            "queued for it, requests twice; the first delivery on another thread lets it go on"),
    ),
)
def stochastic_spec308_an_element_arriving_while_a_subscriber_requests_must_still_be_delivered(
    ctx: ProcessorContext,
) -> None:
    """Rounds of request(1) downstream racing on_next from upstream: every request is served.

    A processor's two sides run on two threads: the upstream's on_next queues an element and
    delivers it, a subscriber's request() adds demand and delivers too. Where one leaves its
    delivery loop a moment after the other found it busy, or where both update the count of
    elements in flight, an element is stranded in the queue or the processor stops asking
    upstream, and the stream stalls with demand outstanding. Under the interpreter lock the two
    almost never interleave, so in each round one of them (in turn) runs on a TCK thread that
    stops at its ``k``-th step (line or builtin call) in the processor's code, ``k`` swept over
    the rounds (up to the steps its call has: once two rounds in a row ran through without
    stopping, the higher ``k`` of that way are left out), while the other runs. Each element
    sent must then come out, with nothing more sent upstream to push it, and none beyond
    demand; and the processor must keep asking upstream while the subscriber wants more.

    In a fourth way the paused request() has two elements arriving beside it, with demand for
    them: a delivery loop that, as it finishes, takes more off its work count than the work it
    saw (its own entry counted twice) leaves the count below zero, so the first on_next finds
    it at 0 and starts nothing and the second starts a delivery of its own. The first element
    delivered on the upstream's thread then lets the paused request go on and stays inside
    on_next a moment: a delivery from the request's thread meanwhile is two threads in the
    subscriber at once (rule 1.3). A loop that still had its turn would have kept the
    upstream's thread from delivering; one that gave it up delivers nothing more. A fifth way
    turns it round: an element's on_next is paused so while the subscriber, with elements
    queued for it and no demand left, requests twice (queued by a processor that asks ahead,
    or beside a second subscriber that wants everything; a processor that does neither for its
    only subscriber cannot be played so). If this
    fails, check that the delivery loop re-checks for work under the lock that request() and
    on_next() take, that it takes off its work count exactly what it saw, and that the
    in-flight count is updated under the lock too.
    """
    if ctx.settings.skip_stochastic:
        raise NotVerified("stochastic verifications are switched off (skip_stochastic)", kind=Verdict.DESELECTED)
    rounds = ArrivingRounds(ctx)
    env = ctx.env
    direct = env.dispatch is type(env)._direct
    ran_through = [0] * 5  # per way: rounds in a row whose paused side never stopped
    ran = 0
    with aggressive_switching():
        for r in range(RELAY_RACE_ROUNDS if direct else 3):
            # Five ways: on_next paused beside a request(); a request() paused beside on_next,
            # with demand upstream already, and without: the element then goes out the moment
            # the paused request brings demand; a request() paused beside two on_next; and
            # on_next paused beside two request() calls, with elements queued ahead of it.
            kind, k = way_of(r)
            if ran_through[kind] >= RAN_THROUGH_ENOUGH:
                continue  # past the steps this way's call has: k only grows from here
            ran += 1
            env.count_iterations(ran, 0)  # round under way: a failure in it counts it
            through = rounds.play(kind, 1 + k % RELAY_SWEEP, r)
            ran_through[kind] = ran_through[kind] + 1 if through and direct else 0
    rounds.probe.cancel()


@tck_test(
    "4.1", "required",
    parity=Parity(
        (), "new",
        "the JVM TCK covers 4.1 only by running the publisher and subscriber tests on the "
        "processor; this one relays five elements with both sides checked at once, demand "
        "reaching upstream."),
    covers=(
        Cover("4.1", "test"),
    ),
)
def required_spec401_must_obey_the_publisher_and_subscriber_contracts_while_relaying_a_stream(
    ctx: ProcessorContext,
) -> None:
    """Five elements relayed unchanged and in order as demand flows through, then completion.

    The downstream requests 3 then 2; each time the processor must request upstream, and
    every element must come out as it went in, in order; on_complete follows, then
    silence. Both sides are checked against their own rules meanwhile. If this fails, check
    that demand from downstream reaches upstream and that nothing is reordered or altered.
    """
    upstream, _, (downstream,) = ctx.relay(1)
    for batch in (3, 2):
        downstream.request(batch)
        sent = [upstream.send_next(rule="4.1") for _ in range(batch)]
        ctx.env.check()
        for element in sent:
            _expect_relayed(downstream, element, "4.1")
    upstream.send_complete()
    ctx.env.check()
    downstream.expect_completion(rule="4.1")
    ctx.closing_quiet(downstream, after="after on_complete")


@tck_test(
    "4.2", "required",
    parity=Parity(
        proc("mustImmediatelyPassOnOnErrorEventsReceivedFromItsUpstreamToItsDownstream"), "looser",
        "the JVM test demands the error downstream; this one also accepts a recovery that "
        "treats the failed subscription as cancelled and still serves the subscriber, as rule "
        "4.2 allows."),
    covers=(
        Cover("1.4", "terminal", "a subscriber without demand"),
        Cover("4.2", "terminal"),
    ),
)
def required_spec402_must_immediately_pass_on_on_error_events_received_from_its_upstream_or_recover(
    ctx: ProcessorContext,
) -> None:
    """An upstream on_error must reach a subscriber without demand at once, or be recovered from.

    Recovering is allowed (rule 4.2) if the processor then treats the failed subscription as
    cancelled (no further request on it) and still serves its subscriber. If this fails,
    check that on_error is relayed immediately, not queued behind demand.
    """
    upstream, _, (downstream,) = ctx.relay(1)
    error = TckFailure("the upstream failed, as the TCK asked (rule 4.2 test)")
    upstream.send_error(error)
    ctx.env.check()
    _propagated_or_recovered(ctx, upstream, [downstream], error, "4.2")
