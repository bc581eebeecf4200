"""Rule 2.4's ledger of a subscription: which requests after the end what came before explains.

A subscriber that processes its signals later, in order, receives the end only after the
elements that came before it and may still ask for more while it works them off. So each
request of the TCK's upstream's subscription (``rstck.manual``) is counted as it begins, and
one after the end is weighed against the backlog, the subscriber's idleness and its own
account (``LateRequests._late``); the 2.4 tests' watches turn the weighing on.
"""

from __future__ import annotations

import threading
import time
from typing import Any
from typing import Protocol

from ..api import MAX_DEMAND
from .environment import Environment
from .watching import all_busy_in_subjects_code
from .watching import runs_code_of


class _Publisher(Protocol):
    """What the ledger uses of the TCK's upstream (``rstck.manual.ManualPublisher``)."""

    env: Environment
    _mutex: Any
    _cond: threading.Condition


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms"


def _at_most(n: int) -> str:
    return "none" if n == 0 else f"at most {n}"


class LateRequests:
    """The 2.4 accounting of ``ManualSubscription``: its fields are set by that class."""

    publisher: _Publisher
    subscriber: Any
    name: str
    sent: int
    terminal: str | None
    requests_at_terminal: int | None
    ended_at: float | None
    excused: bool
    late_calls: int
    idle: bool
    answered: int
    early_requests: int
    pulls: int
    late_requests: int
    covered: int
    pulled_demand: int | None
    late_demand: int
    worked_at: float
    sealed: bool
    watched: bool
    request_seqs: list[int]
    callers: set[int]

    def _begin_request(self, n: Any) -> tuple[int, bool]:
        """Count a request as it begins: its number among those after the end (0: before it)."""
        amount = n if isinstance(n, int) and not isinstance(n, bool) and n > 0 else 0
        mutex = self.publisher._mutex
        mutex.acquire()  # (not ``with``: on every request)
        try:
            idle = self.idle
            if self.requests_at_terminal is None and self.ended_at is None:
                self.early_requests += 1
                if self.sent:
                    self.answered += 1
                    self.covered = min(self.sent, self.covered + amount)
                return 0, idle
            self.late_requests += 1
            self.late_demand = min(MAX_DEMAND, self.late_demand + amount)
            return self.late_requests, idle
        finally:
            mutex.release()

    def backlog(self) -> int:
        """How many requests after the end what came before it can explain (``_late``)."""
        unanswered = max(0, self.sent - self.answered)
        return unanswered + self.pulls + (1 if self.early_requests == 0 else 0)

    def uncovered(self) -> int | None:
        """How much demand after the end what came before it can explain (``_late``); None: any.

        Each element sent that no demand asked for after it went out explains one element
        more (a refill as it is worked off), each puppet pull before the end its own demand;
        a subscriber that made no request before the end may still make its first, of any size.
        """
        if self.early_requests == 0 or self.pulled_demand is None:
            return None
        return max(0, self.sent - self.covered) + self.pulled_demand

    def _over(self) -> bool:
        """Whether the requests after the end so far are more than the backlog explains, in
        calls or in elements (``_late``)."""
        uncovered = self.uncovered()
        return self.late_requests > self.backlog() or (uncovered is not None and self.late_demand > uncovered)

    def _late(self, what: str, late: int, idle: bool) -> list[tuple[str, str, str]]:
        """Rule 2.4: a request after the terminal signal returned that nothing explains.

        The rule binds once the subscriber has *received* the end. One that processes its
        signals later, in order (the JVM's AsyncSubscriber), receives it only after the elements
        that came before it, and may ask for more while it works them off: a request per element
        processed, or per batch. So a request that begins after the end returned (``late``: its
        number among those) is weighed against what could explain it, whatever processing takes:

        * the backlog (``backlog``): each element sent that no request begun after it went out
          answered yet, each puppet pull before the end, and on_subscribe if no request came
          before the end, explains one request; and, counted in elements (``uncovered``), each
          element sent that no demand asked for after it went out covers, explains one element
          asked for. One more, in calls or in elements, is unexplained at any speed: a timer, a
          retry, a refill or a top-up by a subscriber whose demand had covered all it got (an
          in-order actor asks, after the end, for at most the elements it still had to work
          off). Told once a 2.4 watch is on (``watch``), so that the processor tests' upstreams
          are not judged by it;
        * idleness (``idle``): a whole quiet window with nothing sent, no call and none of the
          subscriber's threads in its code (``runs_code_of``: the watch and ``settle`` look) -
          it had nothing left to work off, and a request now is unexplained even within the
          count (a batching subscriber's timer). A worker busy with an element for longer than
          the window is in its code all along: it is not taken for idle;
        * its own account (``seal``, whitebox): once it reported processing the end, nothing.

        A cancel() is never flagged: cancelling what one considers cancelled is the no-op rule
        3.7 makes of it (a clean-up, a dispose). Calls inside the terminal call are rule 2.3's.
        The first such request is told.
        """
        if not late or self.excused:
            return []
        pub = self.publisher
        with pub._cond:
            backlog = self.backlog()
            if self.sealed:
                why = f"after it reported processing {self.terminal}()"
            elif idle:
                why = ("after it had gone idle (a quiet window with nothing sent to it and none of its "
                       "threads in its code)")
            elif late > backlog and self.watched:
                why = (f"its request #{late} since then, when what came before the end explains "
                       f"{_at_most(backlog)} ({self._explains()})")
            elif self.watched and self._over():
                why = (f"{self.late_demand} element(s) asked for since then, when what came before the end "
                       f"explains {_at_most(self.uncovered() or 0)} ({self._explains_demand()})")
            else:
                return []
            self.late_calls += 1
            first = self.late_calls == 1
            pub._cond.notify_all()
        if not first:
            return []
        now = time.monotonic()
        expected = (f"no request on {self.name} after {self.terminal}() returned (the subscription "
                    "counts as cancelled) but those that finish its work on what came before it")
        observed = (f"{what} on {self.name} {_ms(now - (self.ended_at or now))} after {self.terminal}() "
                    f"returned, from thread {threading.current_thread().name}, {why}")
        return [("2.4", expected, observed)]

    def _explains_demand(self) -> str:
        pulled = "of unknown size" if self.pulled_demand is None else str(self.pulled_demand)
        return (f"elements sent that no demand asked for after they went out covers: "
                f"{max(0, self.sent - self.covered)} of {self.sent}; demand of puppet pulls: {pulled}")

    def _explains(self) -> str:
        return (f"one per element sent and not yet answered by a request: {max(0, self.sent - self.answered)}"
                f" of {self.sent}; per puppet pull: {self.pulls}; for on_subscribe: "
                f"{1 if self.early_requests == 0 else 0}")

    def watch(self) -> None:
        """A 2.4 watch starts: requests after the end beyond the backlog are told (``_late``).

        One made before the watch began is told now, citing the requests after the end.
        """
        pub = self.publisher
        with pub._cond:
            if self.watched:
                return
            self.watched = True
            over = self._over() and not self.excused and not self.late_calls
            if over:
                self.late_calls += 1
                pub._cond.notify_all()
            start = self.requests_at_terminal or 0
            late = self.late_requests
            backlog = self.backlog()
            explains = self._explains()
            if late <= backlog:
                late_text = f"{self.late_demand} element(s) asked for"
                backlog, explains = self.uncovered() or 0, self._explains_demand()
            else:
                late_text = f"{late} request(s)"
        if over:
            pub.env.violation(
                "2.4", f"no request on {self.name} after {self.terminal}() returned (the subscription counts "
                "as cancelled) but those that finish its work on what came before it",
                f"{late_text} on {self.name} after {self.terminal}() returned, when what came "
                f"before the end explains {_at_most(backlog)} ({explains})",
                evidence=tuple(self.request_seqs[start:]))

    def seal(self) -> None:
        """The subscriber reported processing the terminal signal: nothing explains a request now."""
        with self.publisher._cond:
            self.sealed = True

    def working(self) -> bool:
        """Whether the subscriber may be at work now (noted in ``worked_at``).

        It is if one of its threads is in its code (``runs_code_of``), or if every thread that
        called this subscription is busy in a subject's code (``all_busy_in_subjects_code``: its
        next task may be queued behind them, in a shared pool).
        """
        if runs_code_of(self.subscriber) or all_busy_in_subjects_code(self.callers):
            self.worked_at = time.monotonic()
            return True
        return False

    def excuse(self) -> None:
        """The TCK asks the subscriber for calls after the end: they are not its own doing."""
        self.excused = True

    def stir(self, demand: int | None = None) -> None:
        """The TCK asks the subscriber for something (a puppet pulled): it has work again.

        Before the end, what the pull makes it do may come after the end: one more request
        the backlog explains, and the ``demand`` it asks for (None: of unknown size, such as a
        cancel or a pull the TCK does not size; 0: none).
        """
        with self.publisher._cond:
            self.idle = False
            if self.requests_at_terminal is None and self.ended_at is None:
                self.pulls += 1
                if demand is None or self.pulled_demand is None:
                    self.pulled_demand = None
                else:
                    self.pulled_demand = min(MAX_DEMAND, self.pulled_demand + demand)
