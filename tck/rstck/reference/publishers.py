"""Reference publishers: small, obviously correct sources the TCK can be checked against.

They exist so the TCK's own tests have known-good subjects (every verification must pass on
them) and so users have a worked example of the rules. Correctness beats speed throughout:
the demand is taken under a lock, a run of elements at a time, no lock is ever held while
calling a subscriber, and a cancel stops a run between two elements.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Executor
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING
from typing import Any

from ..api import MAX_DEMAND
from ..api import Subscriber

if TYPE_CHECKING:
    from ..api import FailedPublisherFactory
    from ..api import PublisherFactory

logger = logging.getLogger(__name__)

#: Signals one asynchronous actor turn may deliver before it yields its worker (fairness).
_BATCH = 64


def _non_positive_request(n: int) -> ValueError:
    """The rule 3.9 error, with the message the spec asks for."""
    return ValueError(f"rule 3.9: non-positive request({n}) is illegal; request(n) needs n > 0")


def _null_subscriber() -> TypeError:
    """The rule 1.9 error: ``TypeError`` stands in for Java's ``NullPointerException``."""
    return TypeError("rule 1.9: subscribe(None) is illegal; a subscriber is required")


#: Logged when a subscriber raises (rule 2.13), never passed to the caller (rules 1.9, 3.16), a
#: pool worker or ``on_error``: so cancel, log and move on. The line names the exception; its
#: traceback comes with it at DEBUG only (``_traced``: a TCK run makes hundreds of raises).
_RAISED = "%r violated rule 2.13 by raising from %s (%r); its subscription is cancelled"


#: What one emission step delivers: to whom, a run of elements (None: the terminal signal), and
#: the error the stream ends with (None with no elements: on_complete).
_Run = tuple[Subscriber[int], range | None, BaseException | None]


class _RangeSubscription:
    """State and emission step shared by the synchronous and asynchronous range subscriptions.

    ``_subscriber is None`` is the one "cancelled or terminated" flag: clearing it both stops
    all further signals (rules 1.6, 1.7, 3.6, 3.7) and drops the reference (rule 3.13).
    """

    def __init__(self, subscriber: Subscriber[int], start: int, end: int | None) -> None:
        self._lock = threading.Lock()
        self._subscriber: Subscriber[int] | None = subscriber
        self._index = start
        self._end = end  # None: unbounded, never completes
        self._demand = 0
        self._error: BaseException | None = None

    def _add_demand_locked(self, n: int) -> None:
        """Register ``n`` more elements, or a pending rule 3.9 error; caller holds the lock."""
        if n <= 0:
            if self._error is None:
                self._error = _non_positive_request(n)
        else:
            # Saturate instead of overflowing: MAX_DEMAND means unbounded (rule 3.17).
            self._demand = min(self._demand + n, MAX_DEMAND)

    def _take_locked(self, limit: int) -> _Run | None:
        """What to deliver next, taken off the state (caller holds the lock): a run of at most
        ``limit`` elements the demand allows, or the terminal signal; ``None`` when there is nothing.

        The demand is taken a run at a time: the calls happen outside the lock (a re-entrant
        ``request``/``cancel`` from the subscriber can never deadlock), and ``_deliver`` looks
        for a cancel or a pending error between two elements of the run.
        """
        subscriber = self._subscriber
        if subscriber is None:
            return None
        first, end, error = self._index, self._end, self._error
        if error is not None or first == end:
            self._subscriber = None  # rules 1.6 and 3.13: cancelled, reference dropped
            return subscriber, None, error
        demand = self._demand
        if demand == 0:
            return None
        count = min(demand, limit)  # limit > 0
        if end is not None and end - first < count:
            count = end - first
        self._index = first + count
        if demand != MAX_DEMAND:  # MAX_DEMAND is unbounded: never counts down
            self._demand = demand - count
        return subscriber, range(first, first + count), None

    def _deliver(self, run: _Run) -> None:
        """Signal what ``_take_locked`` took. A cancel or a rule 3.9 error that arrives during a
        run stops it (the rest is not delivered); a subscriber that raises is cancelled and
        logged, never passed to the caller (rule 2.13)."""
        subscriber, elements, error = run
        signal = "on_next"
        try:
            if elements is not None:
                on_next = subscriber.on_next
                for element in elements:
                    if self._subscriber is None or self._error is not None:
                        return
                    on_next(element)
            elif error is not None:
                signal = "on_error"
                subscriber.on_error(error)
            else:
                signal = "on_complete"
                subscriber.on_complete()
        except Exception as exc:
            self.cancel()
            logger.warning(_RAISED, subscriber, signal, exc, exc_info=_traced())

    def cancel(self) -> None:
        """Stop signalling and forget the subscriber; idempotent and thread-safe (rule 3.5)."""
        with self._lock:
            self._subscriber = None

    def __repr__(self) -> str:
        end = "unbounded" if self._end is None else self._end
        state = "cancelled" if self._subscriber is None else "active"
        return f"<{type(self).__name__} next={self._index} end={end} demand={self._demand} {state}>"


class _SyncRangeSubscription(_RangeSubscription):
    """Trampolined subscription: whoever raises the work counter from 0 drains, others leave.

    The counter makes a re-entrant ``request`` (from ``on_next``/``on_subscribe``) only add
    demand, so recursion depth stays 1 (rule 3.3), and it makes concurrent ``request`` calls
    from several threads serialise: exactly one thread signals at a time (rule 1.3).
    """

    def __init__(self, subscriber: Subscriber[int], start: int, end: int | None) -> None:
        super().__init__(subscriber, start, end)
        # Starts at 1: the subscribing thread owns the drain while on_subscribe runs, so a
        # request made during on_subscribe (from any thread) cannot signal before it returns.
        self._wip = 1

    def request(self, n: int) -> None:
        """Add demand (or a rule 3.9 error) and drain here unless someone already is."""
        with self._lock:
            if self._subscriber is None:
                return  # rule 3.6
            self._add_demand_locked(n)
            self._wip += 1
            if self._wip != 1:
                return
            run = self._take_locked(MAX_DEMAND)
        self._drain(run)

    def _drain(self, run: _Run | None) -> None:
        """Deliver ``run`` (taken under the lock with the turn to drain), then every run the
        demand allows, then loop again for any work that arrived meanwhile."""
        missed = 1
        while True:
            if run is not None:
                self._deliver(run)
            with self._lock:
                run = self._take_locked(MAX_DEMAND)
                if run is None:
                    self._wip -= missed
                    missed = self._wip
                    if missed == 0:
                        return


class RangePublisher:
    """Synchronous publisher of ``count`` consecutive ints from ``start``.

    Signals run on the thread calling ``subscribe`` or ``request``; there are no threads of its
    own, which makes it the simplest subject for the TCK. ``count >= MAX_DEMAND`` is an
    unbounded stream that never completes. Every subscriber gets its own range (rule 1.11).
    """

    def __init__(self, start: int, count: int) -> None:
        if count < 0:
            raise ValueError(f"count must be >= 0, got {count}")
        self._start = start
        self._count = min(count, MAX_DEMAND)

    @property
    def start(self) -> int:
        return self._start

    @property
    def count(self) -> int:
        """Number of elements; ``MAX_DEMAND`` means unbounded."""
        return self._count

    def _end(self) -> int | None:
        return None if self._count >= MAX_DEMAND else self._start + self._count

    def subscribe(self, subscriber: Subscriber[int]) -> None:
        """Call ``on_subscribe``, then deliver whatever it requested (and complete if empty)."""
        if subscriber is None:
            raise _null_subscriber()
        subscription = _SyncRangeSubscription(subscriber, self._start, self._end())
        try:
            subscriber.on_subscribe(subscription)
        except Exception as exc:
            subscription.cancel()
            logger.warning(_RAISED, subscriber, "on_subscribe", exc, exc_info=_traced())
            return
        subscription._drain(None)

    def __repr__(self) -> str:
        count = "MAX_DEMAND" if self._count >= MAX_DEMAND else str(self._count)
        return f"RangePublisher(start={self._start}, count={count})"


_shared_pool: ThreadPoolExecutor | None = None
_shared_pool_lock = threading.Lock()


def _shared_executor() -> ThreadPoolExecutor:
    """The lazily created pool shared by every ``AsyncRangePublisher`` without an executor.

    Its workers need not be daemons: at interpreter exit the pool refuses new work, every
    actor then ends its stream with ``on_error`` instead of re-scheduling, so exit never hangs.
    """
    global _shared_pool
    with _shared_pool_lock:
        if _shared_pool is None:
            _shared_pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="rstck-range")
        return _shared_pool


class _AsyncRangeSubscription(_RangeSubscription):
    """A serial actor: at most one executor task at a time delivers this subscriber's signals.

    The mailbox is coalesced state (summed demand, an error slot, the cleared subscriber) rather
    than a list of messages, so it stays bounded however often ``request`` is called (rule
    3.17), and ``request``/``cancel`` only update it and schedule a turn (rules 3.4, 3.5).
    """

    def __init__(
        self, subscriber: Subscriber[int], start: int, end: int | None, executor: Executor
    ) -> None:
        super().__init__(subscriber, start, end)
        self._executor = executor
        self._subscribed = False  # touched only by the actor turn
        self._scheduled = True  # the first turn (on_subscribe) is scheduled by subscribe

    def request(self, n: int) -> None:
        """Record demand (or a rule 3.9 error) and make sure a turn is scheduled."""
        with self._lock:
            if self._subscriber is None:
                return  # rule 3.6
            self._add_demand_locked(n)
            if self._scheduled:
                return
            self._scheduled = True
        self._schedule()

    def _has_work_locked(self) -> bool:
        return self._subscriber is not None and (
            self._error is not None or self._index == self._end or self._demand > 0
        )

    def _schedule(self) -> None:
        """Submit a turn; if the executor refuses, end the stream with ``on_error`` inline.

        Running inline is safe because the caller owns the ``_scheduled`` flag, so no other
        turn can be running; it is the only way left to honour rules 1.4 and 1.9.
        """
        try:
            self._executor.submit(self._run)
        except RuntimeError as exc:
            with self._lock:
                if self._error is None:
                    refused = RuntimeError(f"{self._executor!r} refused work; stream ended")
                    refused.__cause__ = exc
                    self._error = refused
            self._run()

    def _run(self) -> None:
        """One actor turn: ``on_subscribe`` if due, then up to ``_BATCH`` signals."""
        if not self._subscribed:
            self._subscribed = True
            with self._lock:
                subscriber = self._subscriber
            if subscriber is not None:
                try:
                    subscriber.on_subscribe(self)
                except Exception as exc:
                    self.cancel()
                    logger.warning(_RAISED, subscriber, "on_subscribe", exc, exc_info=_traced())
        budget = _BATCH
        while budget > 0:
            with self._lock:
                run = self._take_locked(budget)
            if run is None:
                break
            self._deliver(run)
            elements = run[1]
            if elements is None:
                break
            budget -= len(elements)
        with self._lock:
            if not self._has_work_locked():
                self._scheduled = False
                return
        self._schedule()  # re-queue behind other actors' turns instead of hogging the worker


class AsyncRangePublisher:
    """Asynchronous publisher of ``count`` consecutive ints from ``start``.

    Every signal, ``on_subscribe`` included, is delivered on an executor worker, one turn at a
    time per subscriber, so it exercises the TCK's cross-thread paths (rules 1.3, 2.2, 3.4).
    Without ``executor`` a shared pool of 4 workers is created on first use.
    """

    def __init__(self, start: int, count: int, executor: Executor | None = None) -> None:
        if count < 0:
            raise ValueError(f"count must be >= 0, got {count}")
        self._start = start
        self._count = min(count, MAX_DEMAND)
        self._executor = executor

    @property
    def start(self) -> int:
        return self._start

    @property
    def count(self) -> int:
        """Number of elements; ``MAX_DEMAND`` means unbounded."""
        return self._count

    def subscribe(self, subscriber: Subscriber[int]) -> None:
        """Schedule the first turn and return at once; ``on_subscribe`` follows on a worker."""
        if subscriber is None:
            raise _null_subscriber()
        end = None if self._count >= MAX_DEMAND else self._start + self._count
        executor = self._executor if self._executor is not None else _shared_executor()
        _AsyncRangeSubscription(subscriber, self._start, end, executor)._schedule()

    def __repr__(self) -> str:
        count = "MAX_DEMAND" if self._count >= MAX_DEMAND else str(self._count)
        executor = "shared" if self._executor is None else repr(self._executor)
        return f"AsyncRangePublisher(start={self._start}, count={count}, executor={executor})"


class _NoopSubscription:
    """The subscription of a publisher that has already failed: there is nothing to control."""

    def request(self, n: int) -> None:
        pass

    def cancel(self) -> None:
        pass

    def __repr__(self) -> str:
        return "<_NoopSubscription>"


class FailedPublisher:
    """Publisher that fails every subscriber: ``on_subscribe`` then ``on_error`` (rule 1.9).

    ``exc_factory`` is called once per subscriber so no two share an exception object (and its
    traceback).
    """

    def __init__(self, exc_factory: Callable[[], BaseException]) -> None:
        self._exc_factory = exc_factory

    def subscribe(self, subscriber: Subscriber[Any]) -> None:
        """Signal ``on_subscribe`` and ``on_error`` synchronously, on the caller's thread."""
        if subscriber is None:
            raise _null_subscriber()
        exc = self._exc_factory()
        try:
            subscriber.on_subscribe(_NoopSubscription())
        except Exception as raised:
            logger.warning(_RAISED, subscriber, "on_subscribe", raised, exc_info=_traced())
            return
        try:
            subscriber.on_error(exc)
        except Exception as raised:
            logger.warning(_RAISED, subscriber, "on_error", raised, exc_info=_traced())

    def __repr__(self) -> str:
        return f"FailedPublisher(exc_factory={self._exc_factory!r})"


def range_publisher(n: int) -> RangePublisher:
    """TCK publisher factory: ints ``0..n-1`` synchronously; ``n >= MAX_DEMAND`` is unbounded."""
    return RangePublisher(0, min(n, MAX_DEMAND))


def async_range_publisher(n: int) -> AsyncRangePublisher:
    """TCK publisher factory: ints ``0..n-1`` on the shared pool; ``n >= MAX_DEMAND`` unbounded."""
    return AsyncRangePublisher(0, min(n, MAX_DEMAND))


def _failure() -> RuntimeError:
    return RuntimeError("failed publisher: fails every subscriber, as asked")


def failed_publisher() -> FailedPublisher:
    """TCK failed-publisher factory: every subscriber gets ``on_subscribe`` then ``on_error``."""
    return FailedPublisher(_failure)


if TYPE_CHECKING:  # mypy proves the factories fit the TCK's factory signatures
    _check_range: PublisherFactory = range_publisher
    _check_async: PublisherFactory = async_range_publisher
    _check_failed: FailedPublisherFactory = failed_publisher


# Last in the module, so that the lines above (and the ids of their recorded mutants) stay put.
def _traced() -> bool:
    """Whether a subscriber's raise is logged with its traceback (``_RAISED``): only when the
    logger is enabled for DEBUG, since formatting one costs more than the signal that raised."""
    return logger.isEnabledFor(logging.DEBUG)
