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
* Shapes on RxJava's operators (``rx_ports``) behind a ``StrictSubscriber`` that keeps rule 3.6:
  a filter whose end waits for demand, a source pulling a Python iterator (no ``hasNext()``),
  two such sources merged, and one shuffled per subscriber.
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

from . import rx_ports

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


# -- Shapes on RxJava's operators: a filter whose end waits for demand, a pulling iterator ------
#
# Built on the faithful ports of ``rx_ports`` (RxJava's own TCK constructions, with the deviation
# docs/verifications.md records, are ``conforming.real_designs()``). Two things differ, each a
# shape of its own: a foreign subscriber is wrapped in a ``StrictSubscriber`` that keeps rule 3.6
# (a request(n <= 0) after cancel() is a no-op, where RxJava's signals on_error), and a source
# over a Python iterator, which has no ``hasNext()`` and so learns its end only by pulling.


class _StrictKeeping36(rx_ports.StrictSubscriber):
    """RxJava's ``StrictSubscriber``, but a request(n <= 0) after cancel() is a no-op (rule 3.6)."""

    def request(self, n: int) -> None:
        if n <= 0 and self.upstream.get() is rx_ports.CANCELLED:
            return
        super().request(n)


class Rule36Strict:
    """A ``Flowable`` that a foreign subscriber meets through ``_StrictKeeping36``."""

    def __init__(self, flowable: rx_ports.Flowable) -> None:
        self.flowable = flowable

    def subscribe(self, subscriber: Subscriber[Any]) -> None:
        if subscriber is None:
            raise TypeError("rule 1.9: subscribe(None)")
        self.flowable.subscribe_flowable(_StrictKeeping36(subscriber))


def filter_ending_on_demand(n: int) -> Rule36Strict:
    """``range(0, 2n).filter(even)`` (RxJava's FilterTckTest) on RxJava's operators.

    ``filter`` makes ``range`` count only the elements it accepted: after the n-th even number
    the range has been asked for exactly that, so the odd number after it, and the end, come
    only once more is requested downstream. Past Java's int range the range is Python's.
    """
    if n >= MAX_DEMAND:
        source = rx_ports.from_iterable(rx_ports.InfiniteRange())
    else:
        source = rx_ports.FlowableRange(0, 2 * n) if n else rx_ports.empty()
    return Rule36Strict(source.filter(lambda v: v % 2 == 0))


class _PullingSubscription(rx_ports.AtomicLong):
    """``FlowableFromIterable.IteratorSubscription`` for a Python iterator, which has no
    ``hasNext()``: the end is learnt only by pulling, so only with demand outstanding."""

    def __init__(self, downstream: Any, iterator: Iterator[Any]) -> None:
        super().__init__()
        self.downstream = downstream
        self.iterator = iterator
        self.cancelled = False

    def request(self, n: int) -> None:
        if rx_ports.validate_request(n) and rx_ports.bp_add(self, n) == 0:
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
            r = self.get()
            if e == r:
                r = self.add_and_get(-e)
                if r == 0:
                    return
                e = 0


class PullingIterable(rx_ports.Flowable):
    """``fromIterable`` over a Python iterable: a fresh iterator per subscriber, pulled lazily."""

    def __init__(self, iterable: Iterable[Any]) -> None:
        self.iterable = iterable

    def subscribe_actual(self, s: Any) -> None:
        try:
            iterator = iter(self.iterable)
        except Exception as exc:
            rx_ports.EmptySubscription.error(exc, s)
            return
        s.on_subscribe(_PullingSubscription(s, iterator))


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


def pulling_iterator_publisher(n: int) -> Rule36Strict:
    return Rule36Strict(PullingIterable(_Numbers(0, None if n >= MAX_DEMAND else n)))


def failed_pulling_iterator_publisher() -> Rule36Strict:
    """A pulling iterable whose ``iter()`` raises: on_subscribe, then on_error."""
    return Rule36Strict(PullingIterable(_FailingIterable()))


#: The merge's prefetch per source (RxJava's default is 128): the two queues take turns within
#: the TCK's short streams.
MERGE_PREFETCH = 4


def merged_halves(n: int) -> Rule36Strict:
    """Two pulling halves merged (``mergeArray``, as RxJava's MergeTckTest merges two halves):
    an element goes straight downstream when there is demand and no drain runs, else into its
    source's queue, so the order of the halves depends on when demand came."""
    unbounded = n >= MAX_DEMAND
    half = n // 2
    first = PullingIterable(_Numbers(0, None if unbounded else half))
    second = PullingIterable(_Numbers(half, None if unbounded else n))
    return Rule36Strict(rx_ports.from_array(first, second).flat_map(lambda p: p, False, 2, MERGE_PREFETCH))


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


def shuffled_publisher(n: int) -> Rule36Strict:
    """Every subscriber gets the n elements in an order of its own."""
    return Rule36Strict(PullingIterable(_Shuffled(n)))
