"""What the publisher tests share: their verification's name, and the checks of long streams and many calls.

A publisher's batches, turns, buffers and prefetch windows are powers of two (16 to 1024)
almost everywhere, and their bugs sit at the edges: one element owed after a full turn, a
buffer refilled only while it is not full, a window never topped up. So the streams below
cross those sizes with amounts just under, at and just over each, and every verdict rests on
a stall (demand outstanding, nothing for ``timeout``), never on the total time.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from ....api import MAX_DEMAND
from ....contexts import PublisherContext
from ....errors import RuleViolation
from ....probe import STALL_CONFIRMATION
from ....probe import ProbeSubscriber
from ...evidence import cite
from ...evidence import last_seq

VERIFICATION = "publisher"



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


def _nth(found: list[int], at: int) -> int | None:
    return found[at] if at < len(found) else (found[-1] if found else None)


#: Streams asked for in one request of exactly their length, where a terminal signal is owed
#: with no demand left: their divisors are the usual batch sizes (16 to 1024, 100, 125, 250).
_BOUNDARY_LENGTHS = (64, 1000, 1024)


def _outstanding(probe: ProbeSubscriber) -> str:
    return "unbounded demand" if probe.demand >= MAX_DEMAND else f"{probe.demand} requested element(s)"


def _stalled(probe: ProbeSubscriber, total: int, rule: str, what: str, ctx: PublisherContext, *,
             steady: bool = False) -> bool:
    """Wait for ``total`` elements on ``probe``; a stall with demand outstanding breaks ``rule``.

    True once they all arrived; False if the time ran out first (see below): the probe is then
    cancelled, and the caller claims nothing more about it.

    A stream that keeps flowing, however slowly, is no stall, nor is a subject still busy
    with the TCK's calls (a processor relaying thousands of requests upstream before the first
    element comes back: the environment's progress counter moves): if half the test's limit
    runs out first, what arrived so far is all that is checked (a trace note says so); a
    verdict on the rest would be the machine's, not the rule's.

    ``steady``: the stream is delivered on another thread and the probe yields at each element;
    this thread is first woken only at the end or at a silence of a quarter of ``timeout``
    (``ProbeSubscriber.wait_steady``), not at each element; a silence is then looked at as
    below (a stall is found that much later).
    """
    def done() -> bool:
        return probe.received >= total or probe.terminal is not None

    deadline = time.monotonic() + ctx.settings.test_limit / 2
    if steady:
        probe.wait_steady(done, ctx.settings.timeout / 4, limit=ctx.settings.test_limit / 2)
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


#: ``_request_ones`` marks progress once per this many calls (each call is the subject's only
#: work then: one mark per call would cost the TCK as much as the call).
_BUMP_EVERY = 64


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
        request = subscription.request
        for left in range(calls, 0, -_BUMP_EVERY):
            for _ in range(min(left, _BUMP_EVERY)):
                request(1)
            # env.bump(), once per few calls: a subject slow with a pile of calls (a loaded
            # machine, a processor relaying each) is busy, not stalled (``_stalled`` reads it).
            env._progress += 1

    probe._call("request", ones)
