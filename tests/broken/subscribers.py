"""Deliberately broken subscribers: each one breaks exactly one rule, to prove the TCK notices.

``GoodSubscriber`` is a small *correct* synchronous subscriber (the catalogue's self-test runs
every subscriber test against it); every broken subscriber changes one method of it, and its
docstring names the rule it breaks and how. Each takes an optional whitebox probe, so the same
class serves the blackbox (``blackbox(cls)``) and the whitebox (``whitebox(cls)``) verification.

Hostile ones (the deadlock) only ever block a thread the TCK owns.
"""

from __future__ import annotations

import collections
import concurrent.futures
import contextlib
import queue
import threading
import time
from typing import Any

from rstck.api import Subscription
from rstck.subjects import SubscriberSubject
from rstck.subjects import WhiteboxSubject
from rstck.whitebox import WhiteboxProbe


class _NoProbe:
    def register(self, **puppet: Any) -> None:
        pass

    def next(self, element: Any) -> contextlib.nullcontext[None]:
        return contextlib.nullcontext()

    def complete(self) -> contextlib.nullcontext[None]:
        return contextlib.nullcontext()

    def error(self, exc: BaseException) -> contextlib.nullcontext[None]:
        return contextlib.nullcontext()


class GoodSubscriber:
    """A correct synchronous subscriber: requests one element at a time, processes it inline.

    Subclasses override one method to break one rule. ``request``/``cancel`` are the only
    places that call the subscription; the puppet goes through them too.
    """

    def __init__(self, probe: WhiteboxProbe | None = None) -> None:
        self.probe: Any = probe if probe is not None else _NoProbe()
        self.subscription: Subscription | None = None
        self.done = False
        self.cancelled = False
        self.received: list[Any] = []

    # -- the Subscriber interface ---------------------------------------------------------

    def on_subscribe(self, subscription: Subscription) -> None:
        if subscription is None:
            raise TypeError("on_subscribe(None)")
        if self.subscription is not None or self.done:
            subscription.cancel()
            return
        self.subscription = subscription
        self.probe.register(request=self.puppet_request, cancel=self.cancel)
        self.request(1)

    def on_next(self, element: Any) -> None:
        if element is None:
            raise TypeError("on_next(None)")
        with self.probe.next(element):
            self.process(element)

    def on_error(self, exc: BaseException) -> None:
        if exc is None:
            raise TypeError("on_error(None)")
        with self.probe.error(exc):
            self.done = True

    def on_complete(self) -> None:
        with self.probe.complete():
            self.done = True

    # -- the subscriber's own logic --------------------------------------------------------

    def process(self, element: Any) -> None:
        if self.cancelled or self.done:
            return
        self.received.append(element)
        self.request(1)

    def puppet_request(self, n: int) -> None:
        if not self.done and not self.cancelled:
            self.request(n)

    def request(self, n: int) -> None:
        assert self.subscription is not None
        self.subscription.request(n)

    def cancel(self) -> None:
        self.cancelled = True
        if self.subscription is not None:
            self.subscription.cancel()


def blackbox(cls: type[GoodSubscriber]) -> SubscriberSubject:
    return SubscriberSubject(lambda: cls(), label=cls.__name__)


def whitebox(cls: type[GoodSubscriber]) -> WhiteboxSubject:
    return WhiteboxSubject(lambda probe: cls(probe), label=cls.__name__)


# -- controls that must pass --------------------------------------------------------------------


class CancelsFromAnotherThreadAfterEnd(GoodSubscriber):
    """Correct: on_complete/on_error hand a (redundant) cancel to another thread.

    The TCK's 2.3 check is per thread, so a call from another thread that happens to overlap
    on_complete is not mistaken for one made inside it, and a cancel after the end is harmless.
    Its calls on the subscription are made under one re-entrant lock (rule 2.7): the cancel
    waits while an on_complete delivered inside request() is still in that request.
    """

    def __init__(self, probe: WhiteboxProbe | None = None) -> None:
        super().__init__(probe)
        self.lock = threading.RLock()

    def request(self, n: int) -> None:
        with self.lock:
            super().request(n)

    def cancel(self) -> None:
        with self.lock:
            super().cancel()

    def on_complete(self) -> None:
        super().on_complete()
        threading.Thread(target=self.cancel).start()

    def on_error(self, exc: BaseException) -> None:
        super().on_error(exc)
        threading.Thread(target=self.cancel).start()


class RequestsInParts(GoodSubscriber):
    """Correct: asked for n, it requests one at a time as elements arrive (JVM #462)."""

    def puppet_request(self, n: int) -> None:
        if not self.done and not self.cancelled:
            self.owed = getattr(self, "owed", 0) + n - 1
            self.request(1)

    def process(self, element: Any) -> None:
        if self.cancelled or self.done:
            return
        self.received.append(element)
        owed = getattr(self, "owed", 0)
        if owed:
            self.owed = owed - 1
        self.request(1)


# -- 2.1 ---------------------------------------------------------------------------------------


class NeverRequests(GoodSubscriber):
    """Rule 2.1: never signals demand, neither on its own nor when the puppet asks."""

    def request(self, n: int) -> None:
        pass


# -- 2.3 ---------------------------------------------------------------------------------------


class RequestsInOnComplete(GoodSubscriber):
    """Rule 2.3: on_complete calls request(1) on the subscription."""

    def on_complete(self) -> None:
        super().on_complete()
        assert self.subscription is not None
        self.subscription.request(1)


class CancelsInOnComplete(GoodSubscriber):
    """Rule 2.3: on_complete calls cancel() on the subscription."""

    def on_complete(self) -> None:
        super().on_complete()
        assert self.subscription is not None
        self.subscription.cancel()


class RequestsInOnError(GoodSubscriber):
    """Rule 2.3: on_error calls request(1) on the subscription."""

    def on_error(self, exc: BaseException) -> None:
        super().on_error(exc)
        assert self.subscription is not None
        self.subscription.request(1)


class CancelsInOnError(GoodSubscriber):
    """Rule 2.3: on_error calls cancel() on the subscription."""

    def on_error(self, exc: BaseException) -> None:
        super().on_error(exc)
        assert self.subscription is not None
        self.subscription.cancel()


# -- 2.4 ---------------------------------------------------------------------------------------


class RequestsAfterComplete(GoodSubscriber):
    """Rule 2.4: after on_complete it asks for more, shortly after, from a timer thread."""

    def on_complete(self) -> None:
        super().on_complete()
        assert self.subscription is not None
        threading.Timer(0.01, self.subscription.request, (1,)).start()


class RetriesAfterError(GoodSubscriber):
    """Rule 2.4: after on_error it "retries" by requesting again, from a timer thread."""

    def on_error(self, exc: BaseException) -> None:
        super().on_error(exc)
        assert self.subscription is not None
        threading.Timer(0.01, self.subscription.request, (1,)).start()


class LateRetryAfterEnd(GoodSubscriber):
    """Rule 2.4: the end arms a timer that asks for more 700 ms later, past any quiet window.

    The TCK may end its watch after the end early only once no thread but its own is left;
    the armed timer is such a thread, so the watch must run on and see the request.
    """

    def on_complete(self) -> None:
        super().on_complete()
        self._later()

    def on_error(self, exc: BaseException) -> None:
        super().on_error(exc)
        self._later()

    def _later(self) -> None:
        assert self.subscription is not None
        threading.Timer(0.7, self.subscription.request, (1,)).start()


class LateRequestFromItsPool(GoodSubscriber):
    """Rule 2.4: the end hands a "refill" to its own pool, whose task asks 600 ms later."""

    def __init__(self, probe: WhiteboxProbe | None = None) -> None:
        super().__init__(probe)
        self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="refill")

    def on_complete(self) -> None:
        super().on_complete()
        subscription = self.subscription
        assert subscription is not None

        def refill() -> None:
            time.sleep(0.6)
            subscription.request(2)

        self.pool.submit(refill)
        self.pool.shutdown(wait=False)


# -- 2.5 and 2.12 ------------------------------------------------------------------------------


class AcceptsTwoAtOnce(GoodSubscriber):
    """Rule 2.5: "have I a subscription?" and storing one are two steps, with a call between.

    Offered one subscription at a time it keeps the first and cancels the second; two
    on_subscribe calls that interleave both find none and both are kept, neither cancelled.
    """

    def on_subscribe(self, subscription: Subscription) -> None:
        if subscription is None:
            raise TypeError("on_subscribe(None)")
        if self.subscription is not None:
            subscription.cancel()
            return
        self.subscription = self._adopt(subscription)
        self.probe.register(request=self.puppet_request, cancel=self.cancel)
        self.request(1)

    def _adopt(self, subscription: Subscription) -> Subscription:
        return subscription


class AcceptsSecondSubscription(GoodSubscriber):
    """Rule 2.5: a second on_subscribe is adopted and requested from, never cancelled."""

    def on_subscribe(self, subscription: Subscription) -> None:
        if subscription is None:
            raise TypeError("on_subscribe(None)")
        if self.subscription is None:
            self.subscription = subscription
            self.probe.register(request=self.puppet_request, cancel=self.cancel)
        subscription.request(1)


class ResetsOnResubscribe(GoodSubscriber):
    """Rule 2.12: subscribed again, it starts over: cancels its first subscription, adopts the new."""

    def on_subscribe(self, subscription: Subscription) -> None:
        if subscription is None:
            raise TypeError("on_subscribe(None)")
        if self.subscription is not None:
            self.subscription.cancel()
        first = self.subscription is None
        self.subscription = subscription
        self.received = []
        if first:
            self.probe.register(request=self.puppet_request, cancel=self.cancel)
        self.request(1)


# -- 2.7 ---------------------------------------------------------------------------------------


class ConcurrentRequests(GoodSubscriber):
    """Rule 2.7: each element makes two threads request(1) at the same moment, unsynchronised."""

    def process(self, element: Any) -> None:
        if self.cancelled or self.done:
            return
        self.received.append(element)
        barrier = threading.Barrier(2)

        def ask() -> None:
            with contextlib.suppress(threading.BrokenBarrierError):
                barrier.wait(1.0)
            self.request(1)

        for _ in range(2):
            threading.Thread(target=ask, daemon=True).start()


# -- 2.8 ---------------------------------------------------------------------------------------


class RaisesAfterCancel(GoodSubscriber):
    """Rule 2.8: an element arriving after it cancelled makes on_next raise."""

    def process(self, element: Any) -> None:
        if self.cancelled:
            raise RuntimeError("But I thought it's cancelled!")
        super().process(element)


# -- 2.9 and 2.10 ------------------------------------------------------------------------------


class FailsOnEmptyComplete(GoodSubscriber):
    """Rule 2.9: on_complete assumes an element came first and raises when none did."""

    def on_complete(self) -> None:
        super().on_complete()
        if not self.received:
            raise LookupError("completed before any element: nothing to summarise")


class FailsOnEarlyError(GoodSubscriber):
    """Rule 2.10: on_error assumes an element came first and raises when none did."""

    def on_error(self, exc: BaseException) -> None:
        super().on_error(exc)
        if not self.received:
            raise LookupError("failed before any element: nothing to roll back")


class ReportsAnotherError(GoodSubscriber):
    """Rule 2.10 (whitebox): processes on_error with an error of its own, the original lost."""

    def on_error(self, exc: BaseException) -> None:
        if exc is None:
            raise TypeError("on_error(None)")
        with self.probe.error(RuntimeError("stream failed")):
            self.done = True


# -- 2.11 --------------------------------------------------------------------------------------


class LosesElements(GoodSubscriber):
    """Rule 2.11: hands each element to its worker through one shared field.

    A burst of signals overwrites the field before the worker reads it, so the processing
    loses elements and sees others twice: the signal did not reach its processing intact.
    """

    def __init__(self, probe: WhiteboxProbe | None = None) -> None:
        super().__init__(probe)
        self.slot: Any = None
        self.ready = threading.Event()
        threading.Thread(target=self.work, daemon=True).start()

    def on_next(self, element: Any) -> None:
        if element is None:
            raise TypeError("on_next(None)")
        self.slot = element
        self.ready.set()

    def work(self) -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if not self.ready.wait(0.5):
                continue
            self.ready.clear()
            element = self.slot
            time.sleep(0.002)
            with self.probe.next(element):
                self.received.append(element)


# -- 2.13 --------------------------------------------------------------------------------------


class RaisesFromOnNext(GoodSubscriber):
    """Rule 2.13: processing failures are raised from on_next instead of cancelling."""

    def process(self, element: Any) -> None:
        super().process(element)
        raise ValueError(f"cannot handle {element!r}")


class AcceptsNoneSubscription(GoodSubscriber):
    """Rule 2.13: on_subscribe(None) returns normally instead of raising TypeError."""

    def on_subscribe(self, subscription: Subscription) -> None:
        if subscription is not None:
            super().on_subscribe(subscription)


class AcceptsNoneElement(GoodSubscriber):
    """Rule 2.13: on_next(None) returns normally instead of raising TypeError."""

    def on_next(self, element: Any) -> None:
        if element is not None:
            super().on_next(element)


class AcceptsNoneError(GoodSubscriber):
    """Rule 2.13: on_error(None) is taken as an end of stream instead of raising TypeError."""

    def on_error(self, exc: BaseException) -> None:
        self.done = True


# -- 3.8 ---------------------------------------------------------------------------------------


class RequestsOneWhateverAsked(GoodSubscriber):
    """Rule 3.8 (whitebox): asked for n, it requests 1, and never the rest."""

    def puppet_request(self, n: int) -> None:
        super().puppet_request(1)

    def process(self, element: Any) -> None:
        if not (self.cancelled or self.done):
            self.received.append(element)


# -- 3.10 and 3.11 -----------------------------------------------------------------------------


class RequestsBeforeStoring(GoodSubscriber):
    """Rule 3.10: on_subscribe requests before storing the subscription.

    An element delivered inside that request finds no subscription to request the next one.
    """

    def on_subscribe(self, subscription: Subscription) -> None:
        if subscription is None:
            raise TypeError("on_subscribe(None)")
        subscription.request(1)
        self.subscription = subscription
        self.probe.register(request=self.puppet_request, cancel=self.cancel)


class DeadlocksOnInlineNext(GoodSubscriber):
    """Rule 3.10, hostile: holds its lock while calling request; on_next takes the same lock.

    An element delivered inside request() deadlocks the calling (TCK) thread.
    """

    def __init__(self, probe: WhiteboxProbe | None = None) -> None:
        super().__init__(probe)
        self.lock = threading.Lock()

    def request(self, n: int) -> None:
        with self.lock:
            super().request(n)

    def on_next(self, element: Any) -> None:
        with self.lock:
            pass
        super().on_next(element)


class FailsOnInlineEnd(GoodSubscriber):
    """Rule 3.11: an end of stream arriving while it is inside its own request() raises."""

    depth = 0

    def request(self, n: int) -> None:
        self.depth += 1
        try:
            super().request(n)
        finally:
            self.depth -= 1

    def on_complete(self) -> None:
        if self.depth:
            raise RuntimeError("on_complete while still requesting")
        super().on_complete()

    def on_error(self, exc: BaseException) -> None:
        if self.depth:
            raise RuntimeError("on_error while still requesting")
        super().on_error(exc)


# -- whitebox wrappers -------------------------------------------------------------------------


class NeverRegisters(GoodSubscriber):
    """Whitebox sanity: the test wrapper forgets to hand the probe its puppet."""

    def on_subscribe(self, subscription: Subscription) -> None:
        self.probe = _NoProbe()
        super().on_subscribe(subscription)


class ReportsWithoutWith(GoodSubscriber):
    """Whitebox sanity: reports with ``probe.next(x)`` as a plain call, which reports nothing."""

    def on_next(self, element: Any) -> None:
        if element is None:
            raise TypeError("on_next(None)")
        self.probe.next(element)
        self.process(element)


# -- defects that hide in one calling context ----------------------------------------------------


class SwapsToSecondSubscription(GoodSubscriber):
    """Rule 2.5: a second on_subscribe makes it cancel its first subscription and keep the new one.

    It asks nothing of the new one by itself, so only the missing cancel of it shows; the
    verdict cites the second on_subscribe and the cancel of the first that followed it.
    (Cancelling the first *as well as* the new one is legal: giving up is the subscriber's right.)
    """

    def on_subscribe(self, subscription: Subscription) -> None:
        if subscription is None:
            raise TypeError("on_subscribe(None)")
        if self.subscription is not None:
            self.subscription.cancel()
            self.subscription = subscription
            return
        super().on_subscribe(subscription)


class KeepsSubscriptionPerThread(GoodSubscriber):
    """Rule 2.5: it looks for its subscription in a ``threading.local`` ("signals always come on
    one thread"), so a second on_subscribe from another thread finds none and is adopted and
    requested from, never cancelled. From the thread of the first it is cancelled correctly.
    """

    def __init__(self, probe: WhiteboxProbe | None = None) -> None:
        super().__init__(probe)
        self.local = threading.local()

    def on_subscribe(self, subscription: Subscription) -> None:
        if subscription is None:
            raise TypeError("on_subscribe(None)")
        if getattr(self.local, "subscription", None) is not None or self.done:
            subscription.cancel()
            return
        self.local.subscription = subscription
        self.subscription = subscription
        self.probe.register(request=self.puppet_request, cancel=self.cancel)
        self.request(1)


# -- asyncio subscribers -----------------------------------------------------------------------


def loop_requests_after_end() -> Any:
    """Rule 2.4: an asyncio subscriber whose loop callback, scheduled by on_complete/on_error,
    requests once more. Otherwise the conforming loop subscriber; run under --rs-loop=asyncio."""
    from tests.conforming.subscribers import LoopSubscriber

    return LoopSubscriber(late_request=True)


def loop_requests_after_end_whitebox(probe: Any) -> Any:
    from tests.conforming.subscribers import LoopSubscriber

    return LoopSubscriber(probe, late_request=True)
# -- 2.6: no longer needed, not cancelled ---------------------------------------------------------


class TakesThreeAndCancels(GoodSubscriber):
    """Correct for rule 2.6: a take(3) that cancels once it has processed its third element."""

    LIMIT = 3

    def process(self, element: Any) -> None:
        if self.cancelled or self.done:
            return
        self.received.append(element)
        if len(self.received) < self.LIMIT:
            self.request(1)
        else:
            self.cancel()


class TakesThreeWithoutCancelling(GoodSubscriber):
    """Rule 2.6: a take(3) that, once it has its three elements, just stops requesting: the
    subscription it no longer needs is never cancelled (the upstream keeps it, and its resources,
    until the stream ends on its own, if ever). Declared ``takes_at_most=3``."""

    LIMIT = 3

    def process(self, element: Any) -> None:
        if self.cancelled or self.done:
            return
        self.received.append(element)
        if len(self.received) < self.LIMIT:
            self.request(1)


class TakesFirstFromAWorker(GoodSubscriber):
    """Rule 2.6: a first() that hands each element to a worker thread; the worker records the
    one it wanted and marks itself done, but cancels nothing. Declared ``takes_at_most=1``."""

    def process(self, element: Any) -> None:
        if self.cancelled or self.done:
            return

        def keep() -> None:
            self.received.append(element)
            self.done = True

        threading.Thread(target=keep, daemon=True).start()


class LoopRefillsLater:
    """Rule 2.4: an asyncio subscriber that handles each element at once and schedules its
    refill, request(1), 20 ms later on the loop (``call_later``: a pacing delay); on_complete is
    handled at once too, and the refills still pending run after it. Run under --rs-loop=asyncio.
    """

    def __init__(self, probe: Any = None) -> None:
        import asyncio

        self.loop = asyncio.get_running_loop()
        self.probe: Any = probe if probe is not None else _NoProbe()
        self.subscription: Subscription | None = None

    def on_subscribe(self, subscription: Subscription) -> None:
        if subscription is None:
            raise TypeError("on_subscribe(None)")
        if self.subscription is not None:
            subscription.cancel()
            return
        self.subscription = subscription
        self.probe.register(request=lambda n: self.loop.call_soon_threadsafe(subscription.request, n),
                            cancel=lambda: self.loop.call_soon_threadsafe(subscription.cancel))
        subscription.request(2)

    def on_next(self, element: Any) -> None:
        if element is None:
            raise TypeError("on_next(None)")
        with self.probe.next(element):
            pass
        assert self.subscription is not None
        self.loop.call_later(0.02, self.subscription.request, 1)

    def on_complete(self) -> None:
        with self.probe.complete():
            pass

    def on_error(self, exc: BaseException) -> None:
        if exc is None:
            raise TypeError("on_error(None)")
        with self.probe.error(exc):
            pass


def loop_refills_later_whitebox(probe: Any) -> Any:
    return LoopRefillsLater(probe)


# -- 2.4: calls after the end, made later --------------------------------------------------------


class RequestsAgainWhenIdle(GoodSubscriber):
    """Rule 2.4: a worker that asks for its batch again whenever its queue has been empty a while.

    It asks for 16 at first, queues elements for its worker (2 ms each), refills one per
    element processed, and, as a guard against a stalled upstream, requests 16 more once its
    queue has stayed empty for 200 ms; neither looks at whether the stream has ended. Working
    off the backlog left at on_complete is fine; the guard firing afterwards is not.
    """

    BATCH = 16
    IDLE = 0.2

    def __init__(self, probe: WhiteboxProbe | None = None) -> None:
        super().__init__(probe)
        self.backlog: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self.worker = threading.Thread(target=self.work, daemon=True)
        self.lock = threading.Lock()  # its calls on the subscription, one at a time (2.7)

    def on_subscribe(self, subscription: Subscription) -> None:
        if subscription is None:
            raise TypeError("on_subscribe(None)")
        if self.subscription is not None or self.done:
            subscription.cancel()
            return
        self.subscription = subscription
        self.probe.register(request=self.puppet_request, cancel=self.cancel)
        self.worker.start()
        self.request(self.BATCH)

    def process(self, element: Any) -> None:
        self.backlog.put(element)

    def work(self) -> None:
        for _ in range(20):  # a bounded life: a test's subscriber must not outlive the run
            try:
                element = self.backlog.get(timeout=self.IDLE)
            except queue.Empty:
                if not self.cancelled:
                    self.request(self.BATCH)
                continue
            time.sleep(0.002)
            self.received.append(element)
            if not self.cancelled:
                self.request(1)

    def request(self, n: int) -> None:
        with self.lock:
            super().request(n)

    def cancel(self) -> None:
        with self.lock:
            super().cancel()


class CreditTimer(GoodSubscriber):
    """Rule 2.4: a periodic timer grants 4 more elements of credit every 150 ms, until cancelled.

    The timer stops on cancel() but not at the end of the stream: once on_complete has
    returned it still tops the credit up, a few hundred milliseconds later.
    """

    PERIOD = 0.15

    def __init__(self, probe: WhiteboxProbe | None = None) -> None:
        super().__init__(probe)
        self.lock = threading.Lock()
        self.timer = threading.Thread(target=self.tick, daemon=True)

    def on_subscribe(self, subscription: Subscription) -> None:
        super().on_subscribe(subscription)
        if self.subscription is subscription:
            self.timer.start()

    def tick(self) -> None:
        for _ in range(60):
            time.sleep(self.PERIOD)
            if self.cancelled:
                return
            self.request(4)

    def request(self, n: int) -> None:
        with self.lock:
            super().request(n)

    def cancel(self) -> None:
        with self.lock:
            super().cancel()


class CreditTopUpAfterReset(GoodSubscriber):
    """Rule 2.4: a credit timer keeps at least 2 elements of credit outstanding, topping it up to
    4 every 30 ms; on_complete/on_error reset the counters for the subscriber's reuse, and the
    timer, which stops only on cancel(), tops the "empty" credit up once more after the end.

    It asks no more than a refilling actor with those elements still to work off would, in
    calls; counted in elements, every element it got was covered by demand before the end.
    """

    LOW, HIGH, PERIOD = 2, 4, 0.03

    def __init__(self, probe: WhiteboxProbe | None = None) -> None:
        super().__init__(probe)
        self.lock = threading.Lock()
        self.outstanding = 0
        self.timer = threading.Thread(target=self.tick, daemon=True)

    def on_subscribe(self, subscription: Subscription) -> None:
        if subscription is None:
            raise TypeError("on_subscribe(None)")
        if self.subscription is not None or self.done:
            subscription.cancel()
            return
        self.subscription = subscription
        self.probe.register(request=self.puppet_request, cancel=self.cancel)
        self.timer.start()

    def process(self, element: Any) -> None:
        with self.lock:
            self.outstanding -= 1
        self.received.append(element)

    def on_complete(self) -> None:
        with self.probe.complete():
            self.reset()

    def on_error(self, exc: BaseException) -> None:
        if exc is None:
            raise TypeError("on_error(None)")
        with self.probe.error(exc):
            self.reset()

    def reset(self) -> None:
        self.done = True
        with self.lock:
            self.outstanding = 0

    def tick(self) -> None:
        for _ in range(100):  # a bounded life: a test's subscriber must not outlive the run
            time.sleep(self.PERIOD)
            if self.cancelled:
                return
            with self.lock:
                n = self.HIGH - self.outstanding if self.outstanding < self.LOW else 0
                self.outstanding += n
                if n:
                    self.request(n)

    def puppet_request(self, n: int) -> None:
        with self.lock:
            self.outstanding += n
            self.request(n)

    def cancel(self) -> None:
        with self.lock:
            super().cancel()


class RefillsAfterHandlingTheEnd(GoodSubscriber):
    """Rule 2.4: elements go to a worker (20 ms each) that asks for one more per element worked
    off; on_complete is handled at once (its report, the result completed), ahead of the
    elements still queued, and the worker goes on refilling for them: requests made after the
    subscriber has received the end. (The in-order actor, which handles on_complete after
    them, is legal; from outside the two look alike: the whitebox report tells them apart.)
    """

    def __init__(self, probe: WhiteboxProbe | None = None) -> None:
        super().__init__(probe)
        self.inbox: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self.lock = threading.Lock()
        self.worker = threading.Thread(target=self.work, daemon=True)

    def on_subscribe(self, subscription: Subscription) -> None:
        if subscription is None:
            raise TypeError("on_subscribe(None)")
        if self.subscription is not None or self.done:
            subscription.cancel()
            return
        self.subscription = subscription
        self.probe.register(request=self.puppet_request, cancel=self.cancel)
        self.worker.start()
        self.request(4)

    def on_next(self, element: Any) -> None:
        if element is None:
            raise TypeError("on_next(None)")
        self.inbox.put(element)

    def work(self) -> None:
        for _ in range(300):  # a bounded life
            try:
                element = self.inbox.get(timeout=2)
            except queue.Empty:
                return
            with self.probe.next(element):
                time.sleep(0.02)
                self.received.append(element)
            if not self.cancelled:
                self.request(1)

    def puppet_request(self, n: int) -> None:
        if not self.cancelled:
            self.request(n)

    def request(self, n: int) -> None:
        with self.lock:
            super().request(n)

    def cancel(self) -> None:
        with self.lock:
            super().cancel()


# -- 2.7: a race on the subscription ------------------------------------------------------------

_WORKERS = concurrent.futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="broken-turns")


class ExtraPassAfterTurn(GoodSubscriber):
    """Rule 2.7: its delivery loop makes one more pass after giving up its turn.

    Signals are queued and a turn on a pool worker processes them, requesting one more per
    element; the turn clears its "scheduled" flag and then, to save a resubmission, takes
    one more element if one is queued, without the flag. An on_next arriving meanwhile starts
    a new turn on another worker: two threads request at once, now and then. The puppet's
    requests are queued and made by a turn too, so that the extra pass is the only fault.
    """

    def __init__(self, probe: WhiteboxProbe | None = None) -> None:
        super().__init__(probe)
        self.inbox: collections.deque[Any] = collections.deque()
        self.lock = threading.Lock()
        self.scheduled = False

    def on_next(self, element: Any) -> None:
        if element is None:
            raise TypeError("on_next(None)")
        self.inbox.append(element)
        with self.lock:
            if self.scheduled:
                return
            self.scheduled = True
        _WORKERS.submit(self.turn)

    def turn(self) -> None:
        while True:
            try:
                element = self.inbox.popleft()
            except IndexError:
                break
            self.handle(element)
        with self.lock:
            self.scheduled = False
        try:
            element = self.inbox.popleft()  # the extra pass, outside the turn
        except IndexError:
            return
        self.handle(element)

    def puppet_request(self, n: int) -> None:
        self.on_next(_PuppetRequest(n))

    def handle(self, element: Any) -> None:
        if isinstance(element, _PuppetRequest):
            GoodSubscriber.puppet_request(self, element.n)
            return
        with self.probe.next(element):
            self.process(element)


class _PuppetRequest:
    """A puppet's request, queued among the elements of a subscriber that makes it in a turn."""

    def __init__(self, n: int) -> None:
        self.n = n


class ActorExtraPass(GoodSubscriber):
    """Rule 2.7: the JVM's AsyncSubscriber, whose run() handles one more signal after ``on`` is cleared.

    Ported from the reactive-streams-jvm example: every signal is queued and ``run`` (on a pool
    worker, one signal per run) is scheduled when the ``on`` flag goes from false to true. The
    change: the ``finally`` clause clears ``on`` and then, to save rescheduling, handles the next
    queued signal itself before scheduling again. A signal arriving after the flag is cleared
    schedules another run on another worker: two threads request(1) at once.
    """

    def __init__(self, probe: WhiteboxProbe | None = None) -> None:
        super().__init__(probe)
        self.inbound: queue.SimpleQueue[tuple[str, Any]] = queue.SimpleQueue()
        self.on = False
        self.on_lock = threading.Lock()  # compareAndSet on ``on``

    def on_subscribe(self, subscription: Subscription) -> None:
        if subscription is None:
            raise TypeError("on_subscribe(None)")
        self.signal("subscribe", subscription)

    def on_next(self, element: Any) -> None:
        if element is None:
            raise TypeError("on_next(None)")
        self.signal("next", element)

    def on_error(self, exc: BaseException) -> None:
        if exc is None:
            raise TypeError("on_error(None)")
        self.signal("error", exc)

    def on_complete(self) -> None:
        self.signal("complete", None)

    def signal(self, kind: str, value: Any) -> None:
        self.inbound.put((kind, value))
        self.try_schedule()

    def try_schedule(self) -> None:
        with self.on_lock:
            if self.on:
                return
            self.on = True
        _WORKERS.submit(self.run)

    def run(self) -> None:
        try:
            self.handle(*self.inbound.get_nowait())
        except queue.Empty:
            pass
        finally:
            self.on = False
            with contextlib.suppress(queue.Empty):
                self.handle(*self.inbound.get_nowait())  # the extra pass, outside the turn
            if not self.inbound.empty():
                self.try_schedule()

    def puppet_request(self, n: int) -> None:
        self.signal("request", n)  # the puppet's calls are made by a run too

    def puppet_cancel(self) -> None:
        self.signal("cancel", None)

    def handle(self, kind: str, value: Any) -> None:
        if kind == "subscribe":
            if self.subscription is not None or self.done:
                value.cancel()
                return
            self.subscription = value
            self.probe.register(request=self.puppet_request, cancel=self.puppet_cancel)
            self.request(1)
        elif kind == "request":
            GoodSubscriber.puppet_request(self, value)
        elif kind == "cancel":
            self.cancel()
        elif kind == "next":
            GoodSubscriber.on_next(self, value)
        elif kind == "error":
            GoodSubscriber.on_error(self, value)
        else:
            GoodSubscriber.on_complete(self)


class CancelsBesideItsWorker(GoodSubscriber):
    """Rule 2.7: ``take(n)`` whose worker requests, while the n-th on_next cancels on the caller's thread.

    Elements go to a worker that processes them and requests one more each; the on_next that
    brings the n-th element cancels at once, on the thread that delivered it, to stop the
    stream as early as possible. The worker may still be inside its request() for the element
    before: a request and a cancel overlap on the subscription.
    """

    TAKE = 8

    def __init__(self, probe: WhiteboxProbe | None = None) -> None:
        super().__init__(probe)
        self.count = 0
        # One worker: its requests are serial among themselves (rule 2.7), not with the cancel.
        self.worker = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="take-worker")

    def on_next(self, element: Any) -> None:
        if element is None:
            raise TypeError("on_next(None)")
        self.count += 1
        if self.count >= self.TAKE:
            with self.probe.next(element):
                self.received.append(element)
            self.cancel()
            self.worker.shutdown(wait=False)
            return
        self.worker.submit(self.work, element)

    def work(self, element: Any) -> None:
        with self.probe.next(element):
            self.process(element)


# -- past a worker's turn size --------------------------------------------------------------------


class StrandsTheRestAfterATurn(GoodSubscriber):
    """Rule 3.8: a worker handles at most 100 queued elements a turn and then never comes back.

    Signals are queued and a turn on a pool worker processes them; after a full turn it
    should resubmit itself for the rest, but returns with its "scheduled" flag still set, so
    no later signal starts another turn either. One element at a time never fills a turn; a
    burst of requested elements leaves the rest unprocessed and the demand unsignalled.
    """

    TURN = 100

    def __init__(self, probe: WhiteboxProbe | None = None) -> None:
        super().__init__(probe)
        self.inbox: collections.deque[Any] = collections.deque()
        self.lock = threading.Lock()
        self.scheduled = False

    def on_next(self, element: Any) -> None:
        if element is None:
            raise TypeError("on_next(None)")
        with self.lock:
            self.inbox.append(element)
            if self.scheduled:
                return
            self.scheduled = True
        _WORKERS.submit(self.turn)

    def turn(self) -> None:
        for _ in range(self.TURN):
            with self.lock:
                if not self.inbox:
                    self.scheduled = False
                    return
                element = self.inbox.popleft()
            with self.probe.next(element):
                self.process(element)


# -- 2.7 with a puppet that may be pulled from any thread ------------------------------------------


def any_thread(cls: type[GoodSubscriber]) -> WhiteboxSubject:
    """``cls`` as a whitebox subject that declares its puppet may be pulled from any thread."""
    return WhiteboxSubject(lambda probe: cls(probe), any_thread_puppet=True, label=cls.__name__)


class UnserialisedPuppet(GoodSubscriber):
    """Rule 2.7, declared ``any_thread_puppet``: the puppet calls the subscription straight away
    (as ``GoodSubscriber``'s does), so a pull on one thread and the request ``on_next`` makes on
    another are two calls on the subscription at once. Correct when only one thread ever pulls."""


class DropsDemandLeftForItsDrain(GoodSubscriber):
    """Rule 2.7, declared ``any_thread_puppet``: requests go through a work counter, but the
    thread that drains sets it back to 0 as it leaves instead of taking off what it handled, so
    demand another thread left for it in the meantime is never requested."""

    def __init__(self, probe: WhiteboxProbe | None = None) -> None:
        super().__init__(probe)
        self._lock = threading.Lock()
        self._pending = 0
        self._wip = 0

    def request(self, n: int) -> None:
        with self._lock:
            self._pending += n
            self._wip += 1
            if self._wip != 1:
                return
        while True:
            with self._lock:
                n, self._pending = self._pending, 0
            if n:
                assert self.subscription is not None
                self.subscription.request(n)
            with self._lock:
                if not self._pending:
                    self._wip = 0  # forgets a request that lands between this check and the next
                    return

    def cancel(self) -> None:
        self.cancelled = True
        with self._lock:
            inside = self._wip > 0
        if self.subscription is not None and not inside:
            self.subscription.cancel()


# -- 2.4: requests after the end that no backlog explains, by batching and by slow subscribers ---


class BatchRetriesAfterEnd(GoodSubscriber):
    """Rule 2.4: batches of demand (8 at first, 6 more after every 6 processed, limitRate's), and
    200 ms after on_complete or on_error a "retry" asks the ended subscription for a batch again.

    It processes each element inside on_next, so it has nothing left to work off at the end;
    with fewer than 6 elements processed its batch pattern would make no request for a while,
    which is why the count of the elements before the end cannot tell: it is caught once idle.
    """

    FIRST, BATCH, LATER = 8, 6, 0.2

    def on_subscribe(self, subscription: Subscription) -> None:
        if subscription is None:
            raise TypeError("on_subscribe(None)")
        if self.subscription is not None or self.done:
            subscription.cancel()
            return
        self.subscription = subscription
        self.probe.register(request=self.puppet_request, cancel=self.cancel)
        self.request(self.FIRST)

    def process(self, element: Any) -> None:
        if self.cancelled or self.done:
            return
        self.received.append(element)
        if len(self.received) % self.BATCH == 0:
            self.request(self.BATCH)

    def on_complete(self) -> None:
        super().on_complete()
        self._retry()

    def on_error(self, exc: BaseException) -> None:
        super().on_error(exc)
        self._retry()

    def _retry(self) -> None:
        assert self.subscription is not None
        timer = threading.Timer(self.LATER, self.subscription.request, (self.FIRST,))
        timer.daemon = True
        timer.start()


class _Locked:
    """A subscription whose calls are made one at a time, under a lock (rule 2.7)."""

    def __init__(self, subscription: Subscription) -> None:
        self._subscription = subscription
        self._lock = threading.Lock()

    def request(self, n: int) -> None:
        with self._lock:
            self._subscription.request(n)

    def cancel(self) -> None:
        with self._lock:
            self._subscription.cancel()


_MADE: dict[str, type[Any]] = {}


def _tops_up_class() -> type[Any]:
    """``TopsUpWhileWorking``, built once on first use (on the conforming ``SlowActor``)."""
    if "tops_up" in _MADE:
        return _MADE["tops_up"]
    from tests.conforming.subscribers import SlowActor

    class TopsUpWhileWorking(SlowActor):
        """Rule 2.4: a slow actor (``SlowActor``: 150 ms per element, one request per element
        processed) that, when the end arrives, also asks for one element more "for the road",
        from a timer 50 ms later, while its worker still works off what came before the end.

        Its worker's requests each finish its work on an element that came before the end, and
        it is busy all along, never idle; the timer's request is one more than those, whatever
        the timing: the count of requests after the end against the elements left tells it.
        """

        def _handle_subscribe(self, subscription: Subscription) -> None:
            super()._handle_subscribe(_Locked(subscription))

        def on_complete(self) -> None:
            super().on_complete()
            self._top_up()

        def on_error(self, exc: BaseException) -> None:
            super().on_error(exc)
            self._top_up()

        def _top_up(self) -> None:
            timer = threading.Timer(0.05, self._one_more)
            timer.daemon = True
            timer.start()

        def _one_more(self) -> None:
            if self._subscription is not None:
                self._subscription.request(1)

    _MADE["tops_up"] = TopsUpWhileWorking
    return TopsUpWhileWorking


def tops_up_while_working() -> Any:
    return _tops_up_class()()


def tops_up_while_working_whitebox(probe: Any) -> Any:
    return _tops_up_class()(probe)
