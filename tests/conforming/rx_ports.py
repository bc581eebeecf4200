"""RxJava 3's ``Flowable`` operators, ported line by line, and the publishers its TCK classes build.

RxJava runs the JVM TCK on one construction per operator
(``src/test/java/io/reactivex/rxjava3/tck/*TckTest.java``); the factories at the end of this
module build the same ones (``createPublisher(n)``, ``createFailedPublisher()`` and the
``maxElementsFromPublisher()`` they declare, through ``BaseTck``). The operators keep RxJava's
algorithms: drain loops on a work-in-progress counter, request accounting capped at
``Long.MAX_VALUE`` (``BackpressureHelper``), a ``ConditionalSubscriber`` path (``filter`` makes
``range`` count only the elements it accepted), synchronous and asynchronous fusion where the
original negotiates it (``observeOn`` polls ``range`` directly, ``merge`` polls ``fromIterable``),
the subscription arbiter of ``concat``, the capped requests of ``take``. ``Flowable.subscribe``
wraps a foreign subscriber in ``StrictSubscriber`` as RxJava does: it is what answers
``request(n <= 0)`` with ``on_error`` (rule 3.9), since the operators themselves only report it to
the global error handler (``RxJavaPlugins.onError``, a log record here).

Java's atomics become small lock-guarded cells; ``Schedulers.single()`` is one shared daemon
thread. Paths in the docstrings are under ``src/main/java/io/reactivex/rxjava3/`` of
ReactiveX/RxJava (3.x).
"""

from __future__ import annotations

import collections
import itertools
import logging
import threading
from collections.abc import Callable
from typing import Any

from rstck.api import MAX_DEMAND

_log = logging.getLogger(__name__)

NONE, SYNC, ASYNC, ANY, BOUNDARY = 0, 1, 2, 3, 4
BUFFER_SIZE = 128  # Flowable.bufferSize()
INT_MAX = 2**31 - 1


def plugins_on_error(exc: BaseException) -> None:
    """``RxJavaPlugins.onError``: an undeliverable error goes to the global handler, not a subscriber."""
    _log.info("undeliverable: %s: %s", type(exc).__name__, exc)


# -- java.util.concurrent.atomic ----------------------------------------------------------------


class AtomicLong:
    """``AtomicLong``/``AtomicInteger``: one lock per cell makes each read-modify-write atomic."""

    __slots__ = ("_lock", "_v")

    def __init__(self, value: int = 0) -> None:
        self._v = value
        self._lock = threading.Lock()

    def get(self) -> int:
        return self._v

    def set(self, value: int) -> None:
        self._v = value

    lazy_set = set

    def compare_and_set(self, expect: int, update: int) -> bool:
        with self._lock:
            if self._v != expect:
                return False
            self._v = update
            return True

    def get_and_set(self, value: int) -> int:
        with self._lock:
            old, self._v = self._v, value
            return old

    def get_and_add(self, delta: int) -> int:
        with self._lock:
            old = self._v
            self._v = old + delta
            return old

    def add_and_get(self, delta: int) -> int:
        with self._lock:
            self._v += delta
            return self._v

    def get_and_increment(self) -> int:
        return self.get_and_add(1)

    def increment_and_get(self) -> int:
        return self.add_and_get(1)

    def decrement_and_get(self) -> int:
        return self.add_and_get(-1)


AtomicInteger = AtomicLong


class AtomicReference:
    """``AtomicReference``: compare-and-set by identity."""

    __slots__ = ("_lock", "_v")

    def __init__(self, value: Any = None) -> None:
        self._v = value
        self._lock = threading.Lock()

    def get(self) -> Any:
        return self._v

    def set(self, value: Any) -> None:
        self._v = value

    lazy_set = set

    def compare_and_set(self, expect: Any, update: Any) -> bool:
        with self._lock:
            if self._v is not expect:
                return False
            self._v = update
            return True

    def get_and_set(self, value: Any) -> Any:
        with self._lock:
            old, self._v = self._v, value
            return old


# -- internal/util/BackpressureHelper.java --------------------------------------------------------


def add_cap(a: int, b: int) -> int:
    """``BackpressureHelper.addCap``: a sum past ``Long.MAX_VALUE`` is ``Long.MAX_VALUE``."""
    u = a + b
    return min(u, MAX_DEMAND)


def bp_add(requested: AtomicLong, n: int) -> int:
    """``BackpressureHelper.add``: adds ``n`` capped, returns the amount before."""
    while True:
        r = requested.get()
        if r == MAX_DEMAND:
            return MAX_DEMAND
        if requested.compare_and_set(r, add_cap(r, n)):
            return r


# -- internal/util/ExceptionHelper.java, AtomicThrowable.java, HalfSerializer.java ----------------


class CompositeException(Exception):
    """``CompositeException``: several errors at once."""


class _Termination(Exception):
    pass


TERMINATED = _Termination("No further exceptions")


class AtomicThrowable(AtomicReference):
    """``AtomicThrowable``: errors gathered until terminated, then delivered at most once."""

    def try_add_throwable(self, t: BaseException) -> bool:
        while True:
            current = self.get()
            if current is TERMINATED:
                return False
            update = t if current is None else CompositeException(current, t)
            if self.compare_and_set(current, update):
                return True

    def try_add_throwable_or_report(self, t: BaseException) -> bool:
        if self.try_add_throwable(t):
            return True
        plugins_on_error(t)
        return False

    def terminate(self) -> Any:
        current = self.get()
        if current is not TERMINATED:
            current = self.get_and_set(TERMINATED)
        return current

    def try_terminate_and_report(self) -> None:
        ex = self.terminate()
        if ex is not None and ex is not TERMINATED:
            plugins_on_error(ex)

    def try_terminate_consumer(self, consumer: Any) -> None:
        ex = self.terminate()
        if ex is None:
            consumer.on_complete()
        elif ex is not TERMINATED:
            consumer.on_error(ex)


def half_on_next(subscriber: Any, value: Any, wip: AtomicLong, errors: AtomicThrowable) -> bool:
    if wip.get() == 0 and wip.compare_and_set(0, 1):
        subscriber.on_next(value)
        if wip.decrement_and_get() == 0:
            return True
        errors.try_terminate_consumer(subscriber)
    return False


def half_on_error(subscriber: Any, ex: BaseException, wip: AtomicLong, errors: AtomicThrowable) -> None:
    if errors.try_add_throwable_or_report(ex) and wip.get_and_increment() == 0:
        errors.try_terminate_consumer(subscriber)


def half_on_complete(subscriber: Any, wip: AtomicLong, errors: AtomicThrowable) -> None:
    if wip.get_and_increment() == 0:
        errors.try_terminate_consumer(subscriber)


# -- internal/subscriptions/SubscriptionHelper.java, EmptySubscription.java ----------------------


class _Cancelled:
    """``SubscriptionHelper.CANCELLED``."""

    def request(self, n: int) -> None:
        pass

    def cancel(self) -> None:
        pass


CANCELLED = _Cancelled()


def validate_request(n: int) -> bool:
    """``SubscriptionHelper.validate(long)``: a non-positive request goes to the error handler."""
    if n <= 0:
        plugins_on_error(ValueError(f"n > 0 required but it was {n}"))
        return False
    return True


def validate_subscription(current: Any, nxt: Any) -> bool:
    if nxt is None:
        plugins_on_error(TypeError("next is null"))
        return False
    if current is not None:
        nxt.cancel()
        plugins_on_error(RuntimeError("Subscription already set!"))
        return False
    return True


def set_once(field: AtomicReference, s: Any) -> bool:
    if s is None:
        raise TypeError("s is null")
    if not field.compare_and_set(None, s):
        s.cancel()
        if field.get() is not CANCELLED:
            plugins_on_error(RuntimeError("Subscription already set!"))
        return False
    return True


def sh_cancel(field: AtomicReference) -> bool:
    current = field.get()
    if current is not CANCELLED:
        current = field.get_and_set(CANCELLED)
        if current is not CANCELLED:
            if current is not None:
                current.cancel()
            return True
    return False


def deferred_set_once(field: AtomicReference, requested: AtomicLong, s: Any) -> bool:
    if set_once(field, s):
        r = requested.get_and_set(0)
        if r != 0:
            s.request(r)
        return True
    return False


def deferred_request(field: AtomicReference, requested: AtomicLong, n: int) -> None:
    s = field.get()
    if s is not None:
        s.request(n)
    elif validate_request(n):
        bp_add(requested, n)
        s = field.get()
        if s is not None:
            r = requested.get_and_set(0)
            if r != 0:
                s.request(r)


class EmptySubscription:
    """``EmptySubscription.INSTANCE``: a queue that is always empty, fusable in ASYNC mode."""

    def request(self, n: int) -> None:
        validate_request(n)

    def cancel(self) -> None:
        pass

    def request_fusion(self, mode: int) -> int:
        return mode & ASYNC

    def poll(self) -> Any:
        return None

    def is_empty(self) -> bool:
        return True

    def clear(self) -> None:
        pass

    @staticmethod
    def error(e: BaseException, s: Any) -> None:
        s.on_subscribe(EMPTY_SUBSCRIPTION)
        s.on_error(e)

    @staticmethod
    def complete(s: Any) -> None:
        s.on_subscribe(EMPTY_SUBSCRIPTION)
        s.on_complete()


EMPTY_SUBSCRIPTION = EmptySubscription()


class ScalarSubscription(AtomicLong):
    """``internal/subscriptions/ScalarSubscription.java``: one value on the first valid request."""

    NO_REQUEST, REQUESTED, CANCELLED = 0, 1, 2

    def __init__(self, subscriber: Any, value: Any) -> None:
        super().__init__()
        self.subscriber = subscriber
        self.value = value

    def request(self, n: int) -> None:
        if not validate_request(n):
            return
        if self.compare_and_set(self.NO_REQUEST, self.REQUESTED):
            s = self.subscriber
            s.on_next(self.value)
            if self.get() != self.CANCELLED:
                s.on_complete()

    def cancel(self) -> None:
        self.lazy_set(self.CANCELLED)

    def request_fusion(self, mode: int) -> int:
        return mode & SYNC

    def poll(self) -> Any:
        if self.get() == self.NO_REQUEST:
            self.lazy_set(self.REQUESTED)
            return self.value
        return None

    def is_empty(self) -> bool:
        return self.get() != self.NO_REQUEST

    def clear(self) -> None:
        self.lazy_set(1)


# -- queues ---------------------------------------------------------------------------------------


class SpscArrayQueue:
    """``SpscArrayQueue``: bounded to the next power of two; ``offer`` refuses when full."""

    def __init__(self, capacity: int) -> None:
        self._cap = 1 << max(0, (capacity - 1).bit_length())
        self._q: collections.deque[Any] = collections.deque()

    def offer(self, v: Any) -> bool:
        if len(self._q) >= self._cap:
            return False
        self._q.append(v)
        return True

    def poll(self) -> Any:
        try:
            return self._q.popleft()
        except IndexError:
            return None

    def is_empty(self) -> bool:
        return not self._q

    def clear(self) -> None:
        self._q.clear()


class SpscLinkedArrayQueue(SpscArrayQueue):
    """``SpscLinkedArrayQueue``: unbounded."""

    def __init__(self, capacity: int) -> None:
        super().__init__(capacity)
        self._cap = 1 << 62


class QueueOverflowException(RuntimeError):
    def __init__(self) -> None:
        super().__init__("Queue is full?!")


# -- the Flowable base ----------------------------------------------------------------------------


class FlowableSubscriber:
    """Marker of RxJava's own subscribers: ``Flowable.subscribe`` wraps every other one."""


class ConditionalSubscriber(FlowableSubscriber):
    """A subscriber with ``try_on_next``: upstream counts only the elements it accepted."""

    def on_subscribe(self, s: Any) -> None:
        raise NotImplementedError

    def try_on_next(self, t: Any) -> bool:
        raise NotImplementedError


class ScalarSupplier:
    """A source known at assembly to hold at most one value (``just``, ``empty``)."""

    def get(self) -> Any:
        raise NotImplementedError


class Flowable:
    """``core/Flowable.java``: subscribe, and the assembly shortcuts of the operators used here."""

    def subscribe(self, subscriber: Any) -> None:
        if isinstance(subscriber, FlowableSubscriber):
            self.subscribe_flowable(subscriber)
        else:
            if subscriber is None:
                raise TypeError("subscriber is null")
            self.subscribe_flowable(StrictSubscriber(subscriber))

    def subscribe_flowable(self, subscriber: Any) -> None:
        if subscriber is None:
            raise TypeError("subscriber is null")
        try:
            self.subscribe_actual(subscriber)
        except TypeError:
            raise
        except Exception as e:
            plugins_on_error(e)
            raise TypeError("Actually not, but can't throw other exceptions due to RS") from e

    def subscribe_actual(self, s: Any) -> None:
        raise NotImplementedError

    # operators
    def filter(self, predicate: Callable[[Any], bool]) -> Flowable:
        return FlowableFilter(self, predicate)

    def map(self, mapper: Callable[[Any], Any]) -> Flowable:
        return FlowableMap(self, mapper)

    def take(self, count: int) -> Flowable:
        if count < 0:
            raise ValueError(f"count >= 0 required but it was {count}")
        return FlowableTake(self, count)

    def skip(self, count: int) -> Flowable:
        if count < 0:
            raise ValueError(f"count >= 0 expected but it was {count}")
        if count == 0:
            return self
        return FlowableSkip(self, count)

    def hide(self) -> Flowable:
        return FlowableHide(self)

    def observe_on(self, scheduler: SingleScheduler, delay_error: bool = False,
                   buffer_size: int = BUFFER_SIZE) -> Flowable:
        return FlowableObserveOn(self, scheduler, delay_error, buffer_size)

    def flat_map(self, mapper: Callable[[Any], Any], delay_errors: bool = False,
                 max_concurrency: int = BUFFER_SIZE, buffer_size: int = BUFFER_SIZE) -> Flowable:
        if isinstance(self, ScalarSupplier):
            v = self.get()
            if v is None:
                return empty()
            return ScalarXMapFlowable(v, mapper)
        return FlowableFlatMap(self, mapper, delay_errors, max_concurrency, buffer_size)


# -- internal/subscribers/StrictSubscriber.java ---------------------------------------------------


class StrictSubscriber(FlowableSubscriber):
    """What ``Flowable.subscribe`` puts in front of a foreign subscriber: it enforces 3.9 and 2.12,
    serializes the terminal signal with ``on_next`` (``HalfSerializer``) and holds requests made
    before the upstream subscription arrives (``SubscriptionHelper.deferredRequest``)."""

    def __init__(self, downstream: Any) -> None:
        self.downstream = downstream
        self.wip = AtomicInteger()
        self.error = AtomicThrowable()
        self.requested = AtomicLong()
        self.upstream = AtomicReference()
        self.once = AtomicReference(False)
        self.done = False

    def request(self, n: int) -> None:
        if n <= 0:
            self.cancel()
            self.on_error(ValueError(f"§3.9 violated: positive request amount required but it was {n}"))
        else:
            deferred_request(self.upstream, self.requested, n)

    def cancel(self) -> None:
        if not self.done:
            sh_cancel(self.upstream)

    def on_subscribe(self, s: Any) -> None:
        if self.once.compare_and_set(False, True):
            self.downstream.on_subscribe(self)
            deferred_set_once(self.upstream, self.requested, s)
        else:
            s.cancel()
            self.cancel()
            self.on_error(RuntimeError("§2.12 violated: onSubscribe must be called at most once"))

    def on_next(self, t: Any) -> None:
        half_on_next(self.downstream, t, self.wip, self.error)

    def on_error(self, t: BaseException) -> None:
        self.done = True
        half_on_error(self.downstream, t, self.wip, self.error)

    def on_complete(self) -> None:
        self.done = True
        half_on_complete(self.downstream, self.wip, self.error)


# -- sources --------------------------------------------------------------------------------------


class FlowableEmpty(Flowable, ScalarSupplier):
    """``internal/operators/flowable/FlowableEmpty.java``."""

    def subscribe_actual(self, s: Any) -> None:
        EmptySubscription.complete(s)

    def get(self) -> Any:
        return None


_EMPTY = FlowableEmpty()


def empty() -> Flowable:
    return _EMPTY


class FlowableJust(Flowable, ScalarSupplier):
    """``internal/operators/flowable/FlowableJust.java``."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def subscribe_actual(self, s: Any) -> None:
        s.on_subscribe(ScalarSubscription(s, self.value))

    def get(self) -> Any:
        return self.value


def just(item: Any) -> Flowable:
    if item is None:
        raise TypeError("item is null")
    return FlowableJust(item)


class FlowableError(Flowable):
    """``internal/operators/flowable/FlowableError.java``."""

    def __init__(self, supplier: Callable[[], BaseException]) -> None:
        self.supplier = supplier

    def subscribe_actual(self, s: Any) -> None:
        try:
            error = self.supplier()
            if error is None:
                raise TypeError("Callable returned a null Throwable.")
        except Exception as t:
            error = t
        EmptySubscription.error(error, s)


def error(exc: BaseException) -> Flowable:
    return FlowableError(lambda: exc)


class _BaseRangeSubscription(AtomicLong):
    """``FlowableRange.BaseRangeSubscription``: the requested amount is the AtomicLong itself."""

    def __init__(self, index: int, end: int) -> None:
        super().__init__()
        self.index = index
        self.end = end
        self.cancelled = False

    def request_fusion(self, mode: int) -> int:
        return mode & SYNC

    def poll(self) -> Any:
        i = self.index
        if i == self.end:
            return None
        self.index = i + 1
        return i

    def is_empty(self) -> bool:
        return self.index == self.end

    def clear(self) -> None:
        self.index = self.end

    def request(self, n: int) -> None:
        if validate_request(n) and bp_add(self, n) == 0:
            if n == MAX_DEMAND:
                self.fast_path()
            else:
                self.slow_path(n)

    def cancel(self) -> None:
        self.cancelled = True

    def fast_path(self) -> None:
        raise NotImplementedError

    def slow_path(self, r: int) -> None:
        raise NotImplementedError


class RangeSubscription(_BaseRangeSubscription):
    """``FlowableRange.RangeSubscription``."""

    def __init__(self, actual: Any, index: int, end: int) -> None:
        super().__init__(index, end)
        self.downstream = actual

    def fast_path(self) -> None:
        f, a = self.end, self.downstream
        for i in range(self.index, f):
            if self.cancelled:
                return
            a.on_next(i)
        if self.cancelled:
            return
        a.on_complete()

    def slow_path(self, r: int) -> None:
        e, f, i, a = 0, self.end, self.index, self.downstream
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
            r = self.get()
            if e == r:
                self.index = i
                r = self.add_and_get(-e)
                if r == 0:
                    return
                e = 0


class RangeConditionalSubscription(_BaseRangeSubscription):
    """``FlowableRange.RangeConditionalSubscription``: a refused element costs no demand."""

    def __init__(self, actual: Any, index: int, end: int) -> None:
        super().__init__(index, end)
        self.downstream = actual

    def fast_path(self) -> None:
        f, a = self.end, self.downstream
        for i in range(self.index, f):
            if self.cancelled:
                return
            a.try_on_next(i)
        if self.cancelled:
            return
        a.on_complete()

    def slow_path(self, r: int) -> None:
        e, f, i, a = 0, self.end, self.index, self.downstream
        while True:
            while e != r and i != f:
                if self.cancelled:
                    return
                if a.try_on_next(i):
                    e += 1
                i += 1
            if i == f:
                if not self.cancelled:
                    a.on_complete()
                return
            r = self.get()
            if e == r:
                self.index = i
                r = self.add_and_get(-e)
                if r == 0:
                    return
                e = 0


class FlowableRange(Flowable):
    """``internal/operators/flowable/FlowableRange.java``."""

    def __init__(self, start: int, count: int) -> None:
        self.start = start
        self.end = start + count

    def subscribe_actual(self, s: Any) -> None:
        if isinstance(s, ConditionalSubscriber):
            s.on_subscribe(RangeConditionalSubscription(s, self.start, self.end))
        else:
            s.on_subscribe(RangeSubscription(s, self.start, self.end))


def range_(start: int, count: int) -> Flowable:
    """``Flowable.range``: 0 elements is ``empty()``, one is ``just(start)``."""
    if count < 0:
        raise ValueError(f"count >= 0 required but it was {count}")
    if count == 0:
        return empty()
    if count == 1:
        return just(start)
    if start + (count - 1) > INT_MAX:
        raise ValueError("Integer overflow")
    return FlowableRange(start, count)


class _BaseIteratorSubscription(AtomicLong):
    """``FlowableFromIterable.BaseRangeSubscription`` over a Java-style iterator
    (``has_next()``/``next()``)."""

    def __init__(self, it: Any) -> None:
        super().__init__()
        self.iterator: Any = it
        self.cancelled = False
        self.once = False

    def request_fusion(self, mode: int) -> int:
        return mode & SYNC

    def poll(self) -> Any:
        if self.iterator is None:
            return None
        if not self.once:
            self.once = True
        elif not self.iterator.has_next():
            return None
        v = self.iterator.next()
        if v is None:
            raise TypeError("Iterator.next() returned a null value")
        return v

    def is_empty(self) -> bool:
        it = self.iterator
        if it is not None:
            if not self.once or it.has_next():
                return False
            self.clear()
        return True

    def clear(self) -> None:
        self.iterator = None

    def request(self, n: int) -> None:
        if validate_request(n) and bp_add(self, n) == 0:
            if n == MAX_DEMAND:
                self.fast_path()
            else:
                self.slow_path(n)

    def cancel(self) -> None:
        self.cancelled = True

    def fast_path(self) -> None:
        raise NotImplementedError

    def slow_path(self, r: int) -> None:
        raise NotImplementedError


class IteratorSubscription(_BaseIteratorSubscription):
    """``FlowableFromIterable.IteratorSubscription``: completes as soon as ``hasNext()`` is false."""

    def __init__(self, actual: Any, it: Any) -> None:
        super().__init__(it)
        self.downstream = actual

    def fast_path(self) -> None:
        it, a = self.iterator, self.downstream
        while True:
            if self.cancelled:
                return
            try:
                t = it.next()
            except Exception as ex:
                a.on_error(ex)
                return
            if self.cancelled:
                return
            if t is None:
                a.on_error(TypeError("Iterator.next() returned a null value"))
                return
            a.on_next(t)
            if self.cancelled:
                return
            try:
                b = it.has_next()
            except Exception as ex:
                a.on_error(ex)
                return
            if not b:
                if not self.cancelled:
                    a.on_complete()
                return

    def slow_path(self, r: int) -> None:
        e, it, a = 0, self.iterator, self.downstream
        while True:
            while e != r:
                if self.cancelled:
                    return
                try:
                    t = it.next()
                except Exception as ex:
                    a.on_error(ex)
                    return
                if self.cancelled:
                    return
                if t is None:
                    a.on_error(TypeError("Iterator.next() returned a null value"))
                    return
                a.on_next(t)
                if self.cancelled:
                    return
                try:
                    b = it.has_next()
                except Exception as ex:
                    a.on_error(ex)
                    return
                if not b:
                    if not self.cancelled:
                        a.on_complete()
                    return
                e += 1
            r = self.get()
            if e == r:
                r = self.add_and_get(-e)
                if r == 0:
                    return
                e = 0


class IteratorConditionalSubscription(_BaseIteratorSubscription):
    """``FlowableFromIterable.IteratorConditionalSubscription``."""

    def __init__(self, actual: Any, it: Any) -> None:
        super().__init__(it)
        self.downstream = actual

    def fast_path(self) -> None:
        it, a = self.iterator, self.downstream
        while True:
            if self.cancelled:
                return
            try:
                t = it.next()
            except Exception as ex:
                a.on_error(ex)
                return
            if self.cancelled:
                return
            if t is None:
                a.on_error(TypeError("Iterator.next() returned a null value"))
                return
            a.try_on_next(t)
            if self.cancelled:
                return
            try:
                b = it.has_next()
            except Exception as ex:
                a.on_error(ex)
                return
            if not b:
                if not self.cancelled:
                    a.on_complete()
                return

    def slow_path(self, r: int) -> None:
        e, it, a = 0, self.iterator, self.downstream
        while True:
            while e != r:
                if self.cancelled:
                    return
                try:
                    t = it.next()
                except Exception as ex:
                    a.on_error(ex)
                    return
                if self.cancelled:
                    return
                if t is None:
                    a.on_error(TypeError("Iterator.next() returned a null value"))
                    return
                b = a.try_on_next(t)
                if self.cancelled:
                    return
                try:
                    has_next = it.has_next()
                except Exception as ex:
                    a.on_error(ex)
                    return
                if not has_next:
                    if not self.cancelled:
                        a.on_complete()
                    return
                if b:
                    e += 1
            r = self.get()
            if e == r:
                r = self.add_and_get(-e)
                if r == 0:
                    return
                e = 0


class FlowableFromIterable(Flowable):
    """``internal/operators/flowable/FlowableFromIterable.java``: an empty iterator completes at once."""

    def __init__(self, source: Any) -> None:
        self.source = source

    def subscribe_actual(self, s: Any) -> None:
        try:
            it = self.source.iterator()
        except Exception as e:
            EmptySubscription.error(e, s)
            return
        try:
            has_next = it.has_next()
        except Exception as e:
            EmptySubscription.error(e, s)
            return
        if not has_next:
            EmptySubscription.complete(s)
            return
        if isinstance(s, ConditionalSubscriber):
            s.on_subscribe(IteratorConditionalSubscription(s, it))
        else:
            s.on_subscribe(IteratorSubscription(s, it))


def from_iterable(source: Any) -> Flowable:
    if source is None:
        raise TypeError("source is null")
    return FlowableFromIterable(source)


class _BaseArraySubscription(AtomicLong):
    """``FlowableFromArray.BaseArraySubscription``."""

    def __init__(self, array: tuple[Any, ...]) -> None:
        super().__init__()
        self.array = array
        self.index = 0
        self.cancelled = False

    def request_fusion(self, mode: int) -> int:
        return mode & SYNC

    def poll(self) -> Any:
        i = self.index
        if i == len(self.array):
            return None
        self.index = i + 1
        v = self.array[i]
        if v is None:
            raise TypeError("array element is null")
        return v

    def is_empty(self) -> bool:
        return self.index == len(self.array)

    def clear(self) -> None:
        self.index = len(self.array)

    def request(self, n: int) -> None:
        if validate_request(n) and bp_add(self, n) == 0:
            if n == MAX_DEMAND:
                self.fast_path()
            else:
                self.slow_path(n)

    def cancel(self) -> None:
        self.cancelled = True

    def fast_path(self) -> None:
        raise NotImplementedError

    def slow_path(self, r: int) -> None:
        raise NotImplementedError


class ArraySubscription(_BaseArraySubscription):
    """``FlowableFromArray.ArraySubscription``."""

    def __init__(self, actual: Any, array: tuple[Any, ...]) -> None:
        super().__init__(array)
        self.downstream = actual

    def fast_path(self) -> None:
        arr, a = self.array, self.downstream
        for i in range(self.index, len(arr)):
            if self.cancelled:
                return
            t = arr[i]
            if t is None:
                a.on_error(TypeError(f"The element at index {i} is null"))
                return
            a.on_next(t)
        if self.cancelled:
            return
        a.on_complete()

    def slow_path(self, r: int) -> None:
        e, arr, f, i, a = 0, self.array, len(self.array), self.index, self.downstream
        while True:
            while e != r and i != f:
                if self.cancelled:
                    return
                t = arr[i]
                if t is None:
                    a.on_error(TypeError(f"The element at index {i} is null"))
                    return
                a.on_next(t)
                e += 1
                i += 1
            if i == f:
                if not self.cancelled:
                    a.on_complete()
                return
            r = self.get()
            if e == r:
                self.index = i
                r = self.add_and_get(-e)
                if r == 0:
                    return
                e = 0


class FlowableFromArray(Flowable):
    """``internal/operators/flowable/FlowableFromArray.java`` (its conditional path is not used here)."""

    def __init__(self, array: tuple[Any, ...]) -> None:
        self.array = array

    def subscribe_actual(self, s: Any) -> None:
        s.on_subscribe(ArraySubscription(s, self.array))


def from_array(*items: Any) -> Flowable:
    if len(items) == 0:
        return empty()
    if len(items) == 1:
        return just(items[0])
    return FlowableFromArray(items)


# -- intermediate operators -----------------------------------------------------------------------


class BasicFuseableSubscriber(FlowableSubscriber):
    """``internal/subscribers/BasicFuseableSubscriber.java``: the shared shape of map and filter."""

    def __init__(self, downstream: Any) -> None:
        self.downstream = downstream
        self.upstream: Any = None
        self.qs: Any = None
        self.done = False
        self.source_mode = NONE

    def on_subscribe(self, s: Any) -> None:
        if validate_subscription(self.upstream, s):
            self.upstream = s
            if hasattr(s, "request_fusion"):
                self.qs = s
            self.downstream.on_subscribe(self)

    def on_error(self, t: BaseException) -> None:
        if self.done:
            plugins_on_error(t)
            return
        self.done = True
        self.downstream.on_error(t)

    def fail(self, t: BaseException) -> None:
        self.upstream.cancel()
        self.on_error(t)

    def on_complete(self) -> None:
        if self.done:
            return
        self.done = True
        self.downstream.on_complete()

    def transitive_boundary_fusion(self, mode: int) -> int:
        qs = self.qs
        if qs is not None and (mode & BOUNDARY) == 0:
            m: int = qs.request_fusion(mode)
            if m != NONE:
                self.source_mode = m
            return m
        return NONE

    def request_fusion(self, mode: int) -> int:
        return self.transitive_boundary_fusion(mode)

    def request(self, n: int) -> None:
        self.upstream.request(n)

    def cancel(self) -> None:
        self.upstream.cancel()

    def is_empty(self) -> bool:
        return bool(self.qs.is_empty())

    def clear(self) -> None:
        self.qs.clear()


class FilterSubscriber(BasicFuseableSubscriber, ConditionalSubscriber):
    """``FlowableFilter.FilterSubscriber``: under a plain upstream a dropped element is replaced
    by ``request(1)``; under a conditional one (``range``) ``try_on_next`` says it was dropped."""

    def __init__(self, actual: Any, predicate: Callable[[Any], bool]) -> None:
        super().__init__(actual)
        self.filter = predicate

    def on_next(self, t: Any) -> None:
        if not self.try_on_next(t):
            self.upstream.request(1)

    def try_on_next(self, t: Any) -> bool:
        if self.done:
            return False
        if self.source_mode != NONE:
            self.downstream.on_next(None)
            return True
        try:
            b = self.filter(t)
        except Exception as e:
            self.fail(e)
            return True
        if b:
            self.downstream.on_next(t)
        return b

    def poll(self) -> Any:
        qs, f = self.qs, self.filter
        while True:
            t = qs.poll()
            if t is None:
                return None
            if f(t):
                return t
            if self.source_mode == ASYNC:
                qs.request(1)


class FlowableFilter(Flowable):
    """``internal/operators/flowable/FlowableFilter.java`` (the downstream is never conditional here)."""

    def __init__(self, source: Flowable, predicate: Callable[[Any], bool]) -> None:
        self.source = source
        self.predicate = predicate

    def subscribe_actual(self, s: Any) -> None:
        self.source.subscribe(FilterSubscriber(s, self.predicate))


class MapSubscriber(BasicFuseableSubscriber):
    """``FlowableMap.MapSubscriber``."""

    def __init__(self, actual: Any, mapper: Callable[[Any], Any]) -> None:
        super().__init__(actual)
        self.mapper = mapper

    def on_next(self, t: Any) -> None:
        if self.done:
            return
        if self.source_mode != NONE:
            self.downstream.on_next(None)
            return
        try:
            v = self.mapper(t)
            if v is None:
                raise TypeError("The mapper function returned a null value.")
        except Exception as ex:
            self.fail(ex)
            return
        self.downstream.on_next(v)

    def poll(self) -> Any:
        t = self.qs.poll()
        if t is None:
            return None
        v = self.mapper(t)
        if v is None:
            raise TypeError("The mapper function returned a null value.")
        return v


class FlowableMap(Flowable):
    """``internal/operators/flowable/FlowableMap.java`` (the downstream is never conditional here)."""

    def __init__(self, source: Flowable, mapper: Callable[[Any], Any]) -> None:
        self.source = source
        self.mapper = mapper

    def subscribe_actual(self, s: Any) -> None:
        self.source.subscribe(MapSubscriber(s, self.mapper))


class TakeSubscriber(AtomicLong, FlowableSubscriber):
    """``FlowableTake.TakeSubscriber``: requests are capped at what is left to take (the
    AtomicLong), and the last element cancels upstream and completes at once."""

    def __init__(self, actual: Any, remaining: int) -> None:
        super().__init__(remaining)
        self.downstream = actual
        self.remaining = remaining
        self.upstream: Any = None

    def on_subscribe(self, s: Any) -> None:
        if validate_subscription(self.upstream, s):
            if self.remaining == 0:
                s.cancel()
                EmptySubscription.complete(self.downstream)
            else:
                self.upstream = s
                self.downstream.on_subscribe(self)

    def on_next(self, t: Any) -> None:
        r = self.remaining
        if r > 0:
            r -= 1
            self.remaining = r
            self.downstream.on_next(t)
            if r == 0:
                self.upstream.cancel()
                self.downstream.on_complete()

    def on_error(self, t: BaseException) -> None:
        if self.remaining > 0:
            self.remaining = 0
            self.downstream.on_error(t)
        else:
            plugins_on_error(t)

    def on_complete(self) -> None:
        if self.remaining > 0:
            self.remaining = 0
            self.downstream.on_complete()

    def request(self, n: int) -> None:
        if validate_request(n):
            while True:
                r = self.get()
                if r == 0:
                    break
                to_request = min(r, n)
                if self.compare_and_set(r, r - to_request):
                    self.upstream.request(to_request)
                    break

    def cancel(self) -> None:
        self.upstream.cancel()


class FlowableTake(Flowable):
    """``internal/operators/flowable/FlowableTake.java``."""

    def __init__(self, source: Flowable, n: int) -> None:
        self.source = source
        self.n = n

    def subscribe_actual(self, s: Any) -> None:
        self.source.subscribe(TakeSubscriber(s, self.n))


class SkipSubscriber(FlowableSubscriber):
    """``FlowableSkip.SkipSubscriber``: requests the elements to skip once, after ``onSubscribe``."""

    def __init__(self, actual: Any, n: int) -> None:
        self.downstream = actual
        self.remaining = n
        self.upstream: Any = None

    def on_subscribe(self, s: Any) -> None:
        if validate_subscription(self.upstream, s):
            n = self.remaining
            self.upstream = s
            self.downstream.on_subscribe(self)
            s.request(n)

    def on_next(self, t: Any) -> None:
        if self.remaining != 0:
            self.remaining -= 1
        else:
            self.downstream.on_next(t)

    def on_error(self, t: BaseException) -> None:
        self.downstream.on_error(t)

    def on_complete(self) -> None:
        self.downstream.on_complete()

    def request(self, n: int) -> None:
        self.upstream.request(n)

    def cancel(self) -> None:
        self.upstream.cancel()


class FlowableSkip(Flowable):
    """``internal/operators/flowable/FlowableSkip.java``."""

    def __init__(self, source: Flowable, n: int) -> None:
        self.source = source
        self.n = n

    def subscribe_actual(self, s: Any) -> None:
        self.source.subscribe(SkipSubscriber(s, self.n))


class HideSubscriber(FlowableSubscriber):
    """``FlowableHide.HideSubscriber``: hides the upstream's identity, so nothing fuses across it."""

    def __init__(self, downstream: Any) -> None:
        self.downstream = downstream
        self.upstream: Any = None

    def request(self, n: int) -> None:
        self.upstream.request(n)

    def cancel(self) -> None:
        self.upstream.cancel()

    def on_subscribe(self, s: Any) -> None:
        if validate_subscription(self.upstream, s):
            self.upstream = s
            self.downstream.on_subscribe(self)

    def on_next(self, t: Any) -> None:
        self.downstream.on_next(t)

    def on_error(self, t: BaseException) -> None:
        self.downstream.on_error(t)

    def on_complete(self) -> None:
        self.downstream.on_complete()


class FlowableHide(Flowable):
    """``internal/operators/flowable/FlowableHide.java``."""

    def __init__(self, source: Flowable) -> None:
        self.source = source

    def subscribe_actual(self, s: Any) -> None:
        self.source.subscribe(HideSubscriber(s))


# -- concat: internal/subscriptions/SubscriptionArbiter.java, FlowableConcatArray.java ------------


class SubscriptionArbiter(AtomicInteger):
    """``SubscriptionArbiter``: one subscription after another, the outstanding demand carried over.

    Calls that find it busy leave their part in the ``missed*`` cells for the drain loop."""

    def __init__(self, cancel_on_replace: bool) -> None:
        super().__init__()
        self.cancel_on_replace = cancel_on_replace
        self.actual: Any = None
        self.requested = 0
        self.missed_subscription = AtomicReference()
        self.missed_requested = AtomicLong()
        self.missed_produced = AtomicLong()
        self.cancelled = False
        self.unbounded = False

    def set_subscription(self, s: Any) -> None:
        if self.cancelled:
            s.cancel()
            return
        if self.get() == 0 and self.compare_and_set(0, 1):
            a = self.actual
            if a is not None and self.cancel_on_replace:
                a.cancel()
            self.actual = s
            r = self.requested
            if self.decrement_and_get() != 0:
                self.drain_loop()
            if r != 0:
                s.request(r)
            return
        a = self.missed_subscription.get_and_set(s)
        if a is not None and self.cancel_on_replace:
            a.cancel()
        self.drain()

    def request(self, n: int) -> None:
        if validate_request(n):
            if self.unbounded:
                return
            if self.get() == 0 and self.compare_and_set(0, 1):
                r = self.requested
                if r != MAX_DEMAND:
                    r = add_cap(r, n)
                    self.requested = r
                    if r == MAX_DEMAND:
                        self.unbounded = True
                a = self.actual
                if self.decrement_and_get() != 0:
                    self.drain_loop()
                if a is not None:
                    a.request(n)
                return
            bp_add(self.missed_requested, n)
            self.drain()

    def produced(self, n: int) -> None:
        if self.unbounded:
            return
        if self.get() == 0 and self.compare_and_set(0, 1):
            r = self.requested
            if r != MAX_DEMAND:
                u = r - n
                if u < 0:
                    plugins_on_error(RuntimeError(f"More produced than requested: {u}"))
                    u = 0
                self.requested = u
            if self.decrement_and_get() == 0:
                return
            self.drain_loop()
            return
        bp_add(self.missed_produced, n)
        self.drain()

    def cancel(self) -> None:
        if not self.cancelled:
            self.cancelled = True
            self.drain()

    def drain(self) -> None:
        if self.get_and_increment() != 0:
            return
        self.drain_loop()

    def drain_loop(self) -> None:
        missed = 1
        request_amount = 0
        request_target: Any = None
        while True:
            ms = self.missed_subscription.get()
            if ms is not None:
                ms = self.missed_subscription.get_and_set(None)
            mr = self.missed_requested.get()
            if mr != 0:
                mr = self.missed_requested.get_and_set(0)
            mp = self.missed_produced.get()
            if mp != 0:
                mp = self.missed_produced.get_and_set(0)
            a = self.actual
            if self.cancelled:
                if a is not None:
                    a.cancel()
                    self.actual = None
                if ms is not None:
                    ms.cancel()
            else:
                r = self.requested
                if r != MAX_DEMAND:
                    u = add_cap(r, mr)
                    if u != MAX_DEMAND:
                        v = u - mp
                        if v < 0:
                            plugins_on_error(RuntimeError(f"More produced than requested: {v}"))
                            v = 0
                        r = v
                    else:
                        r = u
                    self.requested = r
                if ms is not None:
                    if a is not None and self.cancel_on_replace:
                        a.cancel()
                    self.actual = ms
                    if r != 0:
                        request_amount = add_cap(request_amount, r)
                        request_target = ms
                elif a is not None and mr != 0:
                    request_amount = add_cap(request_amount, mr)
                    request_target = a
            missed = self.add_and_get(-missed)
            if missed == 0:
                if request_amount != 0:
                    request_target.request(request_amount)
                return


class ConcatArraySubscriber(SubscriptionArbiter, FlowableSubscriber):
    """``FlowableConcatArray.ConcatArraySubscriber``: each source's ``onComplete`` subscribes to the
    next one, after handing the arbiter what the finished one produced."""

    def __init__(self, sources: tuple[Any, ...], delay_error: bool, downstream: Any) -> None:
        super().__init__(False)
        self.downstream = downstream
        self.sources = sources
        self.delay_error = delay_error
        self.wip = AtomicInteger()
        self.index = 0
        self.errors: list[BaseException] | None = None
        self.produced_count = 0

    def on_subscribe(self, s: Any) -> None:
        self.set_subscription(s)

    def on_next(self, t: Any) -> None:
        self.produced_count += 1
        self.downstream.on_next(t)

    def on_error(self, t: BaseException) -> None:
        if self.delay_error:
            if self.errors is None:
                self.errors = []
            self.errors.append(t)
            self.on_complete()
        else:
            self.downstream.on_error(t)

    def on_complete(self) -> None:
        if self.wip.get_and_increment() == 0:
            sources = self.sources
            n = len(sources)
            i = self.index
            while True:
                if i == n:
                    if self.errors:
                        self.downstream.on_error(
                            self.errors[0] if len(self.errors) == 1 else CompositeException(*self.errors))
                    else:
                        self.downstream.on_complete()
                    return
                p = sources[i]
                if p is None:
                    ex = TypeError("A Publisher entry is null")
                    if self.delay_error:
                        if self.errors is None:
                            self.errors = []
                        self.errors.append(ex)
                        i += 1
                        continue
                    self.downstream.on_error(ex)
                    return
                r = self.produced_count
                if r != 0:
                    self.produced_count = 0
                    self.produced(r)
                p.subscribe(self)
                i += 1
                self.index = i
                if self.wip.decrement_and_get() == 0:
                    break


class FlowableConcatArray(Flowable):
    """``internal/operators/flowable/FlowableConcatArray.java``."""

    def __init__(self, sources: tuple[Any, ...], delay_error: bool) -> None:
        self.sources = sources
        self.delay_error = delay_error

    def subscribe_actual(self, s: Any) -> None:
        parent = ConcatArraySubscriber(self.sources, self.delay_error, s)
        s.on_subscribe(parent)
        parent.on_complete()


def concat(source1: Any, source2: Any) -> Flowable:
    """``Flowable.concat(a, b)`` is ``concatArray(a, b)``."""
    if source1 is None or source2 is None:
        raise TypeError("source is null")
    return FlowableConcatArray((source1, source2), False)


# -- flatMap / merge: internal/operators/flowable/FlowableFlatMap.java, FlowableScalarXMap.java ---


class ScalarXMapFlowable(Flowable):
    """``FlowableScalarXMap.ScalarXMapFlowable``: ``flatMap`` on a one-value source, at subscribe."""

    def __init__(self, value: Any, mapper: Callable[[Any], Any]) -> None:
        self.value = value
        self.mapper = mapper

    def subscribe_actual(self, s: Any) -> None:
        try:
            other = self.mapper(self.value)
            if other is None:
                raise TypeError("The mapper returned a null Publisher")
        except Exception as e:
            EmptySubscription.error(e, s)
            return
        if isinstance(other, ScalarSupplier):
            try:
                u = other.get()
            except Exception as ex:
                EmptySubscription.error(ex, s)
                return
            if u is None:
                EmptySubscription.complete(s)
                return
            s.on_subscribe(ScalarSubscription(s, u))
        else:
            other.subscribe(s)


class _Inners(tuple):  # type: ignore[type-arg]
    """Two distinct empty arrays, as ``EMPTY`` and ``CANCELLED`` are in Java (``()`` is one object)."""


_INNER_EMPTY: tuple[Any, ...] = _Inners()
_INNER_CANCELLED: tuple[Any, ...] = _Inners()


class InnerSubscriber(AtomicReference, FlowableSubscriber):
    """``FlowableFlatMap.InnerSubscriber``: fuses with a fusable source (SYNC: polled by the
    parent's drain, never requested), else requests ``bufferSize`` and replenishes a quarter."""

    def __init__(self, parent: MergeSubscriber, buffer_size: int, ident: int) -> None:
        super().__init__()
        self.id = ident
        self.parent = parent
        self.buffer_size = buffer_size
        self.limit = buffer_size >> 2
        self.done = False
        self.queue: Any = None
        self.produced = 0
        self.fusion_mode = NONE

    def on_subscribe(self, s: Any) -> None:
        if set_once(self, s):
            if hasattr(s, "request_fusion"):
                m = s.request_fusion(ANY | BOUNDARY)
                if m == SYNC:
                    self.fusion_mode = m
                    self.queue = s
                    self.done = True
                    self.parent.drain()
                    return
                if m == ASYNC:
                    self.fusion_mode = m
                    self.queue = s
            s.request(self.buffer_size)

    def on_next(self, t: Any) -> None:
        if self.fusion_mode != ASYNC:
            self.parent.try_emit(t, self)
        else:
            self.parent.drain()

    def on_error(self, t: BaseException) -> None:
        self.lazy_set(CANCELLED)
        self.parent.inner_error(self, t)

    def on_complete(self) -> None:
        self.done = True
        self.parent.drain()

    def request_more(self, n: int) -> None:
        if self.fusion_mode != SYNC:
            p = self.produced + n
            if p >= self.limit:
                self.produced = 0
                self.get().request(p)
            else:
                self.produced = p

    def dispose(self) -> None:
        sh_cancel(self)


class MergeSubscriber(AtomicInteger, FlowableSubscriber):
    """``FlowableFlatMap.MergeSubscriber``: requests ``maxConcurrency`` sources, emits a scalar
    inner at once when it can (``tryEmitScalar``), queues it otherwise, and replenishes the main
    source by ``scalarLimit`` (half of ``maxConcurrency``) per scalars emitted and by one per
    finished inner; one drain loop (the AtomicInteger) serves downstream."""

    def __init__(self, actual: Any, mapper: Callable[[Any], Any], delay_errors: bool,
                 max_concurrency: int, buffer_size: int) -> None:
        super().__init__()
        self.downstream = actual
        self.mapper = mapper
        self.delay_errors = delay_errors
        self.max_concurrency = max_concurrency
        self.buffer_size = buffer_size
        self.queue: Any = None
        self.done = False
        self.errors = AtomicThrowable()
        self.cancelled = False
        self.subscribers = AtomicReference(_INNER_EMPTY)
        self.requested = AtomicLong()
        self.upstream: Any = None
        self.unique_id = 0
        self.last_id = 0
        self.last_index = 0
        self.scalar_emitted = 0
        self.scalar_limit = max(1, max_concurrency >> 1)

    def on_subscribe(self, s: Any) -> None:
        if validate_subscription(self.upstream, s):
            self.upstream = s
            self.downstream.on_subscribe(self)
            if not self.cancelled:
                s.request(MAX_DEMAND if self.max_concurrency == INT_MAX else self.max_concurrency)

    def on_next(self, t: Any) -> None:
        if self.done:
            return
        try:
            p = self.mapper(t)
            if p is None:
                raise TypeError("The mapper returned a null Publisher")
        except Exception as e:
            self.upstream.cancel()
            self.on_error(e)
            return
        if isinstance(p, ScalarSupplier):
            try:
                u = p.get()
            except Exception as ex:
                self.errors.try_add_throwable_or_report(ex)
                self.drain()
                return
            if u is not None:
                self.try_emit_scalar(u)
            elif self.max_concurrency != INT_MAX and not self.cancelled:
                self.scalar_emitted += 1
                if self.scalar_emitted == self.scalar_limit:
                    self.scalar_emitted = 0
                    self.upstream.request(self.scalar_limit)
        else:
            inner = InnerSubscriber(self, self.buffer_size, self.unique_id)
            self.unique_id += 1
            if self.add_inner(inner):
                p.subscribe(inner)

    def add_inner(self, inner: InnerSubscriber) -> bool:
        while True:
            a = self.subscribers.get()
            if a is _INNER_CANCELLED:
                inner.dispose()
                return False
            if self.subscribers.compare_and_set(a, (*a, inner)):
                return True

    def remove_inner(self, inner: InnerSubscriber) -> None:
        while True:
            a = self.subscribers.get()
            if not a:
                return
            try:
                j = next(i for i, x in enumerate(a) if x is inner)
            except StopIteration:
                return
            b = _INNER_EMPTY if len(a) == 1 else (*a[:j], *a[j + 1:])
            if self.subscribers.compare_and_set(a, b):
                return

    def get_main_queue(self) -> Any:
        q = self.queue
        if q is None:
            q = (SpscLinkedArrayQueue(self.buffer_size) if self.max_concurrency == INT_MAX
                 else SpscArrayQueue(self.max_concurrency))
            self.queue = q
        return q

    def try_emit_scalar(self, value: Any) -> None:
        if self.get() == 0 and self.compare_and_set(0, 1):
            r = self.requested.get()
            q = self.queue
            if r != 0 and (q is None or q.is_empty()):
                self.downstream.on_next(value)
                if r != MAX_DEMAND:
                    self.requested.decrement_and_get()
                if self.max_concurrency != INT_MAX and not self.cancelled:
                    self.scalar_emitted += 1
                    if self.scalar_emitted == self.scalar_limit:
                        self.scalar_emitted = 0
                        self.upstream.request(self.scalar_limit)
            else:
                if q is None:
                    q = self.get_main_queue()
                if not q.offer(value):
                    self.on_error(QueueOverflowException())
            if self.decrement_and_get() == 0:
                return
        else:
            q = self.get_main_queue()
            if not q.offer(value):
                self.on_error(QueueOverflowException())
                return
            if self.get_and_increment() != 0:
                return
        self.drain_loop()

    def try_emit(self, value: Any, inner: InnerSubscriber) -> None:
        if self.get() == 0 and self.compare_and_set(0, 1):
            r = self.requested.get()
            q = inner.queue
            if r != 0 and (q is None or q.is_empty()):
                self.downstream.on_next(value)
                if r != MAX_DEMAND:
                    self.requested.decrement_and_get()
                inner.request_more(1)
            else:
                if q is None:
                    q = SpscArrayQueue(self.buffer_size)
                    inner.queue = q
                if not q.offer(value):
                    self.on_error(QueueOverflowException())
            if self.decrement_and_get() == 0:
                return
        else:
            q = inner.queue
            if q is None:
                q = SpscArrayQueue(self.buffer_size)
                inner.queue = q
            if not q.offer(value):
                self.on_error(QueueOverflowException())
                return
            if self.get_and_increment() != 0:
                return
        self.drain_loop()

    def on_error(self, t: BaseException) -> None:
        if self.done:
            plugins_on_error(t)
            return
        if self.errors.try_add_throwable_or_report(t):
            self.done = True
            if not self.delay_errors:
                for a in self.subscribers.get_and_set(_INNER_CANCELLED):
                    a.dispose()
            self.drain()

    def on_complete(self) -> None:
        if self.done:
            return
        self.done = True
        self.drain()

    def request(self, n: int) -> None:
        if validate_request(n):
            bp_add(self.requested, n)
            self.drain()

    def cancel(self) -> None:
        if not self.cancelled:
            self.cancelled = True
            self.upstream.cancel()
            self.dispose_all()
            if self.get_and_increment() == 0:
                q = self.queue
                if q is not None:
                    q.clear()

    def drain(self) -> None:
        if self.get_and_increment() == 0:
            self.drain_loop()

    def drain_loop(self) -> None:
        child = self.downstream
        missed = 1
        while True:
            if self.check_terminate():
                return
            svq = self.queue
            r = self.requested.get()
            unbounded = r == MAX_DEMAND
            replenish_main = 0
            if svq is not None:
                scalar_emission = 0
                while r != 0:
                    o = svq.poll()
                    if self.check_terminate():
                        return
                    if o is None:
                        break
                    child.on_next(o)
                    replenish_main += 1
                    scalar_emission += 1
                    r -= 1
                if scalar_emission != 0:
                    r = MAX_DEMAND if unbounded else self.requested.add_and_get(-scalar_emission)
            d = self.done
            svq = self.queue
            inner = self.subscribers.get()
            n = len(inner)
            if d and (svq is None or svq.is_empty()) and n == 0:
                self.errors.try_terminate_consumer(self.downstream)
                return
            inner_completed = False
            if n != 0:
                start_id = self.last_id
                index = self.last_index
                if n <= index or inner[index].id != start_id:
                    if n <= index:
                        index = 0
                    j = index
                    for _ in range(n):
                        if inner[j].id == start_id:
                            break
                        j += 1
                        if j == n:
                            j = 0
                    index = j
                    self.last_index = j
                    self.last_id = inner[j].id
                j = index
                i = 0
                while i < n:
                    if self.check_terminate():
                        return
                    is_ = inner[j]
                    o = None
                    failed = False
                    while True:
                        q = is_.queue
                        if q is None:
                            break
                        produced = 0
                        while r != 0:
                            if self.check_terminate():
                                return
                            try:
                                o = q.poll()
                            except Exception as ex:
                                is_.dispose()
                                self.errors.try_add_throwable_or_report(ex)
                                if not self.delay_errors:
                                    self.upstream.cancel()
                                if self.check_terminate():
                                    return
                                self.remove_inner(is_)
                                inner_completed = True
                                failed = True
                                break
                            if o is None:
                                break
                            child.on_next(o)
                            r -= 1
                            produced += 1
                        if failed:
                            break
                        if produced != 0:
                            r = self.requested.add_and_get(-produced) if not unbounded else MAX_DEMAND
                            is_.request_more(produced)
                        if r == 0 or o is None:
                            break
                    if failed:  # "i++; continue sourceLoop": the same j, one fewer turn
                        i += 2
                        continue
                    inner_done = is_.done
                    inner_queue = is_.queue
                    if inner_done and (inner_queue is None or inner_queue.is_empty()):
                        self.remove_inner(is_)
                        if self.check_terminate():
                            return
                        replenish_main += 1
                        inner_completed = True
                    if r == 0:
                        break
                    j += 1
                    if j == n:
                        j = 0
                    i += 1
                self.last_index = j
                self.last_id = inner[j].id
            if replenish_main != 0 and not self.cancelled:
                self.upstream.request(replenish_main)
            if inner_completed:
                continue
            missed = self.add_and_get(-missed)
            if missed == 0:
                break

    def check_terminate(self) -> bool:
        if self.cancelled:
            self.clear_scalar_queue()
            return True
        if not self.delay_errors and self.errors.get() is not None:
            self.clear_scalar_queue()
            self.errors.try_terminate_consumer(self.downstream)
            return True
        return False

    def clear_scalar_queue(self) -> None:
        q = self.queue
        if q is not None:
            q.clear()

    def dispose_all(self) -> None:
        a = self.subscribers.get_and_set(_INNER_CANCELLED)
        if a is not _INNER_CANCELLED:
            for inner in a:
                inner.dispose()
            self.errors.try_terminate_and_report()

    def inner_error(self, inner: InnerSubscriber, t: BaseException) -> None:
        if self.errors.try_add_throwable_or_report(t):
            inner.done = True
            if not self.delay_errors:
                self.upstream.cancel()
                for a in self.subscribers.get_and_set(_INNER_CANCELLED):
                    a.dispose()
            self.drain()


class FlowableFlatMap(Flowable):
    """``internal/operators/flowable/FlowableFlatMap.java``."""

    def __init__(self, source: Flowable, mapper: Callable[[Any], Any], delay_errors: bool,
                 max_concurrency: int, buffer_size: int) -> None:
        self.source = source
        self.mapper = mapper
        self.delay_errors = delay_errors
        self.max_concurrency = max_concurrency
        self.buffer_size = buffer_size

    def subscribe_actual(self, s: Any) -> None:
        # FlowableScalarXMap.tryScalarXMapSubscribe applies to a Supplier source only, which the
        # assembly in Flowable.flat_map has already turned into a ScalarXMapFlowable.
        self.source.subscribe(MergeSubscriber(s, self.mapper, self.delay_errors,
                                              self.max_concurrency, self.buffer_size))


def merge(source1: Any, source2: Any) -> Flowable:
    """``Flowable.merge(a, b)`` is ``fromArray(a, b).flatMap(identity, false, 2)``."""
    if source1 is None or source2 is None:
        raise TypeError("source is null")
    return from_array(source1, source2).flat_map(lambda p: p, False, 2)


# -- observeOn: internal/schedulers/SingleScheduler.java, FlowableObserveOn.java ------------------


class SingleScheduler:
    """``Schedulers.single()``: one thread shared by every worker, running tasks in order."""

    _counter = itertools.count(1)

    def __init__(self, name: str = "RxSingleScheduler") -> None:
        self._tasks: collections.deque[Callable[[], None]] = collections.deque()
        self._ready = threading.Condition()
        self._thread = threading.Thread(
            target=self._loop, name=f"{name}-{next(self._counter)}", daemon=True)
        self._thread.start()

    def submit(self, task: Callable[[], None]) -> None:
        with self._ready:
            self._tasks.append(task)
            self._ready.notify()

    def _loop(self) -> None:
        while True:
            with self._ready:
                while not self._tasks:
                    self._ready.wait()
                task = self._tasks.popleft()
            try:
                task()
            except Exception as ex:  # the executor keeps running, as a ScheduledExecutorService does
                plugins_on_error(ex)
            # ThreadPoolExecutor.runWorker drops the task it ran ("task = null"): an idle thread
            # must not keep the last subscriber alive (rule 3.13).
            del task

    def create_worker(self) -> ScheduledWorker:
        return ScheduledWorker(self)


class ScheduledWorker:
    """``SingleScheduler.ScheduledWorker``: ``dispose`` drops the tasks it has not started."""

    def __init__(self, executor: SingleScheduler) -> None:
        self.executor = executor
        self.disposed = False
        self._lock = threading.Lock()
        self._tasks: set[_ScheduledRunnable] = set()

    def schedule(self, run: Callable[[], None]) -> None:
        if self.disposed:
            return
        sr = _ScheduledRunnable(run, self)
        with self._lock:
            self._tasks.add(sr)
        self.executor.submit(sr.run)

    def dispose(self) -> None:
        if not self.disposed:
            self.disposed = True
            with self._lock:
                tasks, self._tasks = self._tasks, set()
            for t in tasks:
                t.disposed = True

    def remove(self, sr: _ScheduledRunnable) -> None:
        with self._lock:
            self._tasks.discard(sr)


class _ScheduledRunnable:
    def __init__(self, run: Callable[[], None], parent: ScheduledWorker) -> None:
        self._run = run
        self._parent = parent
        self.disposed = False

    def run(self) -> None:
        if self.disposed:
            return
        try:
            self._run()
        finally:
            self._parent.remove(self)


_single: SingleScheduler | None = None
_single_lock = threading.Lock()


def single() -> SingleScheduler:
    global _single
    with _single_lock:
        if _single is None:
            _single = SingleScheduler()
        return _single


class ObserveOnSubscriber(AtomicInteger, FlowableSubscriber):
    """``FlowableObserveOn.BaseObserveOnSubscriber`` + ``ObserveOnSubscriber``: signals hop to the
    worker through a queue. Fused SYNC with its source it polls it directly (``runSync``);
    otherwise it prefetches ``prefetch`` elements and requests ``limit`` (75 % of it) more each
    time that many have been emitted (``runAsync``)."""

    def __init__(self, actual: Any, worker: ScheduledWorker, delay_error: bool, prefetch: int) -> None:
        super().__init__()
        self.downstream = actual
        self.worker = worker
        self.delay_error = delay_error
        self.prefetch = prefetch
        self.requested = AtomicLong()
        self.limit = prefetch - (prefetch >> 2)
        self.upstream: Any = None
        self.queue: Any = None
        self.cancelled = False
        self.done = False
        self.error: BaseException | None = None
        self.source_mode = NONE
        self.produced = 0

    def on_subscribe(self, s: Any) -> None:
        if validate_subscription(self.upstream, s):
            self.upstream = s
            if hasattr(s, "request_fusion"):
                m = s.request_fusion(ANY | BOUNDARY)
                if m == SYNC:
                    self.source_mode = SYNC
                    self.queue = s
                    self.done = True
                    self.downstream.on_subscribe(self)
                    return
                if m == ASYNC:
                    self.source_mode = ASYNC
                    self.queue = s
                    self.downstream.on_subscribe(self)
                    s.request(self.prefetch)
                    return
            self.queue = SpscArrayQueue(self.prefetch)
            self.downstream.on_subscribe(self)
            s.request(self.prefetch)

    def on_next(self, t: Any) -> None:
        if self.done:
            return
        if self.source_mode == ASYNC:
            self.try_schedule()
            return
        if not self.queue.offer(t):
            self.upstream.cancel()
            self.error = QueueOverflowException()
            self.done = True
        self.try_schedule()

    def on_error(self, t: BaseException) -> None:
        if self.done:
            plugins_on_error(t)
            return
        self.error = t
        self.done = True
        self.try_schedule()

    def on_complete(self) -> None:
        if not self.done:
            self.done = True
            self.try_schedule()

    def request(self, n: int) -> None:
        if validate_request(n):
            bp_add(self.requested, n)
            self.try_schedule()

    def cancel(self) -> None:
        if self.cancelled:
            return
        self.cancelled = True
        self.upstream.cancel()
        self.worker.dispose()
        if self.get_and_increment() == 0:
            self.queue.clear()

    def try_schedule(self) -> None:
        if self.get_and_increment() != 0:
            return
        self.worker.schedule(self.run)

    def run(self) -> None:
        if self.source_mode == SYNC:
            self.run_sync()
        else:
            self.run_async()

    def check_terminated(self, d: bool, empty: bool, a: Any) -> bool:
        if self.cancelled:
            self.queue.clear()
            return True
        if d:
            if self.delay_error:
                if empty:
                    self.cancelled = True
                    e = self.error
                    if e is not None:
                        a.on_error(e)
                    else:
                        a.on_complete()
                    self.worker.dispose()
                    return True
            else:
                e = self.error
                if e is not None:
                    self.cancelled = True
                    self.queue.clear()
                    a.on_error(e)
                    self.worker.dispose()
                    return True
                if empty:
                    self.cancelled = True
                    a.on_complete()
                    self.worker.dispose()
                    return True
        return False

    def run_sync(self) -> None:
        missed = 1
        a, q, e = self.downstream, self.queue, self.produced
        while True:
            r = self.requested.get()
            while e != r:
                try:
                    v = q.poll()
                except Exception as ex:
                    self.cancelled = True
                    self.upstream.cancel()
                    a.on_error(ex)
                    self.worker.dispose()
                    return
                if self.cancelled:
                    return
                if v is None:
                    self.cancelled = True
                    a.on_complete()
                    self.worker.dispose()
                    return
                a.on_next(v)
                e += 1
            if self.cancelled:
                return
            if q.is_empty():
                self.cancelled = True
                a.on_complete()
                self.worker.dispose()
                return
            self.produced = e
            missed = self.add_and_get(-missed)
            if missed == 0:
                break

    def run_async(self) -> None:
        missed = 1
        a, q, e = self.downstream, self.queue, self.produced
        while True:
            r = self.requested.get()
            while e != r:
                d = self.done
                try:
                    v = q.poll()
                except Exception as ex:
                    self.cancelled = True
                    self.upstream.cancel()
                    q.clear()
                    a.on_error(ex)
                    self.worker.dispose()
                    return
                empty = v is None
                if self.check_terminated(d, empty, a):
                    return
                if empty:
                    break
                a.on_next(v)
                e += 1
                if e == self.limit:
                    if r != MAX_DEMAND:
                        r = self.requested.add_and_get(-e)
                    self.upstream.request(e)
                    e = 0
            if e == r and self.check_terminated(self.done, q.is_empty(), a):
                return
            w = self.get()
            if missed == w:
                self.produced = e
                missed = self.add_and_get(-missed)
                if missed == 0:
                    break
            else:
                missed = w


class FlowableObserveOn(Flowable):
    """``internal/operators/flowable/FlowableObserveOn.java``."""

    def __init__(self, source: Flowable, scheduler: SingleScheduler, delay_error: bool, prefetch: int) -> None:
        if prefetch <= 0:
            raise ValueError(f"bufferSize > 0 required but it was {prefetch}")
        self.source = source
        self.scheduler = scheduler
        self.delay_error = delay_error
        self.prefetch = prefetch

    def subscribe_actual(self, s: Any) -> None:
        worker = self.scheduler.create_worker()
        self.source.subscribe(ObserveOnSubscriber(s, worker, self.delay_error, self.prefetch))


# -- src/test/java/io/reactivex/rxjava3/tck/BaseTck.java and the TCK classes ----------------------


class FiniteRangeIterator:
    """``BaseTck.FiniteRange.FiniteRangeIterator``: 0..end-1 as Java ``Long``s."""

    def __init__(self, end: int) -> None:
        self.end = end
        self.count = 0

    def has_next(self) -> bool:
        return self.count != self.end

    def next(self) -> int:
        c = self.count
        if c != self.end:
            self.count = c + 1
            return c
        raise LookupError("NoSuchElementException")


class FiniteRange:
    """``BaseTck.FiniteRange``."""

    def __init__(self, end: int) -> None:
        self.end = end

    def iterator(self) -> FiniteRangeIterator:
        return FiniteRangeIterator(self.end)


class InfiniteRangeIterator:
    """``BaseTck.InfiniteRange.InfiniteRangeIterator``."""

    def __init__(self) -> None:
        self.count = 0

    def has_next(self) -> bool:
        return True

    def next(self) -> int:
        c = self.count
        self.count += 1
        return c


class InfiniteRange:
    def iterator(self) -> InfiniteRangeIterator:
        return InfiniteRangeIterator()


def iterate(elements: int) -> Any:
    """``BaseTck.iterate``: infinite past ``Integer.MAX_VALUE``."""
    return InfiniteRange() if elements > INT_MAX else FiniteRange(elements)


class TestException(RuntimeError):
    """``io.reactivex.rxjava3.exceptions.TestException``."""

    __test__ = False


def failed_publisher() -> Flowable:
    """``BaseTck.createFailedPublisher``: ``Flowable.error(new TestException())``."""
    return error(TestException())


#: ``BaseTck.maxElementsFromPublisher()``.
MAX_ELEMENTS = 1024


def _int(elements: int) -> int:
    """Java's ``(int) elements``: the low 32 bits, signed."""
    v = elements & 0xFFFFFFFF
    return v - (1 << 32) if v > INT_MAX else v


def range_tck(elements: int) -> Flowable:
    """``RangeTckTest``: ``Flowable.range(0, (int) elements)``."""
    return range_(0, _int(elements))


def from_iterable_tck(elements: int) -> Flowable:
    """``FromIterableTckTest``: ``Flowable.fromIterable(iterate(elements))``."""
    return from_iterable(iterate(elements))


def just_tck(elements: int) -> Flowable:
    """``JustTckTest``: ``Flowable.just(0L)`` whatever ``elements`` is; ``maxElementsFromPublisher`` 1."""
    return just(0)


def empty_tck(elements: int) -> Flowable:
    """``EmptyTckTest``: ``Flowable.empty()``; ``maxElementsFromPublisher`` 0."""
    return empty()


def filter_tck(elements: int) -> Flowable:
    """``FilterTckTest``: ``Flowable.range(0, (int) elements * 2).filter(v -> (v & 1) == 0)``."""
    return range_(0, _int(elements) * 2).filter(lambda v: (v & 1) == 0)


def map_tck(elements: int) -> Flowable:
    """``MapTckTest``: ``Flowable.range(0, (int) elements).map(Functions.identity())``."""
    return range_(0, _int(elements)).map(lambda v: v)


def take_tck(elements: int) -> Flowable:
    """``TakeTckTest``: ``Flowable.range(0, (int) elements * 2).take(elements)``."""
    return range_(0, _int(elements) * 2).take(elements)


def skip_tck(elements: int) -> Flowable:
    """``SkipTckTest``: ``Flowable.range(0, (int) elements * 2).skip(elements)``."""
    return range_(0, _int(elements) * 2).skip(elements)


def concat_tck(elements: int) -> Flowable:
    """``ConcatTckTest``: two ``fromIterable`` halves, ``Flowable.concat``."""
    return concat(from_iterable(iterate(elements // 2)),
                  from_iterable(iterate(elements - elements // 2)))


def merge_tck(elements: int) -> Flowable:
    """``MergeTckTest``: two ``fromIterable`` halves, ``Flowable.merge``."""
    return merge(from_iterable(iterate(elements // 2)),
                 from_iterable(iterate(elements - elements // 2)))


def flat_map_tck(elements: int) -> Flowable:
    """``FlatMapTckTest``: ``Flowable.range(0, (int) elements).flatMap(v -> Flowable.just(v))``."""
    return range_(0, _int(elements)).flat_map(just)


def observe_on_tck(elements: int) -> Flowable:
    """``ObserveOnTckTest``: ``Flowable.range(0, (int) elements).observeOn(Schedulers.single())``
    (fused: the worker polls the range)."""
    return range_(0, _int(elements)).observe_on(single())


def hide_observe_on(elements: int) -> Flowable:
    """``HideTckTest``'s ``range(0, n).hide()`` under ``observeOn(Schedulers.single())``: no fusion
    across ``hide``, so ``observeOn`` prefetches 128 and replenishes 96 at a time (``runAsync``)."""
    return range_(0, _int(elements)).hide().observe_on(single())


def hide_tck(elements: int) -> Flowable:
    """``HideTckTest``: ``Flowable.range(0, (int) elements).hide()``."""
    return range_(0, _int(elements)).hide()


# -- processors/UnicastProcessor.java and the TCK's RefCountProcessor -----------------------------


class UnicastQueueSubscription(AtomicInteger):
    """``UnicastProcessor.UnicastQueueSubscription``: the processor's work-in-progress counter and
    its one subscriber's subscription."""

    def __init__(self, parent: UnicastProcessor) -> None:
        super().__init__()
        self.parent = parent

    def request(self, n: int) -> None:
        if validate_request(n):
            bp_add(self.parent.requested, n)
            self.parent.drain()

    def cancel(self) -> None:
        p = self.parent
        if p.cancelled:
            return
        p.cancelled = True
        p.downstream.lazy_set(None)
        if self.get_and_increment() == 0:
            p.downstream.lazy_set(None)
            p.queue.clear()


class UnicastProcessor(Flowable, FlowableSubscriber):
    """``processors/UnicastProcessor.java`` (``create()``: delayError, no fusion asked here): an
    unbounded queue, one subscriber, the queue drained by whoever comes first."""

    def __init__(self, delay_error: bool = True) -> None:
        self.queue = SpscLinkedArrayQueue(BUFFER_SIZE)
        self.delay_error = delay_error
        self.done = False
        self.error: BaseException | None = None
        self.downstream = AtomicReference()
        self.cancelled = False
        self.once = AtomicReference(False)
        self.wip = UnicastQueueSubscription(self)
        self.requested = AtomicLong()

    def drain_regular(self, a: Any) -> None:
        missed, q, fail_fast = 1, self.queue, not self.delay_error
        while True:
            r = self.requested.get()
            e = 0
            while r != e:
                d = self.done
                t = q.poll()
                empty = t is None
                if self.check_terminated(fail_fast, d, empty, a, q):
                    return
                if empty:
                    break
                a.on_next(t)
                e += 1
            if r == e and self.check_terminated(fail_fast, self.done, q.is_empty(), a, q):
                return
            if e != 0 and r != MAX_DEMAND:
                self.requested.add_and_get(-e)
            missed = self.wip.add_and_get(-missed)
            if missed == 0:
                break

    def drain(self) -> None:
        if self.wip.get_and_increment() != 0:
            return
        missed = 1
        a = self.downstream.get()
        while True:
            if a is not None:
                self.drain_regular(a)
                return
            missed = self.wip.add_and_get(-missed)
            if missed == 0:
                break
            a = self.downstream.get()

    def check_terminated(self, fail_fast: bool, d: bool, empty: bool, a: Any, q: Any) -> bool:
        if self.cancelled:
            q.clear()
            self.downstream.lazy_set(None)
            return True
        if d:
            if fail_fast and self.error is not None:
                q.clear()
                self.downstream.lazy_set(None)
                a.on_error(self.error)
                return True
            if empty:
                e = self.error
                self.downstream.lazy_set(None)
                if e is not None:
                    a.on_error(e)
                else:
                    a.on_complete()
                return True
        return False

    def on_subscribe(self, s: Any) -> None:
        if self.done or self.cancelled:
            s.cancel()
        else:
            s.request(MAX_DEMAND)

    def on_next(self, t: Any) -> None:
        if t is None:
            raise TypeError("onNext called with a null value.")
        if self.done or self.cancelled:
            return
        self.queue.offer(t)
        self.drain()

    def on_error(self, t: BaseException) -> None:
        if t is None:
            raise TypeError("onError called with a null Throwable.")
        if self.done or self.cancelled:
            plugins_on_error(t)
            return
        self.error = t
        self.done = True
        self.drain()

    def on_complete(self) -> None:
        if self.done or self.cancelled:
            return
        self.done = True
        self.drain()

    def subscribe_actual(self, s: Any) -> None:
        if not self.once.get() and self.once.compare_and_set(False, True):
            s.on_subscribe(self.wip)
            self.downstream.set(s)
            if self.cancelled:
                self.downstream.lazy_set(None)
            else:
                self.drain()
        else:
            EmptySubscription.error(RuntimeError("This processor allows only a single Subscriber"), s)


class RefCountSubscriber(AtomicReference, FlowableSubscriber):
    """``RefCountProcessor.RefCountSubscriber``: its cancel also leaves the parent's list."""

    def __init__(self, actual: Any, parent: RefCountProcessor) -> None:
        super().__init__(False)
        self.downstream = actual
        self.parent = parent
        self.upstream: Any = None

    def request(self, n: int) -> None:
        self.upstream.request(n)

    def cancel(self) -> None:
        self.lazy_set(True)
        self.upstream.cancel()
        self.parent.remove(self)

    def on_subscribe(self, s: Any) -> None:
        self.upstream = s
        self.downstream.on_subscribe(self)

    def on_next(self, t: Any) -> None:
        self.downstream.on_next(t)

    def on_error(self, t: BaseException) -> None:
        self.downstream.on_error(t)

    def on_complete(self) -> None:
        self.downstream.on_complete()


class RefCountProcessor(Flowable, FlowableSubscriber):
    """``src/test/java/io/reactivex/rxjava3/tck/RefCountProcessor.java``: the processor cancels its
    upstream once its last subscriber cancelled; it is the subscription its inner processor gets."""

    def __init__(self, actual: UnicastProcessor) -> None:
        self.actual = actual
        self.upstream = AtomicReference()
        self.subscribers = AtomicReference(_INNER_EMPTY)

    def on_subscribe(self, s: Any) -> None:
        if set_once(self.upstream, s):
            self.actual.on_subscribe(self)

    def on_next(self, t: Any) -> None:
        self.actual.on_next(t)

    def on_error(self, t: BaseException) -> None:
        self.upstream.lazy_set(CANCELLED)
        self.actual.on_error(t)

    def on_complete(self) -> None:
        self.upstream.lazy_set(CANCELLED)
        self.actual.on_complete()

    def subscribe_actual(self, s: Any) -> None:
        rcs = RefCountSubscriber(s, self)
        if not self.add(rcs):
            EmptySubscription.error(RuntimeError("RefCountProcessor terminated"), s)
            return
        self.actual.subscribe(rcs)

    def cancel(self) -> None:
        sh_cancel(self.upstream)

    def request(self, n: int) -> None:
        self.upstream.get().request(n)

    def add(self, rcs: RefCountSubscriber) -> bool:
        while True:
            a = self.subscribers.get()
            if a is _INNER_CANCELLED:  # TERMINATED
                return False
            if self.subscribers.compare_and_set(a, (*a, rcs)):
                return True

    def remove(self, rcs: RefCountSubscriber) -> None:
        while True:
            a = self.subscribers.get()
            n = len(a)
            if n == 0:
                break
            j = next((i for i, x in enumerate(a) if x is rcs), -1)
            if j < 0:
                break
            b = _INNER_CANCELLED if n == 1 else (*a[:j], *a[j + 1:])
            if self.subscribers.compare_and_set(a, b):
                if b is _INNER_CANCELLED:
                    self.cancel()
                break


def unicast_processor_tck() -> RefCountProcessor:
    """``UnicastProcessorTckTest.createIdentityProcessor``: ``new RefCountProcessor<>(UnicastProcessor.create())``."""
    return RefCountProcessor(UnicastProcessor())


def unicast_failed_publisher() -> UnicastProcessor:
    """``UnicastProcessorTckTest.createFailedPublisher``: a ``UnicastProcessor`` after ``onError``."""
    up = UnicastProcessor()
    up.on_error(TestException())
    return up
