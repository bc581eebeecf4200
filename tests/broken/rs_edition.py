"""Broken publishers of the ``rs`` edition: each breaks one rule of the edition's own.

Built on the conforming ranges of ``tests/conforming/rs_edition.py``; the ones about letting the
subscriber go keep their live streams in a registry, as a real publisher with a subscriber list
does, so a subscription that is never cancelled keeps its subscriber reachable.
"""

from __future__ import annotations

from typing import Any

from tests.conforming.rs_edition import RsRange
from tests.conforming.rs_edition import RsSubscription
from tests.conforming.rs_edition import _State

#: The streams not cancelled yet, as a publisher's subscriber list.
_LIVE: set[_State] = set()


class _Tracked(_State):
    def __init__(self, subscriber: Any, end: int, *, pooled: bool) -> None:
        super().__init__(subscriber, end, pooled=pooled)
        _LIVE.add(self)

    def cancel(self) -> None:
        super().cancel()
        _LIVE.discard(self)


class _TrackedRange(RsRange):
    subscription: type[RsSubscription] = RsSubscription

    def subscribe(self, subscriber: Any) -> RsSubscription:
        state = _Tracked(subscriber, self.n, pooled=self.pooled)
        if self.n == 0:
            state.drain()
        return self.subscription(state)


class _NoFinaliser(RsSubscription):
    def __del__(self) -> None:
        pass


class NoFinaliser(_TrackedRange):
    """rs 3.12 (and 3.11): dropping the subscription does nothing; only cancel() cancels."""

    subscription = _NoFinaliser


class _WithIgnored(RsSubscription):
    def __exit__(self, *exc: object) -> None:
        pass


class WithIgnored(_TrackedRange):
    """rs 3.12 (and 3.11): the subscription is a context manager whose exit does not cancel."""

    subscription = _WithIgnored


class _FlushesOnDrop(RsSubscription):
    def __del__(self) -> None:
        state = self._state
        with state.lock:
            state.demand = 2**63 - 1
        state.drain()  # the rest of the stream, ignoring demand, then the cancel
        state.cancel()


class _FlushesOnExit(RsSubscription):
    def __exit__(self, *exc: object) -> None:
        _FlushesOnDrop.__del__(self)  # type: ignore[arg-type]


class FlushesOnExit(RsRange):
    """rs 3.11: leaving the subscription's ``with`` block first pushes the rest of the stream."""

    def subscribe(self, subscriber: Any) -> RsSubscription:
        return _FlushesOnExit(_State(subscriber, self.n, pooled=self.pooled))


class FlushesOnDrop(RsRange):
    """rs 3.11: when the subscription is dropped it first pushes the rest of the stream."""

    def subscribe(self, subscriber: Any) -> RsSubscription:
        return _FlushesOnDrop(_State(subscriber, self.n, pooled=self.pooled))


class TiedToPublisher(RsRange):
    """rs 1.11: the publisher cancels its subscriptions when it is finalised."""

    def __init__(self, n: int, *, pooled: bool = False) -> None:
        super().__init__(n, pooled=pooled)
        self.streams: list[_State] = []

    def subscribe(self, subscriber: Any) -> RsSubscription:
        subscription = super().subscribe(subscriber)
        self.streams.append(subscription._state)
        return subscription

    def __del__(self) -> None:
        for state in self.streams:
            state.cancel()


class ReturnsNothing(RsRange):
    """rs 1.9: subscribe() returns None, as a JVM-style publisher does, instead of the subscription."""

    def subscribe(self, subscriber: Any) -> Any:
        super().subscribe(subscriber)
        return None


def no_finaliser(n: int) -> NoFinaliser:
    return NoFinaliser(n)


def with_ignored(n: int) -> WithIgnored:
    return WithIgnored(n)


def flushes_on_drop(n: int) -> FlushesOnDrop:
    return FlushesOnDrop(n)


def flushes_on_exit(n: int) -> FlushesOnExit:
    return FlushesOnExit(n)


def tied_to_publisher(n: int) -> TiedToPublisher:
    return TiedToPublisher(n)


def returns_nothing(n: int) -> ReturnsNothing:
    return ReturnsNothing(n)
