"""A reference identity processor: relays every element unchanged to all of its subscribers.

It is the known-good subject of the processor verification and a worked example of rule 4.1:
towards its upstream it is a subscriber (calls serialised by ``SerialSubscription``, a second
subscription cancelled, nothing requested after the end), towards its subscribers a publisher
(per-subscriber demand, trampolined serial delivery, references dropped on cancel).

Backpressure: each subscriber has a queue of at most ``buffer_size`` elements. The processor
requests from upstream only what some subscriber wants beyond its queue, and never more than
the fullest queue has room for, so no queue can overflow. While elements are in flight it asks
again only for a batch of at least ``batch`` (half the buffer by default), as a prefetching
operator replenishes: one request upstream for a run of elements, not one for each. A
subscriber that joins late gets the
elements that arrive after it subscribed. Upstream on_error reaches every subscriber at once,
ahead of queued elements (rule 4.2); on_complete follows the queued elements. When its last
subscriber cancels, the processor cancels upstream and shuts down (3.14): later subscribers are
told so with on_error.
"""

from __future__ import annotations

import collections
import logging
import threading
from typing import Any

from ..api import MAX_DEMAND
from ..api import Subscriber
from ..api import Subscription
from .subscribers import SerialSubscription

logger = logging.getLogger(__name__)

_RAISED = "%r violated rule 2.13 by raising from %s; its subscription is cancelled"


class ProcessorShutDown(RuntimeError):
    """Signalled to a subscriber that arrives after the processor shut down (rule 3.14)."""


class _Downstream:
    """One subscriber's subscription: its queue, its demand and its serial delivery."""

    def __init__(self, processor: IdentityProcessor, subscriber: Subscriber[Any]) -> None:
        self._processor = processor
        self._lock = processor._lock
        self.subscriber: Subscriber[Any] | None = subscriber  # None: cancelled or terminated
        self.queue: collections.deque[Any] = collections.deque()
        self.demand = 0
        self.error: BaseException | None = None  # pending on_error: jumps the queue
        self.complete = False  # pending on_complete: after the queue
        self._wip = 1  # owned by start() until on_subscribe has returned

    def wanted(self) -> int:
        """Elements this subscriber asked for beyond what is queued for it."""
        return max(0, self.demand - len(self.queue))

    # -- the Subscription interface ----------------------------------------------------------

    def request(self, n: int) -> None:
        with self._lock:
            if self.subscriber is None:
                return  # rule 3.6
            if n <= 0:
                if self.error is None:
                    self.error = ValueError(f"rule 3.9: request({n}) is illegal; n must be > 0")
            else:
                self.demand = min(MAX_DEMAND, self.demand + n)  # rule 3.17
            self._wip += 1
            if self._wip != 1:
                return  # the delivery under way serves it, and asks upstream as it ends
        self._run(1)

    def cancel(self) -> None:
        with self._lock:
            if self.subscriber is None:
                return  # rules 3.5 and 3.7
            self.subscriber = None  # rule 3.13: drop the reference
            self.queue.clear()
        self._processor._left(self)

    # -- delivery ----------------------------------------------------------------------------

    def start(self, ended: tuple[str, BaseException | None] | None) -> None:
        subscriber = self.subscriber
        assert subscriber is not None
        try:
            subscriber.on_subscribe(self)
        except Exception:
            logger.warning(_RAISED, subscriber, "on_subscribe", exc_info=True)
            self.cancel()
        if ended is not None:
            self.end(*ended)
        self._run(1)

    def end(self, signal: str, error: BaseException | None) -> None:
        """Queue the terminal signal; an error goes ahead of queued elements."""
        with self._lock:
            if signal == "on_error":
                self.error = error
                self.queue.clear()
            else:
                self.complete = True

    def drain(self) -> None:
        with self._lock:
            self._wip += 1
            if self._wip != 1:
                return
        self._run(1)

    def _run(self, missed: int) -> None:
        """Deliver until nothing is deliverable, then again for work that came meanwhile.

        An element takes one critical section: taken from the queue there, it is delivered
        outside it. Delivering frees room in the queue: once done, demand that the full buffer
        held back is asked of the upstream (else a request made while the queue was full is
        lost, rule 3.8). Whoever delivers asks, whichever thread it is: ``on_next`` only queues
        and asks nothing, and ``request()`` leaves its demand to the delivery under way.
        """
        lock = self._lock
        queue = self.queue
        processor = self._processor
        while True:
            with lock:
                subscriber = self.subscriber
                if subscriber is not None and self.error is None and queue and self.demand > 0:
                    element = queue.popleft()
                    if self.demand < MAX_DEMAND:
                        self.demand -= 1
                    ending = False
                elif subscriber is not None and self._ending_locked():
                    error = self.error
                    self.subscriber = None  # rules 1.6, 1.7: terminated, nothing more
                    ending = True
                else:
                    self._wip -= missed  # the work this turn saw; what came meanwhile is left
                    missed = self._wip
                    if missed:
                        continue
                    # No room for a batch beside what is in flight: the common case asks nothing.
                    ask = processor._in_flight + processor._batch <= processor._buffer_size
                    break
            if ending:
                self._end(subscriber, error)
                continue
            try:
                subscriber.on_next(element)
            except Exception:
                logger.warning(_RAISED, subscriber, "on_next", exc_info=True)
                self.cancel()
        if ask:
            self._freed_room()

    def _ending_locked(self) -> bool:
        """Whether the terminal signal is due: an error at once, ahead of queued elements;
        on_complete once they are delivered."""
        return self.error is not None or (self.complete and not self.queue)

    def _freed_room(self) -> None:
        self._processor._request_upstream()

    def _end(self, subscriber: Subscriber[Any], error: BaseException | None) -> None:
        """Signal the end to ``subscriber``, already forgotten: nothing more reaches it."""
        try:
            if error is not None:
                subscriber.on_error(error)
            else:
                subscriber.on_complete()
        except Exception:
            logger.warning(_RAISED, subscriber, "on_error" if error is not None else "on_complete",
                           exc_info=True)
        finally:
            self._processor._left(self, terminated=True)

    def __repr__(self) -> str:
        state = "active" if self.subscriber is not None else "done"
        return f"<_Downstream queued={len(self.queue)} demand={self.demand} {state}>"


class IdentityProcessor:
    """Multicasts its upstream's elements, unchanged, to every subscriber (rules 4.1, 4.2)."""

    #: The subscription class handed to subscribers (a seam for the TCK's own broken variants).
    _downstream_type = _Downstream

    def __init__(self, buffer_size: int = 16, batch: int | None = None) -> None:
        if buffer_size < 1:
            raise ValueError(f"buffer_size must be >= 1, got {buffer_size}")
        batch = max(1, buffer_size // 2) if batch is None else batch
        if not 1 <= batch <= buffer_size:
            raise ValueError(f"batch must be from 1 to buffer_size ({buffer_size}), got {batch}")
        self._buffer_size = buffer_size
        self._batch = batch
        self._lock = threading.Lock()
        self._upstream: SerialSubscription | None = None
        self._in_flight = 0  # requested upstream, not arrived yet
        self._ended: tuple[str, BaseException | None] | None = None  # upstream's terminal signal
        self._downstreams: list[_Downstream] = []

    # -- the Subscriber side (upstream) ------------------------------------------------------

    def on_subscribe(self, subscription: Subscription) -> None:
        if subscription is None:
            raise TypeError("rule 2.13: on_subscribe(None)")
        with self._lock:
            accept = self._upstream is None and self._ended is None
            if accept:
                self._upstream = SerialSubscription(subscription)
        if not accept:
            subscription.cancel()  # rules 2.5 and 2.12
            return
        self._request_upstream()

    def on_next(self, element: Any) -> None:
        if element is None:
            raise TypeError("rule 2.13: on_next(None)")
        with self._lock:
            if self._ended is not None:
                return  # in flight after cancel (rule 2.8) or after shut-down: dropped
            if self._in_flight > 0:
                self._in_flight -= 1
            # Queued and each drain entered in one critical section (the lock is shared); the
            # drains this call owns run outside it. Queueing frees no room, so nothing more is
            # asked upstream here: a drain that delivers asks for the room it freed.
            owned = []
            for downstream in self._downstreams:
                if downstream.subscriber is not None:
                    downstream.queue.append(element)
                    downstream._wip += 1
                    if downstream._wip == 1:
                        owned.append(downstream)
        for downstream in owned:
            downstream._run(1)

    def on_error(self, exc: BaseException) -> None:
        if exc is None:
            raise TypeError("rule 2.13: on_error(None)")
        self._upstream_ended("on_error", exc)

    def on_complete(self) -> None:
        self._upstream_ended("on_complete", None)

    def _upstream_ended(self, signal: str, error: BaseException | None) -> None:
        with self._lock:
            if self._ended is not None:
                return
            self._ended = (signal, error)
            upstream = self._upstream
            targets = list(self._downstreams)
        if upstream is not None:
            upstream.close()  # rules 2.3, 2.4: nothing more is called on it
        for downstream in targets:
            downstream.end(signal, error)
            downstream.drain()

    # -- the Publisher side (downstream) -----------------------------------------------------

    def subscribe(self, subscriber: Subscriber[Any]) -> None:
        if subscriber is None:
            raise TypeError("rule 1.9: subscribe(None) is illegal; a subscriber is required")
        downstream = self._downstream_type(self, subscriber)
        with self._lock:
            ended = self._ended
            if ended is None:
                self._downstreams.append(downstream)
        downstream.start(ended)

    # -- demand upstream ---------------------------------------------------------------------

    def _request_upstream(self) -> None:
        with self._lock:
            upstream, in_flight, size = self._upstream, self._in_flight, self._buffer_size
            # No room for a batch beside what is in flight: the common case, when called as
            # each element is delivered, ends here.
            if upstream is None or self._ended is not None or in_flight + self._batch > size:
                return
            # One pass over the live subscribers: what the hungriest wants beyond its queue,
            # and the room the fullest queue has.
            wanted, room, live = 0, size, False
            for d in self._downstreams:
                if d.subscriber is not None:
                    live = True
                    wanted = max(wanted, d.wanted())
                    room = min(room, size - len(d.queue))
            n = min(wanted, room) - in_flight
            # With elements in flight, a short request waits: their delivery asks again.
            if not live or n <= 0 or (in_flight and n < self._batch):
                return
            self._in_flight = in_flight + n
        upstream.request(n)

    def _left(self, downstream: _Downstream, *, terminated: bool = False) -> None:
        """A subscriber cancelled or ended; shut down when the last one cancelled (rule 3.14)."""
        with self._lock:
            if downstream in self._downstreams:
                self._downstreams.remove(downstream)
            shut_down = not terminated and not self._downstreams and self._ended is None
            if shut_down:
                self._ended = ("on_error", ProcessorShutDown(
                    "the processor shut down when its last subscriber cancelled (rule 3.14)"))
            upstream = self._upstream
        if shut_down and upstream is not None:
            upstream.cancel()
        else:
            self._request_upstream()  # the queue that was the tightest may be gone

    def __repr__(self) -> str:
        ended = self._ended[0] if self._ended else "open"
        return f"IdentityProcessor(subscribers={len(self._downstreams)}, {ended})"


def identity_processor() -> IdentityProcessor:
    """TCK processor factory (``--rs-processor``): a multicast identity processor."""
    return IdentityProcessor()
