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


def factory(subscription: type[bp.RangeSubscription]) -> Any:
    return bp.factory(subscription)


#: Order-dependent broken publishers: (id, factory, the rule the fuzzer must cite). The 3.9 case
#: shows in about 2% of generated scenarios (it needs a non-positive request handed to another
#: thread from inside on_next, with no cancel after it): the default 100 find it in about 87%
#: of runs, so its test asks for 400 (`EXAMPLES`); the others show in 4-9% of scenarios.
PUBLISHERS = (
    ("double-counted-across-threads", factory(DoubleCountedAcrossThreads), "1.1"),
    ("cancel-lost-mid-batch", factory(CancelLostMidBatch), "3.6"),
    ("request-overwrites-while-serving", factory(RequestOverwritesWhileServing), "3.8"),
    ("illegal-request-ignored-across-threads", factory(IllegalRequestIgnoredAcrossThreads), "3.9"),
    ("wraps-before-first-drain", factory(WrapsBeforeFirstDrain), "3.17"),
)
#: Examples the catalogue test gives a case that the default budget finds only most of the time.
EXAMPLES = {"illegal-request-ignored-across-threads": 400}


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
