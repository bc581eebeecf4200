"""The TCK's own upstream: a publisher the verification drives, watching the subscriber under test.

Subscriber and processor verifications subscribe the subject to a ``ManualPublisher``. Every
``request``/``cancel`` the subject makes is recorded in the trace and checked as it happens for
the rules a subscriber can break there: 2.3 (calls from inside the TCK's own ``on_complete`` or
``on_error``, told apart per thread, never by stack inspection), 2.7 (two threads inside the
subscription at once) and 3.9 (non-positive requests). The verification sends signals only
within the demand it was given, and waits for requests and cancellations with bounded waits.
For the 2.7 hunts a subscription can also hold a call from one of the subject's threads until a
rival enters (``hold_s``), and pause that thread in its own code after the call
(``Preemption``) while the TCK delivers the next element.

Three ways to drive it: by hand from the verification thread (the default); ``count=n`` with a
feeder thread that delivers ``n`` elements as demand arrives (a processor's upstream); or
``count=n, inline=True``, delivering inside ``request()`` itself as rules 3.10 and 3.11 allow.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from ._internal.clock import RunningClock
from ._internal.clock import starved_wait
from ._internal.environment import Environment
from ._internal.evidence import cite
from ._internal.ledger import LateRequests
from ._internal.reach import alone_with_idle_kit_threads
from ._internal.reach import nothing_else_runs
from ._internal.reach import only_the_kit_runs
from ._internal.trace import short_repr
from ._internal.watching import Preemption
from ._internal.watching import thread_name
from ._internal.worker import spawn
from .api import MAX_DEMAND
from .errors import RuleViolation
from .errors import SetupError
from .probe import passes_on_failure

#: ``listener(signal, value)`` is told of each signal just before it is delivered.
Listener = Callable[[str, Any], None]

_UNSET: Any = object()

#: How long after a terminal signal the 2.4 tests keep watching for a request or cancel: the
#: period of a credit timer, the time a worker takes to drain a backlog. A closing window,
#: overlapped with the next tests.
AFTER_TERMINAL_WINDOW_S = 1.0
#: Once that watch has been quiet for a window, how often it looks again for a thread that could
#: still call (``rstck._internal.reach``): the thread in the way is often only busy for a moment.
_RECHECK_S = 0.005
#: How often a 2.4 watch (or an idle-marking ``settle``) looks whether one of the subscriber's
#: threads is in its code (``runs_code_of``): a worker busy with an element is not idle.
_WORK_POLL_S = 0.01

# The TCK's own on_complete/on_error calls running on this thread, innermost last. A call on a
# subscription of the subscriber being signalled, made from this thread meanwhile, breaks 2.3.
_inside = threading.local()


def _terminal_calls() -> list[tuple[ManualSubscription, str]]:
    stack: list[tuple[ManualSubscription, str]] | None = getattr(_inside, "stack", None)
    if stack is None:
        stack = _inside.stack = []
    return stack


def _identity(index: int) -> Any:
    return index


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms"


def _demand_text(n: int) -> str:
    return "unbounded" if n >= MAX_DEMAND else str(n)


class ManualSubscription(LateRequests):
    """The subscription handed to the subject: it records, checks and accounts every call."""

    publisher: ManualPublisher

    def __init__(self, publisher: ManualPublisher, subscriber: Any, name: str,
                 must_reject: str | None) -> None:
        self.publisher = publisher
        self.subscriber = subscriber
        self.name = name
        #: Rule a request on this subscription breaks: one the subscriber must reject (2.5, 2.12).
        self.must_reject = must_reject
        self.requested = 0  # total granted, saturating at MAX_DEMAND
        self.demand = 0  # outstanding
        self.sent = 0
        self.request_count = 0
        self.last_request: Any = None
        self.cancel_count = 0
        self.calls = 0  # request and cancel calls together, for "has it settled?"
        self.last_call_at = 0.0  # monotonic time of the latest of them
        self.cancelled = False
        self.terminal: str | None = None
        #: ``request_count`` when the terminal signal returned (None before).
        self.requests_at_terminal: int | None = None
        self.broken = False  # a signal raised: the subscriber counts as having cancelled (2.13)
        self.overlaps = 0
        #: When the terminal signal's call returned (monotonic): a request that starts later
        #: and that nothing before the end explains breaks 2.4 (see ``_late``), unless the TCK
        #: itself asked the subscriber for it (``excuse``: a whitebox puppet pulled after the end).
        self.ended_at: float | None = None
        self.excused = False
        self.late_calls = 0
        #: A whole quiet window passed with no call on this subscription, nothing sent or asked
        #: of the subscriber, and none of its threads seen in its own code (``runs_code_of``):
        #: it has no work left that could explain a request.
        self.idle = False
        #: What ``_late`` weighs a request after the end against, counted as calls begin:
        #: requests begun once an element had gone out and before the end (each may be the
        #: answer to one processed element), requests before the end at all, puppet pulls
        #: before the end, and requests after it.
        self.answered = 0
        self.early_requests = 0
        self.pulls = 0
        self.late_requests = 0
        #: The same in elements (``_late``'s second measure): elements sent before the end that
        #: demand asked for after they went out covers (each request covers at most the
        #: elements sent by then), the demand puppet pulls before the end asked for (None: a
        #: pull of unknown size), and the demand asked for after the end.
        self.covered = 0
        self.pulled_demand: int | None = 0
        self.late_demand = 0
        #: When a 2.4 watch last saw one of the subscriber's threads in its code (monotonic).
        self.worked_at = 0.0
        #: The subscriber reported processing the terminal signal (``seal``): it has received it.
        self.sealed = False
        #: A 2.4 watch is on (``watch``): requests after the end beyond the backlog are told.
        self.watched = False
        #: Trace records of the on_subscribe that handed this subscription out, and of each
        #: cancel() on it: what a verdict about the order of the two cites.
        self.subscribed_seq: int | None = None
        #: The latest signal the TCK delivered on this subscription (its record).
        self.signal_seq: int | None = None
        self.cancel_seqs: list[int] = []
        self.request_seqs: list[int] = []
        #: The record of the call each thread is inside, cited when another thread overlaps it.
        self._inside_seq: dict[int, int] = {}
        self._sections: dict[int, str] = {}
        # Taken bare on the per-call path (``Condition.__enter__`` is a Python-level call).
        self._sections_mutex = threading.Lock()
        self._sections_lock = threading.Condition(self._sections_mutex)
        #: Calls numbered up to this one hold no longer (``release``): the TCK is done waiting
        #: for a rival to them and wants the caller to go on.
        self._released = 0
        self._inside_waiters = 0
        #: Threads waiting on ``_sections_lock`` for a call to leave (``wait_outside``, a hold).
        self._outside_waiters = 0
        #: Set by the 2.7 hunts: the next caller to leave the subscription is paused in its own
        #: code (see ``Preemption``).
        self.preemption: Preemption | None = None
        #: The thread of the latest request/cancel, and every thread that called.
        self.last_caller: int | None = None
        self.callers: set[int] = set()
        self._wip = 0

    def evidence(self) -> tuple[int, ...]:
        """What a wait on this subscription's subscriber rests on: its latest request or cancel,
        and the latest signal the TCK delivered (what it was answering, or should have)."""
        calls = [*self.request_seqs[-1:], *self.cancel_seqs[-1:]]
        return cite(max(calls) if calls else None, self.signal_seq)

    def __repr__(self) -> str:
        return f"ManualSubscription({self.name!r})"

    # -- the Subscription interface, called by the subject on any thread --------------------

    def request(self, n: int) -> None:
        # Counted first: a call begun before the end returned, or while work was left, is no late call.
        late, idle = self._begin_request(n)
        pub = self.publisher
        shown = short_repr(n)
        what = f"request({shown})"
        entered = self._enter(what)
        try:
            pub.env._progress += 1  # env.bump(), inlined: a relayed element costs one request
            problems = self._inside_terminal(what) or self._late(what, late, idle)
            valid = isinstance(n, int) and not isinstance(n, bool)
            with pub._mutex:
                self.calls += 1
                self.last_call_at = time.monotonic()
                call = self.calls
                self.idle = False
                self.request_count += 1
                self.last_request = n
                illegal = not valid or n <= 0
                if illegal and not pub.answers_illegal:
                    problems.append((
                        "3.9",
                        "request(n) with an int n > 0 (the spec calls any other request illegal)",
                        what,
                    ))
                if self.must_reject is not None:
                    problems.append((
                        self.must_reject,
                        f"no request on {self.name}, a subscription the subscriber must cancel",
                        f"{what} on it",
                    ))
                state = ""
                if self.terminal is not None:
                    state = f"; after {self.terminal}, ignored"
                elif self.cancelled or self.broken:
                    state = "; after cancel, ignored"
                elif valid and n > 0 and self.must_reject is None:
                    self.requested = min(MAX_DEMAND, self.requested + n)
                    self.demand = min(MAX_DEMAND, self.demand + n)
                demand = self.demand
                if pub._cond._waiters:  # type: ignore[attr-defined]  # (no Python call when none)
                    pub._cond.notify_all()
            seq = pub.env.trace.log(self.name, "request", shown + state if state else shown, demand)
            self.request_seqs.append(seq)
            self._inside_seq[threading.get_ident()] = seq
            for rule, expected, observed in problems:
                pub.env.violation(rule, expected, observed, evidence=(seq,))
            if pub.hold_s or pub.yield_s is not None:  # (no pause: nothing to wait for)
                self._pause(call)
            if illegal and pub.answers_illegal and not state and self.must_reject is None:
                pub._answer_illegal(self, shown)
            if pub.inline and not state:
                pub._drain(self)
        finally:
            self._exit(entered)

    def cancel(self) -> None:
        pub = self.publisher
        entered = self._enter("cancel()")
        try:
            pub.env.bump()
            problems = self._inside_terminal("cancel()")
            with pub._cond:
                self.calls += 1
                self.last_call_at = time.monotonic()
                call = self.calls
                self.cancel_count += 1
                state = "" if self.terminal is None else f"after {self.terminal}"
                if self.cancelled:
                    state = "again"
                self.cancelled = True
                demand = self.demand
                pub._cond.notify_all()
            record = pub.env.trace.add(self.name, "cancel", state, demand)
            self.cancel_seqs.append(record.seq)
            self._inside_seq[threading.get_ident()] = record.seq
            for rule, expected, observed in problems:
                pub.env.violation(rule, expected, observed, evidence=(record.seq,))
            self._pause(call)
        finally:
            self._exit(entered)

    # -- live checks -------------------------------------------------------------------------

    def _inside_terminal(self, what: str) -> list[tuple[str, str, str]]:
        for subscription, signal in _terminal_calls():
            if subscription.subscriber is self.subscriber:
                return [(
                    "2.3",
                    f"no call on the subscription from inside {signal}()",
                    f"{what} on {self.name}, made inside {signal}() on the same thread",
                )]
        return []

    def _enter(self, what: str) -> bool:
        """Rule 2.7: note a second thread entering while another is still inside."""
        me = threading.get_ident()
        self.last_caller = me
        self.callers.add(me)
        self.publisher.env.threads.add(me)
        first = False
        with self._sections_mutex:
            if not self._sections:  # alone: the usual case, and the cheap one
                self._sections[me] = what
                if self._inside_waiters:
                    self._sections_lock.notify_all()  # wait_inside
                return True
            if me in self._sections:
                return False  # re-entrant on the same thread (e.g. request from inline on_next)
            others = dict(self._sections)
            inside = tuple(sorted(self._inside_seq[t] for t in others if t in self._inside_seq))
            self._sections[me] = what
            if others:
                self.overlaps += 1
                first = self.overlaps == 1
                self._sections_lock.notify_all()  # ends a rival's hold at once
        if first:
            busy = ", ".join(f"{thread_name(t)} in {w}" for t, w in others.items())
            self.publisher.env.violation(
                "2.7",
                "calls on a subscription from one thread at a time (or externally synchronised)",
                f"{what} on {self.name} from thread {threading.current_thread().name} while "
                f"thread {busy} had not returned",
                hint="serialise request/cancel calls: make them from one thread, or under a lock",
                evidence=inside,
            )
        return True

    def _pause(self, call: int) -> None:
        """Stay inside the call a moment, so that a second thread racing in is seen (2.7).

        With ``hold_s`` set, a call from one of the subject's own threads waits up to that long for
        a rival and ends the moment one enters (or the TCK releases it): two threads released
        together are caught even when the scheduler wakes the second late, and a conforming
        subject pays the hold only on calls made off the test's thread.
        """
        pub = self.publisher
        if not pub.hold_s and pub.yield_s == 0.0 and self._alone_with_the_kit(pub):
            return
        if pub.hold_s and threading.get_ident() != pub.env.body_ident:
            with self._sections_lock:
                seen = self.overlaps
                self._outside_waiters += 1
                try:
                    self._sections_lock.wait_for(
                        lambda: self.overlaps != seen or self._released >= call or self._preempting(),
                        pub.hold_s)
                finally:
                    self._outside_waiters -= 1
            return
        pub._pause()

    def _alone_with_the_kit(self, pub: ManualPublisher) -> bool:
        """No thread could race into this call (the test's own: the only caller, no feeder, no loop,
        only the kit's threads alive; or all others idle in its pool): a 0 s yield would only sleep."""
        return (threading.get_ident() == pub.env.body_ident and pub.env.settings.loop != "asyncio"
                and ((len(self.callers) == 1 and not pub._feeding and only_the_kit_runs())
                     or alone_with_idle_kit_threads()))

    def _preempting(self) -> bool:
        preemption = self.preemption
        return preemption is not None and preemption.armed

    def release(self) -> None:
        """End the holds of the calls made so far: the TCK wants their callers to go on."""
        with self._sections_lock:
            self._released = self.calls
            self._sections_lock.notify_all()

    def wait_inside(self, timeout: float) -> bool:
        """Wait until a thread other than the test's is inside a call on this subscription."""
        body = self.publisher.env.body_ident
        with self._sections_lock:
            self._inside_waiters += 1
            try:
                return self._sections_lock.wait_for(lambda: any(t != body for t in self._sections), timeout)
            finally:
                self._inside_waiters -= 1

    def wait_outside(self, timeout: float) -> bool:
        """Wait until no thread is inside a call on this subscription; False if one still is."""
        with self._sections_lock:
            self._outside_waiters += 1
            try:
                return self._sections_lock.wait_for(lambda: not self._sections, timeout)
            finally:
                self._outside_waiters -= 1

    def _exit(self, entered: bool) -> None:
        if entered:
            with self._sections_mutex:
                self._sections.pop(threading.get_ident(), None)
                if not self._sections and self._outside_waiters:
                    self._sections_lock.notify_all()  # wait_outside, a hold
            preemption = self.preemption
            if preemption is not None and threading.get_ident() != self.publisher.env.body_ident:
                preemption.install()

    def cancelled_after(self, seq: int | None) -> int | None:
        """The first cancel() on this subscription recorded after trace record ``seq``."""
        return next((c for c in self.cancel_seqs if seq is not None and c > seq), None)

    def describe(self) -> str:
        """What happened on this subscription so far, for messages."""
        ended = ""
        if self.cancelled:
            ended = ", cancelled"
        if self.terminal:
            ended += f", then {self.terminal}"
        return (
            f"{self.name} so far: requested {_demand_text(self.requested)} in {self.request_count} "
            f"call(s), sent {self.sent} element(s){ended}"
        )


class ManualPublisher:
    """A publisher the TCK drives; it records and checks what its subscriber does."""

    def __init__(
        self,
        env: Environment,
        name: str = "upstream",
        *,
        element: Callable[[int], Any] | None = None,
        count: int | None = None,
        inline: bool = False,
        end: str | None = "complete",
        error: BaseException | None = None,
        fail_on_subscribe: BaseException | None = None,
        signal_rule: str | None = None,
        yield_s: float | None = 0.0,
        hold_s: float | None = None,
        answers_illegal: bool = False,
    ) -> None:
        self.env = env
        self.name = name
        self.element = element or _identity
        #: Elements delivered automatically (None: by hand); >= MAX_DEMAND is endless.
        self.count = count
        #: Deliver inside request() on the subscriber's thread instead of on a feeder thread.
        self.inline = inline
        #: What follows the last automatic element: "complete", "error" or nothing.
        self.end = end
        self.error = error
        self.fail_on_subscribe = fail_on_subscribe
        #: Rule a subscriber breaks by raising from a signal (default 2.13); a test of 2.9 or
        #: 3.10 sets its own, since failing there is failing to be prepared for that signal.
        self.signal_rule = signal_rule
        #: Pause inside request/cancel so that a second thread racing in is seen (rule 2.7).
        self.yield_s = yield_s
        #: Longer, event-ended pause for calls from the subject's own threads (see _pause).
        self.hold_s = hold_s
        #: A request(n <= 0) is answered as a conforming publisher answers it (rule 3.9:
        #: on_error(ValueError), serialised with the other signals) instead of being reported
        #: against the subscriber: the upstream of a processor, which may pass a downstream's
        #: request through unchanged (``_answer_illegal``).
        self.answers_illegal = answers_illegal
        #: With ``answers_illegal``: signals being delivered per subscription, the answer waiting
        #: for them to return (rule 1.3), and the subscriptions the answer ended.
        self._emitting: dict[ManualSubscription, int] = {}
        self._answers: dict[ManualSubscription, BaseException] = {}
        self._answered: set[ManualSubscription] = set()
        self.subscriptions: list[ManualSubscription] = []
        self.closed = False
        # ``_mutex`` is ``_cond``'s lock, taken bare on the per-element path (``Condition.__enter__``
        # is a Python-level call); ``_cond`` notifies and waits as before.
        self._mutex = threading.RLock()
        self._cond = threading.Condition(self._mutex)
        self._listeners: list[Listener] = []
        #: Feeder threads delivering to a subscription now (``unreachable``).
        self._feeding = 0

    def __repr__(self) -> str:
        return f"ManualPublisher({self.name!r})"

    def listen(self, listener: Listener) -> None:
        self._listeners.append(listener)

    @property
    def subscription(self) -> ManualSubscription:
        """The first subscription; the one every expectation uses unless told otherwise."""
        if not self.subscriptions:
            raise RuntimeError(f"{self.name}: nothing subscribed yet")
        return self.subscriptions[0]

    # -- the Publisher interface -------------------------------------------------------------

    def subscribe(self, subscriber: Any) -> None:
        """Hand ``subscriber`` a new subscription (on this thread), as any publisher would."""
        self.attach(subscriber)

    def attach(self, subscriber: Any, *, must_reject: str | None = None) -> ManualSubscription:
        """``subscribe`` that returns the subscription; ``must_reject`` flags any request on it."""
        for subscription, signal in _terminal_calls():
            if subscription.subscriber is subscriber:
                self.env.violation(
                    "2.3", f"no call on a publisher from inside {signal}()",
                    f"subscribe() on {self.name}, made inside {signal}() on the same thread",
                )
        if subscriber is None:
            raise TypeError(f"{self.name}.subscribe(None): a subscriber is required (rule 1.9)")
        with self._cond:
            index = len(self.subscriptions)
            name = self.name if index == 0 else f"{self.name}#{index + 1}"
            subscription = ManualSubscription(self, subscriber, name, must_reject)
            self.subscriptions.append(subscription)
        self.env.trace.add(name, "subscribe", short_repr(subscriber))
        for listener in self._listeners:
            listener("on_subscribe", subscription)
        if self.answers_illegal:
            with self._cond:
                self._claim(subscription)
        if not self._signal(subscription, "on_subscribe", short_repr(subscription), 0,
                            subscriber.on_subscribe, subscription):
            return subscription
        if self.fail_on_subscribe is not None:
            self._terminate(subscription, "on_error", self.fail_on_subscribe, None)
        elif self.count is not None and not self.inline and index == 0:
            with self._mutex:
                self._feeding += 1
            spawn(partial(self._feed, subscription), f"rs-tck:{self.name}-feeder")
        return subscription

    # -- the TCK's side: sending -------------------------------------------------------------

    def send_next(self, *, subscription: ManualSubscription | None = None,
                  timeout: float | None = None, rule: str | None = None) -> Any:
        """Wait for demand, then deliver the next element; never sends beyond demand."""
        sub = subscription or self.subscription
        timeout = self.env.settings.timeout if timeout is None else timeout
        ready = self._await(lambda: sub.demand > 0 or self._answering(sub), timeout)
        with self._cond:
            seen = sub.describe()
        if not ready:
            raise RuleViolation(
                rule or self.env.rule,
                f"a request(n) for element {sub.sent + 1} within {_ms(timeout)}",
                f"no outstanding demand ({seen})",
                hint="the subscriber must request (rule 2.1) before the TCK may send", setting="timeout",
                evidence=sub.evidence(),
            )
        element = self._next(sub, rule)
        if element is _UNSET:
            raise RuleViolation(
                rule or self.env.rule, f"element {sub.sent + 1} sent on {sub.name}",
                f"the subscriber's request(n <= 0) on it was answered with on_error(ValueError), as "
                f"a publisher must answer it (rule 3.9): the subscription is over ({sub.describe()})",
                hint="request only n > 0 of the upstream; pass a downstream's illegal request on only "
                "when its answer is relayed",
            )
        return element

    def send_complete(self, *, subscription: ManualSubscription | None = None,
                      rule: str | None = None) -> bool:
        """Signal on_complete (no demand needed, rule 2.9); False if it raised."""
        return self._terminate(subscription or self.subscription, "on_complete", None, rule)

    def send_error(self, error: BaseException, *, subscription: ManualSubscription | None = None,
                   rule: str | None = None) -> bool:
        """Signal on_error(error) (no demand needed, rule 2.10); False if it raised."""
        return self._terminate(subscription or self.subscription, "on_error", error, rule)

    def close(self) -> None:
        """Stop the feeder and any inline delivery: the test is over."""
        with self._cond:
            self.closed = True
            self._cond.notify_all()

    # -- the TCK's side: expectations --------------------------------------------------------

    def wait_demand(self, *, subscription: ManualSubscription | None = None,
                    timeout: float | None = None, until_cancelled: bool = False) -> int:
        """Outstanding demand once there is some, or 0 if none arrives in time; ``until_cancelled``:
        stop waiting at a cancel() too (none will come after it)."""
        sub = subscription or self.subscription
        timeout = self.env.settings.timeout if timeout is None else timeout
        self._await(lambda: sub.demand > 0 or (until_cancelled and sub.cancelled), timeout)
        return sub.demand

    def expect_demand(self, *, subscription: ManualSubscription | None = None,
                      timeout: float | None = None, rule: str | None = None, what: str = "",
                      hint: str = "") -> int:
        """Wait for outstanding demand; its absence is a violation of ``rule``."""
        sub = subscription or self.subscription
        timeout = self.env.settings.timeout if timeout is None else timeout
        demand = self.wait_demand(subscription=sub, timeout=timeout)
        if demand <= 0:
            raise RuleViolation(
                rule or self.env.rule, f"{what or 'a request(n)'} within {_ms(timeout)}",
                f"none came ({sub.describe()})", hint=hint, setting="timeout", evidence=sub.evidence(),
            )
        return demand

    def expect_requested(self, total: int, *, subscription: ManualSubscription | None = None,
                         timeout: float | None = None, rule: str | None = None,
                         what: str = "") -> None:
        """Wait until the total requested reaches ``total`` (in any number of calls)."""
        sub = subscription or self.subscription
        timeout = self.env.settings.timeout if timeout is None else timeout
        done = self._await(lambda: sub.requested >= total, timeout)
        with self._cond:
            seen = sub.describe()
        if not done:
            raise RuleViolation(rule or self.env.rule,
                                f"{what or f'requests adding up to {total}'} within {_ms(timeout)}",
                                seen, setting="timeout", evidence=sub.evidence())

    def expect_request(self, *, subscription: ManualSubscription | None = None,
                            timeout: float | None = None, rule: str | None = None,
                            what: str = "") -> None:
        """Wait until the subscriber has called request() at least once (unlike ``expect_demand``,
        also a request whose demand inline delivery used up before it returned)."""
        sub = subscription or self.subscription
        timeout = self.env.settings.timeout if timeout is None else timeout
        done = self._await(lambda: sub.request_count > 0, timeout)
        with self._cond:
            seen = sub.describe()
        if not done:
            raise RuleViolation(rule or self.env.rule,
                                f"{what or 'a request(n)'} within {_ms(timeout)}", f"none came ({seen})",
                                setting="timeout", evidence=sub.evidence())

    def expect_cancel(self, *, subscription: ManualSubscription | None = None,
                      timeout: float | None = None, rule: str | None = None, what: str = "",
                      hint: str = "") -> None:
        sub = subscription or self.subscription
        timeout = self.env.settings.timeout if timeout is None else timeout
        if not self.wait_cancel(subscription=sub, timeout=timeout):
            raise RuleViolation(rule or self.env.rule, f"{what or 'cancel()'} within {_ms(timeout)}",
                                f"no cancel() ({sub.describe()})", hint=hint, setting="timeout",
                                evidence=sub.evidence())

    def wait_cancel(self, *, subscription: ManualSubscription | None = None,
                    timeout: float | None = None) -> bool:
        sub = subscription or self.subscription
        timeout = self.env.settings.timeout if timeout is None else timeout
        return self._await(lambda: sub.cancelled, timeout)

    def expect_no_request(self, *, subscription: ManualSubscription | None = None,
                          window: float | None = None, rule: str | None = None,
                          after: str = "", since: int | None = None) -> None:
        """A whole no-signal window must pass without a request() call.

        ``since``: the request count the claim starts from (taken when the signal it follows
        returned), so a request made before the window opens counts too.
        """
        sub = subscription or self.subscription
        window = self.env.settings.no_signal_window if window is None else window
        with self._cond:
            start = sub.request_count if since is None else since
        with self.env.aside(), self._cond:
            self._cond.wait_for(lambda: sub.request_count != start, window)
            if sub.request_count == start:
                return
            last, seen = sub.last_request, sub.describe()
        raise RuleViolation(rule or self.env.rule, f"no request(n) {after}".rstrip(),
                            f"request({short_repr(last)}) ({seen})",
                            evidence=tuple(sub.request_seqs[start:]))

    def closing_after_terminal(self, *, subscription: ManualSubscription | None = None,
                               window: float = AFTER_TERMINAL_WINDOW_S) -> Callable[[], None]:
        """A closing claim: no unexplained request for ``window`` after the terminal signal returned.

        Long enough for a worker draining a backlog or a periodic credit timer to show; the
        calls are judged as they happen (``_late``), this starts the 2.4 watch (``watch``) and
        keeps it that long, or until, once the subscriber is idle, no thread is left that could
        call (``rstck._internal.reach``). Idle: a quiet window since the end, its latest call and the last
        time one of its threads was seen in its code, looked for every few ms.
        """
        sub = subscription or self.subscription

        quiet = self.env.settings.no_signal_window
        on_loop = self.env.settings.loop == "asyncio"

        def claim() -> None:
            sub.watch()
            with self.env.aside(), self._cond:
                while sub.late_calls == 0 and not self.closed and sub.ended_at is not None:
                    now = time.monotonic()
                    remaining = sub.ended_at + window - now
                    if remaining <= 0:
                        return
                    step = _WORK_POLL_S
                    if not sub.idle:
                        # Quiet since the end, its latest call and its latest work seen (a window
                        # the test itself waited out before this claim counts).
                        sub.working()
                        quiet_for = now - max(sub.ended_at, sub.last_call_at, sub.worked_at)
                        step = min(quiet - quiet_for, _WORK_POLL_S)
                        if quiet_for >= quiet or self.unreachable():
                            # The backlog is worked off (or nothing but the TCK could work on
                            # it): any request now is unexplained.
                            sub.idle = True
                    if sub.idle:
                        if on_loop:
                            step = remaining  # the loop runs the subject's callbacks: the whole watch
                        elif nothing_else_runs():
                            return  # no thread is left that could make a request (rstck._internal.reach)
                        else:
                            # Another thread is busy (pytest reporting a verdict, a subject's
                            # worker): look again soon rather than a whole window later.
                            step = _RECHECK_S
                    seen = sub.calls
                    self._cond.wait_for(_changed(sub, seen), min(step, remaining))

        return claim

    def settle(self, *, subscription: ManualSubscription | None = None,
               window: float | None = None, limit: float | None = None, idle: bool = True) -> bool:
        """Return once a whole window passes with no request or cancel; False if never. With
        ``idle``, at once when nothing but the TCK could make one (``unreachable``).

        The subscriber is then idle (see ``ManualSubscription._late``) until it is sent or asked
        for something, or calls again, unless one of its threads was seen in its code during
        the window (``runs_code_of``: a worker still busy with an element); with ``idle=False``
        (a window too short to tell a finished subscriber from a slow one) it is not marked so.
        Marking it starts the 2.4 watch (``ManualSubscription.watch``).
        """
        sub = subscription or self.subscription
        window = self.env.settings.no_signal_window if window is None else window
        limit = self.env.settings.timeout + window if limit is None else limit
        clock, spent = RunningClock(), 0.0  # time the process could run, as in ProbeSubscriber.wait_quiet
        if idle:
            sub.watch()
            if self.unreachable():
                # Nothing to wait for: no turn given up (and waited for again behind the others).
                with self._cond:
                    sub.idle = True
                return True
        with self.env.aside(), self._cond:
            while True:
                seen = sub.calls
                until = time.monotonic() + window
                worked = False
                while sub.calls == seen:
                    left = until - time.monotonic()
                    if left <= 0 or (idle and not worked and self.unreachable()):
                        break
                    self._cond.wait_for(_changed(sub, seen), min(left, _WORK_POLL_S) if idle else left)
                    worked = (idle and sub.working()) or worked
                if sub.calls == seen:
                    sub.idle = sub.idle or (idle and not worked)
                    return True
                if (spent := spent + clock.step(window)) >= limit:
                    return False

    def unreachable(self) -> bool:
        """Whether nothing but the TCK's own calls could reach the subscriber now, so a window
        waiting for one of its calls would wait for nothing: no feeder of this upstream runs,
        no event loop runs the subject's callbacks, and every other live thread is the kit's
        own or waits in it for results (``rstck._internal.reach``). A subscriber with a thread
        of its own (a worker, a timer, a pool's) keeps every window whole."""
        return (not self._feeding and self.env.settings.loop != "asyncio" and nothing_else_runs())

    def wait_sent(self, count: int, *, subscription: ManualSubscription | None = None,
                  timeout: float | None = None) -> bool:
        """Wait until ``count`` elements went out (automatic modes)."""
        sub = subscription or self.subscription
        timeout = self.env.settings.timeout if timeout is None else timeout
        return self._await(lambda: sub.sent >= count or sub.broken or sub.terminal is not None, timeout)

    # -- machinery ---------------------------------------------------------------------------

    def _await(self, ready: Callable[[], bool], timeout: float) -> bool:
        """``ready`` (looked at on each call the subscriber makes) within ``timeout`` of time the
        process could run (``starved_wait``): a starved process is late, not a silent subject."""
        with self._cond:
            return starved_wait(lambda step: self._cond.wait_for(ready, step), timeout)

    def _pause(self) -> None:
        if self.yield_s is not None:
            time.sleep(self.yield_s)

    def _next(self, sub: ManualSubscription, rule: str | None) -> Any:
        """Deliver the next element; ``_UNSET`` (nothing sent) once an illegal request is answered."""
        with self._mutex:  # (``_answering`` and ``_claim`` written out: once an element)
            if sub in self._answers or sub in self._answered:
                return _UNSET
            if self.answers_illegal:
                self._emitting[sub] = self._emitting.get(sub, 0) + 1
            index = sub.sent
            before = sub.demand
            sub.sent += 1
            sub.idle = False
            if before < MAX_DEMAND:
                sub.demand = before - 1
            if self._cond._waiters:  # type: ignore[attr-defined]  # wait_sent, the feeder
                self._cond.notify_all()
        try:
            element = index if self.element is _identity else self.element(index)
        except Exception as exc:
            raise SetupError(
                f"the element hook raised {type(exc).__name__}: {short_repr(exc, 200)} for index {index}"
            ) from exc
        for listener in self._listeners:
            listener("on_next", element)
        self._signal(sub, "on_next", short_repr(element), before, sub.subscriber.on_next, element,
                     rule=rule)
        return element

    def _terminate(self, sub: ManualSubscription, signal: str, error: BaseException | None,
                   rule: str | None) -> bool:
        demand = 0
        with self._cond:
            if sub in self._answered:
                ended = True  # the answer to an illegal request ended it first (rule 3.9)
            elif sub.terminal is not None:
                raise RuntimeError(f"{sub.name}: {signal} after {sub.terminal}")  # a TCK bug
            else:
                ended = False
                self._answers.pop(sub, None)  # a request(n <= 0) racing the end: the end came first
                self._claim(sub)
                sub.terminal = signal
                demand = sub.demand
                self._cond.notify_all()
        if ended:
            self.env.trace.note(f"{sub.name}: no {signal}: the on_error answering the subscriber's "
                                "illegal request ended the subscription")
            return False
        return self._end(sub, signal, error, rule, demand)

    def _end(self, sub: ManualSubscription, signal: str, error: BaseException | None,
             rule: str | None, demand: int) -> bool:
        for listener in self._listeners:
            listener(signal, error)
        if signal == "on_complete":
            returned = self._signal(sub, signal, "", demand, sub.subscriber.on_complete, rule=rule,
                                    terminal=True)
        else:
            returned = self._signal(sub, signal, short_repr(error), demand, sub.subscriber.on_error,
                                    error, rule=rule, terminal=True)
        sub.ended_at = time.monotonic()
        return returned

    def _signal(self, sub: ManualSubscription, signal: str, detail: str, demand: int,
                fn: Callable[..., Any], *args: Any, rule: str | None = None,
                terminal: bool = False) -> bool:
        """Deliver one signal; a subscriber that raises breaks 2.13 (or ``rule``)."""
        seq = sub.signal_seq = self.env.trace.log(sub.name, signal, detail, demand)
        if signal == "on_subscribe":
            sub.subscribed_seq = seq
        if signal != "on_next" and sub.calls == 0:  # (``_next`` does it for elements)
            with self._cond:
                # A subscriber that has not called once may not have handled on_subscribe yet
                # (a slow pool's): its first request may come for it, after this end. One that
                # has called and then went quiet stays idle: a credit timer is caught at once.
                sub.idle = False
        self.env._progress += 1  # env.bump(), inlined

        call: Callable[..., Any] = fn
        if terminal:
            def deliver(*args: Any) -> None:
                # Rule 2.3's flag is set on the thread that runs the subscriber's code (an event
                # loop's, under --rs-loop=asyncio), where its calls on the subscription happen.
                stack = _terminal_calls()
                stack.append((sub, signal))
                try:
                    fn(*args)
                finally:
                    stack.pop()
                    # Taken where the signal returned (on the subject's loop, if it has one), before
                    # anything the subscriber scheduled from it can run: later requests break 2.4.
                    sub.requests_at_terminal = sub.request_count

            call = deliver
        try:
            self.env.invoke(f"{signal}({detail})", call, *args)
        except Exception as exc:
            with self._cond:
                sub.broken = True
                self._cond.notify_all()
            self._release(sub)  # (an answer held back lapses: the subscriber counts as cancelled)
            if passes_on_failure(exc):
                # A processor relaying synchronously passed on what a raising probe of the TCK
                # threw downstream: rule 2.13 has it raise that "in a fashion that is adequate
                # for the runtime environment", as a synchronous publisher's request() does.
                self.env.trace.note(f"{signal}({detail}) passed on the subscriber's failure: {short_repr(exc)}")
                return False
            note = self.env.trace.note(f"{signal}({detail}) raised {short_repr(exc)}")
            violation = RuleViolation(
                rule or self.signal_rule or "2.13",
                f"{signal}({detail}) to return normally",
                f"it raised {type(exc).__name__}: {short_repr(exc, 200)}",
                hint="a subscriber raises only TypeError, for a None argument; any other failure "
                "it signals by cancelling its subscription (rule 2.13)",
                evidence=(seq, note.seq),
            )
            violation.__cause__ = exc
            self.env.flop(violation)
            return False
        if self.answers_illegal:
            self._release(sub)
        return True

    # -- answering request(n <= 0) as a conforming publisher (``answers_illegal``) ---------------

    def _answering(self, sub: ManualSubscription) -> bool:
        """An illegal request on ``sub`` is answered, or about to be: nothing else goes out."""
        return sub in self._answers or sub in self._answered

    def _claim(self, sub: ManualSubscription) -> None:
        """A signal to ``sub`` starts (``_cond`` held): an answer waits for it to return."""
        if self.answers_illegal:
            self._emitting[sub] = self._emitting.get(sub, 0) + 1

    def _release(self, sub: ManualSubscription) -> None:
        """A signal to ``sub`` returned: the answer it held back goes now, on this thread."""
        if not self.answers_illegal:
            return
        with self._mutex:
            left = self._emitting[sub] = self._emitting[sub] - 1
            answer = self._take_answer(sub) if left == 0 and self._answers else None
        if answer is not None:
            self._end(sub, "on_error", answer, None, sub.demand)

    def _take_answer(self, sub: ManualSubscription) -> BaseException | None:
        """The pending answer, claimed for delivery (``_cond`` held); None if it lapsed."""
        error = self._answers.pop(sub, None)
        if error is None:
            return None
        if sub.terminal is not None or sub.cancelled or sub.broken or self.closed:
            return None  # cancelled or ended meanwhile: a request is then a no-op (rule 3.6)
        self._claim(sub)
        sub.terminal = "on_error"
        self._answered.add(sub)
        self._cond.notify_all()
        return error

    def _answer_illegal(self, sub: ManualSubscription, shown: str) -> None:
        """Answer ``request(shown)``, n <= 0, with on_error(ValueError), as rule 3.9 requires.

        The processor under test may pass its subscriber's request on unchanged (Reactor's
        ``map`` does): then the upstream, a conforming publisher, answers it, and the verdict on
        3.9 is the downstream probe's, on what the processor relays. The answer is delivered on
        this thread at once, or, while a signal to the subscriber is still running (the request
        came from inside on_next, or from another thread meanwhile), by that signal's thread as
        it returns: never beside another signal (rule 1.3). No more elements follow it.
        """
        with self._cond:
            if sub.terminal is not None or sub.cancelled or sub.broken or self.closed or self._answering(sub):
                return
            self._answers[sub] = ValueError(
                f"request({shown}): n must be positive (rule 3.9: non-positive requests are illegal)")
            answer = self._take_answer(sub) if self._emitting.get(sub, 0) == 0 else None
            self._cond.notify_all()  # send_next and the feeder wait on it
        self.env.trace.note(f"{sub.name}: request({shown}) is answered with on_error(ValueError), as a "
                            "conforming publisher answers it (rule 3.9)")
        if answer is not None:
            self._end(sub, "on_error", answer, None, sub.demand)

    def _stopped(self, sub: ManualSubscription) -> bool:
        return self.closed or sub.cancelled or sub.broken or sub.terminal is not None or sub in self._answers

    def _feed(self, sub: ManualSubscription) -> None:
        """Feeder thread: one element per unit of demand, then the end signal."""
        try:
            self._feed_all(sub)
        finally:
            with self._mutex:
                self._feeding -= 1

    def _feed_all(self, sub: ManualSubscription) -> None:
        count = self.count if self.count is not None else 0
        limit = self.env.settings.test_limit
        def ready() -> bool:
            return self._stopped(sub) or sub.sent >= count or sub.demand > 0

        while True:
            with self._mutex:
                # Demand already there (the usual case in a long stream): no wait to set up.
                if sub.demand <= 0 and not ready() and not self._cond.wait_for(ready, limit):
                    return
                if self._stopped(sub):
                    return
                finished = sub.sent >= count
            if finished:
                self._finish(sub)
                return
            self._next(sub, None)

    def _finish(self, sub: ManualSubscription) -> None:
        if self.end == "complete":
            self._terminate(sub, "on_complete", None, None)
        elif self.end == "error":
            self._terminate(sub, "on_error", self.error or RuntimeError("upstream failed"), None)

    def _drain(self, sub: ManualSubscription) -> None:
        """Inline delivery, trampolined: whoever raises the work count from 0 delivers."""
        with self._cond:
            sub._wip += 1
            if sub._wip != 1:
                return
        missed = 1
        while True:
            while self._inline_step(sub):
                pass
            with self._cond:
                sub._wip -= missed
                missed = sub._wip
                if missed == 0:
                    return

    def _inline_step(self, sub: ManualSubscription) -> bool:
        count = self.count if self.count is not None else 0
        with self._cond:
            if self._stopped(sub):
                return False
            finished = sub.sent >= count
            if not finished and sub.demand <= 0:
                return False
        if finished:
            self._finish(sub)
            return False
        self._next(sub, None)
        return True


def _changed(sub: ManualSubscription, seen: int) -> Callable[[], bool]:
    return lambda: sub.calls != seen
