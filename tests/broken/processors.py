"""Deliberately broken identity processors: each one breaks exactly one rule.

Each is the reference ``IdentityProcessor`` with one method changed, so everything else about
it is known to be right; its docstring names the rule it breaks and how. ``subject(cls)``
wraps one as a ``ProcessorSubject``.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any

from rstck.api import MAX_DEMAND
from rstck.api import Subscription
from rstck.reference.processors import IdentityProcessor
from rstck.reference.processors import _Downstream
from rstck.reference.subscribers import SerialSubscription
from rstck.subjects import ProcessorSubject

from tests.conforming.processors import ActorProcessor
from tests.conforming.processors import MapProcessor


def subject(cls: type[IdentityProcessor], **knobs: Any) -> ProcessorSubject:
    return ProcessorSubject(lambda: cls(), label=cls.__name__, **knobs)


# -- controls that must pass (where they apply) ------------------------------------------------


class RecoversCleanly(IdentityProcessor):
    """Correct for rule 4.2: recovers from an upstream error by completing its subscribers.

    It treats the failed subscription as cancelled (nothing more is called on it). It cannot
    serve as a failed publisher, so only the 1.4 and 4.2 tests apply to it.
    """

    def on_error(self, exc: BaseException) -> None:
        if exc is None:
            raise TypeError("on_error(None)")
        self._upstream_ended("on_complete", None)


class KeepsUpstreamWhenAlone(IdentityProcessor):
    """Correct: does not cancel upstream when its last subscriber cancels (only advised)."""

    def _left(self, downstream: _Downstream, *, terminated: bool = False) -> None:
        with self._lock:
            if downstream in self._downstreams:
                self._downstreams.remove(downstream)


# -- 1.4 and 4.2: errors -----------------------------------------------------------------------


class SwallowsErrors(IdentityProcessor):
    """Rules 4.2 and 1.4: an upstream on_error is dropped: neither propagated nor recovered from."""

    def on_error(self, exc: BaseException) -> None:
        if exc is None:
            raise TypeError("on_error(None)")


class _ErrorWaitsForDemand(_Downstream):
    def _ending_locked(self) -> bool:
        if self.error is not None and self.demand == 0:
            return False
        return super()._ending_locked()


class ErrorsOnlyWithDemand(IdentityProcessor):
    """Rule 1.4: on_error reaches only subscribers that have outstanding demand."""

    _downstream_type = _ErrorWaitsForDemand


class RecoversButKeepsRequesting(IdentityProcessor):
    """Rule 4.2: recovers (completes its subscribers) but keeps requesting on the failed upstream."""

    def on_subscribe(self, subscription: Subscription) -> None:
        self.raw = subscription
        super().on_subscribe(subscription)

    def on_error(self, exc: BaseException) -> None:
        if exc is None:
            raise TypeError("on_error(None)")
        with self._lock:
            targets = list(self._downstreams)
        for downstream in targets:
            downstream.end("on_complete", None)
            downstream.drain()
        threading.Timer(0.01, self.raw.request, (1,)).start()


# -- 2.1: demand from long ago -----------------------------------------------------------------


class _Forgetful(_Downstream):
    def request(self, n: int) -> None:
        super().request(n)
        forward = getattr(self._processor, "forward", None)
        if forward is not None and n > 0:
            forward(min(n, 2))


class ForgetsDemand(IdentityProcessor):
    """Rule 2.1: forwards each request upstream at most 2 at a time, and forgets the rest."""

    _downstream_type = _Forgetful

    def _request_upstream(self) -> None:
        pass

    def forward(self, n: int) -> None:
        if self._upstream is not None:
            self._upstream.request(n)


# -- 3.17: request calls past a signed 16-bit count ---------------------------------------------


class _SignedShortCalls(_Downstream):
    def __init__(self, processor: IdentityProcessor, subscriber: Any) -> None:
        super().__init__(processor, subscriber)
        self.calls = 0

    def request(self, n: int) -> None:
        with self._lock:
            self.calls = (self.calls + 1 + 2**15) % 2**16 - 2**15
            closed = self.calls < 0
        if not closed:
            super().request(n)


class CountsRequestCallsInASignedShort(IdentityProcessor):
    """Rule 3.17: its subscribers' request calls are counted in a signed 16-bit field, and a
    negative count is read as a closed subscription: from the 32,768th call every request is
    ignored. Fed by the kit's counting upstream, the pile of 65,537 calls still shows it."""

    _downstream_type = _SignedShortCalls


# -- 4.1: identity -----------------------------------------------------------------------------


class AltersElements(IdentityProcessor):
    """Rule 4.1: relays each element wrapped in a tuple, not unchanged."""

    def on_next(self, element: Any) -> None:
        if element is None:
            raise TypeError("on_next(None)")
        super().on_next((element,))


# -- its subscriber side -----------------------------------------------------------------------


class CancelsUpstreamInOnComplete(IdentityProcessor):
    """Rule 2.3: on upstream on_complete it cancels the upstream subscription, inside the call."""

    def on_subscribe(self, subscription: Subscription) -> None:
        self.raw = subscription
        super().on_subscribe(subscription)

    def on_complete(self) -> None:
        super().on_complete()
        self.raw.cancel()


class AdoptsSecondUpstream(IdentityProcessor):
    """Rule 2.5: a second on_subscribe replaces the first upstream instead of being cancelled."""

    def on_subscribe(self, subscription: Subscription) -> None:
        if subscription is None:
            raise TypeError("on_subscribe(None)")
        with self._lock:
            self._upstream = SerialSubscription(subscription)
            self._in_flight = 0
        self._request_upstream()


class RequestsUpstreamFromTwoThreads(IdentityProcessor):
    """Rule 2.7: each upstream request is split in two, made from two threads at the same moment."""

    def on_subscribe(self, subscription: Subscription) -> None:
        self.raw = subscription
        super().on_subscribe(subscription)

    def _request_upstream(self) -> None:
        with self._lock:
            live = [d for d in self._downstreams if d.subscriber is not None]
            if self._ended is not None or not live:
                return
            n = max(d.wanted() for d in live) - self._in_flight
            if n <= 0:
                return
            self._in_flight += n
        barrier = threading.Barrier(2)

        def ask(k: int) -> None:
            with contextlib.suppress(threading.BrokenBarrierError):
                barrier.wait(1.0)
            if k:
                self.raw.request(k)

        for k in (n // 2, n - n // 2):
            threading.Thread(target=ask, args=(k,), daemon=True).start()


class AcceptsNoneElement(IdentityProcessor):
    """Rule 2.13: on_next(None) from upstream is dropped instead of refused with TypeError."""

    def on_next(self, element: Any) -> None:
        if element is not None:
            super().on_next(element)


class _RecordsFailures(_Downstream):
    """Notes on its processor what its subscriber raised, then lets the reference handle it."""

    def __init__(self, processor: Any, subscriber: Any) -> None:
        super().__init__(processor, subscriber)
        inner = self.subscriber

        class Noting:
            def __getattr__(self, name: str) -> Any:
                method = getattr(inner, name)

                def call(*args: Any) -> Any:
                    try:
                        return method(*args)
                    except Exception as exc:
                        processor.failure = exc
                        raise
                return call

        self.subscriber = Noting()


class ReplacesASubscribersFailure(IdentityProcessor):
    """Rule 2.13: once a subscriber's on_next raised, its own on_next raises an error of its own.

    Passing the subscriber's failure on to its caller is what rule 2.13 asks of the caller; an
    error that is not that failure is the processor breaking 2.13 as a subscriber.
    """

    _downstream_type = _RecordsFailures
    failure: BaseException | None = None

    def on_next(self, element: Any) -> None:
        super().on_next(element)
        if self.failure is not None:
            raise RuntimeError("relay failed: a subscriber raised")


class PassesOnASubscribersFailure(ReplacesASubscribersFailure):
    """Correct for rule 2.13: raises the subscriber's failure on to its own caller, as the cause."""

    def on_next(self, element: Any) -> None:
        IdentityProcessor.on_next(self, element)
        if self.failure is not None:
            failure, self.failure = self.failure, None
            raise RuntimeError("relay failed: a subscriber raised") from failure


# -- its publisher side ------------------------------------------------------------------------


class _IgnoresDemand(_Downstream):
    def request(self, n: int) -> None:
        super().request(n + 1 if n > 0 else n)


class EmitsBeyondDemand(IdentityProcessor):
    """Rule 1.1: counts every request(n) as n+1, so one element too many reaches a subscriber."""

    _downstream_type = _IgnoresDemand


class AcceptsNoneSubscriber(IdentityProcessor):
    """Rule 1.9: subscribe(None) returns normally instead of raising TypeError."""

    def subscribe(self, subscriber: Any) -> None:
        if subscriber is not None:
            super().subscribe(subscriber)


class _NoValidation(_Downstream):
    def request(self, n: int) -> None:
        super().request(max(n, 1))


class ForwardsIllegalRequests(IdentityProcessor):
    """Rule 3.9: request(0) is taken as request(1) instead of answered with on_error."""

    _downstream_type = _NoValidation


class _Clingy(_Downstream):
    def cancel(self) -> None:
        self._processor.cancelled.append(self.subscriber)  # type: ignore[attr-defined]
        super().cancel()


class KeepsCancelledSubscribers(IdentityProcessor):
    """Rule 3.13: the processor keeps a list of the subscribers that cancelled."""

    _downstream_type = _Clingy

    def __init__(self) -> None:
        super().__init__()
        self.cancelled: list[Any] = []


# -- 3.8: a cancel that silences other or later subscribers --------------------------------------


class ShutsDownOnAnyCancel(IdentityProcessor):
    """Rule 3.8: any subscriber's cancel shuts the processor down and cancels upstream, and the
    subscribers that remain are never told (a first-order mutant of the reference: `and` -> `or`
    in the shut-down condition)."""

    def _left(self, downstream: _Downstream, *, terminated: bool = False) -> None:
        with self._lock:
            if downstream in self._downstreams:
                self._downstreams.remove(downstream)
            shut_down = not terminated and self._ended is None
            if shut_down:
                self._ended = ("on_error", RuntimeError("shut down"))
            upstream = self._upstream
        if shut_down and upstream is not None:
            upstream.cancel()


class StaysOpenAfterCancellingUpstream(IdentityProcessor):
    """Rule 3.8: when its last subscriber cancels it cancels upstream but does not mark itself
    shut down, so a later subscriber is accepted and then waits forever (a first-order mutant of
    the reference: the statement that records the shut-down deleted)."""

    def _left(self, downstream: _Downstream, *, terminated: bool = False) -> None:
        with self._lock:
            if downstream in self._downstreams:
                self._downstreams.remove(downstream)
            shut_down = not terminated and not self._downstreams and self._ended is None
            upstream = self._upstream
        if shut_down and upstream is not None:
            upstream.cancel()
        else:
            self._request_upstream()


# -- 1.5 and 3.8: a subscriber joining as the stream ends ----------------------------------------


class JoinsAfterCheckingTheEnd(IdentityProcessor):
    """Rule 1.5: subscribe() asks "has the stream ended?" under the lock, lets go of it, and joins
    the list under the lock again. An end that falls between the two takes the list without the
    newcomer, which is then joined to an ended stream and never told."""

    def subscribe(self, subscriber: Any) -> None:
        if subscriber is None:
            raise TypeError("subscribe(None)")
        downstream = self._downstream_type(self, subscriber)
        with self._lock:
            ended = self._ended
        if ended is None:
            with self._lock:
                self._downstreams.append(downstream)
        downstream.start(ended)


class ListsSubscribersBeforeTheEnd(IdentityProcessor):
    """Rule 1.5: the upstream's end copies the subscriber list, then records the end in a second
    critical section; a subscriber joining in between is listed too late and sees no end."""

    def _upstream_ended(self, signal: str, error: BaseException | None) -> None:
        with self._lock:
            if self._ended is not None:
                return
            targets = list(self._downstreams)
        with self._lock:
            self._ended = (signal, error)
            upstream = self._upstream
        if upstream is not None:
            upstream.close()
        for downstream in targets:
            downstream.end(signal, error)
            downstream.drain()


class ShutsDownInTwoSteps(IdentityProcessor):
    """Rule 3.8: when its last subscriber leaves it decides to shut down under the lock and
    records the shut-down in a second critical section; a subscriber joining in between is
    accepted into a processor that then cancels upstream, and waits forever."""

    def _left(self, downstream: _Downstream, *, terminated: bool = False) -> None:
        with self._lock:
            if downstream in self._downstreams:
                self._downstreams.remove(downstream)
            shut_down = not terminated and not self._downstreams and self._ended is None
            upstream = self._upstream
        if shut_down:
            with self._lock:
                self._ended = ("on_error", RuntimeError("shut down"))
            if upstream is not None:
                upstream.cancel()
        else:
            self._request_upstream()


# -- 3.8: an element arriving while a subscriber requests ------------------------------------------


class _ResetsItsTurn(_Downstream):
    def _run(self, missed: int) -> None:
        while True:
            with self._lock:
                subscriber, element = self.subscriber, None
                if subscriber is not None and self.error is None and self.queue and self.demand > 0:
                    element = self.queue.popleft()
                    if self.demand < MAX_DEMAND:
                        self.demand -= 1
                ending = element is None and subscriber is not None and self._ending_locked()
                if ending:
                    error, self.subscriber = self.error, None
            if element is not None:
                assert subscriber is not None
                subscriber.on_next(element)
                continue
            if ending:
                assert subscriber is not None
                self._end(subscriber, error)
            with self._lock:
                # Leaves its turn in a critical section of its own, clearing the counter instead
                # of taking off what this turn saw: work announced since the last look is lost.
                self._wip = 0
            break
        self._freed_room()


class ResetsItsDeliveryTurn(IdentityProcessor):
    """Rule 3.8: the delivery loop looks for work, then ends its turn in a second critical section
    by clearing the work counter, so an element that arrives (or a request made) between the two
    stays queued until the next signal."""

    _downstream_type = _ResetsItsTurn


class _TakesOffOneTooMany(_Downstream):
    def request(self, n: int) -> None:
        with self._lock:
            if self.subscriber is None:
                return
            if n <= 0:
                self.error = self.error or ValueError(f"rule 3.9: request({n}) is illegal")
            else:
                self.demand = min(MAX_DEMAND, self.demand + n)
            self._wip += 1
            if self._wip != 1:
                return
        # Its own entry counted twice as the loop finishes: the work count goes below zero.
        self._run(2)


class TakesOffOneTooManyAsItFinishes(IdentityProcessor):
    """Rule 1.3: a delivery started by request() takes two off the work count for its own entry
    as it finishes, so the count dips below zero for a pass of its loop. An element from upstream
    then finds it at 0 (no delivery of its own) and the next one at 1: that one delivers on the
    upstream's thread while the request's loop, back at its next look, delivers too."""

    _downstream_type = _TakesOffOneTooMany


class TakesOffOneTooManyAsAnElementsDeliveryFinishes(IdentityProcessor):
    """Rule 1.3: the delivery an upstream element starts takes two off the work count for its
    own entry as it finishes (the subscriber out of demand, elements still queued for it): the
    count dips below zero for a pass of its loop. The subscriber's next request then finds it at
    0 and the one after at 1: that one delivers a queued element on the requesting thread while
    the element's loop, back at its next look, delivers another."""

    def on_next(self, element: Any) -> None:
        if element is None:
            raise TypeError("rule 2.13: on_next(None)")
        with self._lock:
            if self._ended is not None:
                return
            if self._in_flight > 0:
                self._in_flight -= 1
            owned = []
            for downstream in self._downstreams:
                if downstream.subscriber is not None:
                    downstream.queue.append(element)
                    downstream._wip += 1
                    if downstream._wip == 1:
                        owned.append(downstream)
        for downstream in owned:
            downstream._run(2)  # its own entry counted twice


class CountsInFlightAfterAsking(IdentityProcessor):
    """Rule 3.8: asks upstream first and counts the request as in flight afterwards; an element
    that arrives in between is taken off a count that does not include it yet, so the count ends
    one too high and the processor waits for an element it never asked for, and stops asking."""

    def _request_upstream(self) -> None:
        with self._lock:
            upstream = self._upstream
            live = [d for d in self._downstreams if d.subscriber is not None]
            if upstream is None or self._ended is not None or not live:
                return
            wanted = max(d.wanted() for d in live)
            room = min(self._buffer_size - len(d.queue) for d in live)
            n = min(wanted, room) - self._in_flight
            if n <= 0:
                return
        upstream.request(n)
        with self._lock:
            self._in_flight += n


# -- defects that hide in one calling context ----------------------------------------------------


class ForgetsEarlyDemand(ActorProcessor):
    """Rule 3.8: downstream demand that arrives before the upstream subscription is dropped.

    Built on the conforming actor processor, which answers ``on_subscribe`` at once: a
    ``request(n)`` made before the upstream is there has "nowhere to go" and is lost. Demand
    made once the upstream is attached, the order most tests create, is forwarded.
    """

    def _on_request(self, n: int) -> None:
        if n > 0 and self._upstream is None:
            return
        super()._on_request(n)


def actor_subject(cls: type[ActorProcessor]) -> ProcessorSubject:
    return ProcessorSubject(lambda: cls(), label=cls.__name__, max_subscribers=1)


# -- 2.6: a single subscriber gone, the upstream is no longer needed -----------------------------


class OperatorKeepsUpstream(MapProcessor):
    """Rule 2.6: a unicast operator (Reactor's ``FluxMap`` shape) whose ``cancel()`` drops its
    subscriber but never reaches the upstream: with its only subscriber gone it has no use for
    the subscription, yet the upstream keeps it (and keeps producing, if it was asked ahead)."""

    def cancel(self) -> None:
        with self._lock:
            self._actual = None


class ActorKeepsUpstream(ActorProcessor):
    """Rule 2.6: a single-subscriber actor processor whose mailbox handles the subscriber's
    cancel by forgetting it, as if another could still come: the upstream is never cancelled."""

    def _on_cancel(self, _: Any) -> None:
        self._cancelled = True
        self._downstream = None


# -- past internal sizes -------------------------------------------------------------------------


class _ForgetsFreedRoom(_Downstream):
    """A request asks upstream for its own demand; the drain asks for nothing, not even the
    room its deliveries freed."""

    def request(self, n: int) -> None:
        super().request(n)
        self._processor._request_upstream()

    def _freed_room(self) -> None:
        pass


class _HoldsBackWhenFull(_ForgetsFreedRoom):
    def request(self, n: int) -> None:
        processor = self._processor
        assert isinstance(processor, StopsAfterAFullBuffer)
        with self._lock:
            if len(self.queue) >= processor._buffer_size:
                processor.ahead = True
        super().request(n)


class StopsAfterAFullBuffer(IdentityProcessor):
    """Rule 2.1: a request served from a full 16-element buffer stops all requests upstream.

    A request that finds a subscriber's buffer full marks the upstream as "ahead", and nothing
    is asked of it until an element arrives, which, with nothing asked, never happens; the
    drain does not ask for the room it freed either. So once a slower subscriber's buffer has
    filled and it requests again, the stream stops for both, with demand outstanding. One
    subscriber alone never fills its buffer.
    """

    _downstream_type = _HoldsBackWhenFull

    def __init__(self) -> None:
        super().__init__()
        self.ahead = False

    def on_next(self, element: Any) -> None:
        self.ahead = False
        super().on_next(element)
        self._request_upstream()  # asks after each element, unless a request marked it "ahead"

    def _request_upstream(self) -> None:
        if not self.ahead:
            super()._request_upstream()


class FixedWindowFilter(IdentityProcessor):
    """Rule 3.8: a filtering processor that asks upstream for a fixed window, topped up only per drop.

    A subscriber's request(n) asks upstream for at most 256; the filter tops its window up for
    each element it drops (none here), not for those it passes on. Requests of up to 256, or
    one at a time, are served; a request(2049) stops at 256.
    """

    WINDOW = 256

    def __init__(self) -> None:
        super().__init__(buffer_size=self.WINDOW, batch=1)  # asks for each request as it comes

    def on_next(self, element: Any) -> None:
        if element is None:
            raise TypeError("rule 2.13: on_next(None)")
        with self._lock:
            if self._ended is not None:
                return
            self._in_flight = max(0, self._in_flight - 1)
            targets = [d for d in self._downstreams if d.subscriber is not None]
            for downstream in targets:
                downstream.queue.append(element)
        for downstream in targets:
            downstream.drain()

    _downstream_type = _ForgetsFreedRoom


class ForgetsTheRoomALeaverHeld(IdentityProcessor):
    """Rule 3.8: when a subscriber leaves, the room its full queue held back is not asked for.

    Upstream demand is bounded by the fullest queue (a buffer of 32 here). A slow subscriber
    that asked for one element and cancels leaves the fast one, which asked for hundreds,
    waiting: upstream is asked again only on the next request or element, and none comes.
    """

    def __init__(self) -> None:
        super().__init__(buffer_size=32)

    def _left(self, downstream: _Downstream, *, terminated: bool = False) -> None:
        with self._lock:
            if downstream in self._downstreams:
                self._downstreams.remove(downstream)
            shut_down = not terminated and not self._downstreams and self._ended is None
            if shut_down:
                self._ended = ("on_error", RuntimeError("shut down: the last subscriber cancelled"))
            upstream = self._upstream
        if shut_down and upstream is not None:
            upstream.cancel()
