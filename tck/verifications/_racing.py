"""What the race-hunting rule tests share: tight thread switching, how long a rival is held, and
the subscriber-side hunt that lands elements where a delivery loop gives up its turn."""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable
from collections.abc import Iterator
from typing import Any

from ..manual import Preemption

#: The thread switch interval while a test hunts a race. The interpreter's default (5 ms) lets
#: one thread run a whole signal method before another gets the lock, hiding most overlaps;
#: 10 us interleaves them. The runner restores the previous interval even if a test is abandoned.
RACE_SWITCH_INTERVAL = 1e-5


#: How long a call on the TCK's subscription from one of the subject's own threads waits for a
#: rival thread in the 2.7 tests (it ends the moment one enters). Two threads released together
#: are then caught even when the scheduler wakes the second late: with a 0.5 ms pause alone, a
#: processor that splits each request across two threads passed one run in six on an idle machine.
RIVAL_HOLD_S = 0.005


#: Elements sent by a subscriber-side 2.7 hunt: two of three on time, one late (see race_rounds).
RACE_ROUNDS = 72
#: How far into its own code after a request/cancel a subject's thread is paused for a late
#: element, swept from 1 call event to this many: a loop that ends its turn and then makes one
#: more pass does so a dozen events after its request returns.
PREEMPT_SWEEP = 24
#: How long a late element waits for the subject's thread to reach its pause.
PREEMPT_WAIT_S = 0.002
#: How long an element on time waits for a request of the subscriber's own to be in progress.
PROMPT_WAIT_S = 0.002
#: How long a late element waits, at most, for the subscriber to work off the elements before it.
CATCH_UP_S = 0.05


def race_rounds(env: Any, upstream: Any, rounds: int, sent: list[Any] | None = None,
                caught_up: Callable[[float], bool] | None = None) -> list[Any]:
    """Send up to ``rounds`` elements as demand allows, two on time, then one late; returns them.

    An element on time goes out while the subscriber's request() is still held (waiting for a
    rival thread): a second worker the subscriber starts for it is caught there, and two in a
    row catch a worker that handles one more signal after giving up its turn. For a late one
    the TCK lets the request return and pauses the subscriber's thread a swept number of call
    events into its own code (``Preemption``), delivers the element meanwhile, then lets the
    thread go on: the element lands, in turn, at each point of the code that follows a request,
    among them the moment when a delivery loop has given up its turn but still has work in hand.
    ``caught_up(timeout)`` (the whitebox probe's: one element at most left to process) holds a
    late element back until the subscriber has worked off the others, so that its loop is about
    to run dry. Stops at a cancel() or when demand runs out.
    """
    sub = upstream.subscription
    sent = [] if sent is None else sent
    direct = env.dispatch is type(env)._direct
    requested, first = sub.request_count, len(sent)
    preemption = sub.preemption = Preemption()
    try:
        for i in range(rounds):
            if upstream.wait_demand(until_cancelled=True) <= 0 or sub.cancelled:
                break
            # A call from the test's thread (a synchronous subscriber) has no thread to pause, and
            # a subject served on its event loop would have the TCK's signal wait on the pause.
            threaded = sub.last_caller != env.body_ident
            late = i % 3 == 2 and threaded and direct
            if not late and threaded and 2 * (sub.request_count - requested) >= len(sent) - first:
                # On time means while a request of the subscriber's own is held: with demand to
                # spare (a whitebox puppet's), a subscriber that answers most elements with a
                # request is given a moment to begin one (one that asks in batches is not).
                sub.wait_inside(PROMPT_WAIT_S)
            if late:
                if caught_up is not None:
                    deadline = time.monotonic() + CATCH_UP_S
                    while not caught_up(PREEMPT_WAIT_S) and time.monotonic() < deadline:
                        sub.release()  # holds end early while the subscriber catches up
                # Swept over every late element of the test (a test may call this per round).
                preemption.arm(1 + (len(sent) // 3) % PREEMPT_SWEEP)
                sub.release()
                preemption.wait_paused(PREEMPT_WAIT_S)
            try:
                sent.append(upstream.send_next())
            finally:
                if late:
                    preemption.resume()
            env.count_iterations(len(sent), sub.overlaps)
            env.check()
    finally:
        sub.preemption = None
        preemption.resume()
    return sent


@contextlib.contextmanager
def aggressive_switching(interval: float = RACE_SWITCH_INTERVAL) -> Iterator[None]:
    """Switch threads as often as ``interval`` for the duration (never less often than now)."""
    previous = sys.getswitchinterval()
    sys.setswitchinterval(min(previous, interval))
    try:
        yield
    finally:
        sys.setswitchinterval(previous)
