"""Conforming unicast processors of common designs.

* ``ActorProcessor``: every signal from either side (upstream signals, downstream
  subscribe/request/cancel) is a message in one mailbox, handled in arrival order by one
  executor task at a time. Demand passes straight through. A ``cancel()`` is handled in order
  behind the elements already queued, which are delivered first: under unbounded demand many
  elements can follow a cancel, and then they stop (rule 1.8).
* ``PrefetchProcessor``: an ``observe_on`` stage. It requests ``prefetch`` elements upstream as
  soon as it is subscribed, buffers them, and emits downstream on an executor only within
  downstream demand, replenishing upstream by three quarters of a batch at a time. Errors
  overtake buffered elements (no delayed errors), so rule 4.2 holds without demand.
* ``HandlerProcessor``: netty-reactive-streams' ``HandlerPublisher`` on a Netty-style event
  loop. It asks its upstream for one element at a time (one channel read), one more as each
  arrives, whatever its subscriber requested.
* ``VirtualProcessor``: Akka Streams' transparent processor. Demand passes straight through;
  after refusing a None argument (rule 2.13) it ends its own stream with on_error(TypeError).
* ``MapProcessor``: Reactor's ``map`` operator. ``request(n)`` reaches the upstream unchanged,
  ``n <= 0`` included: the upstream answers that with on_error, which it relays.

All serve one subscriber; a later one gets ``on_subscribe`` and then ``on_error``.
"""

from __future__ import annotations

import collections
import itertools
import logging
import queue
import threading
from collections.abc import Callable
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


# -- netty-reactive-streams' HandlerPublisher ------------------------------------------------------

(_NO_SUBSCRIBER_OR_CONTEXT, _NO_CONTEXT, _NO_SUBSCRIBER, _NO_SUBSCRIBER_ERROR, _IDLE, _BUFFERING,
 _DEMANDING, _DRAINING, _DONE) = range(9)
_COMPLETE = object()
_log = logging.getLogger(__name__)


class _EventLoop:
    """A single-threaded Netty ``EventExecutor``: tasks run in order on one daemon thread."""

    def __init__(self, name: str) -> None:
        self._tasks: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        threading.Thread(target=self._run, name=name, daemon=True).start()

    def execute(self, task: Callable[[], None]) -> None:
        self._tasks.put(task)

    def _run(self) -> None:
        while True:
            task = self._tasks.get()
            try:
                task()
            except Exception:
                _log.debug("an event loop task raised", exc_info=True)


_loops: list[_EventLoop] = []
_next_loop = itertools.count()
_loops_lock = threading.Lock()


def _event_loop() -> _EventLoop:
    """The next loop of a group of two, picked round-robin (Netty's ``EventLoopGroup.next()``)."""
    with _loops_lock:
        if not _loops:
            _loops.extend(_EventLoop(f"nioEventLoopGroup-2-{i + 1}") for i in range(2))
        return _loops[next(_next_loop) % len(_loops)]


class _ChannelSubscription:
    def __init__(self, processor: HandlerProcessor) -> None:
        self._p = processor

    def request(self, demand: int) -> None:
        p = self._p
        p.executor.execute(lambda: p._received_demand(demand))

    def cancel(self) -> None:
        p = self._p
        p.executor.execute(p._received_cancel)


class HandlerProcessor:
    """netty-reactive-streams' ``HandlerPublisher`` (Play's Netty server) as an identity processor.

    The channel is played by the upstream: ``handlerAdded(ctx)`` is ``on_subscribe``, a channel
    read (``ctx.read()``) is ``request(1)``, ``channelRead`` is ``on_next``, followed by
    ``channelReadComplete`` (which reads again while the subscriber still has demand),
    ``channelInactive`` is ``on_complete``, ``exceptionCaught`` is ``on_error`` and
    ``ctx.disconnect()`` is ``cancel()``. So the upstream is asked for one element at a time,
    one more as each arrives, however much the subscriber requested: no rule makes a processor
    forward its subscriber's demand whole (rule 3.8 asks that the demand be served, which it
    is). Everything runs on one Netty-style event loop (a thread with a task queue, from a group
    of two), so the state machine (NO_SUBSCRIBER_OR_CONTEXT ... DONE) needs no locks; the
    subscription's request/cancel always post to the loop, as in the original. Errors
    short-circuit the buffer, completion waits behind it (DRAINING); request(n <= 0) signals
    on_error(ValueError) and disconnects (rule 3.9). One subscriber; a second one gets
    on_subscribe, then on_error.

    Adaptations: no read once the upstream has ended (on a closed Netty channel read() is a
    no-op; here it would be a request after the end, rule 2.4); a second on_subscribe is cancelled
    (Netty throws: the handler is already in a pipeline, rule 2.5); a subscriber's exception is
    logged and treated as its cancel (rule 2.13) instead of escaping into the event loop.
    """

    def __init__(self) -> None:
        self.executor = _event_loop()
        self.buffer: collections.deque[Any] = collections.deque()
        self._has_subscriber = False
        self._has_subscriber_lock = threading.Lock()
        self.state = _NO_SUBSCRIBER_OR_CONTEXT
        self.subscriber: Any = None
        self.ctx: Any = None  # the upstream subscription
        self.channel_closed = False
        self.outstanding_demand = 0
        self.no_subscriber_error: BaseException | None = None

    # -- Publisher ---------------------------------------------------------------------------

    def subscribe(self, subscriber: Subscriber[Any]) -> None:
        if subscriber is None:
            raise TypeError("rule 1.9: subscribe(None)")
        with self._has_subscriber_lock:
            taken, self._has_subscriber = self._has_subscriber, True
        if taken:
            subscriber.on_subscribe(_Noop())
            subscriber.on_error(RuntimeError("This publisher only supports one subscriber"))
        else:
            self.executor.execute(lambda: self._provide_subscriber(subscriber))

    def _provide_subscriber(self, subscriber: Any) -> None:
        self.subscriber = subscriber
        st = self.state
        if st == _NO_SUBSCRIBER_OR_CONTEXT:
            self.state = _NO_CONTEXT
        elif st == _NO_SUBSCRIBER:
            self.state = _IDLE if not self.buffer else _BUFFERING
            self._on_subscribe(subscriber)
        elif st == _DRAINING:
            self._on_subscribe(subscriber)
        elif st == _NO_SUBSCRIBER_ERROR:
            self.buffer.clear()
            self.state = _DONE
            self._on_subscribe(subscriber)
            self._signal(subscriber.on_error, self.no_subscriber_error)

    def _on_subscribe(self, subscriber: Any) -> None:
        try:
            subscriber.on_subscribe(_ChannelSubscription(self))
        except Exception:
            _log.debug("on_subscribe raised; cancelling (rule 2.13)", exc_info=True)
            self._received_cancel()

    # -- Subscriber: the channel's side ------------------------------------------------------

    def on_subscribe(self, subscription: Subscription) -> None:
        if subscription is None:
            raise TypeError("rule 2.13: on_subscribe(None)")
        self.executor.execute(lambda: self._handler_added(subscription))

    def _handler_added(self, ctx: Any) -> None:
        st = self.state
        if self.ctx is not None or st not in (_NO_SUBSCRIBER_OR_CONTEXT, _NO_CONTEXT):
            ctx.cancel()  # rule 2.5
            return
        self.ctx = ctx
        if st == _NO_SUBSCRIBER_OR_CONTEXT:
            self.state = _NO_SUBSCRIBER
        else:
            self.state = _IDLE
            self._on_subscribe(self.subscriber)

    def on_next(self, element: Any) -> None:
        if element is None:
            raise TypeError("rule 2.13: on_next(None)")

        def read() -> None:
            self._channel_read(element)
            if self.state == _DEMANDING:  # channelReadComplete
                self._ctx_read()

        self.executor.execute(read)

    def on_error(self, exc: BaseException) -> None:
        if exc is None:
            raise TypeError("rule 2.13: on_error(None)")
        self.executor.execute(lambda: self._exception_caught(exc))

    def on_complete(self) -> None:
        self.executor.execute(self._channel_inactive)

    # -- the handler, on the event loop ------------------------------------------------------

    def _ctx_read(self) -> None:
        if self.ctx is not None and not self.channel_closed:
            self.ctx.request(1)

    def _ctx_disconnect(self) -> None:
        if self.ctx is not None and not self.channel_closed:
            self.channel_closed = True
            self.ctx.cancel()

    def _received_demand(self, demand: int) -> None:
        st = self.state
        if st in (_BUFFERING, _DRAINING):
            if self._add_demand(demand):
                self._flush_buffer()
        elif st == _DEMANDING:
            self._add_demand(demand)
        elif st == _IDLE and self._add_demand(demand):
            self.state = _DEMANDING
            self._ctx_read()

    def _add_demand(self, demand: int) -> bool:
        if demand <= 0:
            self.buffer.clear()
            self._signal(self.subscriber.on_error, ValueError(
                "Request for 0 or negative elements in violation of Section 3.9 of the Reactive "
                "Streams specification"))
            self._ctx_disconnect()
            self.state = _DONE
            return False
        self.outstanding_demand = min(MAX_DEMAND, self.outstanding_demand + demand)
        return True

    def _flush_buffer(self) -> None:
        while self.buffer and self.outstanding_demand > 0:
            if not self._publish_message(self.buffer.popleft()):
                return
        if not self.buffer:
            if self.outstanding_demand > 0:
                if self.state == _BUFFERING:
                    self.state = _DEMANDING
                self._ctx_read()
            elif self.state == _BUFFERING:
                self.state = _IDLE

    def _received_cancel(self) -> None:
        st = self.state
        if st in (_BUFFERING, _DEMANDING, _IDLE):
            self._ctx_disconnect()
            self.state = _DONE
        elif st == _DRAINING:
            self.state = _DONE
        self.buffer.clear()
        self.subscriber = None  # rule 3.13

    def _channel_read(self, message: Any) -> None:
        st = self.state
        if st == _IDLE:
            self.buffer.append(message)
            self.state = _BUFFERING
        elif st in (_NO_SUBSCRIBER, _BUFFERING):
            self.buffer.append(message)
        elif st == _DEMANDING:
            self._publish_message(message)
        elif st not in (_DRAINING, _DONE):  # (released there)
            raise RuntimeError("Message received before added to the channel context")

    def _publish_message(self, message: Any) -> bool:
        if message is _COMPLETE:
            subscriber = self.subscriber
            self.state = _DONE
            self._signal(subscriber.on_complete)
            return True
        try:
            self.subscriber.on_next(message)
        except Exception:
            _log.debug("on_next raised; cancelling (rule 2.13)", exc_info=True)
            self._received_cancel()
            return False
        if self.outstanding_demand < MAX_DEMAND:
            self.outstanding_demand -= 1
            if self.outstanding_demand == 0 and self.state != _DRAINING:
                self.state = _IDLE if not self.buffer else _BUFFERING
        return True

    def _channel_inactive(self) -> None:
        self.channel_closed = True
        st = self.state
        if st in (_NO_SUBSCRIBER, _NO_SUBSCRIBER_ERROR, _BUFFERING):
            self.buffer.append(_COMPLETE)
            self.state = _DRAINING
        elif st in (_DEMANDING, _IDLE):
            subscriber = self.subscriber
            self.state = _DONE
            self._signal(subscriber.on_complete)

    def _exception_caught(self, cause: BaseException) -> None:
        self.channel_closed = True
        st = self.state
        if st == _NO_SUBSCRIBER:
            self.no_subscriber_error = cause
            self.state = _NO_SUBSCRIBER_ERROR
            self.buffer.clear()
        elif st in (_BUFFERING, _DEMANDING, _IDLE, _DRAINING):
            self.state = _DONE
            self.buffer.clear()
            self._signal(self.subscriber.on_error, cause)

    @staticmethod
    def _signal(fn: Callable[..., Any], *args: Any) -> None:
        try:
            fn(*args)
        except Exception:
            _log.debug("a terminal signal raised (rule 2.13)", exc_info=True)


# -- Akka Streams' VirtualProcessor ----------------------------------------------------------------


def _try(fn: Callable[..., Any], *args: Any) -> None:
    """ReactiveStreamsCompliance.tryOnNext/tryOnError/tryCancel, logging instead of rethrowing."""
    try:
        fn(*args)
    except Exception:
        _log.debug("%r raised (rule 2.13/3.15)", fn, exc_info=True)


class _CancellingSubscriber:
    def on_subscribe(self, s: Any) -> None:
        s.cancel()

    def on_next(self, t: Any) -> None:
        pass

    def on_error(self, t: BaseException) -> None:
        pass

    def on_complete(self) -> None:
        pass


class _Inert:
    """The state after the end: the subscriber is forgotten (rule 3.13)."""

    subscriber = _CancellingSubscriber()


_INERT = _Inert()


class _ErrorPublisher:
    def __init__(self, t: BaseException) -> None:
        self.t = t

    def subscribe(self, s: Any) -> None:
        _try(s.on_subscribe, _Noop())
        _try(s.on_error, self.t)


class _EmptyPublisher:
    def subscribe(self, s: Any) -> None:
        _try(s.on_subscribe, _Noop())
        _try(s.on_complete)


_EMPTY = _EmptyPublisher()


class _WaitingSubscriber:  # "case s: Subscriber": a subscriber waiting for an upstream
    def __init__(self, s: Any) -> None:
        self.subscriber = s


class _WaitingSubscription:  # "case s: Subscription": an upstream waiting for a subscriber
    def __init__(self, s: Any) -> None:
        self.subscription = s


class _Both:
    def __init__(self, s: Any) -> None:
        self.subscriber = s


class _Establishing:
    def __init__(self, s: Any, complete: bool = False, error: BaseException | None = None) -> None:
        self.subscriber = s
        self.on_complete_buffered = complete
        self.on_error_buffered = error


class _PassThrough:
    demand = 0


_PASS_THROUGH = _PassThrough()


class _Buffering:
    def __init__(self, demand: int) -> None:
        self.demand = demand


class VirtualProcessor:
    """Akka Streams' ``VirtualProcessor`` (StreamLayout.scala): a transparent identity processor.

    One atomic state reference (here a lock plays the CAS): a subscriber and an upstream each
    wait for the other (``Establishing`` holds back upstream terminal signals until the
    downstream's on_subscribe returned); demand requested inside on_subscribe is buffered and
    released after it (``WrappedSubscription``'s ``Buffering`` -> ``PassThrough``); from then on
    requests pass straight through to the upstream. A terminal signal before any subscriber
    turns the state into an error or empty publisher for the one that comes. It serves one
    subscriber; request(n < 1) cancels upstream and signals on_error(ValueError) itself.

    It refuses None as rule 2.13 requires, by raising TypeError, and then, as Akka does, ends
    its own stream: on_next(None) signals on_error(TypeError) to its subscriber, on_subscribe(None)
    and on_error(None) make it a failed publisher whose subscriber gets that TypeError. That is
    the processor's own failure, signalled as a publisher may (rules 1.4, 4.1), not a relay of a
    signal it was sent.

    Adaptations: a subscriber's exception is logged and the processor goes inert and cancels
    upstream (Akka rethrows it as SignalThrewException, rules 2.13 and 3.16 forbid that here);
    requests are not forwarded once it is inert (rule 2.4); buffered demand saturates at
    ``MAX_DEMAND``; downstream signals go through a half-serialiser (Akka signals the
    request(n < 1) error on the requesting thread, perhaps while on_next runs, rule 1.3); and
    calls on the upstream subscription are serialised by a lock (the deferred request after
    on_subscribe, and a subscriber's concurrent cancels, could reach it from two threads at
    once, rule 2.7).
    """

    def __init__(self) -> None:
        self._state: Any = None
        self._lock = threading.Lock()
        self._upstream: Any = None
        self._wip = 0
        self._wip_lock = threading.Lock()
        self._pending: tuple[str, Any] | None = None
        self.upstream_lock = threading.RLock()

    # -- the atomic reference --------------------------------------------------------------------

    def get(self) -> Any:
        return self._state

    def set(self, v: Any) -> None:
        with self._lock:
            self._state = v

    def get_and_set(self, v: Any) -> Any:
        with self._lock:
            old, self._state = self._state, v
            return old

    def compare_and_set(self, expect: Any, v: Any) -> bool:
        with self._lock:
            if self._state is not expect:
                return False
            self._state = v
            return True

    # -- the half-serialiser (RxJava's HalfSerializer) -------------------------------------------

    def _half_on_next(self, s: Any, t: Any) -> None:
        with self._wip_lock:
            if self._wip != 0:
                return
            self._wip = 1
        s.on_next(t)
        with self._wip_lock:
            self._wip -= 1
            pending = self._pending if self._wip != 0 else None
        if pending is not None:
            self._deliver(s, pending)

    def _half_terminal(self, s: Any, kind: str, ex: Any) -> None:
        with self._wip_lock:
            if self._pending is not None:
                return
            self._pending = (kind, ex)
            self._wip += 1
            deliver = self._wip == 1
        if deliver:
            self._deliver(s, (kind, ex))

    @staticmethod
    def _deliver(s: Any, pending: tuple[str, Any]) -> None:
        kind, ex = pending
        if kind == "error":
            _try(s.on_error, ex)
        else:
            _try(s.on_complete)

    # -- Publisher -------------------------------------------------------------------------------

    def subscribe(self, s: Subscriber[Any]) -> None:
        if s is None:
            try:
                self._subscribe(_INERT.subscriber)
            finally:
                raise TypeError("Subscriber must not be null (rule 1.9)")
        self._subscribe(s)

    def _subscribe(self, sub: Any) -> None:
        while True:
            st = self.get()
            if st is None:
                if self.compare_and_set(None, _WaitingSubscriber(sub)):
                    return
            elif isinstance(st, _WaitingSubscription):
                establishing = _Establishing(sub)
                if self.compare_and_set(st, establishing):
                    self._establish(establishing, st.subscription)
                    return
            elif isinstance(st, (_ErrorPublisher, _EmptyPublisher)):
                if self.compare_and_set(st, _INERT):
                    st.subscribe(sub)
                    return
            else:
                _try(sub.on_subscribe, _Noop())
                _try(sub.on_error, RuntimeError("VirtualProcessor supports only a single subscriber"))
                return

    # -- Subscriber ------------------------------------------------------------------------------

    def on_subscribe(self, s: Subscription) -> None:
        if s is None:
            ex = TypeError("Subscription must not be null (rule 2.13)")
            try:
                self._on_subscribe(_ErrorPublisher(ex))
            finally:
                raise ex
        self._on_subscribe(_WaitingSubscription(s))

    def _on_subscribe(self, obj: Any) -> None:
        while True:
            st = self.get()
            if st is None:
                if self.compare_and_set(None, obj):
                    return
            elif isinstance(st, _WaitingSubscriber):
                if isinstance(obj, _WaitingSubscription):
                    establishing = _Establishing(st.subscriber)
                    if self.compare_and_set(st, establishing):
                        self._establish(establishing, obj.subscription)
                        return
                else:  # an error publisher, for on_subscribe(None)
                    if self.get_and_set(_INERT) is not _INERT:
                        obj.subscribe(st.subscriber)
                    return
            else:
                if isinstance(obj, _WaitingSubscription):
                    _try(obj.subscription.cancel)  # rule 2.5
                return

    def _establish(self, establishing: _Establishing, subscription: Any) -> None:
        wrapped = _WrappedSubscription(self, subscription)
        self._upstream = subscription
        try:
            establishing.subscriber.on_subscribe(wrapped)
            if self.compare_and_set(establishing, _Both(establishing.subscriber)):
                wrapped.ungate_demand_and_request_buffered()
                return
            st = self.get()
            if isinstance(st, _Establishing) and st.on_error_buffered is not None:
                _try(st.subscriber.on_error, st.on_error_buffered)
                self.set(_INERT)
            elif isinstance(st, _Establishing) and st.on_complete_buffered:
                _try(st.subscriber.on_complete)
                self.set(_INERT)
            elif st is _INERT:
                wrapped.call_upstream(subscription.cancel)
            else:
                raise RuntimeError(f"Unexpected state while establishing: [{st!r}]")
        except Exception as ex:
            self.set(_INERT)
            wrapped.call_upstream(subscription.cancel)
            _try(establishing.subscriber.on_error, ex)

    def on_error(self, t: BaseException) -> None:
        ex = TypeError("Throwable must not be null (rule 2.13)") if t is None else t
        while True:
            st = self.get()
            if st is None or isinstance(st, _WaitingSubscription):
                if self.compare_and_set(st, _ErrorPublisher(ex)):
                    break
            elif isinstance(st, _Both):
                self.set(_INERT)
                self._half_terminal(st.subscriber, "error", ex)
                break
            elif isinstance(st, _WaitingSubscriber):
                if self.get_and_set(_INERT) is not _INERT:
                    _ErrorPublisher(ex).subscribe(st.subscriber)
                break
            elif isinstance(st, _Establishing) and not st.on_complete_buffered and st.on_error_buffered is None:
                if self.compare_and_set(st, _Establishing(st.subscriber, error=ex)):
                    break
            else:
                break
        if t is None:
            raise ex

    def on_complete(self) -> None:
        while True:
            st = self.get()
            if st is None or isinstance(st, _WaitingSubscription):
                if self.compare_and_set(st, _EMPTY):
                    return
            elif isinstance(st, _Both):
                self.set(_INERT)
                self._half_terminal(st.subscriber, "complete", None)
                return
            elif isinstance(st, _WaitingSubscriber):
                self.set(_INERT)
                _EMPTY.subscribe(st.subscriber)
                return
            elif isinstance(st, _Establishing) and not st.on_complete_buffered and st.on_error_buffered is None:
                if self.compare_and_set(st, _Establishing(st.subscriber, complete=True)):
                    return
            else:
                return

    def on_next(self, t: Any) -> None:
        if t is None:
            ex = TypeError("Element must not be null (rule 2.13)")
            while True:
                st = self.get()
                if st is None or isinstance(st, _WaitingSubscription):
                    if self.compare_and_set(st, _ErrorPublisher(ex)):
                        break
                elif isinstance(st, _Both):
                    try:
                        _try(st.subscriber.on_error, ex)
                    finally:
                        self.set(_INERT)
                    break
                elif isinstance(st, _WaitingSubscriber):  # (on_subscribe first: rule 1.9)
                    if self.get_and_set(_INERT) is not _INERT:
                        _ErrorPublisher(ex).subscribe(st.subscriber)
                    break
                else:
                    break
            raise ex
        st = self.get()
        if isinstance(st, (_Both, _Establishing)):
            try:
                self._half_on_next(st.subscriber, t)
            except Exception:
                _log.debug("on_next raised (rule 2.13); cancelling", exc_info=True)
                self.set(_INERT)
                if self._upstream is not None:
                    with self.upstream_lock:
                        _try(self._upstream.cancel)
        # (an element without demand, or after the end: a spec violation upstream, dropped)


class _WrappedSubscription:
    """Gates demand until the subscriber's on_subscribe returned, then passes it through."""

    def __init__(self, vp: VirtualProcessor, real: Any) -> None:
        self.vp = vp
        self.real = real
        self._state: Any = _Buffering(0)
        self._lock = threading.Lock()

    def call_upstream(self, fn: Callable[..., Any], *args: Any) -> None:
        with self.vp.upstream_lock:
            _try(fn, *args)

    def ungate_demand_and_request_buffered(self) -> None:
        with self._lock:
            old, self._state = self._state, _PASS_THROUGH
        if old.demand > 0:
            self.call_upstream(self.real.request, old.demand)

    def request(self, n: int) -> None:
        if n < 1:
            self.call_upstream(self.real.cancel)
            st = self.vp.get_and_set(_INERT)
            if isinstance(st, (_Both, _Establishing)):
                self.vp._half_terminal(st.subscriber, "error", ValueError(
                    "The number of requested elements must be > 0 (see reactive-streams "
                    "specification, rule 3.9)"))
            return
        if self.vp.get() is _INERT:
            return
        while True:
            current = self._state
            if current is _PASS_THROUGH:
                self.call_upstream(self.real.request, n)
                return
            with self._lock:
                if self._state is current:
                    self._state = _Buffering(min(MAX_DEMAND, current.demand + n))
                    return

    def cancel(self) -> None:
        self.vp.set(_INERT)
        self.call_upstream(self.real.cancel)


# -- Reactor's FluxMap -----------------------------------------------------------------------------


class MapProcessor:
    """Reactor's ``FluxMap.MapSubscriber`` (identity mapper) as a unicast processor.

    An operator subscriber: ``on_next`` maps and relays; ``request(n)`` and ``cancel()`` go
    straight to the upstream subscription, unchanged, ``request(0)`` and ``request(-1)``
    included. The operator does not validate ``n``: the upstream, a conforming publisher, owes
    that request on_error(IllegalArgumentException) (rule 3.9), which the operator relays like
    any other error, so its subscriber gets it all the same. A terminal signal sets ``done``;
    later signals are dropped (``Operators.onNextDropped``). Reactor assembles the subscriber
    before its upstream; as a processor either may come first: the subscriber's on_subscribe is
    signalled once both are there, and an upstream end that comes before (or during) it is
    delivered after it (rule 1.3). A second subscriber gets on_subscribe, then on_error.

    Adaptations: requests made inside on_subscribe are forwarded once it returned (an
    asynchronous upstream could otherwise signal on_next while on_subscribe still runs, rule
    1.3); a subscriber's exception cancels the upstream (rule 2.13; Reactor routes it to
    ``onOperatorError``); calls on the upstream are serialised by a lock (a subscriber's
    concurrent cancels, which rule 3.5 must tolerate, would otherwise overlap upstream, rule
    2.7); None arguments raise TypeError (rules 1.9, 2.13).
    """

    def __init__(self, mapper: Callable[[Any], Any] = lambda x: x) -> None:
        self._mapper = mapper
        self._lock = threading.Lock()
        self._upstream_lock = threading.RLock()
        self._s: Subscription | None = None
        self._actual: Subscriber[Any] | None = None
        self._taken = False
        self._done = False
        self._handshaking = False
        self._held: list[int] = []
        self._ended: tuple[str, Any] | None = None

    def subscribe(self, actual: Subscriber[Any]) -> None:
        if actual is None:
            raise TypeError("rule 1.9: subscribe(None)")
        with self._lock:
            taken, self._taken = self._taken, True
            ready = not taken and self._s is not None
            if not taken:
                self._actual = actual
                self._handshaking = ready
        if taken:
            actual.on_subscribe(_Noop())
            actual.on_error(RuntimeError("MapProcessor allows only a single Subscriber"))
        elif ready:
            self._handshake(actual)

    def on_subscribe(self, s: Subscription) -> None:
        if s is None:
            raise TypeError("rule 2.13: on_subscribe(None)")
        with self._lock:
            duplicate = self._s is not None
            if not duplicate:
                self._s = s
                actual = self._actual
                self._handshaking = actual is not None
        if duplicate:
            s.cancel()  # Operators.validate: rule 2.5
        elif actual is not None:
            self._handshake(actual)

    def _handshake(self, actual: Subscriber[Any]) -> None:
        try:
            actual.on_subscribe(self)
        except Exception:
            with self._lock:
                self._handshaking, self._actual = False, None
            self._upstream("cancel")
            return
        with self._lock:
            self._handshaking = False
            held, self._held = self._held, []
            ended, self._ended = self._ended, None
        if ended is not None:
            self._deliver_end(ended)
            return
        for n in held:
            self._upstream("request", n)

    def _upstream(self, method: str, *args: Any) -> None:
        s = self._s
        assert s is not None
        with self._upstream_lock:
            getattr(s, method)(*args)

    # -- the upstream's signals ------------------------------------------------------------------

    def on_next(self, t: Any) -> None:
        if t is None:
            raise TypeError("rule 2.13: on_next(None)")
        actual = self._actual
        if self._done or actual is None:
            return  # Operators.onNextDropped
        try:
            actual.on_next(self._mapper(t))
        except Exception:
            _log.debug("on_next raised (rule 2.13); cancelling", exc_info=True)
            self.cancel()

    def on_error(self, t: BaseException) -> None:
        if t is None:
            raise TypeError("rule 2.13: on_error(None)")
        self._end(("error", t))

    def on_complete(self) -> None:
        self._end(("complete", None))

    def _end(self, ended: tuple[str, Any]) -> None:
        with self._lock:
            if self._done:
                return
            self._done = True
            if self._actual is None or self._handshaking:
                self._ended = ended  # for the subscriber to come, or once its on_subscribe returned
                return
        self._deliver_end(ended)

    def _deliver_end(self, ended: tuple[str, Any]) -> None:
        with self._lock:
            actual, self._actual = self._actual, None
        if actual is not None:
            kind, exc = ended
            _try(actual.on_error, exc) if kind == "error" else _try(actual.on_complete)

    # -- the subscription handed downstream --------------------------------------------------------

    def request(self, n: int) -> None:
        with self._lock:
            if self._handshaking:
                self._held.append(n)
                return
        self._upstream("request", n)

    def cancel(self) -> None:
        with self._lock:
            self._actual = None  # rule 3.13
        self._upstream("cancel")


def handler_processor() -> HandlerProcessor:
    return HandlerProcessor()


def virtual_processor() -> VirtualProcessor:
    return VirtualProcessor()


def map_processor() -> MapProcessor:
    return MapProcessor()
