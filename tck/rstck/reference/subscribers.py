"""Reference subscribers: a synchronous one and a thread-pool one, both obviously correct.

Every subscriber verification must pass against them, and they show how a subscriber keeps
the rules: calls on the subscription are serialised without holding a lock while calling
(``SerialSubscription``, rule 2.7), the subscription is stored before the first request (so
elements delivered inside ``request``, rule 3.10, find it), a second subscription is cancelled
(2.5), nothing is requested once the stream has ended (2.4) and nothing is raised to the
publisher except ``TypeError`` for ``None`` (2.13).

Each takes an optional ``WhiteboxProbe``; with one, it registers a puppet and reports what it
processed, which is all the whitebox verification needs (see ``docs/whitebox.md``).
"""

from __future__ import annotations

import collections
import contextlib
import logging
import threading
from collections.abc import Callable
from concurrent.futures import Executor
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING
from typing import Any

from ..api import MAX_DEMAND
from ..api import Subscription

if TYPE_CHECKING:
    from ..whitebox import WhiteboxProbe

logger = logging.getLogger(__name__)

#: Logged when the processing of an element fails: the subscriber cancels (rule 2.13).
_FAILED = "%r: processing %r raised; cancelling the subscription (rule 2.13)"


def _none(what: str) -> TypeError:
    """Rule 2.13: ``TypeError`` stands in for Java's ``NullPointerException``."""
    return TypeError(f"rule 2.13: {what} must not be None")


class SerialSubscription:
    """Serialises ``request``/``cancel`` on one subscription, never holding a lock during a call.

    Whoever raises the work counter from 0 makes the calls; others (other threads, or a
    re-entrant call from an ``on_next`` delivered inside ``request``) only leave their demand
    and return, so calls never overlap (rule 2.7) and never recurse without bound. ``close()``
    marks the subscription ended: after a terminal signal nothing more is called (2.3, 2.4).
    """

    def __init__(self, subscription: Subscription) -> None:
        self._lock = threading.Lock()
        self._subscription: Subscription | None = subscription
        self._pending = 0
        self._cancel = False
        self._wip = 0

    def request(self, n: int) -> None:
        with self._lock:
            if self._subscription is None or self._cancel:
                return
            self._pending = min(MAX_DEMAND, self._pending + n)
            if not self._enter_locked():
                return
            call = self._take_locked()
        self._drain(call)

    def cancel(self) -> None:
        with self._lock:
            if self._subscription is None or self._cancel:
                return
            self._cancel = True
            if not self._enter_locked():
                return
            call = self._take_locked()
        self._drain(call)

    def close(self) -> None:
        """The stream ended: forget the subscription, make no more calls on it."""
        with self._lock:
            self._subscription = None
            self._pending = 0

    @property
    def active(self) -> bool:
        with self._lock:
            return self._subscription is not None and not self._cancel

    def _enter_locked(self) -> bool:
        self._wip += 1
        return self._wip == 1

    def _take_locked(self) -> tuple[Subscription | None, bool, int]:
        """The next call to make: (subscription, cancel?, n), the pending demand taken."""
        subscription, cancel, n = self._subscription, self._cancel, self._pending
        self._pending = 0
        if cancel:
            self._subscription = None  # the cancel made next is the last call
        return subscription, cancel, n

    def _drain(self, call: tuple[Subscription | None, bool, int]) -> None:
        """Make ``call``, then the calls left meanwhile, taken under the same lock that ends the
        turn (one lock a call: a processor makes one for each element it relays)."""
        missed = 1
        while True:
            subscription, cancel, n = call
            if subscription is not None:
                if cancel:
                    subscription.cancel()
                elif n:
                    subscription.request(n)
            with self._lock:
                self._wip -= missed
                missed = self._wip
                if missed == 0:
                    return
                call = self._take_locked()


class _NoProbe:
    """Stands in for a whitebox probe when there is none: reports go nowhere."""

    def register(self, *, request: Callable[[int], Any], cancel: Callable[[], Any]) -> None:
        pass

    def next(self, element: Any) -> contextlib.nullcontext[None]:
        return contextlib.nullcontext()

    def complete(self) -> contextlib.nullcontext[None]:
        return contextlib.nullcontext()

    def error(self, exc: BaseException) -> contextlib.nullcontext[None]:
        return contextlib.nullcontext()


class _Demand:
    """Keeps ``batch`` elements requested: asks again once half of them have arrived."""

    def __init__(self, batch: int) -> None:
        if batch < 1:
            raise ValueError(f"batch must be >= 1, got {batch}")
        self.batch = batch
        self.outstanding = 0

    def initial(self) -> int:
        self.outstanding = self.batch
        return self.batch

    def received(self) -> int:
        """One element arrived; how many to request now (0: none yet)."""
        self.outstanding = max(0, self.outstanding - 1)
        if self.outstanding <= self.batch // 2:
            more = self.batch - self.outstanding
            self.outstanding = self.batch
            return more
        return 0


class SyncSubscriber:
    """Processes each element on the thread that delivers it, requesting ``batch`` at a time.

    ``on_element(x)`` is the processing (by default the element is only counted); if it
    raises, the subscriber cancels and ignores the rest (rule 2.13 forbids raising it).
    """

    def __init__(
        self,
        on_element: Callable[[Any], Any] | None = None,
        *,
        batch: int = 16,
        probe: WhiteboxProbe | None = None,
    ) -> None:
        self._on_element = on_element
        self._demand = _Demand(batch)
        self._probe: Any = probe if probe is not None else _NoProbe()
        self._lock = threading.Lock()
        self._calls: SerialSubscription | None = None
        self._done = False
        self.received = 0
        self.completed = False
        self.error: BaseException | None = None

    def on_subscribe(self, subscription: Subscription) -> None:
        if subscription is None:
            raise _none("on_subscribe(subscription)")
        with self._lock:
            first = self._calls is None and not self._done
            if first:
                # Stored before requesting: request() may deliver on_next at once (rule 3.10).
                self._calls = calls = SerialSubscription(subscription)
        if not first:
            subscription.cancel()  # rules 2.5 and 2.12: one subscription per subscriber
            return
        self._probe.register(request=calls.request, cancel=calls.cancel)
        calls.request(self._demand.initial())

    def on_next(self, element: Any) -> None:
        if element is None:
            raise _none("on_next(element)")
        with self._probe.next(element):
            with self._lock:
                calls = self._calls
                if calls is None or self._done or not calls.active:
                    return  # after cancel (rule 2.8) or the end: ignored
                self.received += 1
                more = self._demand.received()
            if not self._process(element, calls):
                return
            if more:
                calls.request(more)

    def _process(self, element: Any, calls: SerialSubscription) -> bool:
        if self._on_element is None:
            return True
        try:
            self._on_element(element)
        except Exception:
            logger.warning(_FAILED, self, element, exc_info=True)
            calls.cancel()
            return False
        return True

    def on_error(self, exc: BaseException) -> None:
        if exc is None:
            raise _none("on_error(exc)")
        with self._probe.error(exc):
            self._end(exc)

    def on_complete(self) -> None:
        with self._probe.complete():
            self._end(None)

    def _end(self, exc: BaseException | None) -> None:
        """The subscription counts as cancelled from here on (rule 2.4); nothing is called (2.3)."""
        with self._lock:
            self._done = True
            calls = self._calls
            self.completed = exc is None
            self.error = exc
        if calls is not None:
            calls.close()

    def __repr__(self) -> str:
        state = "done" if self._done else "active" if self._calls else "new"
        return f"SyncSubscriber(received={self.received}, {state})"


_shared_pool: ThreadPoolExecutor | None = None
_shared_pool_lock = threading.Lock()

#: Messages one actor turn handles before it yields its worker to other actors.
_TURN = 64


def _shared_executor() -> ThreadPoolExecutor:
    """The lazily created pool shared by every ``AsyncSubscriber`` without an executor."""
    global _shared_pool
    with _shared_pool_lock:
        if _shared_pool is None:
            _shared_pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="rstck-subscriber")
        return _shared_pool


class AsyncSubscriber:
    """Hands every signal to a serial actor on an executor and processes it there (rule 2.2).

    The signal methods only enqueue (and check for ``None``), so they return at once. One turn
    at a time handles the mailbox in order, so processing sees every signal, in order, once
    (rule 2.11), and every call on the subscription comes from the turn (2.7). The end of the
    stream is noted on arrival, so the turn requests nothing after it (2.4).
    """

    def __init__(
        self,
        on_element: Callable[[Any], Any] | None = None,
        *,
        batch: int = 16,
        executor: Executor | None = None,
        probe: WhiteboxProbe | None = None,
    ) -> None:
        self._on_element = on_element
        self._demand = _Demand(batch)
        self._executor = executor
        self._probe: Any = probe if probe is not None else _NoProbe()
        self._lock = threading.Lock()
        self._mailbox: collections.deque[tuple[str, Any]] = collections.deque()
        self._scheduled = False
        self._ended = False  # a terminal signal arrived (set on arrival, read by the turn)
        # Touched only by the turn:
        self._calls: SerialSubscription | None = None
        self._failed = False
        self._finished = False  # the turn has handled a terminal signal
        self.received = 0
        self.completed = False
        self.error: BaseException | None = None

    # -- the Subscriber interface: enqueue only -----------------------------------------------

    def on_subscribe(self, subscription: Subscription) -> None:
        if subscription is None:
            raise _none("on_subscribe(subscription)")
        self._post("subscribe", subscription)

    def on_next(self, element: Any) -> None:
        if element is None:
            raise _none("on_next(element)")
        self._post("next", element)

    def on_error(self, exc: BaseException) -> None:
        if exc is None:
            raise _none("on_error(exc)")
        self._post("error", exc, ends=True)

    def on_complete(self) -> None:
        self._post("complete", None, ends=True)

    # -- the puppet: asks go through the mailbox too, so the turn makes every call -------------

    def _request_from_outside(self, n: int) -> None:
        self._post("request", n)

    def _cancel_from_outside(self) -> None:
        self._post("cancel", None)

    # -- the actor -------------------------------------------------------------------------

    def _post(self, kind: str, value: Any, *, ends: bool = False) -> None:
        with self._lock:
            if ends:
                self._ended = True
            self._mailbox.append((kind, value))
            if self._scheduled:
                return
            self._scheduled = True
        self._schedule()

    def _schedule(self) -> None:
        executor = self._executor if self._executor is not None else _shared_executor()
        try:
            executor.submit(self._turn)
        except RuntimeError:  # the executor is shutting down: finish the work here
            self._turn()

    def _turn(self) -> None:
        for _ in range(_TURN):
            with self._lock:
                if not self._mailbox:
                    self._scheduled = False
                    return
                kind, value = self._mailbox.popleft()
                ended = self._ended
            try:
                self._handle(kind, value, ended)
            except Exception:  # never lose the actor to a bug in one message
                logger.exception("%r: handling %s failed", self, kind)
        self._schedule()  # more to do: re-queue behind other actors instead of hogging a worker

    def _handle(self, kind: str, value: Any, ended: bool) -> None:
        calls = self._calls
        if kind == "subscribe":
            if calls is not None or self._finished:
                value.cancel()  # rules 2.5 and 2.12
                return
            self._calls = calls = SerialSubscription(value)
            self._probe.register(request=self._request_from_outside, cancel=self._cancel_from_outside)
            calls.request(self._demand.initial())
        elif kind == "next":
            with self._probe.next(value):
                if calls is None or self._failed or not calls.active:
                    return  # after cancel (rule 2.8): ignored
                self.received += 1
                if not self._process(value, calls):
                    return
                more = self._demand.received()
                if more and not ended:
                    calls.request(more)
        elif kind == "request":
            if calls is not None and not ended:
                calls.request(value)
        elif kind == "cancel":
            if calls is not None:
                calls.cancel()
        elif kind == "complete":
            with self._probe.complete():
                self._end(None)
        else:
            with self._probe.error(value):
                self._end(value)

    def _process(self, element: Any, calls: SerialSubscription) -> bool:
        if self._on_element is None:
            return True
        try:
            self._on_element(element)
        except Exception:
            logger.warning(_FAILED, self, element, exc_info=True)
            self._failed = True
            calls.cancel()
            return False
        return True

    def _end(self, exc: BaseException | None) -> None:
        self._finished = True
        self.completed = exc is None
        self.error = exc
        if self._calls is not None:
            self._calls.close()

    def __repr__(self) -> str:
        return f"AsyncSubscriber(received={self.received}, ended={self._ended})"


def sync_subscriber() -> SyncSubscriber:
    """TCK subscriber factory (``--rs-subscriber``): a synchronous subscriber."""
    return SyncSubscriber()


def async_subscriber() -> AsyncSubscriber:
    """TCK subscriber factory (``--rs-subscriber``): a thread-pool subscriber."""
    return AsyncSubscriber()


def sync_whitebox_subscriber(probe: WhiteboxProbe) -> SyncSubscriber:
    """TCK whitebox factory (``--rs-whitebox-subscriber``): a synchronous subscriber."""
    return SyncSubscriber(probe=probe)


def async_whitebox_subscriber(probe: WhiteboxProbe) -> AsyncSubscriber:
    """TCK whitebox factory (``--rs-whitebox-subscriber``): a thread-pool subscriber."""
    return AsyncSubscriber(probe=probe)
