"""Deliberately broken publishers: each one breaks exactly one rule, to prove the TCK notices.

``RangePublisher``/``RangeSubscription`` below are a small *correct* range source (the
catalogue's self-test runs the whole verification against them); every broken publisher
changes one method of them, or is a tiny class of its own, and its docstring names the rule
it breaks and how. ``pooled = True`` on a subscription class moves delivery to a thread pool,
which is how the threaded variants of a defect are made.

Hostile ones (deadlocks, endless storms) only ever block a thread the TCK owns (never a pool
worker, which would hang interpreter exit). Every emission loop stops as soon as the
subscriber raises, and ``halt_all()`` stops every loop still running, so a publisher the TCK
abandoned cannot keep a core busy while later cases run.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import random
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from typing import ClassVar

from rstck.api import MAX_DEMAND
from rstck.api import PublisherFactory
from rstck.api import Subscriber

#: Shared workers of the ``pooled`` variants. Nothing submitted here may block for long.
POOL = ThreadPoolExecutor(max_workers=4, thread_name_prefix="broken-pool")

#: A pooled drain starts this long after the call that scheduled it, so its signals reliably
#: arrive after that call returned (that is what makes a threaded variant behave differently).
POOL_DELAY = 0.01

_halt = threading.Event()


def halt_all() -> None:
    """Stop every emission loop created so far; subscriptions made afterwards are unaffected."""
    global _halt
    _halt.set()
    _halt = threading.Event()


def invalid_request(n: int) -> ValueError:
    """The rule 3.9 error, with the explanation the spec recommends."""
    return ValueError(f"request({n}) is illegal, n must be > 0")


# -- the correct base --------------------------------------------------------------------------


class RangeSubscription:
    """A correct subscription to the ints ``0..count-1``; ``count >= MAX_DEMAND`` is endless.

    Trampolined (a re-entrant ``request`` only adds demand: rules 3.2, 3.3), serial (the
    drain runs on one thread at a time: 1.3) and saturating (3.17). Subscribers are never
    called under the lock. Subclasses override one hook to break one rule.
    """

    #: Drain on ``POOL``, ``POOL_DELAY`` later, instead of on the calling thread.
    pooled: ClassVar[bool] = False

    def __init__(self, subscriber: Subscriber[int], count: int) -> None:
        self.halted = _halt
        self.lock = threading.Lock()
        self.subscriber: Subscriber[int] | None = subscriber  # None: cancelled or terminated
        self.index = 0
        self.end: int | None = None if count >= MAX_DEMAND else count
        self.demand = 0
        self.error: BaseException | None = None
        # subscribe() owns the first drain, so nothing is signalled inside on_subscribe.
        self.wip = 1

    # -- the Subscription interface -------------------------------------------------------

    def request(self, n: int) -> None:
        with self.lock:
            if self.subscriber is None:
                return
            if n <= 0:
                self.error = self.error or self.invalid(n)
            else:
                self.demand = self.add(self.demand, n)
            self.wip += 1
            if self.wip != 1:
                return
        self.schedule()

    def cancel(self) -> None:
        self.stop()

    # -- hooks ---------------------------------------------------------------------------

    def add(self, demand: int, n: int) -> int:
        """The demand after ``request(n)``."""
        return min(demand + n, MAX_DEMAND)

    def invalid(self, n: int) -> BaseException:
        """What ``request(n <= 0)`` is answered with."""
        return invalid_request(n)

    def element(self, index: int) -> int:
        return index

    def deliver_next(self, subscriber: Subscriber[int], element: int) -> None:
        subscriber.on_next(element)

    def deliver_complete(self, subscriber: Subscriber[int]) -> None:
        subscriber.on_complete()

    def deliver_error(self, subscriber: Subscriber[int], error: BaseException) -> None:
        subscriber.on_error(error)

    # -- machinery ----------------------------------------------------------------------

    def stop(self) -> None:
        """Forget the subscriber: no more signals (1.8, 3.6) and no reference kept (3.13)."""
        with self.lock:
            self.subscriber = None

    def start(self) -> None:
        """Called by ``subscribe`` once ``on_subscribe`` has returned."""
        self.schedule()

    def schedule(self) -> None:
        self.run(self.drain)

    def run(self, action: Callable[..., object], *args: object) -> None:
        """``action(*args)`` here, or on the pool (``POOL_DELAY`` later) when ``pooled``."""
        if not self.pooled:
            action(*args)
            return

        def later() -> None:
            time.sleep(POOL_DELAY)
            action(*args)

        POOL.submit(later)

    def drain(self) -> None:
        """Signal until nothing is left to do, then loop again for work that came meanwhile."""
        missed = 1
        while True:
            while self.step():
                pass
            with self.lock:
                self.wip -= missed
                missed = self.wip
                if missed == 0:
                    return

    def step(self) -> bool:
        """Deliver at most one signal; ``True`` if it was an element (there may be more)."""
        element = 0
        with self.lock:
            if self.halted.is_set():
                self.subscriber = None
            subscriber = self.subscriber
            if subscriber is None:
                return False
            error = self.error
            done = error is None and self.index == self.end
            if error is None and not done:
                if self.demand <= 0:
                    return False
                element = self.element(self.index)
                self.index += 1
                if self.demand < MAX_DEMAND:
                    self.demand -= 1
            else:
                self.subscriber = None  # terminated: cancelled from now on (1.6)
        try:
            if error is not None:
                self.deliver_error(subscriber, error)
            elif done:
                self.deliver_complete(subscriber)
            else:
                self.deliver_next(subscriber, element)
                return True
        except Exception:
            self.stop()  # a subscriber that raises is cancelled (2.13); this ends any storm
        return False


class RangePublisher:
    """A correct publisher of ``0..count-1``, unicast: each subscriber gets its own range."""

    def __init__(
        self, count: int, subscription: type[RangeSubscription] = RangeSubscription
    ) -> None:
        self.count = count
        self.subscription = subscription

    def subscribe(self, subscriber: Subscriber[int]) -> None:
        if subscriber is None:
            raise TypeError("subscribe(None) is illegal")
        subscription = self.subscription(subscriber, self.count)
        try:
            subscriber.on_subscribe(subscription)
        except Exception:
            subscription.stop()
            return
        subscription.start()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.count}, {self.subscription.__name__})"


def factory(subscription: type[RangeSubscription]) -> PublisherFactory:
    """A TCK publisher factory whose publishers hand out ``subscription`` objects."""

    def make(n: int) -> RangePublisher:
        return RangePublisher(n, subscription)

    make.__qualname__ = make.__name__ = f"factory({subscription.__name__})"
    return make


class PooledRangeSubscription(RangeSubscription):
    """The correct base, delivering on ``POOL`` (one drain at a time per subscription)."""

    pooled = True


class DefersACancelFromAnotherThread(PooledRangeSubscription):
    """Rule 1.8: a cancel() made from another thread while the pool's drain runs is only noted,
    for the drain to honour once it runs out of demand (a "safe point"); under unbounded demand
    it never does. A cancel from inside on_next, on the drain's own thread, works."""

    def __init__(self, subscriber: Subscriber[int], count: int) -> None:
        super().__init__(subscriber, count)
        self.draining: threading.Thread | None = None
        self.noted = False

    def cancel(self) -> None:
        if self.draining is not None and self.draining is not threading.current_thread():
            self.noted = True
            return
        super().cancel()

    def drain(self) -> None:
        self.draining = threading.current_thread()
        try:
            super().drain()
        finally:
            self.draining = None
            if self.noted:
                self.stop()


class NoopSubscription:
    """The subscription of a publisher that has already failed: there is nothing to control."""

    def request(self, n: int) -> None:
        pass

    def cancel(self) -> None:
        pass


class FailedPublisher:
    """A correct failed publisher: ``on_subscribe`` then ``on_error``, on the calling thread."""

    def subscribe(self, subscriber: Subscriber[Any]) -> None:
        if subscriber is None:
            raise TypeError("subscribe(None) is illegal")
        subscriber.on_subscribe(NoopSubscription())
        subscriber.on_error(RuntimeError("failed publisher: fails every subscriber"))


# -- sanity: the factory contract ------------------------------------------------------------


class ShortByOne(RangeSubscription):
    """Sanity: ``factory(n)`` yields n-1 elements (an off-by-one in the source's end)."""

    def __init__(self, subscriber: Subscriber[int], count: int) -> None:
        super().__init__(subscriber, count)
        if self.end is not None:
            self.end = max(0, self.end - 1)


# -- 1.1: never more than requested ---------------------------------------------------------


class ExtraElement(RangeSubscription):
    """Rule 1.1: every ``request(n)`` is counted as n+1, so one element too many arrives."""

    def add(self, demand: int, n: int) -> int:
        return min(demand + n + 1, MAX_DEMAND)


class PooledExtraElement(ExtraElement):
    """Rule 1.1, threaded: n+1 elements per ``request(n)``, delivered from a thread pool."""

    pooled = True


class Eager(RangeSubscription):
    """Rule 1.1: starts with a demand of 1, so the first element arrives before any request."""

    def __init__(self, subscriber: Subscriber[int], count: int) -> None:
        super().__init__(subscriber, count)
        self.demand = 1


class Storm(RangeSubscription):
    """Rule 1.1, hostile: never looks at demand and never ends, an endless ``on_next`` storm.

    Whatever count it is made with, the stream is endless and starts before any request. It
    stops only when the subscriber raises (the TCK's flood guard does).
    """

    def __init__(self, subscriber: Subscriber[int], count: int) -> None:
        super().__init__(subscriber, MAX_DEMAND)
        self.demand = MAX_DEMAND


class PooledStorm(Storm):
    """Rule 1.1, hostile and threaded: the endless storm, from a pool worker."""

    pooled = True


class Noop(RangeSubscription):
    """Rules 1.1/3.9 (JVM: the no-op publisher): ``on_subscribe``, then nothing, ever.

    ``request`` does nothing: no element, no completion, no error for illegal ``n``.
    """

    def request(self, n: int) -> None:
        pass


# -- 1.2: fewer than requested, then terminate ------------------------------------------------


class AllOrNothing(RangeSubscription):
    """Rule 1.2: a request larger than what is left is ignored instead of served and completed.

    ``request(10)`` on a 3-element stream delivers nothing and never completes.
    """

    def add(self, demand: int, n: int) -> int:
        if self.end is not None and n > self.end - self.index:
            return demand
        return super().add(demand, n)


# -- 1.3: serial signals ----------------------------------------------------------------------


class ConcurrentOnNext(RangeSubscription):
    """Rule 1.3, threaded: each ``on_next`` is its own task on a 4-thread pool, unserialised.

    Demand and order of terminals are kept right (completion waits for the elements), so
    the only defect is that two threads can be inside ``on_next`` at once.
    """

    def __init__(self, subscriber: Subscriber[int], count: int) -> None:
        super().__init__(subscriber, count)
        self.workers = ThreadPoolExecutor(max_workers=4, thread_name_prefix="broken-concurrent")
        self.pending: list[concurrent.futures.Future[None]] = []

    def deliver_next(self, subscriber: Subscriber[int], element: int) -> None:
        self.pending.append(self.workers.submit(subscriber.on_next, element))

    def deliver_complete(self, subscriber: Subscriber[int]) -> None:
        pending = list(self.pending)

        def complete() -> None:
            concurrent.futures.wait(pending, timeout=5.0)
            subscriber.on_complete()

        self.workers.submit(complete)
        self.workers.shutdown(wait=False)

    def stop(self) -> None:
        super().stop()
        self.workers.shutdown(wait=False)


# -- 1.4 and 1.9: failed publishers -----------------------------------------------------------


class RaisingFailedPublisher:
    """Rules 1.4/1.9 (JVM): the failed publisher raises from ``subscribe`` instead of on_error."""

    def subscribe(self, subscriber: Subscriber[Any]) -> None:
        raise RuntimeError("cannot serve any subscriber")


class AcceptsNoneFailedPublisher:
    """Rule 1.9: the failed publisher's ``subscribe(None)`` returns normally (it only fails the
    subscribers it gets; a reference mutant whose ``raise`` was deleted does exactly this)."""

    def subscribe(self, subscriber: Subscriber[Any]) -> None:
        if subscriber is None:
            return
        subscriber.on_subscribe(NoopSubscription())
        subscriber.on_error(RuntimeError("failed publisher: fails every subscriber"))


class SilentFailedPublisher:
    """Rules 1.4/1.9 (JVM): the failed publisher signals ``on_subscribe``, then never on_error."""

    def subscribe(self, subscriber: Subscriber[Any]) -> None:
        subscriber.on_subscribe(NoopSubscription())


class CompletingFailedPublisher:
    """Rule 1.4: the failed publisher reports its failure with ``on_complete``, not on_error."""

    def subscribe(self, subscriber: Subscriber[Any]) -> None:
        subscriber.on_subscribe(NoopSubscription())
        subscriber.on_complete()


class _AfterErrorSubscription:
    """A failed publisher's subscription that, wrongly, still acts after ``on_error``."""

    def __init__(
        self, subscriber: Subscriber[Any], react: Callable[[Subscriber[Any], int], None]
    ) -> None:
        self.subscriber: Subscriber[Any] | None = subscriber
        self.react = react

    def request(self, n: int) -> None:
        if self.subscriber is not None:
            self.react(self.subscriber, n)

    def cancel(self) -> None:
        self.subscriber = None


class ValidatesAfterErrorFailedPublisher:
    """Rule 1.6: after ``on_error`` its subscription still answers ``request(n <= 0)``.

    The subscription is not considered cancelled once ``on_error`` went out, so an illegal
    request gets a second ``on_error(ValueError)``.
    """

    def subscribe(self, subscriber: Subscriber[Any]) -> None:
        def react(s: Subscriber[Any], n: int) -> None:
            if n <= 0:
                s.on_error(invalid_request(n))

        subscriber.on_subscribe(_AfterErrorSubscription(subscriber, react))
        subscriber.on_error(RuntimeError("failed publisher"))


class RaisingAfterErrorFailedPublisher:
    """Rule 1.6: after ``on_error`` its subscription raises from ``request()`` instead of no-op."""

    def subscribe(self, subscriber: Subscriber[Any]) -> None:
        def react(s: Subscriber[Any], n: int) -> None:
            raise RuntimeError("the publisher has failed")

        subscriber.on_subscribe(_AfterErrorSubscription(subscriber, react))
        subscriber.on_error(RuntimeError("failed publisher"))


class CompletesAfterErrorFailedPublisher:
    """Rule 1.7: after ``on_error``, a later ``request(n)`` is answered with ``on_complete``."""

    def subscribe(self, subscriber: Subscriber[Any]) -> None:
        def react(s: Subscriber[Any], n: int) -> None:
            if n > 0:
                s.on_complete()

        subscriber.on_subscribe(_AfterErrorSubscription(subscriber, react))
        subscriber.on_error(RuntimeError("failed publisher"))


# -- 1.5: on_complete at the end --------------------------------------------------------------


class NeverCompletes(RangeSubscription):
    """Rule 1.5 (JVM): delivers every element but never signals ``on_complete``."""

    def deliver_complete(self, subscriber: Subscriber[int]) -> None:
        pass


class EmptyWithoutOnSubscribe(RangePublisher):
    """Rule 1.9 (JVM, via the empty-stream test): an empty stream completes without on_subscribe."""

    def subscribe(self, subscriber: Subscriber[int]) -> None:
        if subscriber is not None and self.count == 0:
            subscriber.on_complete()
            return
        super().subscribe(subscriber)


# -- 1.6 / 1.7: nothing after a terminal signal ---------------------------------------------


class ValidatesAfterComplete(RangeSubscription):
    """Rule 1.6: after ``on_complete``, ``request(n <= 0)`` is still answered with on_error."""

    def __init__(self, subscriber: Subscriber[int], count: int) -> None:
        super().__init__(subscriber, count)
        self.completed: Subscriber[int] | None = None

    def deliver_complete(self, subscriber: Subscriber[int]) -> None:
        self.completed = subscriber
        subscriber.on_complete()

    def request(self, n: int) -> None:
        if n <= 0 and self.completed is not None:
            self.completed.on_error(self.invalid(n))
        super().request(n)

    def cancel(self) -> None:
        self.completed = None
        super().cancel()


class RaisesWhenUsedAfterComplete(RangeSubscription):
    """Rule 1.6: after ``on_complete`` it is not treated as cancelled: ``request()`` raises."""

    def __init__(self, subscriber: Subscriber[int], count: int) -> None:
        super().__init__(subscriber, count)
        self.completed = False

    def deliver_complete(self, subscriber: Subscriber[int]) -> None:
        self.completed = True
        subscriber.on_complete()

    def request(self, n: int) -> None:
        if self.completed:
            raise RuntimeError("the stream has already completed")
        super().request(n)


class EmitsAfterComplete(RangeSubscription):
    """Rule 1.7 (JVM): ``on_complete`` does not end it; later requests get more elements."""

    def deliver_complete(self, subscriber: Subscriber[int]) -> None:
        subscriber.on_complete()
        with self.lock:  # "rewind" into an endless stream, still subscribed
            self.subscriber, self.end, self.demand = subscriber, None, 0


class FloodsAfterComplete(RangeSubscription):
    """Rule 1.7, hostile: after ``on_complete`` it keeps emitting forever under the old demand."""

    def deliver_complete(self, subscriber: Subscriber[int]) -> None:
        subscriber.on_complete()
        with self.lock:  # endless, and the unbounded demand is kept
            self.subscriber, self.end = subscriber, None
        self.request(1)  # wake the drain loop up again


# -- 1.8 / 3.12: stop after cancel ------------------------------------------------------------


class FlushesOnCancel(RangeSubscription):
    """Rule 3.12: ``cancel()`` first flushes the rest of the stream, ignoring demand, then stops."""

    def cancel(self) -> None:
        with self.lock:
            self.demand = MAX_DEMAND
        self.request(1)  # drain everything that is left (and complete), then forget
        super().cancel()


class IgnoresCancel(RangeSubscription):
    """Rules 1.8/3.12: ``cancel()`` does nothing; only the demand ever stops the stream."""

    def cancel(self) -> None:
        pass


class PooledIgnoresCancel(IgnoresCancel):
    """Rules 1.8/3.12, threaded: ``cancel()`` is a no-op and elements come from a pool."""

    pooled = True


# -- 1.9: subscribe -------------------------------------------------------------------------


class AcceptsNoneSubscriber(RangePublisher):
    """Rule 1.9 (JVM): ``subscribe(None)`` returns normally instead of raising TypeError."""

    def subscribe(self, subscriber: Subscriber[int]) -> None:
        if subscriber is None:
            return
        super().subscribe(subscriber)


class RaisingSubscribe(RangePublisher):
    """Rule 1.9: ``subscribe()`` raises (a capacity check) instead of signalling on_error."""

    def subscribe(self, subscriber: Subscriber[int]) -> None:
        raise RuntimeError("subscriber limit reached")


class NoOnSubscribe(RangePublisher):
    """Rule 1.9: ``subscribe()`` accepts the subscriber but never calls ``on_subscribe``."""

    def subscribe(self, subscriber: Subscriber[int]) -> None:
        if subscriber is None:
            raise TypeError("subscribe(None) is illegal")


class SecondOnSubscribe(RangePublisher):
    """Rule 1.9: a retry layer subscribes the subscriber twice: two ``on_subscribe`` calls."""

    def subscribe(self, subscriber: Subscriber[int]) -> None:
        super().subscribe(subscriber)
        super().subscribe(subscriber)


class _SignalsBeforeOnSubscribe(RangePublisher):
    """Sends ``premature`` to the subscriber, then subscribes it as usual."""

    def premature(self, subscriber: Subscriber[int]) -> None:
        raise NotImplementedError

    def subscribe(self, subscriber: Subscriber[int]) -> None:
        if subscriber is not None:
            self.premature(subscriber)
        super().subscribe(subscriber)


class NextBeforeOnSubscribe(_SignalsBeforeOnSubscribe):
    """Rule 1.9 (JVM): a replay buffer flushes ``on_next(0)`` before ``on_subscribe``."""

    def premature(self, subscriber: Subscriber[int]) -> None:
        subscriber.on_next(0)


class CompleteBeforeOnSubscribe(_SignalsBeforeOnSubscribe):
    """Rule 1.9 (JVM): ``on_complete`` arrives before ``on_subscribe``."""

    def premature(self, subscriber: Subscriber[int]) -> None:
        subscriber.on_complete()


class ErrorBeforeOnSubscribe(_SignalsBeforeOnSubscribe):
    """Rule 1.9 (JVM): ``on_error`` arrives before ``on_subscribe``."""

    def premature(self, subscriber: Subscriber[int]) -> None:
        subscriber.on_error(RuntimeError("premature failure"))


# -- 1.11: several subscribers (optional) ----------------------------------------------------


class RandomElements(RangeSubscription):
    """Rule 1.11 (optional, JVM): every subscriber gets its own random elements (no multicast)."""

    def element(self, index: int) -> int:
        return random.randrange(1_000_000)


class DropsFirstSubscriber(RangePublisher):
    """Rule 1.11 (optional): a second subscriber silently takes over; the first hears nothing."""

    def __init__(self, count: int) -> None:
        super().__init__(count)
        self.current: RangeSubscription | None = None

    def subscribe(self, subscriber: Subscriber[int]) -> None:
        if subscriber is None:
            raise TypeError("subscribe(None) is illegal")
        if self.current is not None:
            self.current.stop()
        self.current = RangeSubscription(subscriber, self.count)
        subscriber.on_subscribe(self.current)
        self.current.start()


class RejectsSecondSubscriber(RangePublisher):
    """Rule 1.11 (optional, JVM): one subscriber only; later ones get on_subscribe, on_error."""

    def __init__(self, count: int) -> None:
        super().__init__(count)
        self.subscribed = False

    def subscribe(self, subscriber: Subscriber[int]) -> None:
        if subscriber is not None and self.subscribed:
            subscriber.on_subscribe(NoopSubscription())
            subscriber.on_error(RuntimeError("only one subscriber is supported"))
            return
        self.subscribed = True
        super().subscribe(subscriber)


# -- 3.2 / 3.3: re-entrant request ----------------------------------------------------------


class DeadlocksOnReentrantRequest(RangeSubscription):
    """Rule 3.2, hostile: a plain lock is held while signalling, so a re-entrant ``request`` blocks.

    ``request()`` from inside ``on_next`` waits for a lock its own thread holds: forever.
    """

    def __init__(self, subscriber: Subscriber[int], count: int) -> None:
        super().__init__(subscriber, count)
        self.emitting = threading.Lock()

    def request(self, n: int) -> None:
        with self.emitting:
            super().request(n)

    def start(self) -> None:
        with self.emitting:
            super().start()


class RaisesOnReentrantRequest(RangeSubscription):
    """Rule 3.2: a re-entrancy guard makes ``request()`` from inside ``on_next`` raise."""

    def __init__(self, subscriber: Subscriber[int], count: int) -> None:
        super().__init__(subscriber, count)
        self.emitting = False

    def request(self, n: int) -> None:
        if self.emitting:
            raise RuntimeError("request() called re-entrantly from a signal")
        super().request(n)

    def deliver_next(self, subscriber: Subscriber[int], element: int) -> None:
        self.emitting = True
        try:
            subscriber.on_next(element)
        finally:
            self.emitting = False


class ErrorsOnEveryRequest(RangeSubscription):
    """Rule 3.2 (JVM): every ``request()`` fails the stream with ``on_error``."""

    def add(self, demand: int, n: int) -> int:
        self.error = self.error or RuntimeError("Boom!")
        return demand


class Recursive(RangeSubscription):
    """Rule 3.3 (JVM): ``request()`` calls ``on_next`` directly, with no trampoline.

    Every ``request(1)`` from inside ``on_next`` nests one level deeper, without bound.
    """

    def request(self, n: int) -> None:
        with self.lock:
            if self.subscriber is None:
                return
            if n <= 0:
                self.error = self.error or self.invalid(n)
            else:
                self.demand = self.add(self.demand, n)
        while self.step():
            pass


class BlockingRequest(RangeSubscription):
    """Rule 3.4 (hostile): ``request()`` waits for an event nobody sets; the caller hangs."""

    def request(self, n: int) -> None:
        threading.Event().wait()


# -- 3.5 - 3.7: cancel ---------------------------------------------------------------------


class CancelNotThreadSafe(RangeSubscription):
    """Rule 3.5: ``cancel()`` takes a try-lock for its clean-up and raises if another holds it."""

    def __init__(self, subscriber: Subscriber[int], count: int) -> None:
        super().__init__(subscriber, count)
        self.cleanup = threading.Lock()

    def cancel(self) -> None:
        if not self.cleanup.acquire(blocking=False):
            raise RuntimeError("cancel() is already running on another thread")
        try:
            time.sleep(0.01)  # releasing resources
            super().cancel()
        finally:
            self.cleanup.release()


class CancelBlocksWhenConcurrent(RangeSubscription):
    """Rule 3.5: concurrent ``cancel()`` calls each wait for the others to leave: a deadlock.

    Sequential calls are fine; two at once block each other (here for 5 s, then give up).
    """

    def __init__(self, subscriber: Subscriber[int], count: int) -> None:
        super().__init__(subscriber, count)
        self.inside = 0
        self.changed = threading.Condition()

    def cancel(self) -> None:
        with self.changed:
            self.inside += 1
        time.sleep(0.01)  # releasing resources
        with self.changed:
            # Meant to wait for an earlier cancel to finish; waits for every concurrent one.
            self.changed.wait_for(lambda: self.inside == 1, timeout=5.0)
            self.inside -= 1
            self.changed.notify_all()
        super().cancel()


class RequestAfterCancelDelivers(RangeSubscription):
    """Rule 3.6: ``cancel()`` only pauses; a later ``request(n)`` resumes delivery."""

    def cancel(self) -> None:
        with self.lock:
            self.demand = 0


class ErrorsOnRequestAfterCancel(RangeSubscription):
    """Rule 3.6: ``request()`` after ``cancel()`` is answered with on_error, not ignored."""

    def __init__(self, subscriber: Subscriber[int], count: int) -> None:
        super().__init__(subscriber, count)
        self.owner: Subscriber[int] | None = subscriber
        self.cancelled = False

    def request(self, n: int) -> None:
        owner = self.owner
        if self.cancelled and owner is not None:
            self.owner = None
            self.run(owner.on_error, RuntimeError("request() after cancel()"))
            return
        super().request(n)

    def cancel(self) -> None:
        self.cancelled = True
        super().cancel()


class PooledErrorsOnRequestAfterCancel(ErrorsOnRequestAfterCancel):
    """Rule 3.6, threaded: the on_error for a request after cancel comes from a pool worker."""

    pooled = True


class CancelSignalsError(RangeSubscription):
    """Rule 3.7 (JVM): ``cancel()`` ends the stream with ``on_error`` instead of silently."""

    def cancel(self) -> None:
        with self.lock:
            if self.subscriber is not None and self.error is None:
                self.error = RuntimeError("cancelled")
                self.wip += 1
                if self.wip != 1:
                    return
            else:
                return
        self.schedule()


class SecondCancelSignalsError(RangeSubscription):
    """Rule 3.7: the first ``cancel()`` works; a second one signals ``on_error``."""

    def __init__(self, subscriber: Subscriber[int], count: int) -> None:
        super().__init__(subscriber, count)
        self.owner: Subscriber[int] | None = subscriber
        self.cancels = 0

    def cancel(self) -> None:
        self.cancels += 1
        owner = self.owner
        if self.cancels == 2 and owner is not None:
            self.owner = None
            self.run(owner.on_error, RuntimeError("subscription already cancelled"))
        super().cancel()


class PooledCancelSignalsError(CancelSignalsError):
    """Rule 3.7, threaded: the on_error that ``cancel()`` triggers comes from a pool worker."""

    pooled = True


class PooledSecondCancelSignalsError(SecondCancelSignalsError):
    """Rule 3.7, threaded: a second ``cancel()`` makes a pool worker signal on_error."""

    pooled = True


# -- 3.8: demand adds up ----------------------------------------------------------------------


class OverwritesDemand(RangeSubscription):
    """Rule 3.8, threaded: ``request(n)`` sets the demand to n instead of adding n.

    Delivery is asynchronous (a synchronous one would serve each request before the next
    came), so several requests pile up before it runs and all but the last are lost.
    """

    pooled = True

    def add(self, demand: int, n: int) -> int:
        return n


# -- 3.9: non-positive requests -------------------------------------------------------------


class IgnoresRequestZero(RangeSubscription):
    """Rule 3.9: ``request(n <= 0)`` is silently ignored instead of signalling on_error."""

    def request(self, n: int) -> None:
        if n > 0:
            super().request(n)


class ChecksOnlyZero(RangeSubscription):
    """Rule 3.9: validates ``n == 0`` only; a negative request quietly lowers the demand."""

    def request(self, n: int) -> None:
        if n < 0:
            with self.lock:
                self.demand += n
            return
        super().request(n)


class RaisesFromRequest(RangeSubscription):
    """Rule 3.9: raises ValueError from ``request(n <= 0)`` instead of signalling on_error."""

    def request(self, n: int) -> None:
        if n <= 0:
            raise invalid_request(n)
        super().request(n)


class WrongErrorType(RangeSubscription):
    """Rule 3.9: an illegal request is signalled as RuntimeError, not ValueError."""

    def invalid(self, n: int) -> BaseException:
        return RuntimeError(f"request({n}) is illegal, n must be > 0")


class UnexplainedError(RangeSubscription):
    """Rule 3.9 (optional part): the ValueError's message does not say what was wrong."""

    def invalid(self, n: int) -> BaseException:
        return ValueError("bad argument")


# -- 3.13: drop the subscriber --------------------------------------------------------------


class Registry(RangePublisher):
    """Rule 3.13 (JVM): every subscriber is kept in a list that nothing ever clears."""

    def __init__(self, count: int) -> None:
        super().__init__(count)
        self.subscribers: list[Subscriber[int]] = []

    def subscribe(self, subscriber: Subscriber[int]) -> None:
        if subscriber is not None:
            self.subscribers.append(subscriber)
        super().subscribe(subscriber)


class IdleTimerLeak(RangeSubscription):
    """Rule 3.13, threaded: an idle-timeout timer holds the subscriber; cancel never disarms it."""

    def __init__(self, subscriber: Subscriber[int], count: int) -> None:
        super().__init__(subscriber, count)
        self.timer = threading.Timer(10.0, self.idle_timeout, args=(subscriber,))
        self.timer.daemon = True
        self.timer.start()

    def idle_timeout(self, subscriber: Subscriber[int]) -> None:
        with self.lock:
            if self.subscriber is not subscriber:
                return  # cancelled or done meanwhile
            self.error = TimeoutError("idle for 10 s")
        self.request(1)  # wake the drain, which delivers the error


# -- 3.15 / 3.16: return normally ------------------------------------------------------------


class CancelRaises(RangeSubscription):
    """Rule 3.15: ``cancel()`` is an unfinished stub that raises NotImplementedError."""

    def cancel(self) -> None:
        raise NotImplementedError("cancel")


class RequestRaisesAfterCancel(RangeSubscription):
    """Rule 3.16: ``request()`` on a cancelled subscription raises instead of doing nothing."""

    def __init__(self, subscriber: Subscriber[int], count: int) -> None:
        super().__init__(subscriber, count)
        self.cancelled = False

    def request(self, n: int) -> None:
        if self.cancelled:
            raise RuntimeError("subscription is cancelled")
        super().request(n)

    def cancel(self) -> None:
        self.cancelled = True
        super().cancel()


# -- 3.17: demand up to 2**63-1 -------------------------------------------------------------


class ThirtyTwoBitDemand(RangeSubscription):
    """Rule 3.17: a demand above 2**31-1 (a Java int) is rejected with on_error."""

    def add(self, demand: int, n: int) -> int:
        if demand + n > 2**31 - 1:
            self.error = self.error or ValueError(f"demand {demand + n} does not fit in 32 bits")
            return demand
        return demand + n


class ErrorsOnOverflow(RangeSubscription):
    """Rule 3.17 (JVM): demand is summed without saturating and a sum past 2**63-1 is an error."""

    def add(self, demand: int, n: int) -> int:
        if demand + n > MAX_DEMAND:
            self.error = self.error or OverflowError("demand overflowed 2**63-1")
            return demand
        return demand + n


class ErrorsAtExactlyMax(RangeSubscription):
    """Rule 3.17 (JVM): a cumulative demand of exactly 2**63-1 is wrongly treated as overflow."""

    def add(self, demand: int, n: int) -> int:
        if demand + n >= MAX_DEMAND:
            self.error = self.error or OverflowError("demand overflowed 2**63-1")
            return demand
        return demand + n


class PooledErrorsAtExactlyMax(ErrorsAtExactlyMax):
    """Rule 3.17, threaded: as above, delivering from a pool, so requests add up before delivery."""

    pooled = True


# -- defects that hide in one calling context ----------------------------------------------------
#
# Each of these keeps its rule when called the way the simpler tests call it, and breaks it
# in one other context: from inside a signal, with several elements at once, after a
# terminal signal, for a later subscriber.


class SignalsWhileOnSubscribeRuns(RangeSubscription):
    """Rule 1.3, threaded: the pool drain is live before ``on_subscribe`` returns.

    A ``request`` made inside ``on_subscribe`` starts delivery on a pool thread at once, so
    ``on_next`` can enter while ``on_subscribe`` is still running on the subscriber's thread.
    After ``on_subscribe`` returns it is serial like the base.
    """

    def __init__(self, subscriber: Subscriber[int], count: int) -> None:
        super().__init__(subscriber, count)
        self.wip = 0  # no drain held back for subscribe(): a request may start one at once

    def start(self) -> None:
        pass

    def schedule(self) -> None:
        POOL.submit(self.drain)


class FailsOnlyFirstSubscriber:
    """Rule 1.4: a failed publisher that reports its failure once, to the first subscriber.

    Later subscribers get ``on_subscribe`` and then nothing: the error was "already reported".
    """

    def __init__(self) -> None:
        self.reported = False

    def subscribe(self, subscriber: Subscriber[Any]) -> None:
        if subscriber is None:
            raise TypeError("subscribe(None) is illegal")
        subscriber.on_subscribe(NoopSubscription())
        if not self.reported:
            self.reported = True
            subscriber.on_error(RuntimeError("the source failed"))


class ServesAfterRequestZeroError(RangeSubscription):
    """Rule 1.7: answers ``request(0)`` with ``on_error`` but stays live, so a later request delivers.

    Further illegal requests are ignored (the error "was already signalled"), so only a
    positive request after the error shows the defect.
    """

    def __init__(self, subscriber: Subscriber[int], count: int) -> None:
        super().__init__(subscriber, count)
        self.errored = False

    def request(self, n: int) -> None:
        if n <= 0:
            subscriber = self.subscriber
            if subscriber is not None and not self.errored:
                self.errored = True
                subscriber.on_error(invalid_request(n))
            return
        super().request(n)


class IgnoresLaterSubscribers(RangePublisher):
    """Rule 1.9: serves its first subscriber; later ones are silently ignored (no on_subscribe)."""

    def __init__(self, count: int, subscription: type[RangeSubscription] = RangeSubscription) -> None:
        super().__init__(count, subscription)
        self.served = False

    def subscribe(self, subscriber: Subscriber[int]) -> None:
        if subscriber is None:
            raise TypeError("subscribe(None) is illegal")
        if self.served:
            return
        self.served = True
        super().subscribe(subscriber)


class NestsBulkRequests(RangeSubscription):
    """Rule 3.3: a request for more than one element is served at once by a loop of its own.

    ``request(1)`` is trampolined like the base; ``request(n > 1)`` "does not wait for the
    running loop" and drains right there, so when it is called from inside ``on_next`` the
    stack grows by one level per request.
    """

    def request(self, n: int) -> None:
        if n <= 1:
            super().request(n)
            return
        with self.lock:
            if self.subscriber is None:
                return
            self.demand = self.add(self.demand, n)
        while self.step():
            pass


class TakesLargestEarlyRequest(RangeSubscription):
    """Rule 3.8: requests made while ``on_subscribe`` runs are coalesced by taking the largest.

    It reads them as "the prefetch the subscriber wants"; once subscribe() returned, requests
    add up as they must. Three ``request(1)`` inside ``on_subscribe`` yield one element.
    """

    def __init__(self, subscriber: Subscriber[int], count: int) -> None:
        super().__init__(subscriber, count)
        self.started = False

    def start(self) -> None:
        self.started = True
        super().start()

    def add(self, demand: int, n: int) -> int:
        return max(demand, n) if not self.started else super().add(demand, n)


class KeepsSubscriberWhenCancelledInsideOnNext(RangeSubscription):
    """Rule 3.13: a cancel made during a delivery defers its clean-up, which never happens.

    Each subscription is kept in a registry while active. ``cancel()`` from outside removes
    it and forgets the subscriber; from inside ``on_next`` it only stops the emission and
    leaves the clean-up "for after the delivery", which is forgotten: the registry keeps the
    subscription and the subscription keeps the subscriber.
    """

    ACTIVE: ClassVar[set[KeepsSubscriberWhenCancelledInsideOnNext]] = set()

    def __init__(self, subscriber: Subscriber[int], count: int) -> None:
        super().__init__(subscriber, count)
        self.delivering = False
        self.deferred = False
        self.ACTIVE.add(self)

    def deliver_next(self, subscriber: Subscriber[int], element: int) -> None:
        self.delivering = True
        try:
            subscriber.on_next(element)
        finally:
            self.delivering = False

    def stop(self) -> None:
        if self.delivering:
            self.deferred = True
            return
        self.ACTIVE.discard(self)
        super().stop()

    def step(self) -> bool:
        return False if self.deferred else super().step()


class DropsRequestsWhenMailboxFull(PooledRangeSubscription):
    """Rule 3.8: pending requests wait in a mailbox of 64 slots; a request finding it full is dropped.

    A few requests never fill it; hundreds in a row, made faster than the pool drains them, do.
    """

    def __init__(self, subscriber: Subscriber[int], count: int) -> None:
        super().__init__(subscriber, count)
        self.mailbox: list[int] = []

    def add(self, demand: int, n: int) -> int:
        if len(self.mailbox) >= 64:
            return demand  # full: dropped
        self.mailbox.append(n)
        return demand

    def step(self) -> bool:
        with self.lock:
            for n in self.mailbox:
                self.demand = min(self.demand + n, MAX_DEMAND)
            self.mailbox.clear()
        return super().step()


class IgnoresNonPositiveRequestsWhileDelivering(RangeSubscription):
    """Rule 3.9: ``request(n <= 0)`` made while a delivery runs takes the short path and is ignored.

    The re-entrant path ("a drain is running: just leave the demand") only records positive
    demand; from outside a delivery ``request(0)`` is answered with ``on_error`` as it must.
    """

    def request(self, n: int) -> None:
        if n <= 0 and self.wip:
            return
        super().request(n)


class RequestUndoesCancelMadeWhileDelivering(RangeSubscription):
    """Rule 3.6: a cancel made during a delivery is deferred, and a request that follows undoes it.

    ``cancel()`` from inside ``on_next`` only marks "stop after this drain"; a ``request``
    before the drain ends "supersedes" the pending cancel and delivery goes on.
    """

    def __init__(self, subscriber: Subscriber[int], count: int) -> None:
        super().__init__(subscriber, count)
        self.cancel_pending = False

    def cancel(self) -> None:
        if self.wip:
            self.cancel_pending = True
            return
        super().cancel()

    def request(self, n: int) -> None:
        if n > 0:
            self.cancel_pending = False
        super().request(n)

    def drain(self) -> None:
        super().drain()
        if self.cancel_pending:
            self.stop()


# -- 3.8: a cancel that silently stops other or later subscribers --------------------------------


class _StopsSiblings(RangeSubscription):
    """Cancelling stops every subscription of the same publisher, and tells none of them."""

    siblings: list[RangeSubscription]

    def cancel(self) -> None:
        for subscription in self.siblings:
            subscription.stop()


class StopsAllOnAnyCancel(RangePublisher):
    """Rule 3.8: one subscriber's cancel shuts the shared source down; the others hear nothing
    more, however much they request (a processor mutant that shut down on any cancel did this)."""

    def __init__(self, count: int) -> None:
        super().__init__(count, _StopsSiblings)
        self.subscriptions: list[RangeSubscription] = []

    def subscribe(self, subscriber: Subscriber[int]) -> None:
        if subscriber is None:
            raise TypeError("subscribe(None) is illegal")
        subscription = _StopsSiblings(subscriber, self.count)
        subscription.siblings = self.subscriptions
        self.subscriptions.append(subscription)
        subscriber.on_subscribe(subscription)
        subscription.start()


class _ShutsDownOnCancel(RangeSubscription):
    publisher: SilentAfterShutDown

    def cancel(self) -> None:
        self.publisher.shut = True
        self.stop()


class SilentAfterShutDown(RangePublisher):
    """Rule 3.8: after its subscriber cancelled, the publisher is shut down but still accepts
    subscribers, which then wait forever (a processor mutant that cancelled upstream without
    marking itself shut down did this)."""

    def __init__(self, count: int) -> None:
        super().__init__(count, _ShutsDownOnCancel)
        self.shut = False

    def subscribe(self, subscriber: Subscriber[int]) -> None:
        if subscriber is None:
            raise TypeError("subscribe(None) is illegal")
        if self.shut:
            subscriber.on_subscribe(NoopSubscription())
            return
        subscription = _ShutsDownOnCancel(subscriber, self.count)
        subscription.publisher = self
        subscriber.on_subscribe(subscription)
        subscription.start()


class ValidatesAfterCancel(RangeSubscription):
    """Rule 3.6: after cancel, request(n <= 0) is still answered with on_error(ValueError): the
    validation runs before the cancelled check (a processor mutant that kept its subscriber on
    cancel did this)."""

    def __init__(self, subscriber: Subscriber[int], count: int) -> None:
        super().__init__(subscriber, count)
        self.original = subscriber

    def request(self, n: int) -> None:
        if n <= 0 and self.subscriber is None:
            self.original.on_error(invalid_request(n))
            return
        super().request(n)
# -- sanity: factories that ignore n ---------------------------------------------------------


class AtLeastOne(RangeSubscription):
    """Sanity: ``factory(n)`` yields at least one element: ``factory(0)`` gives one (a source
    that cannot be empty, asked for an empty stream). Optional, as in the JVM TCK: only the
    optional 1.5 test reports it (RxJava's ``JustTckTest`` is such a factory)."""

    def __init__(self, subscriber: Subscriber[int], count: int) -> None:
        super().__init__(subscriber, count)
        if self.end is not None:
            self.end = max(1, self.end)


class CappedAtTwenty(RangeSubscription):
    """Sanity: ``factory(n)`` yields at most 20 elements (a fixed-size page, whatever n)."""

    def __init__(self, subscriber: Subscriber[int], count: int) -> None:
        super().__init__(subscriber, count)
        if self.end is not None:
            self.end = min(20, self.end)


class OneTooManyFromThree(RangeSubscription):
    """Sanity: ``factory(n)`` yields n+1 elements for n >= 3 (an inclusive bound on the path for
    longer streams), while ``factory(0)`` to ``factory(2)`` are right."""

    def __init__(self, subscriber: Subscriber[int], count: int) -> None:
        super().__init__(subscriber, count)
        if self.end is not None and self.end >= 3:
            self.end += 1


# -- 2.13 from the publisher's side: subscribers that raise ------------------------------------


class DeliversPastRaisingOnNext(RangeSubscription):
    """Rule 2.13: a subscriber's exception from on_next is swallowed and delivery goes on, as if
    the subscription were still active (it must be considered cancelled)."""

    def deliver_next(self, subscriber: Subscriber[int], element: int) -> None:
        with contextlib.suppress(Exception):
            subscriber.on_next(element)


class UnboundAfterRaisingOnNext(RangeSubscription):
    """Rule 3.16: when on_next raises, the delivery step's error path reads a name bound only on
    the normal path, so request() raises UnboundLocalError (a first-order mutant of a reference
    publisher: one statement deleted)."""

    def step(self) -> bool:
        with self.lock:
            subscriber = self.subscriber
            if subscriber is None or self.halted.is_set():
                return False
            done = self.index == self.end
            if not done:
                if self.demand <= 0:
                    return False
                element = self.index
                self.index += 1
                if self.demand < MAX_DEMAND:
                    self.demand -= 1
            else:
                self.subscriber = None
        if done:
            subscriber.on_complete()
            return False
        try:
            subscriber.on_next(element)
            delivered = True
        except Exception:
            self.stop()
        return delivered  # unbound when on_next raised


class OwnErrorWhenOnSubscribeRaises(RangePublisher):
    """Rule 1.9: a raising on_subscribe makes subscribe() raise an exception of its own, with the
    subscriber's failure suppressed (``from None``): the failure is not passed on, replaced."""

    def subscribe(self, subscriber: Subscriber[int]) -> None:
        if subscriber is None:
            raise TypeError("subscribe(None) is illegal")
        subscription = self.subscription(subscriber, self.count)
        try:
            subscriber.on_subscribe(subscription)
        except Exception:
            subscription.stop()
            raise RuntimeError("subscriber rejected") from None
        subscription.start()


class NameErrorAfterRaisingOnError(FailedPublisher):
    """Rule 1.9: the failed publisher's handler for a raising on_error refers to a name that does
    not exist: subscribe() raises NameError (while handling the subscriber's failure)."""

    def subscribe(self, subscriber: Subscriber[Any]) -> None:
        if subscriber is None:
            raise TypeError("subscribe(None) is illegal")
        subscriber.on_subscribe(NoopSubscription())
        try:
            subscriber.on_error(RuntimeError("failed publisher: fails every subscriber"))
        except Exception:
            logger.warning("subscriber failed")  # type: ignore[name-defined]  # noqa: F821
# -- past internal sizes: turns, counters, sums -------------------------------------------------


class StopsWhenOneOwedAfterTurn(RangeSubscription):
    """Rule 3.8: after a full turn of 64 signals the emission goes on only if more than one is owed.

    An actor that yields after each turn of 64 and carries on "if there is more to do" checks
    ``owed > 1`` (for ``owed >= 1``): a turn that ends owing exactly one element ends the
    emission, and the work count it still holds keeps every later request from restarting it.
    request(65), or request(1) from every on_next, stops at element 64.
    """

    TURN = 64

    def drain(self) -> None:
        missed = 1
        while True:
            sent = 0
            while sent < self.TURN and self.step():
                sent += 1
            if sent == self.TURN:
                with self.lock:
                    owed = self.demand
                if owed > 1:
                    continue  # the next turn
                if owed == 1:
                    return  # stranded: the off-by-one
            with self.lock:
                self.wip -= missed
                missed = self.wip
                if missed == 0:
                    return


class DropsRequestsAfterSixteenThousandCalls(RangeSubscription):
    """Rule 3.8: requests carry a 14-bit sequence number, and a number seen before is dropped.

    Meant to discard a retransmitted request frame; from the 16,385th call on, every number has
    been seen and every request is lost. Hundreds of calls, or a few large requests, never
    show it.
    """

    SEQUENCE = 1 << 14

    def __init__(self, subscriber: Subscriber[int], count: int) -> None:
        super().__init__(subscriber, count)
        self.calls = 0
        self.seen: set[int] = set()

    def request(self, n: int) -> None:
        with self.lock:
            number = self.calls % self.SEQUENCE
            self.calls += 1
            duplicate = number in self.seen
            self.seen.add(number)
        if not duplicate:
            super().request(n)


class DropsRequestsPastAPendingLogOfSixtyFourThousand(RangeSubscription):
    """Rule 3.17: pending requests wait in a log of 2**16 slots (a preallocated ring buffer) until
    the emission loop folds them into its demand; a request finding the log full is dropped.

    Requests served as they come never fill it; 65,537 made while the loop is busy (from inside
    on_next, where it waits for the call to return) do, and the stream stops short.
    """

    SLOTS = 1 << 16

    def __init__(self, subscriber: Subscriber[int], count: int) -> None:
        super().__init__(subscriber, count)
        self.log: list[int] = []

    def add(self, demand: int, n: int) -> int:
        if len(self.log) < self.SLOTS:
            self.log.append(n)
        return demand

    def step(self) -> bool:
        with self.lock:
            for n in self.log:
                self.demand = min(self.demand + n, MAX_DEMAND)
            self.log.clear()
        return super().step()


class IgnoresRequestsPastAHundredThousandCalls(RangeSubscription):
    """Rule 3.17: each request(n) is recorded in a table of 100,000 slots indexed by the call's
    number (sized "for any realistic stream"); once it is full, request() returns without adding.

    20,000 calls, or a few large requests, never show it.
    """

    SLOTS = 100_000

    def __init__(self, subscriber: Subscriber[int], count: int) -> None:
        super().__init__(subscriber, count)
        self.table = [0] * self.SLOTS
        self.calls = 0

    def request(self, n: int) -> None:
        with self.lock:
            slot = self.calls
            self.calls += 1
            if slot >= self.SLOTS:
                return
            self.table[slot] = n
        super().request(n)


class SixteenBitCallCounter(RangeSubscription):
    """Rule 3.17: request calls are counted in a signed 16-bit field (a C ``short``) that wraps to
    negative at the 32,768th call, and a negative count is read as a closed subscription: every
    request from then on is ignored."""

    def __init__(self, subscriber: Subscriber[int], count: int) -> None:
        super().__init__(subscriber, count)
        self.calls = 0
        self.closed = False

    def request(self, n: int) -> None:
        with self.lock:
            self.calls = (self.calls + 1 + 2**15) % 2**16 - 2**15
            self.closed = self.closed or self.calls < 0
            closed = self.closed
        if not closed:
            super().request(n)


class ClearsItsWorkCountOnExit(RangeSubscription):
    """Rule 3.8: the emission loop leaves its turn with ``wip = 0`` instead of ``wip -= missed``.

    A request made from another thread while the loop finishes (after it found no demand, before
    it takes the lock) raises the count and leaves, trusting the loop to go round again; the
    loop clears the count and leaves too: the element asked for never comes. Requests made on
    the emitting thread, or while it is busy, never show it.
    """

    def drain(self) -> None:
        while True:
            while self.step():
                pass
            with self.lock:
                self.wip = 0
                return


class LeavesItsTurnWithoutTheLock(RangeSubscription):
    """Rule 3.8: the emission loop takes off what it handled (``wip -= missed``) without the lock
    that request() adds to the count under ("only this thread writes it when it leaves"): a
    request made between its read and its write is overwritten, and its element never comes.
    """

    def drain(self) -> None:
        missed = 1
        while True:
            while self.step():
                pass
            self.wip -= missed
            missed = self.wip
            if missed == 0:
                return


class PooledClearsItsWorkCountOnExit(ClearsItsWorkCountOnExit):
    """Rule 3.8: ``ClearsItsWorkCountOnExit`` with its emission loop on a pool's thread."""

    pooled = True


def _as_java_long(value: int) -> int:
    return (value + 2**63) % 2**64 - 2**63


class WrapsDemandLikeAJavaLong(RangeSubscription):
    """Rule 3.17: demand is a 64-bit signed counter that wraps, decremented after on_next returns.

    2**63-1 counts as unbounded, but the addition that reaches it is not saturated: with two
    elements outstanding (the one being delivered still counted), request(2**63-2) from
    on_next wraps the counter negative and the stream stops. request(1) then request(2**63-2)
    from on_next happens to add up to exactly 2**63-1 and flows.
    """

    def add(self, demand: int, n: int) -> int:
        if demand == MAX_DEMAND:
            return MAX_DEMAND
        return _as_java_long(demand + n)

    def step(self) -> bool:
        element = 0
        with self.lock:
            subscriber = self.subscriber
            if subscriber is None or self.halted.is_set():
                self.subscriber = None
                return False
            ending = self.error is not None or self.index == self.end
            if not ending:
                if self.demand <= 0:
                    return False
                element = self.element(self.index)
                self.index += 1
        if ending:
            return super().step()
        try:
            self.deliver_next(subscriber, element)
        except Exception:
            self.stop()
            return False
        with self.lock:
            if 0 < self.demand < MAX_DEMAND:
                self.demand -= 1
        return True


class _QueueSubscription:
    """What the two broken queue sources below share: a queue their source fills, a demand
    count, and an illegal request that ends the stream with on_error."""

    def __init__(self, subscriber: Subscriber[int]) -> None:
        self.subscriber = subscriber
        self.lock = threading.Lock()
        self.queue: list[int] = []
        self.requested = 0
        self.wip = 0
        self.cancelled = False
        self.done = False
        self.error: BaseException | None = None

    def add(self, requested: int, n: int) -> int:
        return min(requested + n, MAX_DEMAND)

    def request(self, n: int) -> None:
        with self.lock:
            if n <= 0:
                self.error = self.error or invalid_request(n)
                self.done = True
            else:
                self.requested = self.add(self.requested, n)
        self.drain()

    def cancel(self) -> None:
        self.cancelled = True

    def drain(self) -> None:
        raise NotImplementedError


class _BufferingSubscription(_QueueSubscription):
    def __init__(self, subscriber: Subscriber[int], count: int) -> None:
        super().__init__(subscriber)
        self.count = count
        self.halted = _halt

    def add(self, requested: int, n: int) -> int:
        return _as_java_long(requested + n)  # the bug: no saturation

    def produce(self) -> None:
        for i in range(min(self.count, MAX_DEMAND)):
            while len(self.queue) >= 64 and not (self.cancelled or self.halted.is_set()):
                time.sleep(0.001)
            if self.cancelled or self.halted.is_set():
                return
            with self.lock:
                self.queue.append(i)
            self.drain()
        self.done = True
        self.drain()

    def drain(self) -> None:
        with self.lock:
            self.wip += 1
            if self.wip != 1:
                return
        missed = 1
        while True:
            r, e = self.requested, 0
            while e != r and not self.cancelled and self.error is None:
                with self.lock:
                    element = self.queue.pop(0) if self.queue else None
                if element is None:
                    break
                self.subscriber.on_next(element)
                e += 1
            with self.lock:
                ending = not self.cancelled and (self.error is not None or (self.done and not self.queue))
                error, self.cancelled = self.error, self.cancelled or ending
                if e and r != MAX_DEMAND:
                    self.requested = _as_java_long(self.requested - e)
            if ending:
                if error is not None:
                    self.subscriber.on_error(error)
                else:
                    self.subscriber.on_complete()
            with self.lock:
                self.wip -= missed
                missed = self.wip
                if not missed:
                    return


class BuffersASourceAndWrapsDemand:
    """Rule 3.17: RxJava's onBackpressureBuffer shape, its demand added like a Java long.

    A source thread queues the elements one at a time and drains after each; a drain emits
    while the count it emitted differs from the demand it read as it began, then takes that
    count off unless the demand read was 2**63-1. A sum past 2**63-1 goes negative, which such
    a loop treats as unbounded: request(2**63-1), then request(2**63-1) and request(3) from
    on_next #1 bring it to -2 + 3 = 1, and the stream stops an element later.
    """

    def __init__(self, count: int) -> None:
        self.count = count

    def subscribe(self, subscriber: Subscriber[int]) -> None:
        if subscriber is None:
            raise TypeError("subscribe(None)")
        subscription = _BufferingSubscription(subscriber, self.count)
        subscriber.on_subscribe(subscription)
        threading.Thread(target=subscription.produce, name="broken-buffer-source", daemon=True).start()


class _QueuedSourceSubscription(_QueueSubscription):
    def _end(self) -> bool:
        """The end, once the queue is empty (an illegal request ends it at once)."""
        with self.lock:
            if self.cancelled or not self.done or (self.queue and self.error is None):
                return False
            self.cancelled = True
        if self.error is not None:
            self.subscriber.on_error(self.error)
        else:
            self.subscriber.on_complete()
        return True

    def drain(self) -> None:
        with self.lock:
            self.wip += 1
            if self.wip != 1:
                return
        missed = 1
        while True:
            while not self._end() and not self.cancelled:
                with self.lock:
                    if not (self.requested and self.queue):
                        break
                    element = self.queue.pop(0)
                    if self.requested < MAX_DEMAND:
                        self.requested -= 1
                self.subscriber.on_next(element)
            with self.lock:
                seen = self.wip
            if seen == missed:  # nothing came meanwhile: the turn is left in a second step
                with self.lock:
                    self.wip = 0
                return
            missed = seen


class QueuesItsSourceAndLeavesInTwoSteps:
    """Rule 3.8: RxJava's ``Flowable.create`` shape (BUFFER), its drain leaving its turn in two steps.

    subscribe() runs the source on the calling thread: each element is queued and drained, then
    the end. The drain reads its work count and, finding only its own work, clears it in a
    second critical section: a request made in between is lost. Each element the source
    queues starts a drain that makes up for it, except after the last: the drain the end
    starts, lines after on_next #1, is where the request is lost for good.
    """

    def __init__(self, count: int) -> None:
        self.count = min(count, 1000)

    def subscribe(self, subscriber: Subscriber[int]) -> None:
        if subscriber is None:
            raise TypeError("subscribe(None)")
        subscription = _QueuedSourceSubscription(subscriber)
        subscriber.on_subscribe(subscription)
        for i in range(self.count):
            if subscription.cancelled:
                return
            with subscription.lock:
                subscription.queue.append(i)
            subscription.drain()
        subscription.done = True
        subscription.drain()


class TakesOffOneTooManyAfterSubscribe(RangeSubscription):
    """Rule 1.3: the first drain, the one subscribe() owns once on_subscribe has returned, takes
    two off the work count for its own entry: with nothing requested yet the count dips below
    zero for a pass of its loop. A request then finds it at 0 (no drain of its own) and the next
    at 1: that one delivers on the requesting thread while subscribe()'s loop, back at its next
    look, delivers too. Drains that requests start count right."""

    def start(self) -> None:
        self.first = True
        self.schedule()

    def drain(self) -> None:
        missed = 2 if getattr(self, "first", False) else 1
        self.first = False
        while True:
            while self.step():
                pass
            with self.lock:
                self.wip -= missed
                missed = self.wip
                if missed == 0:
                    return


class UnlockedEmission(RangeSubscription):
    """Rule 3.8 (or 1.1): the emission step reads and counts down the demand without the lock.

    request() still adds under the lock, and between the read and the write the element is
    fetched from its source (a read that lets other threads run): an addition made on another
    thread meanwhile is overwritten (fewer elements than requested), or overwrites the
    decrement (one more). A single thread never shows it.
    """

    def step(self) -> bool:
        if self.halted.is_set():
            self.subscriber = None
        subscriber = self.subscriber
        if subscriber is None:
            return False
        error = self.error
        done = error is None and self.index == self.end
        element = 0
        if error is None and not done:
            demand = self.demand
            if demand <= 0:
                return False
            time.sleep(0)  # the source read
            element = self.element(self.index)
            self.index += 1
            if demand < MAX_DEMAND:
                self.demand = demand - 1
        else:
            self.subscriber = None
        try:
            if error is not None:
                self.deliver_error(subscriber, error)
            elif done:
                self.deliver_complete(subscriber)
            else:
                self.deliver_next(subscriber, element)
                return True
        except Exception:
            self.stop()
        return False


# -- terminal signals owed where a turn ends; demand of a raising on_subscribe -------------------


class IdleAfterATurnWithNothingOwed(RangeSubscription):
    """Emits in turns of ``TURN`` signals; after a full turn with no demand left it goes idle.

    "Nothing owed, nothing to do", so the work count goes back to 0 (every call that came
    during the turn only added demand, and that has been served): but a terminal signal may be
    due exactly there (the last element ended the turn, or on_next #TURN requested 0), and it
    needs no demand, so no request comes to restart the emission.
    """

    TURN = 128

    def drain(self) -> None:
        missed = 1
        while True:
            sent = 0
            while self.step():
                sent += 1
                if sent % self.TURN == 0:
                    with self.lock:
                        if self.demand == 0:
                            self.wip = 0
                            return
            with self.lock:
                self.wip -= missed
                missed = self.wip
                if missed == 0:
                    return


class NoCompleteWhenATurnEndsAtTheLast(IdleAfterATurnWithNothingOwed):
    """Rule 1.5: turns of 128; a stream of 1024 asked for in one request(1024) never completes,
    even when more is requested.

    Idling with the end owed alone is legal (the end may come once more is asked for); but
    ``request`` returns at once once every element was emitted ("nothing left to emit"), so
    nothing ever looks for the end again.
    """

    TURN = 128

    def request(self, n: int) -> None:
        with self.lock:
            exhausted = n > 0 and self.index == self.end
        if not exhausted:
            super().request(n)


class NoCompleteWhenAnOddTurnEndsAtTheLast(NoCompleteWhenATurnEndsAtTheLast):
    """Rule 1.5: as above with turns of 37, a size dividing none of 64, 1000 and 1024; a stream
    of 37 (or 74) asked for in one request of its length never completes, even when more is
    requested."""

    TURN = 37


class SkipsValidationOnceUnbounded(RangeSubscription):
    """Rule 3.9: once the demand is unbounded, request() returns at once, before it looks at n
    (nothing to add): request(0) then goes unanswered and the stream flows on."""

    def request(self, n: int) -> None:
        if self.demand >= MAX_DEMAND:
            return
        super().request(n)


class LosesTheErrorWhenATurnEndsOwingIt(IdleAfterATurnWithNothingOwed):
    """Rule 3.9: turns of 250; request(1000), then request(0) from on_next #1000: no on_error."""

    TURN = 250


class ServesWhatARaisingOnSubscribeRequested(RangePublisher):
    """Rule 2.13: a raising on_subscribe is ignored, and subscribe() goes on to deliver what it
    requested before raising, to a subscription that counts as cancelled."""

    def subscribe(self, subscriber: Subscriber[int]) -> None:
        if subscriber is None:
            raise TypeError("subscribe(None) is illegal")
        subscription = self.subscription(subscriber, self.count)
        with contextlib.suppress(Exception):
            subscriber.on_subscribe(subscription)
        subscription.start()


# -- on an asyncio event loop ---------------------------------------------------------------------


class _HoggingLoopSubscription:
    """One subscriber's state, touched only on the loop's thread (see ``HogsTheLoop``)."""

    def __init__(self, publisher: HogsTheLoop, subscriber: Subscriber[int]) -> None:
        self._publisher = publisher
        self._subscriber: Subscriber[int] | None = subscriber
        self._next = 0
        self._demand = 0
        self._scheduled = False
        self._halt = _halt

    def request(self, n: int) -> None:
        if self._subscriber is None:
            return
        if n <= 0:
            subscriber, self._subscriber = self._subscriber, None
            subscriber.on_error(ValueError(f"rule 3.9: request({n})"))
            return
        self._demand = min(MAX_DEMAND, self._demand + n)
        if not self._scheduled:
            self._scheduled = True
            self._publisher.loop.call_soon(self._drain)

    def cancel(self) -> None:
        self._subscriber = None

    def _drain(self) -> None:
        # The defect: one callback delivers while there is demand, never giving the loop back.
        # A cancel made inside on_next lands (it is made on the loop, here); one queued on the
        # loop from elsewhere waits behind this callback for ever.
        self._scheduled = False
        while self._demand > 0 and not self._halt.is_set():
            subscriber = self._subscriber
            if subscriber is None:
                return
            if self._next == self._publisher.count:
                self._subscriber = None
                subscriber.on_complete()
                return
            element, self._next = self._next, self._next + 1
            if self._demand != MAX_DEMAND:
                self._demand -= 1
            try:
                subscriber.on_next(element)
            except Exception:
                self._subscriber = None
                raise
        subscriber = self._subscriber
        if subscriber is not None and self._next == self._publisher.count:
            self._subscriber = None
            subscriber.on_complete()


class HogsTheLoop:
    """Rule 3.5 (on an event loop): a drain that keeps emitting under unbounded demand and never
    yields its loop, so a cancel() the subscriber queues on the loop never runs (asyncio
    streams written as one ``while`` over the demand)."""

    def __init__(self, count: int) -> None:
        import asyncio

        self.loop = asyncio.get_running_loop()
        self.count = count

    def subscribe(self, subscriber: Subscriber[int]) -> None:
        if subscriber is None:
            raise TypeError("rule 1.9: subscribe(None)")
        subscriber.on_subscribe(_HoggingLoopSubscription(self, subscriber))


def loop_factory(cls: Callable[[int], Any]) -> Callable[[int], Any]:
    """An ``async def`` factory of ``cls``: the publisher is made, and called, on the kit's loop."""

    async def make(n: int) -> Any:
        return cls(n)

    return make
