"""What the race-hunting rule tests share: tight thread switching and how long a rival is held."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator

#: The thread switch interval while a test hunts a race. The interpreter's default (5 ms) lets
#: one thread run a whole signal method before another gets the lock, hiding most overlaps;
#: 10 us interleaves them. The runner restores the previous interval even if a test is abandoned.
RACE_SWITCH_INTERVAL = 1e-5


#: How long a call on the TCK's subscription from one of the subject's own threads waits for a
#: rival thread in the 2.7 tests (it ends the moment one enters). Two threads released together
#: are then caught even when the scheduler wakes the second late: with a 0.5 ms pause alone, a
#: processor that splits each request across two threads passed one run in six on an idle machine.
RIVAL_HOLD_S = 0.005


@contextlib.contextmanager
def aggressive_switching(interval: float = RACE_SWITCH_INTERVAL) -> Iterator[None]:
    """Switch threads as often as ``interval`` for the duration (never less often than now)."""
    previous = sys.getswitchinterval()
    sys.setswitchinterval(min(previous, interval))
    try:
        yield
    finally:
        sys.setswitchinterval(previous)
