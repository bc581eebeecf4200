"""The processor's race hunts in rounds: the two sides of a round and the checks after it.

``stochastic_spec308_an_element_arriving_while_a_subscriber_requests_must_still_be_delivered``
plays its rounds through ``ArrivingRounds``; ``race_sides`` is the processor tests' way into
``race`` (a subject on an event loop gets the two sides one after the other).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from ...api import MAX_DEMAND
from ...contexts import ProcessorContext
from ...errors import RuleViolation
from ...manual import ManualPublisher
from ...probe import STALL_CONFIRMATION
from ...probe import ProbeSubscriber
from ._racing import PREEMPT_WAIT_S
from ._racing import PausedSide
from ._racing import race


def race_sides(ctx: ProcessorContext, first: Callable[[], None], second: Callable[[], None], k: int, *,
          rule: str, what: str, c_calls: bool = False, watch_rival: bool = False,
          reached: Callable[[PausedSide], object] | None = None, **pause: Any) -> bool:
    """``race`` the two sides; a subject served on an event loop gets them one after the other
    (a pause on a TCK thread would have the loop wait on it). Whether the first side ran through
    (one after the other too): its call returned before its ``k``-th step."""
    env = ctx.env
    if env.dispatch is not type(env)._direct:
        first()
        second()
        return True
    return race(first, second, k, rule=rule, what=what, timeout=2 * ctx.settings.timeout + 1.0,
                c_calls=c_calls, watch_rival=watch_rival, reached=reached, **pause).ran_through


RELAY_SWEEP = 96


#: Rounds of the hunt for an element that arrives while a subscriber requests: each side paused
#: in turn, at every step up to RELAY_SWEEP into the processor's code (or as many as its call has).
RELAY_RACE_ROUNDS = 5 * 96


#: How long an on_next on another thread stays inside the subscriber once it let a paused
#: request() go on: long enough for that request's thread to deliver, if it wrongly does.
OVERLAP_LINGER_S = 0.002


#: The longest a request() stays paused in the fourth way, waiting for an element beside it.
LET_GO_WAIT_S = 0.02


#: How far ahead of what was sent the fourth way's subscriber asks, at most, for the processor
#: to ask its upstream for two (a processor may wait for a batch before it asks again).
ASK_AHEAD = 32


#: Rounds in a row of one way whose paused side returned before its step ``k`` (it has fewer),
#: after which that way's rounds of higher ``k`` are left out: each would only run the two
#: sides one after the other again.
RAN_THROUGH_ENOUGH = 2


#: How long an element waits for the paused request() to bring demand before letting it go on.
ASKED_WAIT_S = 0.0003


#: Elements sent after each round, at most, of what the processor asks of its upstream.
RELAY_TOP_UP = 2


def way_of(r: int) -> tuple[int, int]:
    """Round ``r`` of the 3.8 arriving hunt: its way, and how far into it (``k`` from 0). The
    first two ways alternate; the others follow, a sweep each."""
    if r < 2 * RELAY_SWEEP:
        return r % 2, r // 2
    kind, k = divmod(r - 2 * RELAY_SWEEP, RELAY_SWEEP)
    return 2 + kind, k


def _paused_in(r: int) -> str:
    """The call round ``r`` of the 3.8 arriving hunt paused: on_next in the first and fifth ways."""
    return "on_next" if way_of(r)[0] in (0, 4) else "request()"


def _delivered_without_more(ctx: ProcessorContext, probe: ProbeSubscriber, sent: int, r: int) -> None:
    """Every element sent that the subscriber has demand for comes out, with nothing more sent."""
    timeout = ctx.settings.timeout
    owed = min(probe.requested, sent)

    def served() -> bool:
        return probe.received >= owed or probe.terminal is not None

    if probe._wait(served, timeout) or probe._wait(served, timeout * STALL_CONFIRMATION):
        ctx.env.check()
        return
    ctx.env.check()
    raise RuleViolation(
        "3.8",
        f"each element sent upstream delivered while the subscriber has demand ({owed} of the "
        f"{sent} sent, for {probe.requested} requested one at a time)",
        f"it got {probe.received}, then nothing for {timeout * (1 + STALL_CONFIRMATION) * 1000:.0f} ms: "
        f"an element sits in the processor (round {r + 1}, where {_paused_in(r)} was paused inside "
        "the processor)",
        hint="re-check for work under the lock before leaving the delivery loop: a request or an "
        "element that came while the loop was finishing must not wait for the next signal",
        setting="timeout", evidence=probe.evidence())


class ArrivingRounds:
    """The sides of the 3.8 arriving hunt's rounds, on one relayed subscriber."""

    def __init__(self, ctx: ProcessorContext) -> None:
        self.ctx = ctx
        self.upstream, _, (self.probe,) = ctx.relay(1)
        self.probe.keep_elements = False
        self.sub = self.upstream.subscription
        self.paused_side: list[PausedSide] = []  # this round's, once it started
        self.requesting: list[int] = []  # the thread of this round's paused call, last two ways
        self.backlog: tuple[ManualPublisher, ProbeSubscriber] | None = None  # the fifth way's

    def play(self, kind: int, k: int, r: int) -> bool:
        """Round ``r``, of way ``kind``, its first side paused at step ``k``; whether it ran
        through (or the way cannot be played on this processor)."""
        if kind == 4:
            return self.play_backlog(k, r)
        upstream, probe, sub = self.upstream, self.probe, self.sub
        self.requesting.clear()
        probe.on_next_hook = self.let_paused_go if kind == 3 else None
        if kind == 3:
            # Two elements the upstream may send, for a subscriber that wants them: asked for
            # until the processor asks for two, as far as it asks ahead (one that asks one at a
            # time gets one of the two).
            while (upstream.wait_demand(timeout=0.0) < 2 and probe.requested < sub.sent + ASK_AHEAD
                   and probe.terminal is None and not sub.cancelled):
                probe.request(1)
        if kind < 2:
            # The element the race sends is owed (delivering it counts demand down), and the
            # subscriber wants more than the processor ever got: only the upstream has it.
            while probe.requested <= sub.sent and probe.terminal is None:
                probe.request(1)  # (a processor that asked ahead serves these from what it holds)
            if sub.demand <= 0:
                upstream.expect_demand(rule="3.8", what=f"a request upstream once the subscriber "
                                       f"requested {probe.requested} and {sub.sent} were sent")
        sides = ((self.send, self.request), (self.request, self.send), (self.request, self.send_when_asked),
                 (self.request_aside, self.send_two))[kind]
        # The fourth way's pause lasts until an element arrives beside it (or a lock the paused
        # thread holds stops the other side): two sends take longer than a moment.
        pause: dict[str, Any] = {"pause_s": LET_GO_WAIT_S, "locks_only": True} if kind == 3 else {}
        through = race_sides(self.ctx, sides[0], sides[1], k, rule="3.8", what="on_next() and request() to "
                        "return promptly", c_calls=True, watch_rival=True, reached=self.reached, **pause)
        topped_up(self.ctx, upstream, probe, r)
        return through

    def play_backlog(self, k: int, r: int) -> bool:
        """The fifth way: an element arrives, paused at step ``k``, while the subscriber, with
        elements queued for it and no demand, requests twice; the first element delivered on
        the requests' thread lets the paused on_next go on (``let_paused_go``).

        Elements are queued beyond a subscriber's demand by a processor that asks ahead, or
        beside a second subscriber that wants everything; a processor that does neither for
        its only subscriber cannot be played this way (the way ends)."""
        if self.backlog is None:
            two = self.ctx.settings.max_subscribers >= 2
            upstream, _, probes = self.ctx.relay(2 if two else 1)
            for p in probes:
                p.keep_elements = False
            if two:
                probes[0].request(MAX_DEMAND)  # the processor then asks for what the other has room for
            self.backlog = upstream, probes[-1]
        upstream, narrow = self.backlog
        sub = upstream.subscription
        _delivered_without_more(self.ctx, narrow, sub.sent, r)
        if narrow.terminal is not None or sub.cancelled:
            return True
        while sub.sent - narrow.received < 1 and upstream.wait_demand(timeout=0.0) > 0:
            upstream.send_next(rule="3.8")  # one queued ahead of the element the round sends
        if sub.sent - narrow.received < 1 or upstream.wait_demand(timeout=0.0) <= 0:
            return True  # nothing queued beyond demand, or nothing more asked for

        def send() -> None:
            self.requesting[:] = [threading.get_ident()]
            upstream.send_next(rule="3.8")

        def request_two() -> None:
            # The first finds the delivery's count of work as the pause left it; a count taken
            # too far down as it finished lets the second start a delivery of its own.
            narrow.request(1)
            narrow.request(1)

        self.requesting.clear()
        self.probe.on_next_hook = None
        narrow.on_next_hook = self.let_paused_go
        return race_sides(self.ctx, send, request_two, k, rule="3.8", what="on_next() and request() to return "
                     "promptly", c_calls=True, watch_rival=True, reached=self.reached,
                     pause_s=LET_GO_WAIT_S, locks_only=True)

    def reached(self, side: PausedSide) -> None:
        self.paused_side[:] = [side]
        side.paused.wait(PREEMPT_WAIT_S * 5)

    def send(self) -> None:
        self.upstream.send_next(rule="3.8")

    def send_when_asked(self) -> None:
        # Races a paused request(): the element goes out the moment the processor asks for it.
        # No demand a moment into the pause: the request upstream is still to come, so the
        # paused thread goes on to make it (or it holds elements and asks for none).
        if self.upstream.wait_demand(timeout=ASKED_WAIT_S) <= 0 and self.paused_side:
            self.paused_side[0].let_go(self.ctx.settings.timeout)
        if self.upstream.wait_demand(timeout=0.0) > 0:
            self.send()

    def request(self) -> None:
        self.probe.request(1)

    def request_aside(self) -> None:
        self.requesting[:] = [threading.get_ident()]
        self.probe.request(1)

    def send_two(self) -> None:
        # Two elements in a row while request() is paused: where the delivery loop's count of
        # work went wrong as it finished, the first on_next leaves it as if no loop ran and the
        # second starts a delivery of its own; ``let_paused_go`` then lets the paused one on.
        for _ in range(2):
            if self.upstream.wait_demand(timeout=0.0) > 0:
                self.send()

    def let_paused_go(self, p: ProbeSubscriber, e: Any) -> None:
        # on_next on another thread than the paused call: whatever that call's thread delivers
        # once let go overlaps this one (rule 1.3). Its own delivery loop, if it still had its
        # turn, would have kept this thread out: a conforming one delivers nothing now.
        if not self.requesting or threading.get_ident() in self.requesting or not self.paused_side:
            return
        side = self.paused_side[0]
        if side.call.wait(0):
            return
        side.resume.set()
        side.call.wait(OVERLAP_LINGER_S)


def topped_up(ctx: ProcessorContext, upstream: ManualPublisher, probe: ProbeSubscriber, r: int) -> None:
    """After round ``r`` of the 3.8 arriving hunt: what was sent is delivered, then what the
    processor asks for, a little of it, is sent and delivered too.

    A demand count that a race left too high lets an element through beyond the subscriber's
    demand (the probe flags it, rule 1.1), and elements left queued make the next round's
    request deliver them.
    """
    sub = upstream.subscription
    _delivered_without_more(ctx, probe, sub.sent, r)
    for _ in range(RELAY_TOP_UP):
        if sub.demand <= 0 or sub.cancelled:
            break
        upstream.send_next(rule="3.8")
    _delivered_without_more(ctx, probe, sub.sent, r)
    if probe.requested > sub.sent and sub.demand <= 0 and not sub.cancelled and probe.terminal is None:
        # A count of elements in flight that a race left too high shows here: the processor
        # waits for one it never asked for.
        upstream.expect_demand(rule="3.8", what=f"a request upstream once the subscriber "
                               f"requested {probe.requested} and {sub.sent} were sent")
