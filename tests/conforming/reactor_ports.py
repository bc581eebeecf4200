"""Reactor's ``Flux`` operators, ported line by line, and the publishers its TCK classes build.

Reactor runs the JVM TCK in ``reactor-core/src/tckTest/java/reactor/core/publisher/tck/``:
``FluxGenerateVerification`` (``generate`` → ``map`` → ``map`` → ``log``) is built here as it is;
``AbstractFluxVerification``'s source (``Flux.range(1, n).filter(i -> true).map(i -> i)``, and past
``Integer.MAX_VALUE`` the endless ``Mono.fromCallable(random::nextInt).repeat().map(Math::abs)``) is built
bare and under ``publishOn`` (the first and last stage ``FluxBlackboxProcessorVerification`` adds;
its inner ``parallel().groups()``/``bufferTimeout``/``zip`` pipeline is not ported). As in Reactor,
``Flux.subscribe`` puts a ``StrictSubscriber`` in front of a foreign subscriber (it answers
``request(n <= 0)``, the operators only log it), each operator's subscriber is made from the
outside in (``OptimizableOperator.subscribeOrReturn``) and an exception escaping the source's
``subscribe`` is reported to the innermost subscriber (``Operators.reportThrowInSubscribe``).
Fusion is negotiated as Reactor does: ``publishOn`` asks with ``THREAD_BARRIER``, which ``map``
refuses, so it prefetches 256 and replenishes 192 at a time.

Paths in the docstrings are under ``reactor-core/src/main/java/reactor/core/publisher/`` of
reactor/reactor-core.
"""

from __future__ import annotations

import itertools
import logging
import random
from collections.abc import Callable
from typing import Any

from rstck.api import MAX_DEMAND

from .rx_ports import AtomicLong
from .rx_ports import AtomicReference
from .rx_ports import ScheduledWorker
from .rx_ports import SingleScheduler
from .rx_ports import SpscArrayQueue
from .rx_ports import add_cap

_log = logging.getLogger(__name__)
_signal_log = logging.getLogger("log-test")

NONE, SYNC, ASYNC, ANY, THREAD_BARRIER = 0, 1, 2, 3, 4
SMALL_BUFFER_SIZE = 256  # Queues.SMALL_BUFFER_SIZE
INT_MAX = 2**31 - 1


# -- Operators.java -------------------------------------------------------------------------------


def validate_request(n: int) -> bool:
    """``Operators.validate(long)``: a non-positive request is only logged (``reportBadRequest``)."""
    if n <= 0:
        _log.debug("Negative request: %d", n)
        return False
    return True


def validate_subscription(current: Any, nxt: Any) -> bool:
    """``Operators.validate(Subscription, Subscription)``."""
    if nxt is None:
        raise TypeError("Subscription cannot be null")
    if current is not None:
        nxt.cancel()
        return False
    return True


def on_error_dropped(e: BaseException) -> None:
    _log.error("Operator called default onErrorDropped: %s: %s", type(e).__name__, e)


def on_next_dropped(t: Any) -> None:
    _log.debug("onNextDropped: %r", t)


def add_cap_atomic(requested: AtomicLong, n: int) -> int:
    """``Operators.addCap(updater, instance, n)``: returns the amount before."""
    while True:
        r = requested.get()
        if r == MAX_DEMAND:
            return MAX_DEMAND
        if requested.compare_and_set(r, add_cap(r, n)):
            return r


class EmptySubscription:
    """``Operators.EmptySubscription``: refuses fusion, ignores requests."""

    def request(self, n: int) -> None:
        pass

    def cancel(self) -> None:
        pass

    def request_fusion(self, mode: int) -> int:
        return NONE

    def poll(self) -> Any:
        return None

    def is_empty(self) -> bool:
        return True

    def clear(self) -> None:
        pass


EMPTY_SUBSCRIPTION = EmptySubscription()


def complete(s: Any) -> None:
    s.on_subscribe(EMPTY_SUBSCRIPTION)
    s.on_complete()


def error(s: Any, e: BaseException) -> None:
    s.on_subscribe(EMPTY_SUBSCRIPTION)
    s.on_error(e)


def report_throw_in_subscribe(subscriber: Any, e: BaseException) -> None:
    """``Operators.reportThrowInSubscribe``: onSubscribe(empty), then onError, to that subscriber."""
    try:
        subscriber.on_subscribe(EMPTY_SUBSCRIPTION)
    except Exception as on_subscribe_error:
        e.__context__ = on_subscribe_error
    subscriber.on_error(e)


class ScalarSubscription:
    """``Operators.ScalarSubscription``: ``once`` is 0 (fresh), 1 (emitted) or 2 (cancelled)."""

    def __init__(self, actual: Any, value: Any) -> None:
        if value is None or actual is None:
            raise TypeError("value")
        self.actual = actual
        self.value = value
        self.once = AtomicLong()

    def cancel(self) -> None:
        self.once.lazy_set(2)

    def clear(self) -> None:
        self.once.lazy_set(1)

    def is_empty(self) -> bool:
        return self.once.get() != 0

    def poll(self) -> Any:
        if self.once.get() == 0:
            self.once.lazy_set(1)
            return self.value
        return None

    def request(self, n: int) -> None:
        if validate_request(n) and self.once.compare_and_set(0, 1):
            a = self.actual
            a.on_next(self.value)
            if self.once.get() != 2:
                a.on_complete()

    def request_fusion(self, mode: int) -> int:
        return SYNC if mode & SYNC else NONE


# -- the Flux base --------------------------------------------------------------------------------


class CoreSubscriber:
    """Marker of Reactor's own subscribers: ``Flux.subscribe`` wraps every other one."""


class ConditionalSubscriber(CoreSubscriber):
    """A subscriber with ``try_on_next``: ``range`` counts only the elements it accepted."""

    def on_subscribe(self, s: Any) -> None:
        raise NotImplementedError

    def try_on_next(self, t: Any) -> bool:
        raise NotImplementedError


class Flux:
    """``Flux.java``: ``subscribe`` walks the operators outside in, then subscribes the source."""

    def subscribe(self, actual: Any) -> None:
        if actual is None:
            raise TypeError("actual")
        subscriber = actual if isinstance(actual, CoreSubscriber) else StrictSubscriber(actual)
        publisher: Flux = self
        try:
            while isinstance(publisher, FluxOperator):
                subscriber = publisher.subscribe_or_return(subscriber)
                if subscriber is None:  # "I will subscribe myself"
                    return
                publisher = publisher.source
            publisher.subscribe_core(subscriber)
        except Exception as e:
            report_throw_in_subscribe(subscriber, e)

    def subscribe_core(self, actual: Any) -> None:
        """``subscribe(CoreSubscriber)``: a source's own subscription."""
        raise NotImplementedError

    def filter(self, predicate: Callable[[Any], bool]) -> Flux:
        return FluxFilterFuseable(self, predicate)  # every source used here is Fuseable

    def map(self, mapper: Callable[[Any], Any]) -> Flux:
        if isinstance(self, MonoRepeatPredicate):  # not Fuseable
            return FluxMap(self, mapper)
        return FluxMapFuseable(self, mapper)

    def log(self, category: str) -> Flux:
        return FluxLogFuseable(self, category)

    def publish_on(self, scheduler: ParallelScheduler, prefetch: int = SMALL_BUFFER_SIZE) -> Flux:
        """``publishOn(scheduler)`` is ``publishOn(scheduler, delayError=true, 256, 256)``."""
        if isinstance(self, FluxError):  # a ScalarCallable whose call() throws
            return FluxSubscribeOnCallable(self.call, scheduler)
        return FluxPublishOn(self, scheduler, True, prefetch, prefetch)


class FluxOperator(Flux):
    """``InternalFluxOperator``/``OptimizableOperator``."""

    source: Flux

    def subscribe_or_return(self, actual: Any) -> Any:
        raise NotImplementedError

    def subscribe_core(self, actual: Any) -> None:
        subscriber = self.subscribe_or_return(actual)
        if subscriber is not None:
            self.source.subscribe_core(subscriber)


class StrictSubscriber(CoreSubscriber):
    """``StrictSubscriber.java``: what ``Flux.subscribe`` puts in front of a foreign subscriber."""

    def __init__(self, actual: Any) -> None:
        self.actual = actual
        self.s = AtomicReference()
        self.requested = AtomicLong()
        self.wip = AtomicLong()
        self.error = AtomicReference()
        self.done = False

    def on_subscribe(self, s: Any) -> None:
        if validate_subscription(self.s.get(), s):
            self.actual.on_subscribe(self)
            if _set_once(self.s, s):
                r = self.requested.get_and_set(0)
                if r != 0:
                    s.request(r)
        else:
            self.on_error(RuntimeError("§2.12 violated: onSubscribe must be called at most once"))

    def on_next(self, t: Any) -> None:
        if self.wip.get() == 0 and self.wip.compare_and_set(0, 1):
            self.actual.on_next(t)
            if self.wip.decrement_and_get() != 0:
                ex = _terminate(self.error)
                if ex is not None:
                    self.actual.on_error(ex)
                else:
                    self.actual.on_complete()

    def on_error(self, t: BaseException) -> None:
        self.done = True
        if _add_throwable(self.error, t):
            if self.wip.get_and_increment() == 0:
                self.actual.on_error(_terminate(self.error))
        else:
            on_error_dropped(t)

    def on_complete(self) -> None:
        self.done = True
        if self.wip.get_and_increment() == 0:
            ex = _terminate(self.error)
            if ex is not None:
                self.actual.on_error(ex)
            else:
                self.actual.on_complete()

    def request(self, n: int) -> None:
        if n <= 0:
            self.cancel()
            self.on_error(ValueError(f"§3.9 violated: positive request amount required but it was {n}"))
            return
        a = self.s.get()
        if a is not None:
            a.request(n)
        else:
            add_cap_atomic(self.requested, n)
            a = self.s.get()
            if a is not None:
                r = self.requested.get_and_set(0)
                if r != 0:
                    a.request(n)  # sic: Reactor passes n, not r, here

    def cancel(self) -> None:
        if not self.done:
            _terminate_subscription(self.s)


class _CancelledSubscription:
    def request(self, n: int) -> None:
        pass

    def cancel(self) -> None:
        pass


CANCELLED = _CancelledSubscription()


def _set_once(field: AtomicReference, s: Any) -> bool:
    """``Operators.setOnce``."""
    while True:
        a = field.get()
        if a is CANCELLED:
            s.cancel()
            return False
        if a is not None:
            s.cancel()
            return False
        if field.compare_and_set(None, s):
            return True


def _terminate_subscription(field: AtomicReference) -> bool:
    """``Operators.terminate``."""
    a = field.get()
    if a is not CANCELLED:
        a = field.get_and_set(CANCELLED)
        if a is not None and a is not CANCELLED:
            a.cancel()
            return True
    return False


class _Terminated(Exception):
    pass


_TERMINATED = _Terminated("Operator has been terminated")


class CompositeException(RuntimeError):
    """``Exceptions.CompositeException`` ("Multiple exceptions"): the errors are its suppressed ones."""

    def __init__(self) -> None:
        super().__init__("Multiple exceptions")
        self.suppressed: list[BaseException] = []


def _add_throwable(field: AtomicReference, t: BaseException) -> bool:
    """``Exceptions.addThrowable``: a second error makes a ``CompositeException`` of both."""
    while True:
        current = field.get()
        if current is _TERMINATED:
            return False
        if isinstance(current, CompositeException):
            current.suppressed.append(t)
            return True
        if current is None:
            update = t
        else:
            update = CompositeException()  # Exceptions.multiple(current, t)
            update.suppressed += [current, t]
        if field.compare_and_set(current, update):
            return True


def _terminate(field: AtomicReference) -> Any:
    """``Exceptions.terminate``."""
    current = field.get()
    if current is not _TERMINATED:
        current = field.get_and_set(_TERMINATED)
    return current


# -- sources --------------------------------------------------------------------------------------


class FluxEmpty(Flux):
    """``FluxEmpty.java``."""

    def subscribe_core(self, actual: Any) -> None:
        complete(actual)


class FluxJust(Flux):
    """``FluxJust.java``."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def subscribe_core(self, actual: Any) -> None:
        actual.on_subscribe(ScalarSubscription(actual, self.value))


class FluxError(Flux):
    """``FluxError.java``: a ``ScalarCallable`` whose ``call()`` throws the error."""

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc

    def subscribe_core(self, actual: Any) -> None:
        error(actual, self.exc)

    def call(self) -> Any:
        raise self.exc


class RangeSubscription:
    """``FluxRange.RangeSubscription``."""

    def __init__(self, actual: Any, start: int, end: int) -> None:
        self.actual = actual
        self.index = start
        self.end = end
        self.cancelled = False
        self.requested = AtomicLong()

    def request(self, n: int) -> None:
        if validate_request(n) and add_cap_atomic(self.requested, n) == 0:
            if n == MAX_DEMAND:
                self.fast_path()
            else:
                self.slow_path(n)

    def cancel(self) -> None:
        self.cancelled = True

    def request_fusion(self, mode: int) -> int:
        return mode & SYNC

    def fast_path(self) -> None:
        e, a = self.end, self.actual
        for i in range(self.index, e):
            if self.cancelled:
                return
            a.on_next(i)
        if self.cancelled:
            return
        a.on_complete()

    def slow_path(self, n: int) -> None:
        a, f, e, i = self.actual, self.end, 0, self.index
        while True:
            if self.cancelled:
                return
            while e != n and i != f:
                a.on_next(i)
                if self.cancelled:
                    return
                e += 1
                i += 1
            if self.cancelled:
                return
            if i == f:
                a.on_complete()
                return
            n = self.requested.get()
            if n == e:
                self.index = i
                n = self.requested.add_and_get(-e)
                if n == 0:
                    return
                e = 0


class RangeSubscriptionConditional(RangeSubscription):
    """``FluxRange.RangeSubscriptionConditional``: a refused element costs no demand."""

    def fast_path(self) -> None:
        e, a = self.end, self.actual
        for i in range(self.index, e):
            if self.cancelled:
                return
            a.try_on_next(i)
        if self.cancelled:
            return
        a.on_complete()

    def slow_path(self, n: int) -> None:
        a, f, e, i = self.actual, self.end, 0, self.index
        while True:
            if self.cancelled:
                return
            while e != n and i != f:
                b = a.try_on_next(i)
                if self.cancelled:
                    return
                if b:
                    e += 1
                i += 1
            if self.cancelled:
                return
            if i == f:
                a.on_complete()
                return
            n = self.requested.get()
            if n == e:
                self.index = i
                n = self.requested.add_and_get(-e)
                if n == 0:
                    return
                e = 0


class FluxRange(Flux):
    """``FluxRange.java``."""

    def __init__(self, start: int, count: int) -> None:
        if count < 0:
            raise ValueError(f"count >= required but it was {count}")
        e = start + count
        if e - 1 > INT_MAX:
            raise ValueError("start + count must be less than Integer.MAX_VALUE + 1")
        self.start = start
        self.end = e

    def subscribe_core(self, actual: Any) -> None:
        st, en = self.start, self.end
        if st == en:
            complete(actual)
            return
        if st + 1 == en:
            actual.on_subscribe(ScalarSubscription(actual, st))
            return
        if isinstance(actual, ConditionalSubscriber):
            actual.on_subscribe(RangeSubscriptionConditional(actual, st, en))
            return
        actual.on_subscribe(RangeSubscription(actual, st, en))


def range_(start: int, count: int) -> Flux:
    """``Flux.range``: one element is ``just(start)``, none is ``empty()``."""
    if count == 1:
        return FluxJust(start)
    if count == 0:
        return FluxEmpty()
    return FluxRange(start, count)


class GenerateSubscription:
    """``FluxGenerate.GenerateSubscription``: the generator runs once per element requested; the
    sink's ``complete()`` comes from a call of its own, so the end is signalled only when one more
    element is asked for than the stream holds."""

    def __init__(self, actual: Any, state: Any, generator: Callable[[Any, Any], Any],
                 state_consumer: Callable[[Any], None]) -> None:
        self.actual = actual
        self.state = state
        self.generator = generator
        self.state_consumer = state_consumer
        self.cancelled = False
        self.terminate = False
        self.has_value = False
        self.requested = AtomicLong()

    # SynchronousSink
    def next(self, t: Any) -> None:
        if self.terminate:
            on_next_dropped(t)
            return
        if self.has_value:
            self.error(RuntimeError("More than one call to onNext"))
            return
        if t is None:
            self.error(TypeError("The generator produced a null value"))
            return
        self.has_value = True
        self.actual.on_next(t)

    def error(self, e: BaseException) -> None:
        if self.terminate:
            return
        self.terminate = True
        self.actual.on_error(e)

    def complete(self) -> None:
        if self.terminate:
            return
        self.terminate = True
        self.actual.on_complete()

    # Subscription
    def request(self, n: int) -> None:
        if validate_request(n) and add_cap_atomic(self.requested, n) == 0:
            if n == MAX_DEMAND:
                self.fast_path()
            else:
                self.slow_path(n)

    def fast_path(self) -> None:
        s, g = self.state, self.generator
        while True:
            if self.cancelled:
                self.cleanup(s)
                return
            try:
                s = g(s, self)
            except Exception as e:
                self.cleanup(s)
                self.actual.on_error(e)
                return
            if self.terminate or self.cancelled:
                self.cleanup(s)
                return
            if not self.has_value:
                self.cleanup(s)
                self.actual.on_error(RuntimeError("The generator didn't call any of the SynchronousSink method"))
                return
            self.has_value = False

    def slow_path(self, n: int) -> None:
        s, e, g = self.state, 0, self.generator
        while True:
            while e != n:
                if self.cancelled:
                    self.cleanup(s)
                    return
                try:
                    s = g(s, self)
                except Exception as ex:
                    self.cleanup(s)
                    self.actual.on_error(ex)
                    return
                if self.terminate or self.cancelled:
                    self.cleanup(s)
                    return
                if not self.has_value:
                    self.cleanup(s)
                    self.actual.on_error(RuntimeError("The generator didn't call any of the SynchronousSink method"))
                    return
                e += 1
                self.has_value = False
            n = self.requested.get()
            if n == e:
                self.state = s
                n = self.requested.add_and_get(-e)
                e = 0
                if n == 0:
                    return

    def cancel(self) -> None:
        if not self.cancelled:
            self.cancelled = True
            if self.requested.get_and_increment() == 0:
                self.cleanup(self.state)

    def cleanup(self, s: Any) -> None:
        try:
            self.state = None
            self.state_consumer(s)
        except Exception as e:
            on_error_dropped(e)

    def request_fusion(self, mode: int) -> int:
        return NONE  # SYNC only without THREAD_BARRIER; nobody here asks for it


class FluxGenerate(Flux):
    """``FluxGenerate.java``."""

    def __init__(self, state_supplier: Callable[[], Any], generator: Callable[[Any, Any], Any]) -> None:
        self.state_supplier = state_supplier
        self.generator = generator

    def subscribe_core(self, actual: Any) -> None:
        try:
            state = self.state_supplier()
        except Exception as e:
            error(actual, e)
            return
        actual.on_subscribe(GenerateSubscription(actual, state, self.generator, lambda s: None))


# -- intermediate operators -----------------------------------------------------------------------


class FilterFuseableSubscriber(ConditionalSubscriber):
    """``FluxFilterFuseable.FilterFuseableSubscriber``: a plain upstream gets ``request(1)`` per
    dropped element, a conditional one (``range``) is told by ``try_on_next``."""

    def __init__(self, actual: Any, predicate: Callable[[Any], bool]) -> None:
        self.actual = actual
        self.predicate = predicate
        self.s: Any = None
        self.done = False
        self.source_mode = NONE

    def on_subscribe(self, s: Any) -> None:
        if validate_subscription(self.s, s):
            self.s = s
            self.actual.on_subscribe(self)

    def on_next(self, t: Any) -> None:
        if self.source_mode == ASYNC:
            self.actual.on_next(None)
            return
        if self.done:
            on_next_dropped(t)
            return
        try:
            b = self.predicate(t)
        except Exception as e:
            self.s.cancel()  # Operators.onNextError: no error mode in the context, so it errors
            self.on_error(e)
            return
        if b:
            self.actual.on_next(t)
        else:
            self.s.request(1)

    def try_on_next(self, t: Any) -> bool:
        if self.done:
            on_next_dropped(t)
            return False
        try:
            b = self.predicate(t)
        except Exception as e:
            self.s.cancel()
            self.on_error(e)
            return False
        if b:
            self.actual.on_next(t)
            return True
        return False

    def on_error(self, t: BaseException) -> None:
        if self.done:
            on_error_dropped(t)
            return
        self.done = True
        self.actual.on_error(t)

    def on_complete(self) -> None:
        if self.done:
            return
        self.done = True
        self.actual.on_complete()

    def request(self, n: int) -> None:
        self.s.request(n)

    def cancel(self) -> None:
        self.s.cancel()

    def request_fusion(self, mode: int) -> int:
        if mode & THREAD_BARRIER:
            return NONE
        m: int = self.s.request_fusion(mode)
        self.source_mode = m
        return m


class FluxFilterFuseable(FluxOperator):
    """``FluxFilterFuseable.java`` (the downstream is never conditional here)."""

    def __init__(self, source: Flux, predicate: Callable[[Any], bool]) -> None:
        self.source = source
        self.predicate = predicate

    def subscribe_or_return(self, actual: Any) -> Any:
        return FilterFuseableSubscriber(actual, self.predicate)


class MapFuseableSubscriber(CoreSubscriber):
    """``FluxMapFuseable.MapFuseableSubscriber``: refuses fusion across a thread barrier, since
    the mapper would then run on the consumer's thread."""

    def __init__(self, actual: Any, mapper: Callable[[Any], Any]) -> None:
        self.actual = actual
        self.mapper = mapper
        self.s: Any = None
        self.done = False
        self.source_mode = NONE

    def on_subscribe(self, s: Any) -> None:
        if validate_subscription(self.s, s):
            self.s = s
            self.actual.on_subscribe(self)

    def on_next(self, t: Any) -> None:
        if self.source_mode == ASYNC:
            self.actual.on_next(None)
            return
        if self.done:
            on_next_dropped(t)
            return
        try:
            v = self.mapper(t)
            if v is None:
                raise TypeError("The mapper returned a null value.")
        except Exception as e:
            self.s.cancel()
            self.on_error(e)
            return
        self.actual.on_next(v)

    def on_error(self, t: BaseException) -> None:
        if self.done:
            on_error_dropped(t)
            return
        self.done = True
        self.actual.on_error(t)

    def on_complete(self) -> None:
        if self.done:
            return
        self.done = True
        self.actual.on_complete()

    def request(self, n: int) -> None:
        self.s.request(n)

    def cancel(self) -> None:
        self.s.cancel()

    def request_fusion(self, mode: int) -> int:
        if mode & THREAD_BARRIER:
            return NONE
        m: int = self.s.request_fusion(mode)
        self.source_mode = m
        return m


class FluxMapFuseable(FluxOperator):
    """``FluxMapFuseable.java`` (the downstream is never conditional here)."""

    def __init__(self, source: Flux, mapper: Callable[[Any], Any]) -> None:
        self.source = source
        self.mapper = mapper

    def subscribe_or_return(self, actual: Any) -> Any:
        return MapFuseableSubscriber(actual, self.mapper)


class MapSubscriber(MapFuseableSubscriber):
    """``FluxMap.MapSubscriber``: the same relay, over a source that cannot fuse."""

    def request_fusion(self, mode: int) -> int:
        return NONE


class FluxMap(FluxOperator):
    """``FluxMap.java``."""

    def __init__(self, source: Flux, mapper: Callable[[Any], Any]) -> None:
        self.source = source
        self.mapper = mapper

    def subscribe_or_return(self, actual: Any) -> Any:
        return MapSubscriber(actual, self.mapper)


# -- Mono.fromCallable(...).repeat(): MonoCallable.java, MonoRepeatPredicate.java -----------------


class MonoCallableSubscription:
    """``MonoCallable.MonoCallableSubscription``: the first request calls, emits and completes."""

    def __init__(self, actual: Any, callable_: Callable[[], Any]) -> None:
        self.actual = actual
        self.callable = callable_
        self.requested_once = AtomicLong()
        self.cancelled = False
        self.done = False

    def request(self, n: int) -> None:
        if self.cancelled:
            return
        if self.requested_once.get() == 1 or not self.requested_once.compare_and_set(0, 1):
            return
        s = self.actual
        try:
            value = self.callable()
        except Exception as e:
            if self.cancelled:
                on_error_dropped(e)
                return
            s.on_error(e)
            return
        if self.cancelled:
            return
        if value is not None:
            s.on_next(value)
        s.on_complete()

    def cancel(self) -> None:
        self.cancelled = True

    def request_fusion(self, mode: int) -> int:
        return mode & SYNC


class MonoCallable(Flux):
    """``MonoCallable.java`` (a Mono; only its subscription is used here)."""

    def __init__(self, callable_: Callable[[], Any]) -> None:
        self.callable = callable_

    def subscribe_core(self, actual: Any) -> None:
        actual.on_subscribe(MonoCallableSubscription(actual, self.callable))

    def repeat(self) -> Flux:
        """``Mono.repeat()``: ``repeat(ALWAYS_BOOLEAN_SUPPLIER)``."""
        return MonoRepeatPredicate(self, lambda: True)


class MultiSubscriptionSubscriber(CoreSubscriber):
    """``Operators.MultiSubscriptionSubscriber``: one subscription after another, the outstanding
    demand carried over; calls that find it busy leave their part for the drain loop."""

    def __init__(self, actual: Any) -> None:
        self.actual = actual
        self.unbounded = False
        self.requested = 0
        self.subscription: Any = None
        self.missed_subscription = AtomicReference()
        self.missed_requested = AtomicLong()
        self.missed_produced = AtomicLong()
        self.wip = AtomicLong()
        self.cancelled = False

    def cancel(self) -> None:
        if not self.cancelled:
            self.cancelled = True
            self.drain()

    def on_complete(self) -> None:
        self.actual.on_complete()

    def on_error(self, t: BaseException) -> None:
        self.actual.on_error(t)

    def on_subscribe(self, s: Any) -> None:
        self.set(s)

    def produced(self, n: int) -> None:
        if self.unbounded:
            return
        if self.wip.get() == 0 and self.wip.compare_and_set(0, 1):
            r = self.requested
            if r != MAX_DEMAND:
                u = r - n
                if u < 0:
                    _log.debug("More data produced than requested")
                    u = 0
                self.requested = u
            else:
                self.unbounded = True
            if self.wip.decrement_and_get() == 0:
                return
            self.drain_loop()
            return
        add_cap_atomic(self.missed_produced, n)
        self.drain()

    def request(self, n: int) -> None:
        if validate_request(n):
            if self.unbounded:
                return
            if self.wip.get() == 0 and self.wip.compare_and_set(0, 1):
                r = self.requested
                if r != MAX_DEMAND:
                    r = add_cap(r, n)
                    self.requested = r
                    if r == MAX_DEMAND:
                        self.unbounded = True
                a = self.subscription
                if self.wip.decrement_and_get() != 0:
                    self.drain_loop()
                if a is not None:
                    a.request(n)
                return
            add_cap_atomic(self.missed_requested, n)
            self.drain()

    def set(self, s: Any) -> None:
        if self.cancelled:
            s.cancel()
            return
        if s is None:
            raise TypeError("s")
        if self.wip.get() == 0 and self.wip.compare_and_set(0, 1):
            self.subscription = s
            r = self.requested
            if self.wip.decrement_and_get() != 0:
                self.drain_loop()
            if r != 0:
                s.request(r)
            return
        self.missed_subscription.get_and_set(s)
        self.drain()

    def drain(self) -> None:
        if self.wip.get_and_increment() != 0:
            return
        self.drain_loop()

    def drain_loop(self) -> None:
        missed = 1
        request_amount = 0
        already_in_request_amount = 0
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
            a = self.subscription
            if self.cancelled:
                if a is not None:
                    a.cancel()
                    self.subscription = None
                if ms is not None:
                    ms.cancel()
            else:
                r = self.requested
                if r != MAX_DEMAND:
                    u = add_cap(r, mr)
                    if u != MAX_DEMAND:
                        v = u - mp
                        v = max(v, 0)
                        r = v
                    else:
                        r = u
                    self.requested = r
                if ms is not None:
                    self.subscription = ms
                    if r != 0:
                        request_amount = add_cap(request_amount, r - already_in_request_amount)
                        request_target = ms
                elif mr != 0 and a is not None:
                    request_amount = add_cap(request_amount, mr)
                    already_in_request_amount += mr
                    request_target = a
            missed = self.wip.add_and_get(-missed)
            if missed == 0:
                if request_amount != 0:
                    request_target.request(request_amount)
                return


class RepeatPredicateSubscriber(MultiSubscriptionSubscriber):
    """``FluxRepeatPredicate.RepeatPredicateSubscriber``: each ``on_complete`` subscribes again,
    trampolined on ``wip`` so a synchronous source does not recurse."""

    def __init__(self, source: Flux, actual: Any, predicate: Callable[[], bool]) -> None:
        super().__init__(actual)
        self.source = source
        self.predicate = predicate
        self.repeat_wip = AtomicLong()
        self.produced_count = 0

    def on_next(self, t: Any) -> None:
        self.produced_count += 1
        self.actual.on_next(t)

    def on_complete(self) -> None:
        try:
            b = self.predicate()
        except Exception as e:
            self.actual.on_error(e)
            return
        if b:
            self.resubscribe()
        else:
            self.actual.on_complete()

    def resubscribe(self) -> None:
        if self.repeat_wip.get_and_increment() == 0:
            while True:
                if self.cancelled:
                    return
                c = self.produced_count
                if c != 0:
                    self.produced_count = 0
                    self.produced(c)
                self.source.subscribe_core(self)
                if self.repeat_wip.decrement_and_get() == 0:
                    break


class MonoRepeatPredicate(FluxOperator):
    """``MonoRepeatPredicate.java``: subscribes by itself (``subscribeOrReturn`` returns null)."""

    def __init__(self, source: Flux, predicate: Callable[[], bool]) -> None:
        self.source = source
        self.predicate = predicate

    def subscribe_or_return(self, actual: Any) -> Any:
        parent = RepeatPredicateSubscriber(self.source, actual, self.predicate)
        actual.on_subscribe(parent)
        if not parent.cancelled:
            parent.resubscribe()
        return None


def _java_abs(v: int) -> int:
    """``Math.abs(int)``: ``Integer.MIN_VALUE`` stays negative."""
    return v if v == -(2**31) else abs(v)


class PeekFuseableSubscriber(CoreSubscriber):
    """``FluxPeekFuseable.PeekFuseableSubscriber`` with ``SignalLogger``'s hooks: every signal,
    request and cancel is logged (``log("log-test", Level.FINE)``) before it passes on."""

    def __init__(self, actual: Any, category: str) -> None:
        self.actual = actual
        self.log = logging.getLogger(category)
        self.s: Any = None
        self.done = False

    def request(self, n: int) -> None:
        self.log.debug("request(%s)", "unbounded" if n == MAX_DEMAND else n)
        self.s.request(n)

    def cancel(self) -> None:
        self.log.debug("cancel()")
        self.s.cancel()

    def on_subscribe(self, s: Any) -> None:
        if validate_subscription(self.s, s):
            self.log.debug("onSubscribe(%s)", type(s).__name__)
            self.s = s
            self.actual.on_subscribe(self)

    def on_next(self, t: Any) -> None:
        if self.done:
            on_next_dropped(t)
            return
        self.log.debug("onNext(%r)", t)
        self.actual.on_next(t)

    def on_error(self, t: BaseException) -> None:
        if self.done:
            on_error_dropped(t)
            return
        self.done = True
        self.log.debug("onError(%r)", t)
        self.actual.on_error(t)

    def on_complete(self) -> None:
        if self.done:
            return
        self.log.debug("onComplete()")
        self.done = True
        self.actual.on_complete()


class FluxLogFuseable(FluxOperator):
    """``FluxLogFuseable.java``."""

    def __init__(self, source: Flux, category: str) -> None:
        self.source = source
        self.category = category

    def subscribe_or_return(self, actual: Any) -> Any:
        return PeekFuseableSubscriber(actual, self.category)


# -- publishOn: scheduler/ParallelScheduler.java, FluxPublishOn.java, FluxSubscribeOnCallable.java -


class ParallelScheduler:
    """``Schedulers.newParallel(name, n)``: n single-thread executors, a worker bound to one of
    them round robin (``ExecutorServiceWorker``); ``schedule`` picks one the same way."""

    def __init__(self, name: str, parallelism: int) -> None:
        self.executors = [SingleScheduler(name) for _ in range(parallelism)]
        self._next = itertools.count()

    def _pick(self) -> SingleScheduler:
        return self.executors[next(self._next) % len(self.executors)]

    def create_worker(self) -> ScheduledWorker:
        return ScheduledWorker(self._pick())

    def schedule(self, task: Callable[[], None]) -> ScheduledWorker:
        worker = ScheduledWorker(self._pick())
        worker.schedule(task)
        return worker


class PublishOnSubscriber(CoreSubscriber):
    """``FluxPublishOn.PublishOnSubscriber``: requests ``prefetch`` upstream, queues, and drains on
    the worker; each ``limit`` (75 % of the prefetch) emitted are requested again. Unfused here
    (``map`` refuses fusion across the thread barrier), so ``runAsync``."""

    def __init__(self, actual: Any, worker: ScheduledWorker, delay_error: bool, prefetch: int,
                 low_tide: int) -> None:
        self.actual = actual
        self.worker = worker
        self.delay_error = delay_error
        self.prefetch = prefetch
        self.limit = prefetch - (prefetch >> 2) if low_tide >= prefetch else low_tide
        self.s: Any = None
        self.queue: Any = None
        self.cancelled = False
        self.done = False
        self.error: BaseException | None = None
        self.wip = AtomicLong()
        self.requested = AtomicLong()
        self.source_mode = NONE
        self.produced = 0

    def on_subscribe(self, s: Any) -> None:
        if validate_subscription(self.s, s):
            self.s = s
            if hasattr(s, "request_fusion"):
                m = s.request_fusion(ANY | THREAD_BARRIER)
                if m == SYNC:
                    self.source_mode = SYNC
                    self.queue = s
                    self.done = True
                    self.actual.on_subscribe(self)
                    return
                if m == ASYNC:
                    self.source_mode = ASYNC
                    self.queue = s
                    self.actual.on_subscribe(self)
                    s.request(self.prefetch)
                    return
            self.queue = SpscArrayQueue(self.prefetch)
            self.actual.on_subscribe(self)
            s.request(self.prefetch)

    def on_next(self, t: Any) -> None:
        if self.source_mode == ASYNC:
            self.try_schedule()
            return
        if self.done:
            on_next_dropped(t)
            return
        if self.cancelled:
            return
        if not self.queue.offer(t):
            self.error = RuntimeError("Queue is full: Reactive Streams source doesn't respect backpressure")
            self.s.cancel()
            self.done = True
        self.try_schedule()

    def on_error(self, t: BaseException) -> None:
        if self.done:
            on_error_dropped(t)
            return
        self.error = t
        self.done = True
        self.try_schedule()

    def on_complete(self) -> None:
        if self.done:
            return
        self.done = True
        self.try_schedule()

    def request(self, n: int) -> None:
        if validate_request(n):
            add_cap_atomic(self.requested, n)
            self.try_schedule()

    def cancel(self) -> None:
        if self.cancelled:
            return
        self.cancelled = True
        self.s.cancel()
        self.worker.dispose()
        if self.wip.get_and_increment() == 0:
            self.queue.clear()

    def try_schedule(self) -> None:
        if self.wip.get_and_increment() != 0:
            if self.cancelled:
                self.queue.clear()
            return
        self.worker.schedule(self.run)

    def run(self) -> None:
        if self.source_mode == SYNC:
            raise AssertionError("runSync: no SYNC source under publishOn here")
        self.run_async()

    def do_complete(self, a: Any) -> None:
        a.on_complete()
        self.worker.dispose()

    def do_error(self, a: Any, e: BaseException) -> None:
        try:
            a.on_error(e)
        finally:
            self.worker.dispose()

    def check_terminated(self, d: bool, empty: bool, a: Any) -> bool:
        if self.cancelled:
            self.queue.clear()
            return True
        if d:
            if self.delay_error:
                if empty:
                    e = self.error
                    if e is not None:
                        self.do_error(a, e)
                    else:
                        self.do_complete(a)
                    return True
            else:
                e = self.error
                if e is not None:
                    self.queue.clear()
                    self.do_error(a, e)
                    return True
                if empty:
                    self.do_complete(a)
                    return True
        return False

    def run_async(self) -> None:
        missed = 1
        a, q, e = self.actual, self.queue, self.produced
        while True:
            r = self.requested.get()
            while e != r:
                d = self.done
                try:
                    v = q.poll()
                except Exception as ex:
                    self.s.cancel()
                    q.clear()
                    self.do_error(a, ex)
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
                    self.s.request(e)
                    e = 0
            if e == r and self.check_terminated(self.done, q.is_empty(), a):
                return
            w = self.wip.get()
            if missed == w:
                self.produced = e
                missed = self.wip.add_and_get(-missed)
                if missed == 0:
                    break
            else:
                missed = w


class FluxPublishOn(FluxOperator):
    """``FluxPublishOn.java``."""

    def __init__(self, source: Flux, scheduler: ParallelScheduler, delay_error: bool, prefetch: int,
                 low_tide: int) -> None:
        self.source = source
        self.scheduler = scheduler
        self.delay_error = delay_error
        self.prefetch = prefetch
        self.low_tide = low_tide

    def subscribe_or_return(self, actual: Any) -> Any:
        worker = self.scheduler.create_worker()
        return PublishOnSubscriber(actual, worker, self.delay_error, self.prefetch, self.low_tide)


class CallableSubscribeOnSubscription:
    """``FluxSubscribeOnCallable.CallableSubscribeOnSubscription``: what ``publishOn`` makes of
    ``Flux.error`` (a ``ScalarCallable``): the call runs on the scheduler and its error is sent."""

    NO_REQUEST_HAS_VALUE, HAS_REQUEST_NO_VALUE, HAS_REQUEST_HAS_VALUE, HAS_CANCELLED = 1, 2, 3, 4

    def __init__(self, actual: Any, callable_: Callable[[], Any], scheduler: ParallelScheduler) -> None:
        self.actual = actual
        self.callable = callable_
        self.scheduler = scheduler
        self.state = AtomicLong()
        self.value: Any = None
        self.main_future: Any = None

    def cancel(self) -> None:
        self.state.set(self.HAS_CANCELLED)
        f = self.main_future
        if f is not None:
            f.dispose()

    def run(self) -> None:
        try:
            v = self.callable()
        except Exception as ex:
            self.actual.on_error(ex)
            return
        if v is None:
            self.actual.on_complete()
            return
        while True:
            s = self.state.get()
            if s in (self.HAS_CANCELLED, self.HAS_REQUEST_HAS_VALUE, self.NO_REQUEST_HAS_VALUE):
                return
            if s == self.HAS_REQUEST_NO_VALUE:
                self.actual.on_next(v)
                if self.state.get() != self.HAS_CANCELLED:
                    self.actual.on_complete()
                return
            self.value = v
            if self.state.compare_and_set(s, self.NO_REQUEST_HAS_VALUE):
                return

    def request(self, n: int) -> None:
        if validate_request(n):
            while True:
                s = self.state.get()
                if s in (self.HAS_CANCELLED, self.HAS_REQUEST_NO_VALUE, self.HAS_REQUEST_HAS_VALUE):
                    return
                if s == self.NO_REQUEST_HAS_VALUE:
                    if self.state.compare_and_set(s, self.HAS_REQUEST_HAS_VALUE):
                        self.scheduler.schedule(self.emit_value)
                    return
                if self.state.compare_and_set(s, self.HAS_REQUEST_NO_VALUE):
                    return

    def emit_value(self) -> None:
        v, self.value = self.value, None
        if v is not None:
            self.actual.on_next(v)
        if self.state.get() != self.HAS_CANCELLED:
            self.actual.on_complete()


class FluxSubscribeOnCallable(Flux):
    """``FluxSubscribeOnCallable.java``."""

    def __init__(self, callable_: Callable[[], Any], scheduler: ParallelScheduler) -> None:
        self.callable = callable_
        self.scheduler = scheduler

    def subscribe_core(self, actual: Any) -> None:
        parent = CallableSubscribeOnSubscription(actual, self.callable, self.scheduler)
        actual.on_subscribe(parent)
        parent.main_future = self.scheduler.schedule(parent.run)


# -- reactor-core/src/tckTest/java/reactor/core/publisher/tck/ -------------------------------------


def generate_tck(elements: int) -> Flux:
    """``FluxGenerateVerification.createPublisher``: a cursor that emits below ``elements`` and
    completes at ``elements``, then ``map(d * 10)``, ``map(d / 10)``, ``log("log-test", FINE)``."""

    def generator(cursor: int, s: Any) -> int:
        if cursor < elements and cursor < elements:
            s.next(cursor)
        elif cursor == elements:
            s.complete()
        return cursor + 1

    return FluxGenerate(lambda: 0, generator).map(lambda d: d * 10).map(lambda d: d // 10).log("log-test")


def generate_failed() -> Flux:
    """``FluxGenerateVerification.createFailedPublisher``: ``Flux.error(new Exception("test"))``."""
    return FluxError(Exception("test"))


def _abstract_flux(elements: int, transform: Callable[[Flux], Flux]) -> Flux:
    """``AbstractFluxVerification.createPublisher``: ``range(1, n).filter(true).map(identity)``."""
    if elements <= INT_MAX:
        return transform(range_(1, elements).filter(lambda i: True).map(lambda i: i))
    rnd = random.Random()
    return transform(MonoCallable(lambda: rnd.randint(-(2**31), INT_MAX)).repeat().map(_java_abs))


_fluxion_tck: ParallelScheduler | None = None


def fluxion_tck() -> ParallelScheduler:
    """``Schedulers.newParallel("fluxion-tck", 2)``, one for the whole run."""
    global _fluxion_tck
    if _fluxion_tck is None:
        _fluxion_tck = ParallelScheduler("fluxion-tck", 2)
    return _fluxion_tck


def range_filter_map(elements: int) -> Flux:
    """``AbstractFluxVerification``'s source with an identity transform."""
    return _abstract_flux(elements, lambda f: f)


def range_filter_map_publish_on(elements: int) -> Flux:
    """``AbstractFluxVerification``'s source under ``publishOn(newParallel("fluxion-tck", 2))``."""
    return _abstract_flux(elements, lambda f: f.publish_on(fluxion_tck()))


def abstract_failed() -> Flux:
    """``AbstractFluxVerification.createFailedPublisher``: ``Flux.error(new Exception("boom"))``."""
    return FluxError(Exception("boom"))


def abstract_failed_publish_on() -> Flux:
    """The failed publisher under ``publishOn``: a ``FluxSubscribeOnCallable``."""
    return FluxError(Exception("boom")).publish_on(fluxion_tck())

