"""A reference publisher that lives on an asyncio event loop.

Like many asyncio libraries (rsocket-py among them) it must be created and called on its
loop's thread: its methods raise ``RuntimeError`` anywhere else. Signals are delivered by loop
callbacks, one batch per turn, so they are serial by construction (rule 1.3) and never
recursive (rule 3.3). Verify it with ``--rs-loop=asyncio`` (implied by the ``async def``
factory).
"""

from __future__ import annotations

import asyncio

from ..api import MAX_DEMAND
from ..api import Subscriber

#: Elements one loop turn may deliver before it lets other callbacks run.
_BATCH = 64


class _LoopSubscription:
    """Demand and position of one subscriber; touched only on the loop thread."""

    def __init__(self, publisher: LoopRangePublisher, subscriber: Subscriber[int]) -> None:
        self._publisher = publisher
        self._subscriber: Subscriber[int] | None = subscriber
        self._next = publisher.start
        self._end = None if publisher.count >= MAX_DEMAND else publisher.start + publisher.count
        self._demand = 0
        self._error: ValueError | None = None
        self._scheduled = False

    def request(self, n: int) -> None:
        self._publisher.check_loop("request")
        if self._subscriber is None:
            return  # cancelled or terminated: a no-op (rules 1.6, 3.6)
        if n <= 0:
            self._error = self._error or ValueError(
                f"rule 3.9: non-positive request({n}) is illegal; request(n) needs n > 0"
            )
        else:
            self._demand = min(MAX_DEMAND, self._demand + n)  # saturate: unbounded (rule 3.17)
        self._schedule()

    def cancel(self) -> None:
        self._publisher.check_loop("cancel")
        self._subscriber = None  # stops signals and drops the reference (rules 3.12, 3.13)

    def _schedule(self) -> None:
        if not self._scheduled:
            self._scheduled = True
            self._publisher.loop.call_soon(self._drain)

    def _drain(self) -> None:
        self._scheduled = False
        for _ in range(_BATCH):
            subscriber = self._subscriber
            if subscriber is None:
                return
            if self._error is not None:
                self._subscriber = None
                subscriber.on_error(self._error)
                return
            if self._next == self._end:
                self._subscriber = None
                subscriber.on_complete()
                return
            if self._demand == 0:
                return
            element = self._next
            self._next += 1
            if self._demand != MAX_DEMAND:
                self._demand -= 1
            try:
                subscriber.on_next(element)
            except Exception:
                self._subscriber = None  # rule 2.13: a raising subscriber is cancelled
                raise  # to the loop's exception handler, where it is visible
        self._schedule()  # more to do: yield the loop first


class LoopRangePublisher:
    """``count`` ints from ``start``, delivered on the loop it was created on."""

    def __init__(self, start: int, count: int) -> None:
        self.loop = asyncio.get_running_loop()  # raises off a loop, as loop-bound libraries do
        self.start = start
        self.count = min(count, MAX_DEMAND)

    def check_loop(self, method: str) -> None:
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is not self.loop:
            raise RuntimeError(f"{type(self).__name__}.{method}() called off its event loop's thread")

    def subscribe(self, subscriber: Subscriber[int]) -> None:
        self.check_loop("subscribe")
        if subscriber is None:
            raise TypeError("rule 1.9: subscribe(None) is illegal; a subscriber is required")
        subscription = _LoopSubscription(self, subscriber)
        try:
            subscriber.on_subscribe(subscription)
        except Exception:
            subscription._subscriber = None  # rule 2.13: what it requested first is not served
            raise  # to the caller, where it is visible
        if self.count == 0:
            subscription._schedule()  # an empty range completes without demand

    def __repr__(self) -> str:
        count = "MAX_DEMAND" if self.count >= MAX_DEMAND else str(self.count)
        return f"LoopRangePublisher(start={self.start}, count={count})"


async def asyncio_range_publisher(n: int) -> LoopRangePublisher:
    """Factory for ``--rs-publisher``: being ``async def``, it implies ``--rs-loop=asyncio``."""
    return LoopRangePublisher(0, n)


def loop_range_publisher(n: int) -> LoopRangePublisher:
    """Plain factory that must itself be called on the loop: needs ``--rs-loop=asyncio``."""
    return LoopRangePublisher(0, n)
