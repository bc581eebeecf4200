"""Conforming publishers of the ``rs`` edition: ``subscribe`` returns the subscription.

A synchronous range (signals on the caller's thread, trampolined so recursion stays bounded)
and an asynchronous one (signals on a shared pool, in batches), plus a failed publisher. The
subscription is a handle: it cancels when called, when finalised (the last reference dropped)
and when its ``with`` block ends. The shared state it points at never points back at it or at
the publisher, so dropping the handle finalises it and dropping the publisher changes nothing.
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from typing import Self

from rstck.api import MAX_DEMAND

logger = logging.getLogger(__name__)

#: Signals one asynchronous turn delivers before it yields its worker.
_BATCH = 64
_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def _pool() -> ThreadPoolExecutor:
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(max_workers=2, thread_name_prefix="rs-edition-range")
        return _POOL


class _State:
    """One subscription's stream: ``subscriber is None`` means cancelled or terminated."""

    def __init__(self, subscriber: Any, end: int, *, pooled: bool) -> None:
        self.lock = threading.Lock()
        self.subscriber: Any = subscriber
        self.index = 0
        self.end = end
        self.demand = 0
        self.pooled = pooled
        self.emitting = False
        self.missed = False

    def request(self, n: int) -> None:
        with self.lock:
            if self.subscriber is None:
                return
            self.demand = min(self.demand + n, MAX_DEMAND)
        self.drain()

    def cancel(self) -> None:
        with self.lock:
            self.subscriber = None

    def drain(self) -> None:
        with self.lock:
            if self.emitting:
                self.missed = True
                return
            self.emitting = True
        if self.pooled:
            _pool().submit(self._run)
        else:
            self._run()

    def _run(self) -> None:
        delivered = 0
        while True:
            while self._emit_one():
                delivered += 1
                if self.pooled and delivered >= _BATCH:
                    with self.lock:
                        self.missed = False
                    _pool().submit(self._run)  # still emitting: yield the worker, go on later
                    return
            with self.lock:
                if not self.missed:
                    self.emitting = False
                    return
                self.missed = False

    def _emit_one(self) -> bool:
        with self.lock:
            subscriber = self.subscriber
            if subscriber is None:
                return False
            if self.index >= self.end:
                self.subscriber = None
                signal, args = "on_complete", ()
            elif self.demand == 0:
                return False
            else:
                if self.demand < MAX_DEMAND:
                    self.demand -= 1
                signal, args = "on_next", (self.index,)
                self.index += 1
        try:
            getattr(subscriber, signal)(*args)
        except Exception:  # rs 2.11: the subscriber broke the contract; its subscription ends
            self.cancel()
            logger.exception("%r raised from %s; its subscription is cancelled", subscriber, signal)
            return False
        return signal == "on_next"


class RsSubscription:
    """The handle ``subscribe`` returns: request, cancel, finaliser and ``with`` all reach the state."""

    def __init__(self, state: _State) -> None:
        self._state = state

    def request(self, n: int) -> None:
        self._state.request(n)

    def cancel(self) -> None:
        self._state.cancel()

    def __del__(self) -> None:
        self._state.cancel()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self._state.cancel()


class RsRange:
    """``0, 1, ..., n-1``; synchronous, or on a pool when ``pooled``."""

    def __init__(self, n: int, *, pooled: bool = False) -> None:
        self.n = n
        self.pooled = pooled

    def subscribe(self, subscriber: Any) -> RsSubscription:
        state = _State(subscriber, self.n, pooled=self.pooled)
        if self.n == 0:
            state.drain()  # an empty stream completes at once, without demand
        return RsSubscription(state)


class RsFailed:
    """Rejects every subscriber with on_error; the subscription it returns does nothing."""

    def subscribe(self, subscriber: Any) -> RsSubscription:
        subscriber.on_error(RuntimeError("rs-edition failed publisher"))
        return RsSubscription(_State(None, 0, pooled=False))


def sync_range(n: int) -> RsRange:
    return RsRange(n)


def async_range(n: int) -> RsRange:
    return RsRange(n, pooled=True)


def failed() -> RsFailed:
    return RsFailed()
