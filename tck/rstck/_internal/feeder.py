"""A counting upstream: feeds a processor the elements of a long stream at the kit's least cost.

In the processor verification the publisher tests see a processor fed by the kit's checking
upstream (``ManualPublisher``), which records, checks and traces every request and element the
processor relays: some 7 us of CPU a relayed element, as much again as a plain identity
processor's own work. The tests of 3.8 and 3.17 that relay tens of thousands of elements
judge only what reaches their probe (a count, and whether anything came beyond it), so their
upstream need only be a conforming publisher of ``count`` elements: it serves demand on a
thread of its own, one signal at a time (1.3), answers request(n <= 0) with
on_error(ValueError) as rule 3.9 asks of it, stops on cancel, completes after the last
element, and reports a processor that raises from a signal (2.13). A processor's conduct as
a subscriber is judged by the tests fed by the checking upstream; this one traces only its
subscription, its end and what it sent in all.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from ..api import MAX_DEMAND
from ..errors import RuleViolation
from ..probe import passes_on_failure
from .environment import Environment
from .trace import short_repr
from .worker import spawn


class CountingUpstream:
    """A publisher of ``count`` elements for one subscriber, counting instead of checking.

    ``element`` makes element ``i``; None: ``i`` itself (no call an element).
    """

    __slots__ = ("_cond", "_subscriber", "cancelled", "closed", "count", "demand", "element", "env",
                 "illegal", "name", "requests", "sent")

    def __init__(self, env: Environment, name: str, count: int, element: Callable[[int], Any] | None) -> None:
        self.env = env
        self.name = name
        self.count = count
        self.element = element
        self.demand = 0
        self.sent = 0
        self.requests = 0
        self.cancelled = False
        self.closed = False
        #: A request(n <= 0) to answer with on_error (its ``n`` as shown), once.
        self.illegal: str | None = None
        self._subscriber: Any = None
        self._cond = threading.Condition()

    def __repr__(self) -> str:
        return f"CountingUpstream({self.name!r})"

    # -- the Publisher interface -------------------------------------------------------------

    def subscribe(self, subscriber: Any) -> None:
        """on_subscribe on this thread, then the elements on a feeder thread as demand comes."""
        if subscriber is None:
            raise TypeError(f"{self.name}.subscribe(None): a subscriber is required (rule 1.9)")
        if self._subscriber is not None:
            raise RuntimeError(f"{self.name} feeds one subscriber")  # a TCK bug, not a verdict
        self._subscriber = subscriber
        self.env.trace.add(self.name, "subscribe", short_repr(subscriber))
        if self._signal("on_subscribe", subscriber.on_subscribe, self):
            spawn(self._feed, f"rs-tck:{self.name}-feeder")

    # -- the Subscription interface, called by the processor ---------------------------------

    def request(self, n: int) -> None:
        cond = self._cond
        # Not ``with cond``: its __enter__ and __exit__ are Python calls; acquire and release
        # are the lock's own (a relayed element costs one request).
        cond.acquire()
        try:
            if self.cancelled or self.closed:
                return  # rule 3.6
            if type(n) is int and n > 0:
                self.requests += 1
                if self.demand < MAX_DEMAND - n:  # min(MAX_DEMAND, demand + n), without a call
                    self.demand += n
                else:
                    self.demand = MAX_DEMAND
            elif self.illegal is None:
                self.illegal = short_repr(n)
            if cond._waiters:  # type: ignore[attr-defined]  # (no Python call when none)
                cond.notify_all()
        finally:
            cond.release()
        self.env._progress += 1  # env.bump(), inlined

    def cancel(self) -> None:
        with self._cond:
            again = self.cancelled
            self.cancelled = True
            self._cond.notify_all()
        self.env.bump()
        self.env.trace.add(self.name, "cancel", "again" if again else "", self.demand)

    def close(self) -> None:
        """Stop the feeder: the test is over."""
        with self._cond:
            self.closed = True
            self._cond.notify_all()

    # -- the feeder --------------------------------------------------------------------------

    def _feed(self) -> None:
        """Send what is asked: a run of elements for each look at the demand under the lock, not
        one look an element. A cancel, a close or an illegal request (each set once, never
        unset) stops a run between two elements, read without the lock."""
        cond, count, limit, env = self._cond, self.count, self.env.settings.test_limit, self.env
        on_next, element = self._subscriber.on_next, self.element
        # On a feeder's thread ``Environment.invoke`` is the dispatch alone: taken once here.
        dispatch = env.dispatch
        direct = dispatch is type(env)._direct

        def ready() -> bool:
            return self.cancelled or self.closed or self.illegal is not None or self.demand > 0 \
                or self.sent >= count

        while True:
            cond.acquire()  # (not ``with``, as in ``request``: once a run, a run may be one element)
            try:
                if self.demand <= 0 and not ready() and not cond.wait_for(ready, limit):
                    return
                if self.cancelled or self.closed:
                    return
                if self.illegal is not None or self.sent >= count:
                    break
                first = self.sent
                run = min(self.demand, count - first)
                self.sent = first + run
                if self.demand < MAX_DEMAND:
                    self.demand -= run
            finally:
                cond.release()
            for index in range(first, first + run):
                if self.cancelled or self.closed or self.illegal is not None:
                    self.sent = index  # (a run cut short: the rest was not sent)
                    break
                try:
                    if direct:
                        on_next(index if element is None else element(index))
                    else:
                        dispatch(on_next, index if element is None else element(index))
                except Exception as exc:
                    self._raised("on_next", exc)
                    return
                env._progress += 1  # env.bump(), inlined
        self._end()

    def _end(self) -> None:
        subscriber = self._subscriber
        self.env.trace.note(f"{self.name}: {self.sent} element(s) sent for {self.requests} request(s)")
        if self.illegal is not None:
            error = ValueError(f"request({self.illegal}): n must be positive (rule 3.9: non-positive "
                               "requests are illegal)")
            self._signal("on_error", subscriber.on_error, error)
        elif self.count < MAX_DEMAND:
            self._signal("on_complete", subscriber.on_complete)

    def _signal(self, signal: str, fn: Callable[..., Any], *args: Any) -> bool:
        """Deliver one signal, traced; False if the subscriber raised (2.13)."""
        self.env.trace.add(self.name, signal, short_repr(args[0]) if args else "", self.demand)
        self.env.bump()
        try:
            self.env.invoke(f"{signal}()", fn, *args)
        except Exception as exc:
            self._raised(signal, exc)
            return False
        return True

    def _raised(self, signal: str, exc: Exception) -> None:
        """As the checking upstream reports it: a raise is 2.13, unless it passes on the probe's."""
        with self._cond:
            self.cancelled = True  # the subscriber counts as having cancelled (2.13)
        if passes_on_failure(exc):
            self.env.trace.note(f"{self.name}: {signal} passed on the subscriber's failure: {short_repr(exc)}")
            return
        note = self.env.trace.note(f"{self.name}: {signal} raised {short_repr(exc)}")
        violation = RuleViolation(
            "2.13", f"{signal} to return normally",
            f"it raised {type(exc).__name__}: {short_repr(exc, 200)}",
            hint="a subscriber raises only TypeError, for a None argument; any other failure "
            "it signals by cancelling its subscription (rule 2.13)",
            evidence=(note.seq,),
        )
        violation.__cause__ = exc
        self.env.flop(violation)
