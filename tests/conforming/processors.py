"""Conforming unicast processors of two common designs.

* ``ActorProcessor``: every signal from either side (upstream signals, downstream
  subscribe/request/cancel) is a message in one mailbox, handled in arrival order by one
  executor task at a time. Demand passes straight through. A ``cancel()`` is handled in order
  behind the elements already queued, which are delivered first: under unbounded demand many
  elements can follow a cancel, and then they stop (rule 1.8).
* ``PrefetchProcessor``: an ``observe_on`` stage. It requests ``prefetch`` elements upstream as
  soon as it is subscribed, buffers them, and emits downstream on an executor only within
  downstream demand, replenishing upstream by three quarters of a batch at a time. Errors
  overtake buffered elements (no delayed errors), so rule 4.2 holds without demand.

Both serve one subscriber; a later one gets ``on_subscribe`` and then ``on_error``.
"""

from __future__ import annotations

import collections
import threading
from concurrent.futures import Executor
from typing import Any

from rstck.api import MAX_DEMAND
from rstck.api import Subscriber
from rstck.api import Subscription
from rstck.reference import SerialSubscription

from .publishers import _Noop
from .publishers import shared_executor


class _Mailbox:
    """Messages handled one at a time, in order, on an executor (never two workers at once)."""

    def __init__(self, handle: Any, executor: Executor) -> None:
        self._handle = handle
        self._executor = executor
        self._queue: collections.deque[tuple[str, Any]] = collections.deque()
        self._lock = threading.Lock()
        self._scheduled = False

    def post(self, kind: str, value: Any = None) -> None:
        with self._lock:
            self._queue.append((kind, value))
            if self._scheduled:
                return
            self._scheduled = True
        self._executor.submit(self._turn)

    def _turn(self) -> None:
        for _ in range(256):  # then re-queue, so one busy actor does not hog a worker
            with self._lock:
                if not self._queue:
                    self._scheduled = False
                    return
                kind, value = self._queue.popleft()
            self._handle(kind, value)
        self._executor.submit(self._turn)


class _ActorSubscription:
    def __init__(self, processor: ActorProcessor) -> None:
        self._processor = processor

    def request(self, n: int) -> None:
        self._processor._mailbox.post("request", n)

    def cancel(self) -> None:
        self._processor._mailbox.post("cancel")


class ActorProcessor:
    """Identity processor whose state is touched only by its mailbox's handler."""

    def __init__(self, executor: Executor | None = None) -> None:
        self._mailbox = _Mailbox(self._handle, executor or shared_executor())
        self._upstream: Subscription | None = None
        self._downstream: Subscriber[Any] | None = None
        self._had_downstream = False
        self._cancelled = False
        self._pending = 0  # downstream demand not yet forwarded (no upstream yet)
        self._ended: tuple[str, Any] | None = None

    # -- Subscriber side -------------------------------------------------------------------

    def on_subscribe(self, subscription: Subscription) -> None:
        if subscription is None:
            raise TypeError("rule 2.13: on_subscribe(None)")
        self._mailbox.post("up_subscribe", subscription)

    def on_next(self, element: Any) -> None:
        if element is None:
            raise TypeError("rule 2.13: on_next(None)")
        self._mailbox.post("next", element)

    def on_error(self, exc: BaseException) -> None:
        if exc is None:
            raise TypeError("rule 2.13: on_error(None)")
        self._mailbox.post("error", exc)

    def on_complete(self) -> None:
        self._mailbox.post("complete")

    # -- Publisher side --------------------------------------------------------------------

    def subscribe(self, subscriber: Subscriber[Any]) -> None:
        if subscriber is None:
            raise TypeError("rule 1.9: subscribe(None)")
        self._mailbox.post("subscribe", subscriber)

    # -- the actor -------------------------------------------------------------------------

    def _handle(self, kind: str, value: Any) -> None:
        getattr(self, f"_on_{kind}")(value)

    def _on_up_subscribe(self, subscription: Subscription) -> None:
        if self._upstream is not None or self._ended is not None:
            subscription.cancel()  # rule 2.5
            return
        self._upstream = subscription
        if self._cancelled:
            subscription.cancel()
        elif self._pending:
            pending, self._pending = self._pending, 0
            subscription.request(pending)  # demand that came before the upstream did

    def _on_next(self, element: Any) -> None:
        if self._downstream is not None and not self._cancelled:
            self._downstream.on_next(element)

    def _on_error(self, exc: BaseException) -> None:
        self._end("error", exc)

    def _on_complete(self, _: Any) -> None:
        self._end("complete", None)

    def _end(self, kind: str, exc: Any) -> None:
        if self._ended is not None:
            return
        self._ended = (kind, exc)
        self._upstream = None
        downstream, self._downstream = self._downstream, None
        if downstream is not None and not self._cancelled:
            downstream.on_error(exc) if kind == "error" else downstream.on_complete()

    def _on_subscribe(self, subscriber: Subscriber[Any]) -> None:
        if self._had_downstream:
            subscriber.on_subscribe(_Noop())
            subscriber.on_error(RuntimeError("this processor serves one subscriber"))
            return
        self._had_downstream = True
        self._downstream = subscriber
        subscriber.on_subscribe(_ActorSubscription(self))
        if self._ended is not None:
            kind, exc = self._ended
            self._downstream = None
            subscriber.on_error(exc) if kind == "error" else subscriber.on_complete()

    def _on_request(self, n: int) -> None:
        if self._cancelled or self._downstream is None:
            return
        if n <= 0:
            downstream = self._downstream
            self._on_cancel(None)
            downstream.on_error(ValueError(f"rule 3.9: request({n}) must be positive"))
            return
        if self._upstream is not None:
            self._upstream.request(n)
        else:
            self._pending = min(MAX_DEMAND, self._pending + n)

    def _on_cancel(self, _: Any) -> None:
        if self._cancelled:
            return
        self._cancelled = True
        self._downstream = None  # rule 3.13
        if self._upstream is not None:
            self._upstream.cancel()


# -- observe_on ----------------------------------------------------------------------------------


class _PrefetchSubscription:
    def __init__(self, processor: PrefetchProcessor) -> None:
        self._processor = processor

    def request(self, n: int) -> None:
        self._processor._request(n)

    def cancel(self) -> None:
        self._processor._cancel()


class PrefetchProcessor:
    """Requests ``prefetch`` upstream at once; emits only within downstream demand."""

    def __init__(self, prefetch: int = 16, executor: Executor | None = None) -> None:
        self._prefetch = prefetch
        self._limit = prefetch - prefetch // 4
        self._executor = executor or shared_executor()
        self._lock = threading.Lock()
        self._upstream: SerialSubscription | None = None
        self._queue: collections.deque[Any] = collections.deque()
        self._done = False
        self._error: BaseException | None = None
        self._downstream: Subscriber[Any] | None = None
        self._had_downstream = False
        self._requested = 0
        self._cancelled = False
        self._wip = 0
        self._consumed = 0

    # -- Subscriber side -------------------------------------------------------------------

    def on_subscribe(self, subscription: Subscription) -> None:
        if subscription is None:
            raise TypeError("rule 2.13: on_subscribe(None)")
        with self._lock:
            reject = self._upstream is not None or self._done
            if not reject:
                self._upstream = SerialSubscription(subscription)
            cancelled = self._cancelled
        if reject or cancelled:
            subscription.cancel()
            return
        assert self._upstream is not None
        self._upstream.request(self._prefetch)

    def on_next(self, element: Any) -> None:
        if element is None:
            raise TypeError("rule 2.13: on_next(None)")
        with self._lock:
            if self._done:
                return
            self._queue.append(element)
        self._schedule()

    def on_error(self, exc: BaseException) -> None:
        if exc is None:
            raise TypeError("rule 2.13: on_error(None)")
        with self._lock:
            if self._done:
                return
            self._error, self._done = exc, True
            upstream = self._upstream
        if upstream is not None:
            upstream.close()  # rule 2.4: the subscription counts as cancelled
        self._schedule()

    def on_complete(self) -> None:
        with self._lock:
            if self._done:
                return
            self._done = True
            upstream = self._upstream
        if upstream is not None:
            upstream.close()  # rule 2.4
        self._schedule()

    # -- Publisher side --------------------------------------------------------------------

    def subscribe(self, subscriber: Subscriber[Any]) -> None:
        if subscriber is None:
            raise TypeError("rule 1.9: subscribe(None)")
        with self._lock:
            taken, self._had_downstream = self._had_downstream, True
        if taken:
            subscriber.on_subscribe(_Noop())
            subscriber.on_error(RuntimeError("this processor serves one subscriber"))
            return
        subscriber.on_subscribe(_PrefetchSubscription(self))
        with self._lock:
            # Only now may the drain loop signal it: nothing may overlap on_subscribe (1.3).
            self._downstream = subscriber
        self._schedule()

    def _request(self, n: int) -> None:
        with self._lock:
            if self._cancelled or not self._had_downstream:
                return
            if n <= 0:
                self._error = ValueError(f"rule 3.9: request({n}) must be positive")
                self._done = True
                self._queue.clear()
                upstream = self._upstream
            else:
                self._requested = min(MAX_DEMAND, self._requested + n)
                upstream = None
        if upstream is not None:
            upstream.cancel()
        self._schedule()

    def _cancel(self) -> None:
        with self._lock:
            if self._cancelled:
                return
            self._cancelled = True
            upstream = self._upstream
        if upstream is not None:
            upstream.cancel()
        self._schedule()

    # -- the drain loop, on the executor ---------------------------------------------------

    def _schedule(self) -> None:
        with self._lock:
            self._wip += 1
            if self._wip != 1:
                return
        self._executor.submit(self._drain)

    def _drain(self) -> None:
        missed = 1
        while True:
            self._emit()
            with self._lock:
                self._wip -= missed
                missed = self._wip
                if missed == 0:
                    return

    def _emit(self) -> None:
        replenish = 0
        while True:
            with self._lock:
                downstream = self._downstream
                if downstream is None:
                    break
                if self._cancelled:
                    self._queue.clear()
                    self._downstream = None  # rule 3.13
                    break
                if self._error is not None:
                    self._queue.clear()
                    self._downstream, error = None, self._error
                    terminal: str | None = "error"
                elif self._done and not self._queue:
                    self._downstream, error, terminal = None, None, "complete"
                elif self._queue and self._requested > 0:
                    element, terminal, error = self._queue.popleft(), None, None
                    if self._requested < MAX_DEMAND:
                        self._requested -= 1
                    self._consumed += 1
                    if self._consumed == self._limit and not self._done:
                        replenish, self._consumed = self._limit, 0
                else:
                    break
            if terminal == "error":
                downstream.on_error(error)  # type: ignore[arg-type]
                return
            if terminal == "complete":
                downstream.on_complete()
                return
            downstream.on_next(element)
            if replenish and self._upstream is not None:
                self._upstream.request(replenish)
                replenish = 0


def actor_processor() -> ActorProcessor:
    return ActorProcessor()


def prefetch_processor() -> PrefetchProcessor:
    return PrefetchProcessor()
