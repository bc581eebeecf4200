"""RxJava 3's ``PublishProcessor``, ported line by line, and the publisher RxJava's TCK class
``src/test/java/io/reactivex/rxjava3/tck/PublishProcessorAsPublisherTckTest.java`` builds from it.

That class's ``createPublisher(n)`` starts a producer on ``Schedulers.io()`` that waits (at most
200 ms after it started) for a subscriber, then offers the n elements one by one, yielding
while an offer fails for lack of demand, and gives up silently once 1000 ms have passed since
it started: the stream must be asked for within a second of the factory call. It passes the JVM
TCK, whose tests run one after the other with 100 ms timeouts; the kit must not hold a test's
calls back past that second (``rstck._internal.schedule``).

Sources: ReactiveX/RxJava 3.x at 1eca072 (``processors/PublishProcessor.java``,
``internal/util/BackpressureHelper.java``). ``Schedulers.io().scheduleDirect`` is a new daemon
thread, ``Thread.sleep(1)`` is ``time.sleep(0.001)`` and ``Thread.yield()`` is ``time.sleep(0)``.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from . import rx_ports as rx
from .rx_ports import AtomicLong
from .rx_ports import AtomicReference

MAX = 2**63 - 1
MIN = -(2**63)


class _Subs(tuple):  # type: ignore[type-arg]
    """A sentinel array: EMPTY and TERMINATED are distinct objects (compared by identity)."""


def add_cap(a: int, b: int) -> int:
    u = a + b
    return MAX if u > MAX or u < 0 else u


def add_cancel(requested: AtomicLong, n: int) -> int:
    """``BackpressureHelper.addCancel``."""
    while True:
        r = requested.get()
        if r == MIN:
            return MIN
        if r == MAX:
            return MAX
        u = add_cap(r, n)
        if requested.compare_and_set(r, u):
            return r


def produced_cancel(requested: AtomicLong, n: int) -> int:
    """``BackpressureHelper.producedCancel``."""
    while True:
        current = requested.get()
        if current == MIN:
            return MIN
        if current == MAX:
            return MAX
        update = current - n
        if update < 0:
            rx.plugins_on_error(RuntimeError(f"More produced than requested: {update}"))
            update = 0
        if requested.compare_and_set(current, update):
            return update


class MissingBackpressureException(RuntimeError):
    @staticmethod
    def create_default() -> MissingBackpressureException:
        return MissingBackpressureException(
            "Could not emit value due to lack of requests")


# -- processors/PublishProcessor.java -------------------------------------------------------------


class PublishSubscription(AtomicLong):
    def __init__(self, actual: Any, parent: PublishProcessor) -> None:
        super().__init__(0)
        self.downstream = actual
        self.parent = parent

    def on_next(self, t: Any) -> None:
        r = self.get()
        if r == MIN:
            return
        if r != 0:
            self.downstream.on_next(t)
            produced_cancel(self, 1)
        else:
            self.cancel()
            self.downstream.on_error(MissingBackpressureException.create_default())

    def on_error(self, t: BaseException) -> None:
        if self.get() != MIN:
            self.downstream.on_error(t)
        else:
            rx.plugins_on_error(t)

    def on_complete(self) -> None:
        if self.get() != MIN:
            self.downstream.on_complete()

    def request(self, n: int) -> None:
        if rx.validate_request(n):
            add_cancel(self, n)

    def cancel(self) -> None:
        if self.get_and_set(MIN) != MIN:
            self.parent.remove(self)

    def is_cancelled(self) -> bool:
        return self.get() == MIN

    def is_full(self) -> bool:
        return self.get() == 0


class PublishProcessor(rx.Flowable, rx.FlowableSubscriber):
    TERMINATED = _Subs()
    EMPTY = _Subs()
    subscription_class = PublishSubscription

    def __init__(self) -> None:
        self.subscribers = AtomicReference(self.EMPTY)
        self.error: BaseException | None = None

    def subscribe_actual(self, t: Any) -> None:
        ps = self.subscription_class(t, self)
        t.on_subscribe(ps)
        if self.add(ps):
            # if cancellation happened while a successful add, the remove() didn't work
            # so we need to do it again
            if ps.is_cancelled():
                self.remove(ps)
        else:
            ex = self.error
            if ex is not None:
                t.on_error(ex)
            else:
                t.on_complete()

    def add(self, ps: Any) -> bool:
        while True:
            a = self.subscribers.get()
            if a is self.TERMINATED:
                return False
            b = (*a, ps)
            if self.subscribers.compare_and_set(a, b):
                return True

    def remove(self, ps: Any) -> None:
        while True:
            a = self.subscribers.get()
            if a is self.TERMINATED or a is self.EMPTY:
                return
            n = len(a)
            j = -1
            for i in range(n):
                if a[i] is ps:
                    j = i
                    break
            if j < 0:
                return
            b = self.EMPTY if n == 1 else (*a[:j], *a[j + 1:])
            if self.subscribers.compare_and_set(a, b):
                return

    def on_subscribe(self, s: Any) -> None:
        if self.subscribers.get() is self.TERMINATED:
            s.cancel()
            return
        # PublishProcessor doesn't bother with request coordination.
        s.request(MAX)

    def on_next(self, t: Any) -> None:
        if t is None:
            raise TypeError("onNext called with a null value.")
        for s in self.subscribers.get():
            s.on_next(t)

    def on_error(self, t: BaseException) -> None:
        if t is None:
            raise TypeError("onError called with a null Throwable.")
        if self.subscribers.get() is self.TERMINATED:
            rx.plugins_on_error(t)
            return
        self.error = t
        for s in self.subscribers.get_and_set(self.TERMINATED):
            s.on_error(t)

    def on_complete(self) -> None:
        if self.subscribers.get() is self.TERMINATED:
            return
        for s in self.subscribers.get_and_set(self.TERMINATED):
            s.on_complete()

    def offer(self, t: Any) -> bool:
        if t is None:
            raise TypeError("offer called with a null value.")
        array = self.subscribers.get()
        for s in array:
            if s.is_full():
                return False
        for s in array:
            s.on_next(t)
        return True

    def has_subscribers(self) -> bool:
        return len(self.subscribers.get()) != 0


# -- tck/PublishProcessorAsPublisherTckTest.java --------------------------------------------------

#: ``BaseTck.maxElementsFromPublisher``.
MAX_ELEMENTS = 1024
#: How long the producer waits for a subscriber, and when it gives up, after it started.
WAIT_SUBSCRIBER_MS = 200.0
GIVE_UP_MS = 1000.0


def _now_ms() -> float:
    return time.monotonic() * 1000.0


def publish_processor_as_publisher(elements: int) -> PublishProcessor:
    """``PublishProcessorAsPublisherTckTest.createPublisher``."""
    p = PublishProcessor()

    def run() -> None:
        start = _now_ms()
        while not p.has_subscribers():
            time.sleep(0.001)
            if _now_ms() - start > WAIT_SUBSCRIBER_MS:
                return
        for i in range(elements):
            while not p.offer(i):
                time.sleep(0)
                if _now_ms() - start > GIVE_UP_MS:
                    return
        p.on_complete()

    threading.Thread(target=run, daemon=True, name="rx-io").start()
    return p
