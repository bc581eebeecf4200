"""Conforming subscribers: the JVM examples' ``SyncSubscriber`` and ``AsyncSubscriber``, and
``first()``/``take(n)``, which cancel their own subscription once they have what they need
(rule 2.6) and cancel any subscription offered after that (rule 2.5).

Each takes an optional whitebox probe: with one, it registers a puppet whose calls go straight
to the subscription (as the JVM's whitebox tests of these examples do) and reports the
processing of each signal.
"""

from __future__ import annotations

import collections
import contextlib
import threading
from collections.abc import Callable
from concurrent.futures import Executor
from typing import Any

from rstck.api import Subscription

from .publishers import shared_executor


def _report(probe: Any, signal: str, value: Any = None) -> contextlib.AbstractContextManager[Any]:
    if probe is None:
        return contextlib.nullcontext()
    if signal == "next":
        return probe.next(value)  # type: ignore[no-any-return]
    if signal == "complete":
        return probe.complete()  # type: ignore[no-any-return]
    return probe.error(value)  # type: ignore[no-any-return]


class JvmSyncSubscriber:
    """Requests one element at a time, from inside ``on_next``; all work on the caller's thread."""

    def __init__(self, probe: Any = None, when_next: Callable[[Any], bool] | None = None) -> None:
        self._probe = probe
        self._when_next = when_next or (lambda element: True)
        self._subscription: Subscription | None = None
        self._done = False

    def on_subscribe(self, subscription: Subscription) -> None:
        if subscription is None:
            raise TypeError("rule 2.13: on_subscribe(None)")
        if self._subscription is not None:
            subscription.cancel()  # rule 2.5
            return
        self._subscription = subscription  # stored before request: on_next may come inside it
        if self._probe is not None:
            self._probe.register(request=subscription.request, cancel=subscription.cancel)
        subscription.request(1)

    def on_next(self, element: Any) -> None:
        if self._subscription is None:
            return  # a publisher broke rule 1.9; nothing sensible to do
        if element is None:
            raise TypeError("rule 2.13: on_next(None)")
        if self._done:
            return
        try:
            with _report(self._probe, "next", element):
                more = self._when_next(element)
        except Exception:
            self._finish()
            return
        if more:
            self._subscription.request(1)
        else:
            self._finish()

    def _finish(self) -> None:
        self._done = True
        if self._subscription is not None:
            self._subscription.cancel()

    def on_error(self, exc: BaseException) -> None:
        if exc is None:
            raise TypeError("rule 2.13: on_error(None)")
        with _report(self._probe, "error", exc):
            self._done = True

    def on_complete(self) -> None:
        with _report(self._probe, "complete"):
            self._done = True


class JvmAsyncSubscriber:
    """Every signal is a message; one executor task at a time handles one message (an actor)."""

    def __init__(self, probe: Any = None, executor: Executor | None = None,
                 when_next: Callable[[Any], bool] | None = None) -> None:
        self._probe = probe
        self._executor = executor or shared_executor()
        self._when_next = when_next or (lambda element: True)
        self._subscription: Subscription | None = None
        self._done = False
        self._inbound: collections.deque[tuple[str, Any]] = collections.deque()
        self._on = False
        self._on_lock = threading.Lock()

    # -- the signal methods only enqueue ---------------------------------------------------

    def on_subscribe(self, subscription: Subscription) -> None:
        if subscription is None:
            raise TypeError("rule 2.13: on_subscribe(None)")
        self._signal("subscribe", subscription)

    def on_next(self, element: Any) -> None:
        if element is None:
            raise TypeError("rule 2.13: on_next(None)")
        self._signal("next", element)

    def on_error(self, exc: BaseException) -> None:
        if exc is None:
            raise TypeError("rule 2.13: on_error(None)")
        self._signal("error", exc)

    def on_complete(self) -> None:
        self._signal("complete", None)

    # -- the actor -------------------------------------------------------------------------

    def _signal(self, kind: str, value: Any) -> None:
        self._inbound.append((kind, value))
        self._try_schedule()

    def _try_schedule(self) -> None:
        with self._on_lock:
            if self._on:
                return
            self._on = True
        try:
            self._executor.submit(self._run)
        except RuntimeError:
            if not self._done:
                self._finish()
            self._inbound.clear()
            with self._on_lock:
                self._on = False

    def _run(self) -> None:
        try:
            kind, value = self._inbound.popleft()
            if not self._done:  # rule 2.8: once done, nothing more is processed
                getattr(self, f"_handle_{kind}")(value)
        finally:
            with self._on_lock:
                self._on = False
            if self._inbound:
                self._try_schedule()

    def _handle_subscribe(self, subscription: Subscription) -> None:
        if self._subscription is not None:
            subscription.cancel()  # rule 2.5
            return
        self._subscription = subscription
        if self._probe is not None:
            self._probe.register(request=self._request_from_outside, cancel=self._cancel_from_outside)
        subscription.request(1)

    def _request_from_outside(self, n: int) -> None:
        # The puppet's calls go through the mailbox too, so only the actor calls the
        # subscription (rule 2.7).
        self._signal("request", n)

    def _cancel_from_outside(self) -> None:
        self._signal("cancel", None)

    def _handle_request(self, n: int) -> None:
        if self._subscription is not None:
            self._subscription.request(n)

    def _handle_cancel(self, _: Any) -> None:
        self._finish()

    def _handle_next(self, element: Any) -> None:
        if self._subscription is None:
            return
        try:
            with _report(self._probe, "next", element):
                more = self._when_next(element)
        except Exception:
            self._finish()
            return
        if more:
            self._subscription.request(1)
        else:
            self._finish()

    def _handle_complete(self, _: Any) -> None:
        with _report(self._probe, "complete"):
            self._done = True

    def _handle_error(self, exc: BaseException) -> None:
        with _report(self._probe, "error", exc):
            self._done = True

    def _finish(self) -> None:
        self._done = True
        if self._subscription is not None:
            self._subscription.cancel()


class TakeSubscriber:
    """``take(n)``: requests n at once, cancels after the n-th element (rule 2.6).

    A subscription offered later, after its own was cancelled or ended, is cancelled too.
    """

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._taken: list[Any] = []
        self._subscription: Subscription | None = None
        self._lock = threading.Lock()
        self._done = False

    def on_subscribe(self, subscription: Subscription) -> None:
        if subscription is None:
            raise TypeError("rule 2.13: on_subscribe(None)")
        with self._lock:
            reject = self._subscription is not None or self._done
            if not reject:
                self._subscription = subscription
        if reject:
            subscription.cancel()
            return
        subscription.request(self._limit)

    def on_next(self, element: Any) -> None:
        if element is None:
            raise TypeError("rule 2.13: on_next(None)")
        with self._lock:
            if self._done:
                return
            self._taken.append(element)
            enough = len(self._taken) >= self._limit
            if enough:
                self._done = True
        if enough and self._subscription is not None:
            self._subscription.cancel()

    def on_error(self, exc: BaseException) -> None:
        if exc is None:
            raise TypeError("rule 2.13: on_error(None)")
        self._done = True

    def on_complete(self) -> None:
        self._done = True


def jvm_sync_subscriber() -> JvmSyncSubscriber:
    return JvmSyncSubscriber()


def jvm_async_subscriber() -> JvmAsyncSubscriber:
    return JvmAsyncSubscriber()


def jvm_sync_whitebox(probe: Any) -> JvmSyncSubscriber:
    return JvmSyncSubscriber(probe)


def jvm_async_whitebox(probe: Any) -> JvmAsyncSubscriber:
    return JvmAsyncSubscriber(probe)


def first_subscriber() -> TakeSubscriber:
    return TakeSubscriber(1)


def take3_subscriber() -> TakeSubscriber:
    return TakeSubscriber(3)


class CancelAtOnceSink:
    """A sink that wants nothing: it cancels inside ``on_subscribe`` and never requests.

    Legal (rules 2.6, 3.5): the JVM's ``shouldPass_unrelatedCancelFromOnComplete`` shape. It
    still takes the terminal signal that may already be on its way (2.9, 2.10) and reports it.
    """

    def __init__(self, probe: Any = None) -> None:
        self._probe = probe

    def on_subscribe(self, subscription: Subscription) -> None:
        if subscription is None:
            raise TypeError("rule 2.13: on_subscribe(None)")
        if self._probe is not None:
            self._probe.register(request=subscription.request, cancel=subscription.cancel)
        subscription.cancel()

    def on_next(self, element: Any) -> None:
        if element is None:
            raise TypeError("rule 2.13: on_next(None)")

    def on_error(self, exc: BaseException) -> None:
        if exc is None:
            raise TypeError("rule 2.13: on_error(None)")
        with _report(self._probe, "error", exc):
            pass

    def on_complete(self) -> None:
        with _report(self._probe, "complete"):
            pass


class IgnoringSink:
    """A sink that keeps its subscription and never asks for anything (a placeholder, a tap
    that is never opened): legal, since demand is the subscriber's to give."""

    def __init__(self, probe: Any = None) -> None:
        self._probe = probe
        self._subscription: Subscription | None = None

    def on_subscribe(self, subscription: Subscription) -> None:
        if subscription is None:
            raise TypeError("rule 2.13: on_subscribe(None)")
        if self._subscription is not None:
            subscription.cancel()  # rule 2.5
            return
        self._subscription = subscription
        if self._probe is not None:
            self._probe.register(request=lambda n: None, cancel=subscription.cancel)

    def on_next(self, element: Any) -> None:
        if element is None:
            raise TypeError("rule 2.13: on_next(None)")

    def on_error(self, exc: BaseException) -> None:
        if exc is None:
            raise TypeError("rule 2.13: on_error(None)")
        with _report(self._probe, "error", exc):
            self._subscription = None

    def on_complete(self) -> None:
        with _report(self._probe, "complete"):
            self._subscription = None


class LoopSubscriber:
    """An asyncio subscriber: every signal is handed to its event loop with ``call_soon`` and
    handled there, one callback at a time; it requests one element at a time from those
    callbacks (so a synchronous upstream delivers the next ``on_next`` on the loop, inside the
    callback's ``request``). The shape of subscribers of loop-bound libraries.

    Built on the loop (the TCK calls the factory there under ``--rs-loop=asyncio``).
    """

    def __init__(self, probe: Any = None, *, late_request: bool = False) -> None:
        import asyncio

        self._loop = asyncio.get_running_loop()
        self._probe = probe
        self._subscription: Subscription | None = None
        self._done = False
        #: The bug of a sibling shape: one more request from the loop after on_complete (2.4).
        self._late_request = late_request

    def on_subscribe(self, subscription: Subscription) -> None:
        if subscription is None:
            raise TypeError("rule 2.13: on_subscribe(None)")
        self._loop.call_soon(self._subscribed, subscription)

    def on_next(self, element: Any) -> None:
        if element is None:
            raise TypeError("rule 2.13: on_next(None)")
        self._loop.call_soon(self._next, element)

    def on_error(self, exc: BaseException) -> None:
        if exc is None:
            raise TypeError("rule 2.13: on_error(None)")
        self._loop.call_soon(self._end, "error", exc)

    def on_complete(self) -> None:
        self._loop.call_soon(self._end, "complete", None)

    def _subscribed(self, subscription: Subscription) -> None:
        if self._subscription is not None or self._done:
            subscription.cancel()  # rule 2.5
            return
        self._subscription = subscription
        if self._probe is not None:
            self._probe.register(request=self._puppet_request, cancel=self._puppet_cancel)
        subscription.request(1)

    def _puppet_request(self, n: int) -> None:
        self._loop.call_soon_threadsafe(self._request, n)

    def _puppet_cancel(self) -> None:
        self._loop.call_soon_threadsafe(self._cancel)

    def _request(self, n: int) -> None:
        if self._subscription is not None and not self._done:
            self._subscription.request(n)

    def _cancel(self) -> None:
        if self._subscription is not None and not self._done:
            self._done = True
            self._subscription.cancel()

    def _next(self, element: Any) -> None:
        if self._done or self._subscription is None:
            return
        with _report(self._probe, "next", element):
            pass
        self._subscription.request(1)

    def _end(self, kind: str, exc: BaseException | None) -> None:
        if self._done and not self._late_request:
            return
        with _report(self._probe, kind, exc):
            self._done = True
        if self._late_request and self._subscription is not None:
            self._loop.call_soon(self._subscription.request, 1)  # breaks 2.4


def cancel_at_once_sink() -> CancelAtOnceSink:
    return CancelAtOnceSink()


def cancel_at_once_whitebox(probe: Any) -> CancelAtOnceSink:
    return CancelAtOnceSink(probe)


def ignoring_sink() -> IgnoringSink:
    return IgnoringSink()


def ignoring_whitebox(probe: Any) -> IgnoringSink:
    return IgnoringSink(probe)


def loop_subscriber() -> LoopSubscriber:
    return LoopSubscriber()


def loop_whitebox(probe: Any) -> LoopSubscriber:
    return LoopSubscriber(probe)
