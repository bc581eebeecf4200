"""The probe subscriber: a subscriber that records every signal and flags violations live.

It is what the TCK subscribes to the publisher under test. It checks the publisher-side rules
that any single signal can break (order, demand, termination, serial delivery) at the moment
the signal arrives, on the publisher's thread, and records them in the environment; the
verification then asks it for the signals it expects, with bounded waits.
"""

from __future__ import annotations

import contextlib
import threading
import time
from _thread import get_ident
from collections.abc import Callable
from collections.abc import Iterator
from time import monotonic
from typing import Any

from ._internal.clock import SLICE_S
from ._internal.clock import RunningClock
from ._internal.clock import starved_wait
from ._internal.environment import Environment
from ._internal.evidence import cite
from ._internal.probe_signals import Hook
from ._internal.probe_signals import ProbeAbort
from ._internal.probe_signals import ProbeSignals
from ._internal.probe_signals import SubscriberFailure
from ._internal.probe_signals import _Waiter
from ._internal.probe_signals import passes_on_failure
from ._internal.trace import Record
from ._internal.trace import short_repr
from .api import MAX_DEMAND
from .api import Subscription
from .errors import RuleViolation

__all__ = [
    "LONG_STREAM",
    "STALL_CONFIRMATION",
    "Hook",
    "ProbeAbort",
    "ProbeSubscriber",
    "RaisingProbe",
    "SubscriberFailure",
    "passes_on_failure",
]


class ProbeSubscriber(ProbeSignals):
    """A well-behaved subscriber that watches the publisher it is subscribed to."""

    __slots__ = ()

    # -- the TCK side: acting on the subscription --------------------------------------------

    def request(self, n: int) -> None:
        """Request ``n`` through the subscription, counting the demand as the probe sees it."""
        subscription = self.subscription
        if subscription is None:
            subscription = self._require_subscription("request")
        if self.subscribing is not None:
            self._after_on_subscribe("request", n)
        lock = self._lock
        lock.acquire()  # (not ``with``: see ``on_next``)
        try:
            owner = self._fast_owner
            if owner is not None and owner != get_ident():
                self._fast_end()
            if n > 0 and not self._cancelled and self.terminal is None:
                requested = self.requested + n
                if requested < MAX_DEMAND:  # and so is the demand (never above requested)
                    self.demand += n
                    self.requested = requested
                else:  # saturated: MAX_DEMAND is unbounded (3.17)
                    self.demand = min(MAX_DEMAND, self.demand + n)
                    self.requested = MAX_DEMAND
            elif n > 0 and self._cancelled:
                # Demand the probe signalled after cancel(): an element it brings breaks 3.6,
                # which the test judges; it is not an element nobody asked for (1.1).
                self.requested_after_cancel = True
            demand = self.demand
        finally:
            lock.release()
        shown = str(n)
        self.call_seq = self.env.trace.log(self.name, "request", shown, demand)
        shown = f"request({shown})"
        try:  # ``_call``, written out
            self.env.invoke(shown, self._request_now, subscription, n)
        except ProbeAbort:
            pass  # our own flood guard unwinding through a synchronous publisher
        except Exception as exc:
            self._call_raised("request", shown, exc)

    def _request_now(self, subscription: Subscription, n: int) -> None:
        """``subscription.request(n)``, counted as running (``requesting``) while it runs: one
        entry in a deque each, whose append and pop are atomic (no lock, two threads may
        request at once)."""
        running = self._requesting
        running.append(n)
        try:
            subscription.request(n)
        finally:
            running.pop()

    @property
    def requesting(self) -> bool:
        """Whether a request() of this probe is running in the subject now (an element that
        arrives meanwhile is delivered inside it, rule 3.10)."""
        return bool(self._requesting)

    def cancel(self) -> None:
        subscription = self._require_subscription("cancel")
        self._after_on_subscribe("cancel")
        with self._lock:
            self._fast_end()
            self._cancelled = True
        self.call_seq = self.env.trace.log(self.name, "cancel", "", self.demand)
        if self.cancel_seq is None:
            self.cancel_seq = self.call_seq
            self.cancel_queued_at = monotonic()
        self._call("cancel", self._cancel_now(subscription), shown="cancel()")

    def _cancel_now(self, subscription: Subscription) -> Callable[[], None]:
        """``subscription.cancel`` that notes when it began to run, and how late, if it was late."""

        def cancel() -> None:
            if self.cancel_ran_at is None and self.cancel_queued_at is not None:
                self.cancel_ran_at = now = monotonic()
                late = now - self.cancel_queued_at
                if late > self.env.settings.no_signal_window or self._cancel_told:
                    self.env.trace.note(f"{self.name}: cancel() ran {late * 1000:.0f} ms after it was "
                                        f"made (queued on the subject's event loop); {self.after_cancel} "
                                        "element(s) came meanwhile")
            subscription.cancel()

        return cancel

    def _after_on_subscribe(self, what: str, *args: int) -> None:
        """Hold a call made from another thread while on_subscribe still runs until it returns.

        A subscriber that hands its subscription to another thread before on_subscribe returns
        brings about the overlap itself: a publisher that emits on the requesting thread (the
        JVM's RangePublisher) then signals on_next there while on_subscribe runs here, and
        conforming subscribers defer such calls (RxJava's StrictSubscriber). The probe does the
        same, so the kit never provokes what rule 1.3 would blame on the publisher. Exempt: the
        thread inside on_subscribe itself, a call it handed over and waits for (``acting_for``),
        and a thread inside a signal of this probe (its overlap is the publisher's doing). The
        wait is bounded by the timeout; past it the call is made anyway, with a note.
        """
        owner = self.subscribing
        me = get_ident()
        if owner is None or owner == me or self._handoffs.get(owner) == me or me in self._sections \
                or self.env.closed:
            return
        timeout = self.env.settings.timeout
        if self._wait(lambda: self.subscribing is None or self._handoffs.get(owner) == me, timeout):
            return
        self.env.trace.note(f"{self.name}: {what}({', '.join(map(str, args))}) waited {_ms(timeout)} for "
                            "on_subscribe to return on another thread; made anyway")

    def _require_subscription(self, what: str) -> Subscription:
        if self.subscription is None:
            raise RuleViolation(
                self.env.rule, f"on_subscribe before the TCK can {what}", "no subscription was received"
            )
        return self.subscription

    # -- expectations, called by the verification thread -------------------------------------

    def _wait(self, predicate: Callable[[], bool], timeout: float) -> bool:
        """Block until ``predicate`` holds (checked first, then on each signal), or time out
        (``timeout`` of time the process could run: ``rstck._internal.clock``).

        The test keeps its turn to call meanwhile: its subject is at work, and a race hunt,
        which starts only once no test calls or waits to, must not run beside it (a thread pool
        every subject shares would then slow the hunt's subject past its timeout)."""
        with self._lock:
            if predicate():
                return True
            waiter = _Waiter(predicate)
            self._waiters.append(waiter)
            if predicate():
                # The fast path of on_next changes state without the lock, then looks for
                # waiters: a signal between the first look and the append is seen here.
                self._waiters.remove(waiter)
                return True
        woken = starved_wait(lambda step: waiter.gate.acquire(timeout=step), timeout)
        with self._lock:
            if not woken and waiter in self._waiters:
                self._waiters.remove(waiter)
            return predicate()

    def wait_progress(self, predicate: Callable[[], bool], timeout: float, *, limit: float | None = None) -> bool:
        """``_wait`` where the timeout counts silence: every signal starts it again.

        A verdict that many elements never came must rest on a stall, not on a slow machine: a
        subject delivering steadily under load is still working. ``limit`` (default: the test's
        own limit, halved so that the verdict is this test's and not the watchdog's) bounds the whole
        wait, so a trickle cannot hold the test for ever.
        """
        limit = self.env.settings.test_limit / 2 if limit is None else limit
        deadline = time.monotonic() + limit
        gaps = 0
        while True:
            # Past many gaps, one pause of ``timeout`` on a loaded machine is likely, and it
            # ends; a stall lasts: it must last STALL_CONFIRMATION times longer again.
            if not self._wait(_progressed(self, predicate, self.mark()), timeout) and (
                    gaps < LONG_STREAM
                    or not self._wait(_progressed(self, predicate, self.mark()), timeout * STALL_CONFIRMATION)):
                return False
            gaps += 1
            if predicate():
                return True
            if time.monotonic() >= deadline:
                return predicate()

    def wait_steady(self, predicate: Callable[[], bool], timeout: float, *, limit: float | None = None) -> bool:
        """``wait_progress`` woken only when ``predicate`` holds, not at every signal.

        For a wait that needs only the end of a stream delivered on another thread: waking this
        thread for each element costs a thread switch on both sides and buys nothing there. The
        silence is read at each slice of the wait (``SLICE_S``, time the process could run):
        ``timeout`` of slices in a row without a signal is a stall, as in ``wait_progress``
        (past ``LONG_STREAM`` signals, only if it lasts ``STALL_CONFIRMATION`` times longer
        again), found at most a slice late and never before that much silence.
        """
        limit = self.env.settings.test_limit / 2 if limit is None else limit
        deadline = time.monotonic() + limit
        clock = RunningClock()
        start = seen = self.signals
        silence = 0.0
        while True:
            if self._wait(predicate, SLICE_S):
                return True
            credited = clock.step(SLICE_S)
            now = self.signals
            if now != seen:
                seen, silence = now, 0.0
            else:
                silence += credited
                if silence >= (timeout if seen - start < LONG_STREAM else timeout * (1 + STALL_CONFIRMATION)):
                    return predicate()
            if time.monotonic() >= deadline:
                return predicate()

    def expect_subscription(self, *, timeout: float | None = None) -> Subscription:
        timeout = self.env.settings.timeout if timeout is None else timeout
        if not self._wait(lambda: self.subscription is not None, timeout):
            raise RuleViolation(
                "1.9",
                f"on_subscribe within {_ms(timeout)} of subscribe()",
                f"no on_subscribe ({self._seen()})",
                setting="timeout",
                evidence=self._subscribe_evidence(),
            )
        assert self.subscription is not None
        return self.subscription

    def next_element(self, *, timeout: float | None = None, rule: str | None = None, what: str = "an element",
                     hint: str = "") -> Any:
        """Wait for the next unconsumed element; a terminal signal first is a violation (``hint``:
        what to check when none came)."""
        timeout = self.env.settings.timeout if timeout is None else timeout
        self._wait(lambda: bool(self.elements) or self.terminal is not None, timeout)
        with self._lock:
            if self.elements:
                return self.elements.popleft()
            terminal = self._terminal_text()
        rule = self.env.rule if rule is None else rule
        if terminal:
            raise RuleViolation(rule, what, f"{terminal} first ({self._seen()})", evidence=self._terminal_evidence())
        raise RuleViolation(rule, f"{what} within {_ms(timeout)}", f"nothing arrived ({self._seen()})",
                            setting="timeout", evidence=self.evidence(), **({"hint": hint} if hint else {}))

    def next_elements(self, count: int, *, timeout: float | None = None, rule: str | None = None) -> list[Any]:
        """``count`` elements, each within ``timeout`` of the one before (a stall, not a slow stream)."""
        return [self.next_element(timeout=timeout, rule=rule, what=f"element {i + 1} of {count}")
                for i in range(count)]

    def expect_completion(self, *, timeout: float | None = None, rule: str | None = None) -> None:
        """Wait for on_complete; an unconsumed element or an on_error is a violation.

        Rule 1.5 asks a stream that ends for on_complete, not for the end to be known before
        more is asked for: a lazy source learns it only when it pulls the next element, a
        filter when the replacement it asked upstream for turns out to be the end. So when
        every requested element has arrived and neither the end nor another element has, one
        more is requested first (as the JVM TCK's ``requestEndOfStream``), and only silence
        for ``timeout`` after that is a violation; an end that came at the boundary is fine.
        """
        timeout = self.env.settings.timeout if timeout is None else timeout

        def ended() -> bool:
            return bool(self.elements) or self.terminal is not None

        with self._lock:
            spent = (self.subscription is not None and not self._cancelled and self.demand <= 0
                     and not ended())
        further = ""
        if spent:
            self.env.trace.note(f"{self.name}: every requested element arrived, the end has not: "
                                "request(1) for it (the end may be learnt only when more is asked for)")
            self.request(1)
            further = " of a further request(1)"
        self._wait(ended, timeout)
        rule = self.env.rule if rule is None else rule
        with self._lock:
            if self.elements:
                raise RuleViolation(rule, "on_complete (end of stream)", f"on_next({short_repr(self.elements[0])})",
                                    evidence=self.evidence())
            terminal = self.terminal
        if terminal == "on_complete":
            return
        if terminal == "on_error":
            raise RuleViolation(rule, "on_complete", f"{self._terminal_text()}", evidence=self._terminal_evidence())
        raise RuleViolation(rule, f"on_complete within {_ms(timeout)}{further}", f"nothing arrived ({self._seen()})",
                            setting="timeout", evidence=self.evidence())

    def expect_error(
        self, kind: type[BaseException], *, timeout: float | None = None, rule: str | None = None
    ) -> BaseException:
        """Wait for on_error(kind); elements may precede it, other terminals may not."""
        timeout = self.env.settings.timeout if timeout is None else timeout
        self._wait(lambda: self.terminal is not None, timeout)
        rule = self.env.rule if rule is None else rule
        with self._lock:
            terminal, error = self.terminal, self.error
        if terminal is None:
            raise RuleViolation(rule, f"on_error({kind.__name__}) within {_ms(timeout)}",
                                f"no terminal signal ({self._seen()})", setting="timeout",
                                evidence=self.evidence())
        if terminal == "on_complete" or not isinstance(error, kind):
            raise RuleViolation(rule, f"on_error({kind.__name__})", self._terminal_text(),
                                evidence=self._terminal_evidence())
        assert error is not None
        return error

    def expect_terminal(self, *, timeout: float | None = None) -> str | None:
        """Wait for either terminal signal and return which, or None on timeout."""
        timeout = self.env.settings.timeout if timeout is None else timeout
        self._wait(lambda: self.terminal is not None, timeout)
        return self.terminal

    def mark(self) -> int:
        """The number of signals so far, to pass as ``expect_quiet(since=...)``."""
        with self._lock:
            return self.signals

    def expect_quiet(
        self, *, window: float | None = None, rule: str | None = None, after: str = "", since: int | None = None
    ) -> None:
        """Wait a no-signal window: any signal that arrives meanwhile is a violation.

        With ``since`` (from ``mark()``), signals that already arrived after that mark count
        too: a publisher that answers a call synchronously signals before the wait begins.
        """
        window = self.env.settings.no_signal_window if window is None else window
        with self._lock:
            start = self.signals if since is None else since
        with self.env.aside():
            quiet = not self._wait(lambda: self.signals != start, window)
        if quiet:
            return
        rule = self.env.rule if rule is None else rule
        last = self._last_signal()
        shown = f"{last.signal}({last.detail})" if last else "a signal"
        raise RuleViolation(rule, f"no signal {after}".rstrip(), f"{shown} ({self._seen()})",
                            evidence=(last.seq,) if last else ())

    def wait_quiet(self, *, window: float | None = None, limit: float | None = None) -> tuple[int, bool]:
        """Let in-flight signals drain: return once a whole window passes with no signal.

        Returns how many signals arrived meanwhile and whether quiet was reached. Bounded by
        ``limit`` (default: the timeout plus one window) of time the process could run, so a
        publisher that never stops cannot keep us here, and one still delivering what was in
        flight on a starved machine is not taken for one that never stops: each wake-up
        credits at most the window it waited for (``RunningClock``).
        """
        window = self.env.settings.no_signal_window if window is None else window
        limit = self.env.settings.timeout + window if limit is None else limit
        clock = RunningClock()
        spent = 0.0
        first = self.mark()
        with self.env.aside():
            while True:
                if not self._wait(_changed(self, self.mark()), window):
                    return self.signals - first, True
                spent += clock.step(window)
                if spent >= limit:
                    return self.signals - first, False

    def wait_for_signal(self, *, timeout: float | None = None) -> bool:
        """Wait until an unconsumed element or a terminal signal is there; False on timeout."""
        timeout = self.env.settings.timeout if timeout is None else timeout
        return self._wait(lambda: bool(self.elements) or self.terminal is not None, timeout)

    @contextlib.contextmanager
    def acting_for(self, waiting: int) -> Iterator[None]:
        """This thread makes a call that thread ``waiting``, inside a signal method of this
        probe, handed over and waits for. The waiting thread runs nothing meanwhile, so a
        signal the call delivers here (synchronously, as rule 3.10 allows) is not concurrent
        with it, exactly as it would nest had the call been made there (rule 1.3). A signal on
        any third thread still is."""
        me = get_ident()
        with self._lock:
            self._handoffs[waiting] = me
        try:
            yield
        finally:
            with self._lock:
                if self._handoffs.get(waiting) == me:
                    del self._handoffs[waiting]

    def depth(self) -> int:
        """How deeply on_next calls are nested on the calling thread right now (rule 3.3)."""
        return self._depths.get(get_ident(), 0)

    # -- bookkeeping for messages ------------------------------------------------------------

    def _terminal_text(self) -> str:
        if self.terminal == "on_error":
            return f"on_error({type(self.error).__name__}: {short_repr(self.error, 120)})"
        return f"{self.terminal}()" if self.terminal else ""

    def _last_signal(self) -> Record | None:
        for record in reversed(self.env.trace.records()):
            if record.actor == self.name and record.signal.startswith("on_"):
                return record
        return None

    def _subscribe_evidence(self) -> tuple[int, ...]:
        """The subscribe() call that handed this probe over, if the trace has it."""
        mine = repr(self)
        return tuple(r.seq for r in self.env.trace.records() if r.signal == "subscribe" and mine in r.detail)[-1:]

    def evidence(self) -> tuple[int, ...]:
        """What a check of this probe's state rests on: its last call (the request or cancel a
        signal answers) and the last signal it received (what came instead, or last)."""
        last = self._last_signal()
        return cite(self.call_seq, last.seq if last is not None else None)

    def _terminal_evidence(self) -> tuple[int, ...]:
        return () if self.terminal_seq is None else (self.terminal_seq,)

    def _seen(self) -> str:
        return (
            f"{self.name} so far: requested {self._requested_text()}, received {self.received} "
            f"element(s){', then ' + self._terminal_text() if self.terminal else ''}"
        )

    def close(self) -> None:
        """Cancel a subscription the verification left open, so nothing leaks into the next."""
        if self.subscription is not None and not self._cancelled and self.terminal is None:
            self.cancel()


#: A silence of ``timeout`` after ``LONG_STREAM`` signals is a stall only if it lasts this many
#: times longer again: over thousands of gaps a loaded machine pauses that long now and then.
STALL_CONFIRMATION = 3
LONG_STREAM = 64


def _progressed(probe: ProbeSubscriber, predicate: Callable[[], bool], seen: int) -> Callable[[], bool]:
    return lambda: predicate() or probe.signals != seen


def _changed(probe: ProbeSubscriber, seen: int) -> Callable[[], bool]:
    return lambda: probe.signals != seen


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms"


def _thread_name(ident: int) -> str:
    for thread in threading.enumerate():
        if thread.ident == ident:
            return thread.name
    return str(ident)


class RaisingProbe(ProbeSubscriber):
    """A probe that fails as a broken subscriber would: it raises ``SubscriberFailure`` from
    ``raise_on`` ("on_subscribe", "on_next", "on_error" or "on_complete"; for "on_next", from
    the ``at``-th element), once, after recording the signal like any probe.

    ``received_at_raise`` is how many elements had arrived when it raised: any more break 2.13
    (the publisher must consider the subscription cancelled).
    """

    __slots__ = ("raise_at", "raise_on", "raised", "raised_seq", "received_at_raise")

    def __init__(self, env: Environment, name: str = "probe", *, raise_on: str, at: int = 1,
                 **options: Any) -> None:
        super().__init__(env, name, **options)
        self.raise_on = raise_on
        self.raise_at = at
        self.raised = ""
        self.raised_seq: int | None = None
        self.received_at_raise: int | None = None

    def _raise(self, signal: str) -> None:
        self.received_at_raise = self.received
        self.raised = signal
        self.raised_seq = self.env.trace.note(
            f"{self.name}: {signal} raises SubscriberFailure (a failing subscriber, rule 2.13)").seq
        self._rewake()  # waits for "it raised" look at a flag set after the signal was counted
        raise SubscriberFailure(f"{self.name}: {signal} failed (raised by the TCK, rule 2.13 test)")

    def on_subscribe(self, subscription: Subscription) -> None:
        super().on_subscribe(subscription)
        if self.raise_on == "on_subscribe" and not self.raised and subscription is not None:
            self._raise("on_subscribe")

    def on_next(self, element: Any) -> None:
        super().on_next(element)
        if self.raise_on == "on_next" and not self.raised and self.received >= self.raise_at:
            self._raise(f"on_next #{self.received}")

    def on_error(self, exc: BaseException) -> None:
        super().on_error(exc)
        if self.raise_on == "on_error" and not self.raised:
            self._raise("on_error")

    def on_complete(self) -> None:
        super().on_complete()
        if self.raise_on == "on_complete" and not self.raised:
            self._raise("on_complete")
