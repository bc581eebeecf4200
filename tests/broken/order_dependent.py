"""Broken implementations whose defect shows only under one order of requests, cancels or signals.

Each passes every fixed verification (they replay hand-picked orders, and none of them is this
one); the fuzz verifications must find the order, shrink it, and cite the rule it breaks.
Each publisher here is the catalogue's correct, trampolined ``RangeSubscription`` with one
method changed; the subscriber is a small batch-requesting one. Docstrings name the rule and
the order that shows the defect.
"""

from __future__ import annotations

import threading
from typing import Any

from rstck.api import MAX_DEMAND
from rstck.api import Subscription

from . import publishers as bp


class DoubleCountedAcrossThreads(bp.RangeSubscription):
    """1.1: a request from another thread while the drain loop runs is counted twice.

    The request path adds ``n`` and, meaning to hand the running loop its work, adds it again
    when it finds the loop busy on another thread. Requests from the test thread, or from
    inside ``on_next`` on the loop's own thread (what fixed tests do), are counted once.
    Shown by: request(1); from on_next #1: from another thread: request(1).
    """

    draining_on: int | None = None

    def drain(self) -> None:
        self.draining_on = threading.get_ident()
        try:
            super().drain()
        finally:
            self.draining_on = None

    def add(self, demand: int, n: int) -> int:
        busy_elsewhere = self.draining_on not in (None, threading.get_ident())
        return min(demand + (2 * n if busy_elsewhere else n), MAX_DEMAND)


class CancelLostMidBatch(bp.RangeSubscription):
    """3.6: a cancel landing between two elements of a batch is lost once a request came in too.

    When a request arrives mid-batch (demand below 2**31; more takes a fast path) the loop
    snapshots its state, and writes the snapshot back when the batch ends: a cancel made after
    that request, still inside the batch, is undone, so later requests are served as if
    nothing had happened. The batch finishing after cancel is conforming (1.8: "eventually");
    serving later requests is not.
    Shown by: request(3); from on_next #1: request(1); from on_next #2: cancel(); request(1).
    """

    cancelled = False

    def cancel(self) -> None:
        self.cancelled = True
        super().cancel()

    def drain(self) -> None:
        missed = 1
        while True:
            snapshot: Any = None
            while self.step():
                with self.lock:
                    if snapshot is None and self.wip > missed and self.subscriber is not None \
                            and self.demand < 2**31:
                        snapshot = self.subscriber  # a request came in mid-batch
            with self.lock:
                if snapshot is not None and self.cancelled:
                    self.subscriber, self.cancelled = snapshot, False  # the stale write-back
                self.wip -= missed
                missed = self.wip
                if missed == 0:
                    return


class _Serving(bp.RangeSubscription):
    """Knows whether its drain loop is running (the state the defects below get wrong)."""

    serving = False

    def drain(self) -> None:
        self.serving = True
        try:
            super().drain()
        finally:
            self.serving = False


class RequestOverwritesWhileServing(_Serving):
    """3.8: a request arriving while an earlier one is still being served replaces its demand.

    ``demand = n`` instead of ``demand += n`` on the path taken while the drain loop runs with
    demand left: the rest of the earlier request is lost and the stream stalls. A request made
    when the earlier one is used up (one at a time, as the fixed re-entrant tests do) is fine.
    Shown by: request(3); from on_next #1: request(1).
    """

    def add(self, demand: int, n: int) -> int:
        if self.serving and 0 < demand < MAX_DEMAND:
            return n
        return min(demand + n, MAX_DEMAND)


class ReordersAfterAReentrantRequest(_Serving):
    """Element order: a request landing while the drain loop runs swaps the next two elements.

    The refill it triggers goes to the front of a buffer read last-in first-out: the count and
    the values are right, only the order is not. No rule orders elements; a subject that
    declares ``deterministic_sequence`` promises one, and the fuzz verification holds it to it.
    Shown by: request(3); from on_next #1: request(1).
    """

    swap_at: int | None = None

    def request(self, n: int) -> None:
        with self.lock:
            if self.serving and n > 0 and self.swap_at is None and self.end is not None \
                    and self.index + 1 < self.end:
                self.swap_at = self.index
        super().request(n)

    def element(self, index: int) -> int:
        if self.swap_at is not None and index in (self.swap_at, self.swap_at + 1):
            return 2 * self.swap_at + 1 - index
        return index


class IllegalRequestIgnoredAcrossThreads(DoubleCountedAcrossThreads):
    """3.9: ``request(n <= 0)`` from another thread while the drain loop runs is dropped.

    A request that finds the loop busy on another thread is handed to it as plain demand, and
    a non-positive one adds nothing and is forgotten. From the test thread, or from inside
    on_next on the loop's own thread (what the fixed tests do), it is answered with
    on_error(ValueError) as it must be.
    Shown by: request(2); from on_next #1: from another thread: request(0).
    """

    def add(self, demand: int, n: int) -> int:
        return min(demand + n, MAX_DEMAND)

    def request(self, n: int) -> None:
        if n <= 0 and self.draining_on not in (None, threading.get_ident()):
            return
        super().request(n)


class WrapsBeforeFirstDrain(bp.RangeSubscription):
    """3.17: demand requested inside on_subscribe wraps around at 2**63 instead of saturating.

    Requests made before the first drain go to a separate 64-bit counter that skips the
    clamp: a sum of 2**63 or more turns negative and nothing is ever delivered. Requests made
    later saturate, and a sum of exactly 2**63-1 (the fixed test's) does not wrap.
    Shown by: from on_subscribe: request(2**63-1), then request(1).
    """

    started = False

    def start(self) -> None:
        self.started = True
        super().start()

    def add(self, demand: int, n: int) -> int:
        if not self.started:
            total = demand + n
            return total - 2**64 if total >= 2**63 else total
        return min(demand + n, MAX_DEMAND)


class SilentEndAfterReentrantBulk(_Serving):
    """1.5: the stream ends without on_complete when a bulk request from on_next reached its end.

    A request for more than one element made while the drain loop runs (from inside on_next,
    or from another thread meanwhile) is served by a batch path that emits the rest of the
    stream and drops the subscriber at its end without calling on_complete. Requests from the
    test thread, request(1) from on_next (the fixed re-entrant tests) and a bulk request that
    does not reach the end are fine.
    Shown by: request(1); from on_next #1: request(3) (on a stream of 4).
    """

    bulk = False

    def request(self, n: int) -> None:
        with self.lock:
            self.bulk = self.serving and n > 1
        super().request(n)

    def deliver_complete(self, subscriber: Any) -> None:
        if not self.bulk:
            super().deliver_complete(subscriber)


class PooledSilentEndAfterReentrantBulk(SilentEndAfterReentrantBulk):
    """1.5: the same silent end, delivered on a thread pool (every on_next on a pool thread)."""

    pooled = True


class DemandWrapsInEmissionLoop(bp.RangeSubscription):
    """3.17: a request made while a batch is being emitted wraps the demand counter around.

    The emission loop counts what it emitted and subtracts it from the demand only when it has
    caught up with it (the shape of RxJava's drain loops), and the request path saturates only a
    demand that is already unbounded: 2 outstanding plus 2**63-2 requested from on_next #1 is
    2**63, which wraps to -2**63, and the stream stops. Requests that sum to exactly 2**63-1, or
    that come while nothing is being emitted (the fixed 3.17 tests), are fine.
    Shown by: request(2); from on_next #1: request(2**63-2).
    """

    def add(self, demand: int, n: int) -> int:
        if demand >= MAX_DEMAND or n >= MAX_DEMAND:
            return MAX_DEMAND  # unbounded already, or asked for (as a 64-bit long caps a request)
        total = demand + n
        return total - 2**64 if total >= 2**63 else total  # the missing clamp

    def drain(self) -> None:
        missed = 1
        emitted = 0
        while True:
            while True:
                with self.lock:
                    requested = self.demand
                if not self.emit(emitted < requested):
                    break
                emitted += 1
            with self.lock:
                if self.demand < MAX_DEMAND:
                    self.demand -= emitted
                emitted = 0
                self.wip -= missed
                missed = self.wip
                if missed == 0:
                    return

    def emit(self, allowed: bool) -> bool:
        """The base ``step``, without its decrement: ``allowed`` says whether demand is left."""
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
                if not allowed:
                    return False
                element = self.element(self.index)
                self.index += 1
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


class DemandWrapsAcrossThreads(DemandWrapsInEmissionLoop):
    """3.17: the same wrap, only for a request from another thread while the loop emits.

    Requests on the emitting thread (from on_next) saturate; one from another thread takes
    the unclamped path. Shown by: request(2); from on_next #1: from another thread:
    request(2**63-2).
    """

    emitting_on: int | None = None

    def drain(self) -> None:
        self.emitting_on = threading.get_ident()
        try:
            super().drain()
        finally:
            self.emitting_on = None

    def add(self, demand: int, n: int) -> int:
        if self.emitting_on not in (None, threading.get_ident()):
            return super().add(demand, n)
        return min(demand + n, MAX_DEMAND)


class HeadFailureIgnored(bp.RangeSubscription):
    """2.13: the element already owed when subscribe() ends goes out by its own path, which
    logs a subscriber's failure and goes on.

    A publisher that hands the subscriber its first element as soon as on_subscribe returned
    (demand asked for inside on_subscribe: a "head" or replayed latest value), before its
    drain loop starts, guards that delivery with a catch-and-log; the loop itself treats a
    raise as cancel(). So a subscriber whose first on_next raises gets the rest anyway. Fixed
    tests request after subscribe() returned, or fail on a later element.
    Shown by: from on_subscribe: request(2); from on_next #1: raise.
    """

    def start(self) -> None:
        with self.lock:
            subscriber = self.subscriber
            head = subscriber is not None and self.error is None and self.demand > 0 and self.index != self.end
            if head:
                element = self.element(self.index)
                self.index += 1
                if self.demand < MAX_DEMAND:
                    self.demand -= 1
        if head and subscriber is not None:
            try:
                self.deliver_next(subscriber, element)
            except Exception:
                self.failures += 1  # logged; the head is best effort
        super().start()

    failures = 0


def factory(subscription: type[bp.RangeSubscription]) -> Any:
    return bp.factory(subscription)


#: Order-dependent broken publishers: (id, factory, the rule the fuzzer must cite).
PUBLISHERS = (
    ("double-counted-across-threads", factory(DoubleCountedAcrossThreads), "1.1"),
    ("cancel-lost-mid-batch", factory(CancelLostMidBatch), "3.6"),
    ("request-overwrites-while-serving", factory(RequestOverwritesWhileServing), "3.8"),
    ("illegal-request-ignored-across-threads", factory(IllegalRequestIgnoredAcrossThreads), "3.9"),
    ("wraps-before-first-drain", factory(WrapsBeforeFirstDrain), "3.17"),
    ("silent-end-after-reentrant-bulk", factory(SilentEndAfterReentrantBulk), "1.5"),
    ("pooled-silent-end-after-reentrant-bulk", factory(PooledSilentEndAfterReentrantBulk), "1.5"),
    ("demand-wraps-in-emission-loop", factory(DemandWrapsInEmissionLoop), "3.17"),
    ("demand-wraps-across-threads", factory(DemandWrapsAcrossThreads), "3.17"),
    ("head-failure-ignored", factory(HeadFailureIgnored), "2.13"),
)
#: The steps each case's defect needs (``publisher_side.size``): its shrunk scenario has no more.
STEPS = {
    "double-counted-across-threads": 2,
    "cancel-lost-mid-batch": 4,  # 3 at least: a request inside on_subscribe, a cancel from on_next #2, a request
    "request-overwrites-while-serving": 2,
    "illegal-request-ignored-across-threads": 2,
    "wraps-before-first-drain": 2,
    "silent-end-after-reentrant-bulk": 2,
    "pooled-silent-end-after-reentrant-bulk": 2,
    "demand-wraps-in-emission-loop": 2,
    "demand-wraps-across-threads": 2,
    "head-failure-ignored": 2,
    "inside-request-uncounted": 2,
}


# -- subscribers ------------------------------------------------------------------------------


class InsideRequestUncounted:
    """2.1: double-counts its demand when on_next arrives inside its own ``request()`` (3.10).

    It keeps ``batch`` elements requested, asking for more when half have arrived. An element
    delivered while its own ``request()`` call is running is taken as already accounted for by
    that call and not subtracted, so after a synchronous delivery it believes demand is still
    outstanding and never asks again. Fed from the test thread or another thread, it works.
    Shown by an upstream that delivers synchronously inside request().
    """

    batch = 4

    def __init__(self) -> None:
        self.subscription: Subscription | None = None
        self.outstanding = 0
        self.asking = False
        self.done = False

    def on_subscribe(self, subscription: Subscription) -> None:
        if subscription is None:
            raise TypeError("on_subscribe(None)")
        if self.subscription is not None:
            subscription.cancel()
            return
        self.subscription = subscription
        self._ask(self.batch)

    def _ask(self, k: int) -> None:
        assert self.subscription is not None
        self.outstanding += k
        self.asking = True
        try:
            self.subscription.request(k)
        finally:
            self.asking = False

    def on_next(self, element: Any) -> None:
        if element is None:
            raise TypeError("on_next(None)")
        if self.done:
            return
        if not self.asking:
            self.outstanding -= 1  # the defect: uncounted when inside our own request()
        if self.outstanding <= self.batch // 2:
            self._ask(self.batch - self.outstanding)

    def on_error(self, exc: BaseException) -> None:
        if exc is None:
            raise TypeError("on_error(None)")
        self.done = True

    def on_complete(self) -> None:
        self.done = True


#: Order-dependent broken subscribers: (id, blackbox factory, the rule the fuzzer must cite).
SUBSCRIBERS = (
    ("inside-request-uncounted", InsideRequestUncounted, "2.1"),
)


# -- the cause named: a unicast stream re-targeted by a later subscriber --------------------------


class RetargetedStream:
    """1.11: a unicast stream that is its own subscription; a later subscribe() re-targets it.

    The design of rsocket-py's generator streams: ``subscribe`` stores the subscriber and hands
    it the stream itself, so a second subscriber takes over the first one's subscription. The
    first subscriber's demand then drives the second's signals: its own elements stop (seen as
    lost demand, 3.8 or 3.17) or land unasked at the second (1.1). The cause is neither: a
    publisher must reject a subscriber it cannot serve, or keep it apart (1.11).
    Shown by: subscribe probe; subscribe sub2; probe: request(1).
    """

    def __init__(self, count: int) -> None:
        self.lock = threading.Lock()
        self.subscriber: Any = None
        self.count = count
        self.index = 0
        self.demand = 0
        self.emitting = False
        self.over = False

    def subscribe(self, subscriber: Any) -> None:
        if subscriber is None:
            raise TypeError("subscribe(None) is illegal")
        self.subscriber = subscriber  # the defect: the earlier subscriber is forgotten
        subscriber.on_subscribe(self)

    def request(self, n: int) -> None:
        with self.lock:
            if self.over:
                return
            if n <= 0:
                self.over = True
                target = self.subscriber
            else:
                self.demand = min(self.demand + n, MAX_DEMAND)
                if self.emitting:
                    return
                self.emitting = True
                target = None
        if target is not None:
            target.on_error(bp.invalid_request(n))
            return
        self._emit()

    def _emit(self) -> None:
        while True:
            with self.lock:
                if self.over or (self.demand <= 0 and self.index < self.count):
                    self.emitting = False
                    return
                target = self.subscriber
                if self.index >= self.count:
                    self.over = True
                    element = None
                else:
                    element = self.index
                    self.index += 1
                    if self.demand < MAX_DEMAND:
                        self.demand -= 1
            if element is None:
                target.on_complete()
                return
            target.on_next(element)

    def cancel(self) -> None:
        with self.lock:
            self.over = True


def retargeted_stream(n: int) -> RetargetedStream:
    return RetargetedStream(n)


#: Cases a fixed (deterministic) test catches too, since the fixed verifications drive demand
#: sums to 2**63-1 from on_next: kept here because the fuzz verification must still find them on
#: its own (a subject may differ from the fixed tests' pattern by one request).
ALSO_CAUGHT_BY = {
    # 64 request(1) calls made from inside on_next #1 replace each other's demand (rule 3.8).
    "request-overwrites-while-serving": {"required_spec317_must_support_an_unbounded_number_of_request_calls"},
    "silent-end-after-reentrant-bulk": {
        "required_spec317_demand_reaching_long_max_value_from_a_small_outstanding_demand_must_keep_flowing"},
    "pooled-silent-end-after-reentrant-bulk": {
        "required_spec317_demand_reaching_long_max_value_from_a_small_outstanding_demand_must_keep_flowing"},
    "demand-wraps-in-emission-loop": {
        "required_spec317_demand_reaching_long_max_value_from_a_small_outstanding_demand_must_keep_flowing"},
}
