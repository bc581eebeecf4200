"""Conforming publishers of shapes the reference publishers do not have.

* ``AsyncIterablePublisher``: the JVM example's design. Every ``request``/``cancel`` is a
  message in a per-subscription mailbox, run one at a time on an executor; a ``Send`` turn
  emits up to ``batch_size`` (1024) elements before it re-queues itself. ``cancel()`` is a
  message too, so the batch in progress completes first: up to 1023 elements may follow a
  cancel made inside ``on_next`` under unbounded demand. Rule 1.8 asks only that the signals
  stop eventually, which they do.
* ``JvmRangePublisher``: the JVM example's synchronous range, trampolined on an atomic demand
  counter (here a lock around the counter only, never around a signal).
* ``OneShotPublisher``: a source that can be consumed once: the first subscriber gets the
  elements, every later one ``on_subscribe`` then ``on_error`` (rules 1.9 and 1.11 allow it).
* ``TaskPublisher``: one asyncio task per subscription, awaiting demand on an ``asyncio.Event``.
* ``SingleThreadedRangePublisher``: no lock at all. It trusts rule 2.7 (its subscriber's calls
  on a subscription never overlap) and emits only inside those calls, so nothing in it ever runs
  on two threads at once: the design of a library written for one thread.
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import logging
import random
import threading
from collections.abc import Iterable
from collections.abc import Iterator
from concurrent.futures import Executor
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from rstck.api import MAX_DEMAND
from rstck.api import Subscriber

_log = logging.getLogger(__name__)
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def shared_executor() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="conforming")
        return _pool


class _Noop:
    def request(self, n: int) -> None:
        pass

    def cancel(self) -> None:
        pass


# -- AsyncIterablePublisher ----------------------------------------------------------------------

_SUBSCRIBE, _SEND, _CANCEL = "subscribe", "send", "cancel"


class _IterableSubscription:
    """One subscriber's actor: a mailbox of signals, run one per executor task."""

    def __init__(self, publisher: AsyncIterablePublisher, subscriber: Subscriber[Any]) -> None:
        self._publisher = publisher
        self.subscriber: Subscriber[Any] | None = subscriber
        self._cancelled = False  # touched only by the actor
        self._demand = 0  # touched only by the actor
        self._iterator: Iterator[Any] | None = None
        self._inbound: collections.deque[tuple[str, int]] = collections.deque()
        self._on = False
        self._on_lock = threading.Lock()

    # The public side only posts messages.
    def request(self, n: int) -> None:
        self._signal(("request", n))

    def cancel(self) -> None:
        self._signal((_CANCEL, 0))

    def init(self) -> None:
        self._signal((_SUBSCRIBE, 0))

    def _signal(self, message: tuple[str, int]) -> None:
        self._inbound.append(message)
        self._try_schedule()

    def _try_schedule(self) -> None:
        with self._on_lock:
            if self._on:
                return
            self._on = True
        try:
            self._publisher.executor.submit(self._run)
        except RuntimeError as exc:  # the executor is shut down: end the stream, as 1.4 asks
            if not self._cancelled:
                self._cancelled = True
                self._terminate(RuntimeError(f"publisher terminated: executor unavailable ({exc})"))
            self._inbound.clear()
            with self._on_lock:
                self._on = False

    def _run(self) -> None:
        try:
            kind, n = self._inbound.popleft()
            if not self._cancelled:  # rules 1.8, 3.6, 3.7
                if kind == "request":
                    self._do_request(n)
                elif kind == _SEND:
                    self._do_send()
                elif kind == _CANCEL:
                    self._do_cancel()
                elif kind == _SUBSCRIBE:
                    self._do_subscribe()
        finally:
            with self._on_lock:
                self._on = False
            if self._inbound:
                self._try_schedule()

    def _do_request(self, n: int) -> None:
        if n < 1:
            self._terminate(ValueError(f"{self.subscriber!r} violated rule 3.9 by requesting {n}, a "
                                       "non-positive number of elements"))
        else:
            self._demand = min(MAX_DEMAND, self._demand + n)  # 3.17: saturate at unbounded
            self._do_send()

    def _do_cancel(self) -> None:
        self._cancelled = True
        self.subscriber = None  # rule 3.13: the subscriber is no longer referenced

    def _do_subscribe(self) -> None:
        subscriber = self.subscriber
        assert subscriber is not None
        try:
            self._iterator = iter(self._publisher.elements)
        except Exception as exc:
            subscriber.on_subscribe(_Noop())  # rule 1.9: on_subscribe before on_error
            self._terminate(exc)
            return
        subscriber.on_subscribe(self)
        if self._cancelled:
            return
        self._peeked = self._advance()
        if self._peeked is _END and not self._cancelled:
            self._cancelled = True  # rule 1.6
            self.subscriber = None
            subscriber.on_complete()

    def _advance(self) -> Any:
        assert self._iterator is not None
        try:
            return next(self._iterator)
        except StopIteration:
            return _END

    def _do_send(self) -> None:
        try:
            self._send_batch()
        except Exception as exc:
            # As the JVM example: only a signal method of the subscriber can have raised here,
            # which rule 2.13 forbids; all that is left is to cancel (and log).
            self._do_cancel()
            logging.getLogger(__name__).warning("%r violated rule 2.13 by raising %r", self, exc)

    def _send_batch(self) -> None:
        left_in_batch = self._publisher.batch_size
        while True:
            subscriber = self.subscriber
            if subscriber is None:
                return
            element = self._peeked
            try:
                self._peeked = self._advance()
            except Exception as exc:
                self._terminate(exc)
                return
            subscriber.on_next(element)
            if self._demand < MAX_DEMAND:
                # The JVM example decrements only when the batch is not yet full, which lets
                # the last element of each full batch go uncounted; counting each element
                # keeps rule 1.1 for bounded demands above the batch size.
                self._demand -= 1
            if self._peeked is _END:
                self._do_cancel()
                subscriber.on_complete()
                return
            left_in_batch -= 1
            if self._cancelled or left_in_batch == 0 or self._demand == 0:
                break
        if not self._cancelled and self._demand > 0:
            self._signal((_SEND, 0))

    def _terminate(self, exc: BaseException) -> None:
        subscriber = self.subscriber
        self._cancelled = True
        self.subscriber = None
        if subscriber is not None:
            subscriber.on_error(exc)


_END: Any = object()


class AsyncIterablePublisher:
    """The elements of an iterable, one actor per subscriber, ``batch_size`` per turn."""

    DEFAULT_BATCH_SIZE = 1024

    def __init__(self, elements: Iterable[Any], executor: Executor | None = None,
                 batch_size: int = DEFAULT_BATCH_SIZE) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.elements = elements
        self.executor = executor or shared_executor()
        self.batch_size = batch_size

    def subscribe(self, subscriber: Subscriber[Any]) -> None:
        if subscriber is None:
            raise TypeError("rule 1.9: subscribe(None)")
        _IterableSubscription(self, subscriber).init()

    def __repr__(self) -> str:
        return f"AsyncIterablePublisher(batch_size={self.batch_size})"


class _FailingIterable:
    def __iter__(self) -> Iterator[Any]:
        raise RuntimeError("the iterable cannot be iterated")


def async_iterable_publisher(n: int) -> AsyncIterablePublisher:
    source: Iterable[Any] = itertools.count() if n >= MAX_DEMAND else range(n)
    return AsyncIterablePublisher(source)


def failed_iterable_publisher() -> AsyncIterablePublisher:
    return AsyncIterablePublisher(_FailingIterable())


# -- the JVM's RangePublisher --------------------------------------------------------------------


class _RangeSubscription:
    """Demand is an atomic counter; whoever raises it from 0 emits (a trampoline)."""

    def __init__(self, subscriber: Subscriber[int], start: int, end: int | None) -> None:
        self._downstream: Subscriber[int] | None = subscriber
        self._index = start
        self._end = end
        self._requested = 0
        self._lock = threading.Lock()
        self._cancelled = False
        self._invalid: int | None = None

    def _add(self, n: int) -> int:
        """``getAndAdd`` with saturation at unbounded; returns the value before."""
        with self._lock:
            current = self._requested
            self._requested = min(MAX_DEMAND, current + n)
            return current

    def request(self, n: int) -> None:
        if n <= 0:
            self._invalid_request(n)
            return
        if self._add(n) != 0:
            return  # an emission loop is running (maybe ours, further up the stack)
        self._emit(n)

    def _invalid_request(self, n: int) -> None:
        """Rule 3.9, as the JVM example does it: cancel, then on_error, even from inside on_next."""
        downstream = self._downstream
        if self._cancelled or downstream is None:
            return
        self.cancel()
        downstream.on_error(ValueError(f"rule 3.9 violated: positive request amount required but it was {n}"))

    def cancel(self) -> None:
        self._cancelled = True
        self._downstream = None

    def _emit(self, current: int) -> None:
        emitted = 0
        index = self._index
        while True:
            downstream = self._downstream
            while index != self._end and emitted != current:
                if self._cancelled or downstream is None:
                    return
                downstream.on_next(index)
                index += 1
                emitted += 1
            if index == self._end:
                if not self._cancelled and downstream is not None:
                    self._cancelled = True
                    self._downstream = None
                    downstream.on_complete()
                return
            with self._lock:
                current = self._requested
                if current == MAX_DEMAND:
                    continue  # unbounded: keep going
                if emitted == current:
                    self._index = index
                    self._requested = current = current - emitted
                    if current == 0:
                        return
                    emitted = 0


class JvmRangePublisher:
    """``count`` ints from ``start``, delivered synchronously inside ``request``."""

    def __init__(self, start: int, count: int) -> None:
        self.start = start
        self.count = count

    def subscribe(self, subscriber: Subscriber[int]) -> None:
        if subscriber is None:
            raise TypeError("rule 1.9: subscribe(None)")
        end = None if self.count >= MAX_DEMAND else self.start + self.count
        subscription = _RangeSubscription(subscriber, self.start, end)
        subscriber.on_subscribe(subscription)
        if self.count == 0 and not subscription._cancelled:
            subscription.cancel()
            subscriber.on_complete()

    def __repr__(self) -> str:
        return f"JvmRangePublisher({self.start}, {self.count})"


def jvm_range_publisher(n: int) -> JvmRangePublisher:
    return JvmRangePublisher(0, n)


# -- single-threaded, trusting rule 2.7 ---------------------------------------------------------


class _UnlockedSubscription:
    """A trampolined range with plain fields and no lock. Correct while its subscriber's calls
    are serial (rule 2.7), re-entrant ones from inside a signal included (3.2, 3.3); a call that
    overlaps another one's own work, from another thread, would corrupt plain fields. That is
    made deterministic here: such a call's request is lost, as an unlocked counter's addition
    can be, so a caller breaking 2.7 shows as lost demand."""

    def __init__(self, subscriber: Subscriber[int], count: int) -> None:
        self._subscriber: Subscriber[int] | None = subscriber
        self._index = 0
        self._count = count
        self._demand = 0
        self._emitting = False
        #: The thread doing this subscription's own work now (not waiting inside a signal).
        self._working: int | None = None

    def request(self, n: int) -> None:
        me = threading.get_ident()
        if self._working not in (None, me):
            _log.debug("request(%d) overlapped a call on another thread (rule 2.7): lost", n)
            return
        outer, self._working = self._working, me
        try:
            self._request(n)
        finally:
            self._working = outer

    def _request(self, n: int) -> None:
        subscriber = self._subscriber
        if subscriber is None:
            return
        if n <= 0:
            self._subscriber = None
            self._signal(subscriber.on_error, ValueError(f"rule 3.9: request({n}), n must be positive"))
            return
        self._demand = min(self._demand + n, MAX_DEMAND)
        if self._emitting:
            return  # re-entrant, from on_next: the loop below takes it (rule 3.3)
        self._emitting = True
        try:
            self._emit()
        finally:
            self._emitting = False

    def _signal(self, method: Any, *args: Any) -> None:
        """Call the subscriber; while it runs, this subscription does no work of its own."""
        working, self._working = self._working, None
        try:
            method(*args)
        finally:
            self._working = working

    def _emit(self) -> None:
        while True:
            subscriber = self._subscriber
            if subscriber is None:
                return
            if self._index >= self._count:
                self._subscriber = None
                self._signal(subscriber.on_complete)
                return
            if self._demand == 0:
                return
            if self._demand < MAX_DEMAND:
                self._demand -= 1
            element = self._index
            self._index += 1
            try:
                self._signal(subscriber.on_next, element)
            except Exception:
                self._subscriber = None  # rule 2.13: a raising subscriber counts as cancelled
                raise

    def cancel(self) -> None:
        self._subscriber = None  # one store: safe from any thread (rule 3.5)


class SingleThreadedRangePublisher:
    def __init__(self, count: int) -> None:
        self._count = count

    def subscribe(self, subscriber: Subscriber[int]) -> None:
        if subscriber is None:
            raise TypeError("rule 1.9: the subscriber must not be None")
        subscription = _UnlockedSubscription(subscriber, self._count)
        subscriber.on_subscribe(subscription)
        if self._count == 0 and subscription._subscriber is not None and not subscription._emitting:
            subscription._subscriber = None
            subscriber.on_complete()


def single_threaded_range_publisher(n: int) -> SingleThreadedRangePublisher:
    return SingleThreadedRangePublisher(n)


# -- one-shot ------------------------------------------------------------------------------------


class OneShotPublisher:
    """Serves its first subscriber; each later one gets on_subscribe, then on_error."""

    def __init__(self, count: int) -> None:
        self._count = count
        self._taken = False
        self._lock = threading.Lock()

    def subscribe(self, subscriber: Subscriber[int]) -> None:
        if subscriber is None:
            raise TypeError("rule 1.9: subscribe(None)")
        with self._lock:
            taken, self._taken = self._taken, True
        if taken:
            subscriber.on_subscribe(_Noop())
            subscriber.on_error(RuntimeError("this publisher can be subscribed to only once"))
            return
        JvmRangePublisher(0, self._count).subscribe(subscriber)


def one_shot_publisher(n: int) -> OneShotPublisher:
    return OneShotPublisher(n)


def failed_one_shot_publisher() -> OneShotPublisher:
    """An already consumed one-shot publisher: every subscriber is rejected."""
    publisher = OneShotPublisher(0)
    publisher._taken = True
    return publisher


# -- a coroutine per subscription ----------------------------------------------------------------


class _TaskSubscription:
    """Demand lives on the loop; a task awaits it and emits, yielding to the loop per element."""

    def __init__(self, subscriber: Subscriber[int], count: int) -> None:
        self.subscriber: Subscriber[int] | None = subscriber
        self._count = count
        self._demand = 0
        self._error: ValueError | None = None
        self._wake = asyncio.Event()
        self.task: asyncio.Task[None] | None = None

    def request(self, n: int) -> None:
        if self.subscriber is None:
            return
        if n <= 0:
            self._error = self._error or ValueError(f"rule 3.9: request({n}) is not positive")
        else:
            self._demand = min(MAX_DEMAND, self._demand + n)
        self._wake.set()

    def cancel(self) -> None:
        self.subscriber = None
        self._wake.set()

    async def run(self) -> None:
        sent = 0
        while True:
            subscriber = self.subscriber
            if subscriber is None:
                return
            if self._error is not None:
                self.subscriber = None
                subscriber.on_error(self._error)
                return
            if sent == self._count:
                self.subscriber = None
                subscriber.on_complete()
                return
            if self._demand == 0:
                self._wake.clear()
                await self._wake.wait()
                continue
            if self._demand < MAX_DEMAND:
                self._demand -= 1
            subscriber.on_next(sent)
            sent += 1
            await asyncio.sleep(0)


class TaskPublisher:
    """Must be used on its loop; each subscriber is served by its own task."""

    def __init__(self, count: int) -> None:
        self.count = count
        self._loop = asyncio.get_running_loop()
        self._tasks: set[asyncio.Task[None]] = set()

    def subscribe(self, subscriber: Subscriber[int]) -> None:
        if subscriber is None:
            raise TypeError("rule 1.9: subscribe(None)")
        subscription = _TaskSubscription(subscriber, self.count)
        subscriber.on_subscribe(subscription)
        task = self._loop.create_task(subscription.run())
        self._tasks.add(task)  # keep a strong reference until it ends
        task.add_done_callback(self._tasks.discard)


async def task_publisher(n: int) -> TaskPublisher:
    return TaskPublisher(n)


# -- RxJava's operators, ported: Flowable.range().filter(), fromIterable(), mergeArray() ---------
#
# The shapes of RxJava's FilterTckTest, FromIterableTckTest and MergeTckTest: a foreign
# subscriber is wrapped in a StrictSubscriber (which answers request(n <= 0) with on_error, rule
# 3.9, and serialises a terminal signal raised from inside on_next), the operators' drain loops
# trampoline on atomic counters (here a lock around each counter, never around a signal).


class _Atomic:
    """The few operations of Java's AtomicLong/AtomicInteger the ports use."""

    __slots__ = ("_lock", "_value")

    def __init__(self, value: int = 0) -> None:
        self._lock = threading.Lock()
        self._value = value

    def get(self) -> int:
        return self._value

    def add_and_get(self, delta: int) -> int:
        with self._lock:
            self._value += delta
            return self._value

    def get_and_increment(self) -> int:
        with self._lock:
            self._value += 1
            return self._value - 1

    def get_and_set(self, value: int) -> int:
        with self._lock:
            old, self._value = self._value, value
            return old

    def compare_and_set(self, expect: int, update: int) -> bool:
        with self._lock:
            if self._value != expect:
                return False
            self._value = update
            return True

    def add_capped(self, n: int) -> int:
        """``BackpressureHelper.add``: add, saturating at unbounded; returns the value before."""
        with self._lock:
            old = self._value
            if old != MAX_DEMAND:
                self._value = min(MAX_DEMAND, old + n)
            return old


_CANCELLED: Any = _Noop()
#: ``AtomicThrowable``'s marker: the consumer was terminated.
_TERMINATED = Exception("terminated")


class _Strict:
    """``StrictSubscriber``: what ``Flowable.subscribe(Subscriber)`` wraps a foreign subscriber in."""

    def __init__(self, downstream: Subscriber[Any]) -> None:
        self.downstream = downstream
        self.wip = _Atomic()
        self.requested = _Atomic()
        self.upstream: Any = None
        self.lock = threading.Lock()
        self.error: BaseException | None = None
        self.once = False
        self.done = False

    # Subscription, as the downstream sees it
    def request(self, n: int) -> None:
        if n <= 0:
            if self.upstream is _CANCELLED:
                # RxJava signals on_error here even after cancel(); rule 3.6 makes every
                # request after cancel() a no-op, and 3.9 applies only while not cancelled.
                return
            self.cancel()
            self.on_error(ValueError(f"rule 3.9 violated: positive request amount required but it was {n}"))
            return
        s = self.upstream  # SubscriptionHelper.deferredRequest
        if s is not None:
            s.request(n)
            return
        self.requested.add_capped(n)
        s = self.upstream
        if s is not None:
            r = self.requested.get_and_set(0)
            if r:
                s.request(r)

    def cancel(self) -> None:
        if not self.done:
            with self.lock:
                s, self.upstream = self.upstream, _CANCELLED
            if s is not None and s is not _CANCELLED:
                s.cancel()

    # Subscriber, as the operator upstream sees it
    def on_subscribe(self, s: Any) -> None:
        with self.lock:
            first, self.once = not self.once, True
        if not first:
            s.cancel()
            return
        self.downstream.on_subscribe(self)
        with self.lock:  # SubscriptionHelper.deferredSetOnce
            taken = self.upstream is None
            if taken:
                self.upstream = s
        if not taken:
            s.cancel()
            return
        r = self.requested.get_and_set(0)
        if r:
            s.request(r)

    def on_next(self, element: Any) -> None:  # HalfSerializer.onNext
        if self.wip.get() == 0 and self.wip.compare_and_set(0, 1):
            self.downstream.on_next(element)
            if self.wip.add_and_get(-1) != 0:
                self._terminate()

    def on_error(self, exc: BaseException) -> None:
        self.done = True
        with self.lock:
            if self.error is not None:
                return  # (RxJavaPlugins.onError)
            self.error = exc
        if self.wip.get_and_increment() == 0:
            self._terminate()

    def on_complete(self) -> None:
        self.done = True
        if self.wip.get_and_increment() == 0:
            self._terminate()

    def _terminate(self) -> None:
        """``AtomicThrowable.tryTerminateConsumer``."""
        with self.lock:
            error, self.error = self.error, _TERMINATED
        if error is None:
            self.downstream.on_complete()
        elif error is not _TERMINATED:
            self.downstream.on_error(error)


class _RxRangeSubscription:
    """``FlowableRange.RangeSubscription``: it sees the end as it emits the last element."""

    def __init__(self, downstream: Any, start: int, end: int | None) -> None:
        self.downstream = downstream
        self.index = start
        self.end = end
        self.requested = _Atomic()
        self.cancelled = False

    def request(self, n: int) -> None:
        if n > 0 and self.requested.add_capped(n) == 0:
            if n >= MAX_DEMAND:
                self._fast_path()
            else:
                self._slow_path(n)

    def cancel(self) -> None:
        self.cancelled = True

    def _fast_path(self) -> None:
        i, a = self.index, self.downstream
        while i != self.end:
            if self.cancelled:
                return
            a.on_next(i)
            i += 1
        if not self.cancelled:
            a.on_complete()

    def _slow_path(self, r: int) -> None:
        e, i, f, a = 0, self.index, self.end, self.downstream
        while True:
            while e != r and i != f:
                if self.cancelled:
                    return
                a.on_next(i)
                e += 1
                i += 1
            if i == f:
                if not self.cancelled:
                    a.on_complete()
                return
            r = self.requested.get()
            if e == r:
                self.index = i
                r = self.requested.add_and_get(-e)
                if r == 0:
                    return
                e = 0


class _FilterSubscriber:
    """``FlowableFilter.FilterSubscriber``: a dropped element is replaced by request(1) upstream."""

    def __init__(self, downstream: Any, predicate: Any) -> None:
        self.downstream = downstream
        self.predicate = predicate
        self.upstream: Any = None
        self.done = False

    def on_subscribe(self, s: Any) -> None:
        self.upstream = s
        self.downstream.on_subscribe(self)

    def request(self, n: int) -> None:
        self.upstream.request(n)

    def cancel(self) -> None:
        self.upstream.cancel()

    def on_next(self, element: Any) -> None:
        if not self._try_on_next(element):
            self.upstream.request(1)

    def _try_on_next(self, element: Any) -> bool:
        if self.done:
            return False
        try:
            passed = bool(self.predicate(element))
        except Exception as exc:
            self.upstream.cancel()
            self.on_error(exc)
            return True
        if passed:
            self.downstream.on_next(element)
        return passed

    def on_error(self, exc: BaseException) -> None:
        if not self.done:
            self.done = True
            self.downstream.on_error(exc)

    def on_complete(self) -> None:
        if not self.done:
            self.done = True
            self.downstream.on_complete()


class RxFilteredRange:
    """``Flowable.range(0, 2 * n).filter(v -> v % 2 == 0)``, as RxJava's FilterTckTest builds it.

    After the n-th even number the range has been asked for exactly what it emitted, so the odd
    number after it, and the end, come only once more is requested downstream.
    """

    def __init__(self, n: int) -> None:
        self.end = None if n >= MAX_DEMAND else 2 * n

    def subscribe(self, subscriber: Subscriber[int]) -> None:
        if subscriber is None:
            raise TypeError("rule 1.9: subscribe(None)")
        strict = _Strict(subscriber)
        filtered = _FilterSubscriber(strict, lambda v: v % 2 == 0)
        if self.end == 0:  # Flowable.range(0, 0) is Flowable.empty()
            filtered.on_subscribe(_CANCELLED)
            filtered.on_complete()
            return
        filtered.on_subscribe(_RxRangeSubscription(filtered, 0, self.end))


def rx_filtered_range(n: int) -> RxFilteredRange:
    return RxFilteredRange(n)


class _LazyIteratorSubscription:
    """``FlowableFromIterable.IteratorSubscription`` for a Python iterator, which has no
    ``hasNext()``: the end is learnt only by pulling, so only with demand outstanding."""

    def __init__(self, downstream: Any, iterator: Iterator[Any]) -> None:
        self.downstream = downstream
        self.iterator = iterator
        self.requested = _Atomic()
        self.cancelled = False

    def request(self, n: int) -> None:
        if n > 0 and self.requested.add_capped(n) == 0:
            if n >= MAX_DEMAND:
                self._fast_path()
            else:
                self._slow_path(n)

    def cancel(self) -> None:
        self.cancelled = True

    def _pull(self) -> tuple[bool, Any]:
        """(True, element), or (False, None) once the iterator ended (then the stream ended too)."""
        a = self.downstream
        try:
            element = next(self.iterator)
        except StopIteration:
            if not self.cancelled:
                a.on_complete()
            return False, None
        except Exception as exc:
            a.on_error(exc)
            return False, None
        if element is None:
            a.on_error(TypeError("the iterator returned None"))
            return False, None
        return True, element

    def _fast_path(self) -> None:
        while not self.cancelled:
            more, element = self._pull()
            if not more or self.cancelled:
                return
            self.downstream.on_next(element)

    def _slow_path(self, r: int) -> None:
        e = 0
        while True:
            while e != r:
                if self.cancelled:
                    return
                more, element = self._pull()
                if not more or self.cancelled:
                    return
                self.downstream.on_next(element)
                e += 1
            r = self.requested.get()
            if e == r:
                r = self.requested.add_and_get(-e)
                if r == 0:
                    return
                e = 0


class RxLazyFromIterable:
    """``Flowable.fromIterable(iterable)`` over a lazy iterable: a fresh iterator per subscriber."""

    def __init__(self, iterable: Iterable[Any]) -> None:
        self.iterable = iterable

    def subscribe(self, subscriber: Subscriber[Any]) -> None:
        if subscriber is None:
            raise TypeError("rule 1.9: subscribe(None)")
        self.subscribe_inner(_Strict(subscriber))

    def subscribe_inner(self, subscriber: Any) -> None:
        """The operator-level subscribe (``subscribeActual``), for another operator's subscriber."""
        try:
            iterator = iter(self.iterable)
        except Exception as exc:
            subscriber.on_subscribe(_CANCELLED)
            subscriber.on_error(exc)
            return
        subscriber.on_subscribe(_LazyIteratorSubscription(subscriber, iterator))


class _Numbers:
    """range(start, end) as a generator, or counting for ever: each element made when pulled."""

    def __init__(self, start: int, end: int | None) -> None:
        self.start = start
        self.end = end

    def __iter__(self) -> Iterator[int]:
        i = self.start
        while i != self.end:
            yield i
            i += 1


def rx_lazy_from_iterable(n: int) -> RxLazyFromIterable:
    return RxLazyFromIterable(_Numbers(0, None if n >= MAX_DEMAND else n))


def failed_rx_from_iterable() -> RxLazyFromIterable:
    """``fromIterable`` of an iterable whose ``iter()`` raises: on_subscribe, then on_error."""
    return RxLazyFromIterable(_FailingIterable())


class _MergeInner:
    """``FlowableFlatMap.InnerSubscriber`` (not fused): prefetches, replenishes per ``limit``."""

    def __init__(self, parent: _MergeSubscriber, ident: int) -> None:
        self.parent = parent
        self.id = ident
        self.buffer_size = parent.buffer_size
        self.limit = max(1, self.buffer_size >> 2)
        self.done = False
        self.queue: collections.deque[Any] | None = None
        self.produced = 0
        self.upstream: Any = None

    def on_subscribe(self, s: Any) -> None:
        if self.upstream is None:
            self.upstream = s
            s.request(self.buffer_size)
        else:
            s.cancel()

    def on_next(self, element: Any) -> None:
        self.parent.try_emit(element, self)

    def on_error(self, exc: BaseException) -> None:
        self.upstream = _CANCELLED
        self.parent.inner_error(self, exc)

    def on_complete(self) -> None:
        self.done = True
        self.parent.drain()

    def request_more(self, n: int) -> None:
        p = self.produced + n
        if p >= self.limit:
            self.produced = 0
            self.upstream.request(p)
        else:
            self.produced = p

    def dispose(self) -> None:
        s, self.upstream = self.upstream, _CANCELLED
        if s is not None and s is not _CANCELLED:
            s.cancel()


class _MergeSubscriber:
    """``FlowableFlatMap.MergeSubscriber``, its sources given up front (``mergeArray``).

    An element of a source goes straight downstream when there is demand and no drain runs,
    else into that source's queue; the drain loop serves the queues round-robin from where it
    stopped, so the order of the two halves depends on when demand came.
    """

    def __init__(self, downstream: Any, buffer_size: int) -> None:
        self.downstream = downstream
        self.buffer_size = buffer_size
        self.requested = _Atomic()
        self.wip = _Atomic()
        self.subscribers: tuple[_MergeInner, ...] = ()
        self.lock = threading.Lock()
        self.error: BaseException | None = None
        self.done = False
        self.cancelled = False
        self.last_id = 0
        self.last_index = 0
        self.disposed = False

    def start(self, sources: list[RxLazyFromIterable]) -> None:
        for ident, source in enumerate(sources):  # fromArray(sources), request(maxConcurrency)
            if self.cancelled:
                return
            inner = _MergeInner(self, ident)
            with self.lock:
                if self.disposed:
                    return
                self.subscribers = (*self.subscribers, inner)
            source.subscribe_inner(inner)
        self.done = True  # the array of sources is exhausted
        self.drain()

    def try_emit(self, value: Any, inner: _MergeInner) -> None:
        if self.wip.get() == 0 and self.wip.compare_and_set(0, 1):
            r = self.requested.get()
            q = inner.queue
            if r != 0 and not q:
                self.downstream.on_next(value)
                if r != MAX_DEMAND:
                    self.requested.add_and_get(-1)
                inner.request_more(1)
            elif not self._offer(inner, value):
                return
            if self.wip.add_and_get(-1) == 0:
                return
        else:
            if not self._offer(inner, value) or self.wip.get_and_increment() != 0:
                return
        self.drain_loop()

    def _offer(self, inner: _MergeInner, value: Any) -> bool:
        if inner.queue is None:
            inner.queue = collections.deque()
        if len(inner.queue) >= self.buffer_size:
            self.inner_error(inner, RuntimeError("MissingBackpressureException: inner queue full"))
            return False
        inner.queue.append(value)
        return True

    def request(self, n: int) -> None:
        if n > 0:
            self.requested.add_capped(n)
            self.drain()

    def cancel(self) -> None:
        if not self.cancelled:
            self.cancelled = True
            self._dispose_all()
            self.wip.get_and_increment()

    def drain(self) -> None:
        if self.wip.get_and_increment() == 0:
            self.drain_loop()

    def _check_terminate(self) -> bool:
        if self.cancelled:
            return True
        if self.error is not None:
            self._terminate()
            return True
        return False

    def _terminate(self) -> None:
        with self.lock:
            error, self.error = self.error, _TERMINATED
        if error is None:
            self.downstream.on_complete()
        elif error is not _TERMINATED:
            self.downstream.on_error(error)

    def drain_loop(self) -> None:
        child = self.downstream
        missed = 1
        while True:
            if self._check_terminate():
                return
            r = self.requested.get()
            unbounded = r == MAX_DEMAND
            done = self.done
            inner = self.subscribers
            n = len(inner)
            if done and n == 0:
                self._terminate()
                return
            inner_completed = False
            if n:
                start_id, index = self.last_id, self.last_index
                if n <= index or inner[index].id != start_id:
                    if n <= index:
                        index = 0
                    j = index
                    for _ in range(n):
                        if inner[j].id == start_id:
                            break
                        j = (j + 1) % n
                    index = self.last_index = j
                    self.last_id = inner[j].id
                j = index
                for _ in range(n):
                    if self._check_terminate():
                        return
                    source = inner[j]
                    o: Any = None
                    while True:
                        if self._check_terminate():
                            return
                        q = source.queue
                        if q is None:
                            break
                        produced = 0
                        while r != 0:
                            o = q.popleft() if q else None
                            if o is None:
                                break
                            child.on_next(o)
                            if self._check_terminate():
                                return
                            r -= 1
                            produced += 1
                        if produced:
                            r = MAX_DEMAND if unbounded else self.requested.add_and_get(-produced)
                            source.request_more(produced)
                        if r == 0 or o is None:
                            break
                    if source.done and not source.queue:
                        self._remove(source)
                        if self._check_terminate():
                            return
                        inner_completed = True
                    if r == 0:
                        break
                    j = (j + 1) % n
                self.last_index = j
                self.last_id = inner[j].id
            if inner_completed:
                continue
            missed = self.wip.add_and_get(-missed)
            if missed == 0:
                return

    def _remove(self, inner: _MergeInner) -> None:
        with self.lock:
            self.subscribers = tuple(s for s in self.subscribers if s is not inner)

    def inner_error(self, inner: _MergeInner, exc: BaseException) -> None:
        with self.lock:
            if self.error is not None:
                return
            self.error = exc
        inner.done = True
        self._dispose_all()
        self.drain()

    def _dispose_all(self) -> None:
        with self.lock:
            inner, self.subscribers, self.disposed = self.subscribers, (), True
        for each in inner:
            each.dispose()


class RxMergedHalves:
    """``Flowable.mergeArray(2, 4, fromIterable(first half), fromIterable(second half))``.

    RxJava's MergeTckTest merges two halves; a prefetch of 4 (RxJava's default is 128) makes the
    two queues take turns within the TCK's short streams.
    """

    BUFFER_SIZE = 4

    def __init__(self, n: int) -> None:
        unbounded = n >= MAX_DEMAND
        half = n // 2
        self.sources = [RxLazyFromIterable(_Numbers(0, None if unbounded else half)),
                        RxLazyFromIterable(_Numbers(half, None if unbounded else n))]

    def subscribe(self, subscriber: Subscriber[int]) -> None:
        if subscriber is None:
            raise TypeError("rule 1.9: subscribe(None)")
        strict = _Strict(subscriber)
        merge = _MergeSubscriber(strict, self.BUFFER_SIZE)
        strict.on_subscribe(merge)
        merge.start(self.sources)


def rx_merged_halves(n: int) -> RxMergedHalves:
    return RxMergedHalves(n)


class _Shuffled:
    """range(n) in an order drawn afresh for each iterator: a parallel fetch's completion order."""

    def __init__(self, n: int) -> None:
        self.n = n

    BLOCK = 64

    def __iter__(self) -> Iterator[int]:
        end = None if self.n >= MAX_DEMAND else self.n
        start = 0
        while start != end:  # shuffled a block at a time: n may be far too large for a list
            block = list(range(start, start + self.BLOCK if end is None else min(end, start + self.BLOCK)))
            random.shuffle(block)
            yield from block
            start += len(block)


def shuffled_publisher(n: int) -> RxLazyFromIterable:
    """Every subscriber gets the n elements in an order of its own."""
    return RxLazyFromIterable(_Shuffled(n))
