"""Conforming subscribers: the JVM examples' ``SyncSubscriber`` and ``AsyncSubscriber``, and
``first()``/``take(n)``, which cancel their own subscription once they have what they need
(rule 2.6) and cancel any subscription offered after that (rule 2.5), and a fail-fast one
that, offered a second subscription, cancels it and its own first one too.

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


class FailFastSubscriber:
    """Fails fast on a protocol violation: a second on_subscribe (someone broke rule 2.12, or
    subscribed it twice) is cancelled, as rule 2.5 asks, and taken as fatal: the subscriber
    cancels its own, first subscription too and ignores whatever still arrives (rule 2.8).
    The shape of subscribers that treat "onSubscribe called twice" as an unrecoverable error.

    Conforming: rule 2.5 asks only that the new subscription be cancelled, which it is, and it
    never requests on it; nothing forbids a subscriber cancelling its own subscription at any
    time (rules 2.6 and 3.5 make that its right; the JVM TCK's 2.5 test checks only the second's
    cancellation). Requests 4 at first and one more per element; which subscription is active
    is decided in one step under a lock, and its calls on its subscription are serialised
    under a re-entrant lock (rule 2.7; re-entrant for elements delivered inside request, 3.10).
    """

    def __init__(self, probe: Any = None) -> None:
        self._probe = probe
        self._subscription: Subscription | None = None
        self._failed: BaseException | None = None
        self._state = threading.Lock()
        self._calls = threading.RLock()

    def on_subscribe(self, subscription: Subscription) -> None:
        if subscription is None:
            raise TypeError("rule 2.13: on_subscribe(None)")
        give_up: Subscription | None = None
        with self._state:
            first, adopt = self._subscription, self._subscription is None and self._failed is None
            if adopt:
                self._subscription = subscription
            elif first is not None and self._failed is None:
                self._failed = RuntimeError("on_subscribe called twice: protocol violation, giving up")
                give_up = first
        if not adopt:
            subscription.cancel()  # rule 2.5
            if give_up is not None:
                with self._calls:
                    give_up.cancel()  # fail fast: a subscriber may cancel its own at any time
            return
        if self._probe is not None:
            self._probe.register(request=subscription.request, cancel=subscription.cancel)
        with self._calls:
            subscription.request(4)

    def on_next(self, element: Any) -> None:
        if element is None:
            raise TypeError("rule 2.13: on_next(None)")
        if self._failed is not None:
            return
        with _report(self._probe, "next", element):
            pass
        with self._calls:
            if self._failed is None and self._subscription is not None:
                self._subscription.request(1)

    def on_error(self, exc: BaseException) -> None:
        if exc is None:
            raise TypeError("rule 2.13: on_error(None)")
        with _report(self._probe, "error", exc):
            pass

    def on_complete(self) -> None:
        with _report(self._probe, "complete"):
            pass


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


def fail_fast_subscriber() -> FailFastSubscriber:
    return FailFastSubscriber()


def fail_fast_whitebox(probe: Any) -> FailFastSubscriber:
    return FailFastSubscriber(probe)


class SlowActor(JvmAsyncSubscriber):
    """The JVM's ``AsyncSubscriber`` with a slow ``whenNext``: ``work_s`` per element.

    Its mailbox is worked off in order, one signal at a time, so it receives on_complete or
    on_error only once it has processed the elements that came before; meanwhile it asks for
    more as it goes, ``batch`` at a time: one per element processed (``batch=1``, the JVM
    example's shape), or ``batch`` at first and ``batch`` more after every ``batch`` processed
    (limitRate's). Legal however long an element takes (rules 2.4, 2.11): the TCK must tell
    it from a subscriber that asks after it had nothing left to work off. It runs on a pool
    of its own, so that its long tasks do not hold up the other conforming subjects.
    """

    def __init__(self, probe: Any = None, *, work_s: float = 0.15, batch: int = 1) -> None:
        super().__init__(probe, _slow_pool())
        self._work_s = work_s
        self._batch = batch
        self._processed = 0

    def _handle_subscribe(self, subscription: Subscription) -> None:
        if self._subscription is not None:
            subscription.cancel()  # rule 2.5
            return
        self._subscription = subscription
        if self._probe is not None:
            self._probe.register(request=self._request_from_outside, cancel=self._cancel_from_outside)
        subscription.request(self._batch)

    def _handle_next(self, element: Any) -> None:
        import time

        if self._subscription is None:
            return
        with _report(self._probe, "next", element):
            time.sleep(self._work_s)  # whenNext: the element's processing
        self._processed += 1
        if self._processed % self._batch == 0:
            self._subscription.request(self._batch)


_slow: list[Executor] = []


def _slow_pool() -> Executor:
    with _slow_lock:
        if not _slow:
            from concurrent.futures import ThreadPoolExecutor

            _slow.append(ThreadPoolExecutor(max_workers=4, thread_name_prefix="slow-actor"))
        return _slow[0]


_slow_lock = threading.Lock()


def slow_actor() -> SlowActor:
    """150 ms per element, one request per element processed."""
    return SlowActor()


def slow_actor_whitebox(probe: Any) -> SlowActor:
    return SlowActor(probe)


def slow_batching_actor() -> SlowActor:
    """20 ms per element, 24 more asked for after every 24 processed: a batch takes 480 ms."""
    return SlowActor(work_s=0.02, batch=24)


def slow_batching_actor_whitebox(probe: Any) -> SlowActor:
    return SlowActor(probe, work_s=0.02, batch=24)


class OneAtATimeSubscriber:
    """Asks its upstream for one element at a time, each request half a timeout (of the kit's
    default, 1 s) after the element before it was processed, for as many as it was asked for.

    The JVM TCK's self-test subject for waiting on demand twice: a slow subscriber, not a broken
    one (rule 3.8 asks only that the requests add up). Its puppet's ``request(n)`` requests one
    at once and leaves the rest to a timer after each element.
    """

    PACE_S = 0.5

    def __init__(self, probe: Any = None) -> None:
        self._probe = probe
        self._subscription: Subscription | None = None
        self._lock = threading.Lock()
        self._owed = 0  # asked of the puppet, not yet requested upstream
        self._outstanding = 0  # requested upstream, not yet arrived
        self._cancelled = False
        self._timers: list[threading.Timer] = []
        #: The puppet's calls and the timers' go to the subscription one at a time (rule 2.7).
        self._calls = threading.RLock()

    def on_subscribe(self, subscription: Subscription) -> None:
        if subscription is None:
            raise TypeError("rule 2.13: on_subscribe(None)")
        if self._subscription is not None:
            subscription.cancel()  # rule 2.5
            return
        self._subscription = subscription
        if self._probe is not None:
            self._probe.register(request=self._pull, cancel=self._cancel)

    def _pull(self, n: int) -> None:
        subscription = self._subscription
        assert subscription is not None
        if n <= 0:
            with self._calls:
                subscription.request(n)  # the upstream answers it (rule 3.9)
            return
        with self._lock:
            self._owed += n
            now = self._outstanding == 0 and not self._timers
            if now:
                self._owed -= 1
                self._outstanding += 1
        if now:
            with self._calls:
                subscription.request(1)

    def _cancel(self) -> None:
        with self._lock:
            self._cancelled = True
            timers, self._timers = self._timers, []
        for timer in timers:
            timer.cancel()
        assert self._subscription is not None
        with self._calls:
            self._subscription.cancel()

    def _later(self) -> None:
        with self._lock:
            self._timers = [t for t in self._timers if t is not threading.current_thread()]
            if self._cancelled or self._owed <= 0:
                return
            self._owed -= 1
            self._outstanding += 1
        assert self._subscription is not None
        with self._calls:
            self._subscription.request(1)

    def on_next(self, element: Any) -> None:
        if element is None:
            raise TypeError("rule 2.13: on_next(None)")
        with _report(self._probe, "next", element):
            pass
        with self._lock:
            self._outstanding -= 1
            if self._cancelled or self._owed <= 0:
                return
            timer = threading.Timer(self.PACE_S, self._later)
            timer.daemon = True
            self._timers.append(timer)
        timer.start()

    def _stop(self) -> None:
        with self._lock:
            self._cancelled = True
            timers, self._timers = self._timers, []
        for timer in timers:
            timer.cancel()

    def on_error(self, exc: BaseException) -> None:
        if exc is None:
            raise TypeError("rule 2.13: on_error(None)")
        self._stop()
        with _report(self._probe, "error", exc):
            pass

    def on_complete(self) -> None:
        self._stop()
        with _report(self._probe, "complete"):
            pass


def one_at_a_time_whitebox(probe: Any) -> OneAtATimeSubscriber:
    return OneAtATimeSubscriber(probe)
