"""The probe subscriber: a subscriber that records every signal and flags violations live.

It is what the TCK subscribes to the publisher under test. It checks the publisher-side rules
that any single signal can break (order, demand, termination, serial delivery) at the moment
the signal arrives, on the publisher's thread, and records them in the environment; the
verification then asks it for the signals it expects, with bounded waits.
"""

from __future__ import annotations

import collections
import contextlib
import threading
import time
from _thread import get_ident
from collections.abc import Callable
from collections.abc import Iterator
from time import monotonic
from typing import Any

from .api import MAX_DEMAND
from .api import Subscription
from .clock import starved_wait
from .environment import Environment
from .errors import RuleViolation
from .evidence import cite
from .trace import Record
from .trace import short_repr


class ProbeAbort(Exception):
    """Raised from ``on_next`` to stop a publisher that floods a probe far beyond demand.

    A publisher that ignores demand forever would otherwise keep the verification busy until
    its time limit; the violation is already recorded when this is raised.
    """

    rs_tck_internal = True


class SubscriberFailure(RuntimeError):
    """What a ``RaisingProbe`` raises from a signal method: a subscriber's own failure, on purpose.

    Rule 2.13 calls it the subscriber's violation and lets its caller pass it on ("raise this
    error condition in a fashion that is adequate for the runtime environment"), so it escaping
    a publisher's call or thread is no verdict (``rs_tck_internal``); what the publisher does
    next is.
    """

    rs_tck_internal = True


def passes_on_failure(exc: BaseException | None) -> bool:
    """Whether ``exc`` is a ``SubscriberFailure`` passed on: itself, or wrapped with it as the
    explicit cause (``raise ... from failure``). An exception that merely happened while one was
    being handled (a NameError in an ``except`` block) is the publisher's own."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, SubscriberFailure):
            return True
        seen.add(id(exc))
        exc = exc.__cause__
    return False


Hook = Callable[["ProbeSubscriber", Any], None]


class _Waiter:
    """A bounded wait for one condition, woken only when that condition holds."""

    __slots__ = ("gate", "predicate")

    def __init__(self, predicate: Callable[[], bool]) -> None:
        self.predicate = predicate
        self.gate = threading.Lock()
        self.gate.acquire()


class ProbeSubscriber:
    """A well-behaved subscriber that watches the publisher it is subscribed to."""

    # Slots: on_next reads and writes a dozen attributes per signal, a slot is the fastest.
    # Weak references: rule 3.13 tests look for a subscriber the publisher still holds.
    __slots__ = (
        "__weakref__",
        "_cancel_told",
        "_cancelled",
        "_depths",
        "_fast_append",
        "_fast_inside",
        "_fast_key",
        "_fast_owner",
        "_fast_seq",
        "_fast_seqs",
        "_handoffs",
        "_inside_seq",
        "_lock",
        "_methods",
        "_on_next_hook",
        "_others",
        "_pause_s",
        "_racy",
        "_requesting",
        "_sections",
        "_threads",
        "_waiters",
        "after_cancel",
        "after_terminal",
        "call_seq",
        "cancel_queued_at",
        "cancel_ran_at",
        "cancel_seq",
        "concurrent_entries",
        "demand",
        "elements",
        "env",
        "error",
        "excess",
        "keep_elements",
        "max_depth",
        "name",
        "on_subscribe_hook",
        "requested",
        "requested_after_cancel",
        "signals",
        "storm_limit",
        "subscribing",
        "subscription",
        "subscriptions",
        "terminal",
        "terminal_seq",
        "yield_s",
    )

    def __init__(
        self,
        env: Environment,
        name: str = "probe",
        *,
        keep_elements: bool = True,
        on_subscribe: Hook | None = None,
        on_next: Hook | None = None,
        yield_s: float | None = 0.0,
        yield_always: bool = False,
        storm_limit: int = 10_000,
    ) -> None:
        self.env = env
        self.name = name
        env.probes.add(self)
        self.keep_elements = keep_elements
        self.on_subscribe_hook = on_subscribe
        #: The fast path of on_next (see ``_fast_start``): the one thread allowed on it, whether
        #: that thread is inside it right now, and its last trace record. None: every signal
        #: takes the full path.
        self._fast_owner: int | None = None
        self._fast_inside = False
        self._fast_seq: int | None = None
        self._fast_key: tuple[str, str, str] = ("", name, "on_next")
        self._fast_seqs: Iterator[int] = iter(())
        self._fast_append: Callable[[tuple[Any, ...]], None] = _no_row
        self._on_next_hook = on_next
        #: Pause inside every on_* (seconds; None: none) so a racing second thread gets the
        #: interpreter lock while this one is still "inside" and the overlap becomes visible.
        #: Unless ``yield_always``, the pause starts once a race is possible: a signal on a
        #: thread other than the verification's own, or signals from two threads. A synchronous
        #: publisher called from the verification thread cannot race, and pays nothing.
        self.yield_s = yield_s
        self.storm_limit = storm_limit
        self._lock = threading.Lock()
        self._waiters: list[_Waiter] = []
        #: Per thread: how many signal methods it is inside, and how deep in on_next.
        self._sections: dict[int, int] = {}
        self._depths: dict[int, int] = {}
        #: A thread inside a signal method that waits for a call it handed over -> the thread
        #: making that call (see ``acting_for``).
        self._handoffs: dict[int, int] = {}
        #: The thread inside the first on_subscribe, until it returns: the probe's own calls on
        #: the subscription from any other thread wait for that (see ``_after_on_subscribe``).
        self.subscribing: int | None = None
        #: The outermost signal method each thread is inside, to name both sides of an overlap.
        self._methods: dict[int, str] = {}
        #: The trace record of the signal each thread is (or was last) inside.
        self._inside_seq: dict[int, int] = {}
        self._threads: set[int] = set()
        self._racy = yield_s is not None and yield_always
        self._pause_s = 0.0 if yield_s is None else yield_s
        self.subscription: Subscription | None = None
        self.subscriptions: list[Subscription] = []
        self.demand = 0
        self.requested = 0
        self.excess = 0
        self.signals = 0
        #: Signals other than on_next: ``received`` is ``signals`` less these, so on_next
        #: counts once (written before ``signals``: a reader without the lock may see an
        #: element less for a moment, never one more).
        self._others = 0
        self.max_depth = 0
        self.terminal: str | None = None
        self.error: BaseException | None = None
        #: The trace record of the terminal signal, cited when it came too early.
        self.terminal_seq: int | None = None
        self._cancelled = False
        self.elements: collections.deque[Any] = collections.deque()
        self.concurrent_entries = 0
        #: Signals that arrived after a terminal signal, and elements after cancel().
        self.after_terminal = 0
        self.after_cancel = 0
        #: The trace record of the first cancel(), cited by verdicts about what followed it.
        self.cancel_seq: int | None = None
        #: When the first cancel() was made, and when the subject's cancel() began to run: on an
        #: event loop it runs only once the loop gets to it, which a publisher that never
        #: yields its loop prevents (see ``_cancel_not_run``).
        self.cancel_queued_at: float | None = None
        self.cancel_ran_at: float | None = None
        self._cancel_told = False
        #: How many of the probe's request() calls are running in the subject right now (counted
        #: where they run: on an event loop, only while the loop runs them).
        self._requesting = 0
        #: The trace record of the probe's last request() or cancel(): what a wait answers.
        self.call_seq: int | None = None
        self.requested_after_cancel = False

    def __repr__(self) -> str:
        return f"ProbeSubscriber({self.name!r})"

    @property
    def received(self) -> int:
        """Elements received so far (every on_next, within demand or not)."""
        return self.signals - self._others

    @property
    def cancelled(self) -> bool:
        """Whether the probe cancelled its subscription (or a test declared it cancelled)."""
        return self._cancelled

    @cancelled.setter
    def cancelled(self, value: bool) -> None:
        # Elements after a cancel take the full path, which counts them (rule 1.8).
        with self._lock:
            self._fast_end()
            self._cancelled = value

    @property
    def on_next_hook(self) -> Hook | None:
        return self._on_next_hook

    @on_next_hook.setter
    def on_next_hook(self, hook: Hook | None) -> None:
        # The fast path never calls the hook: setting one sends the next signals the full way.
        self._fast_owner = None
        self._on_next_hook = hook

    # -- the Subscriber side (called by the publisher, on any thread) ------------------------

    def on_subscribe(self, subscription: Subscription) -> None:
        overlap = self._enter("on_subscribe")
        mine = False
        try:
            self.env.bump()
            problems: list[tuple[str, str, str]] = []
            with self._lock:
                self._others += 1
                self.signals += 1
                first = self.subscription is None and not self.subscriptions
                if subscription is None:
                    problems.append(("1.9", "on_subscribe with a subscription object", "on_subscribe(None)"))
                elif not first:
                    problems.append((
                        "1.9",
                        "on_subscribe at most once per subscriber (see also 2.12)",
                        f"a second on_subscribe({short_repr(subscription)})",
                    ))
                elif self.signals > 1:
                    problems.append(("1.9", "on_subscribe before any other signal",
                                     "on_subscribe after other signals"))
                if subscription is not None:
                    self.subscriptions.append(subscription)
                    if first:
                        self.subscription = subscription
                        self.subscribing, mine = get_ident(), True
                record = self._record("on_subscribe", short_repr(subscription))
                if self._waiters:
                    self._wake()
            self._flag(problems, overlap, record)
            if subscription is not None and not first:
                # Behave as rule 2.5 asks of a subscriber: cancel the extra subscription.
                self._call("cancel", subscription.cancel)
            self._pause()
            if first and subscription is not None and self.on_subscribe_hook is not None:
                try:
                    self.on_subscribe_hook(self, subscription)
                finally:  # a hook that raises (a failing subscriber) changed state a wait may read
                    self._rewake()
        finally:
            self._exit()
            if mine:
                with self._lock:
                    self.subscribing = None
                    if self._waiters:
                        self._wake()

    def on_next(self, element: Any) -> None:
        me = get_ident()
        if me == self._fast_owner:
            # The fast path: the only thread that ever signalled this probe, nothing unusual
            # (see ``_fast_start``). It marks itself inside first, then re-reads the owner: a
            # thread that closes the path (``_fast_end``) clears the owner first, then looks
            # for this mark, so one of the two always sees the other (rule 1.3).
            self._fast_inside = True
            before = self.demand
            if self._fast_owner == me and before > 0 and element is not None and not self.env.closed:
                if before < MAX_DEMAND:
                    self.demand = before - 1
                self.signals += 1
                if self.keep_elements:
                    self.elements.append(element)
                # env.bump(): the watchdog only looks for a change, and every seq is new.
                seq = self._fast_seq = self.env._progress = next(self._fast_seqs)
                self._fast_append((seq, monotonic(), self._fast_key,
                                   element if type(element) is int else short_repr(element), before))
                self._fast_inside = False
                if self._waiters:
                    self._rewake()
                return
            self._fast_inside = False
        env = self.env
        if env.closed:
            # The verification is over (its thread may have been abandoned): stop whoever
            # still emits, so a runaway publisher does not burn a core for the rest of the run.
            raise ProbeAbort(f"{self.name}: signal after its verification ended")
        # The full path: entering (rule 1.3, nesting depth), checking and recording the
        # element happen under one acquisition of the lock.
        sections, depths = self._sections, self._depths
        problems: list[tuple[str, str, str]] | None = None
        with self._lock:
            rival = self._fast_end() if self._fast_owner not in (None, me) else None
            count = sections.get(me, 0)
            sections[me] = count + 1
            if not count:
                self._methods[me] = "on_next"
            overlap = self._overlap("on_next", me, rival) if len(sections) > 1 or rival else None
            depth = depths[me] = depths.get(me, 0) + 1
            self.max_depth = max(self.max_depth, depth)
            if me not in self._threads:
                self._new_thread(me)
            env._progress += 1  # env.bump(), inlined
            self.signals += 1
            before = self.demand
            if before <= 0 or self.subscription is None or self.terminal is not None \
                    or self._cancelled or element is None:
                problems = self._next_problems(element, before)
                if problems or self.excess:
                    self._fast_end()  # what follows this signal may need the full path
            elif before < MAX_DEMAND:
                self.demand = before - 1
            if self.keep_elements:
                self.elements.append(element)
            seq = self._inside_seq[me] = env.trace.log(self.name, "on_next", short_repr(element), before)
            if self._waiters:
                self._wake()
            flood = max(self.after_terminal, self.excess)
            after_cancel = self.after_cancel
        try:
            if problems or overlap:
                self._flag(problems or [], overlap, seq)
            if flood > self.storm_limit:
                raise ProbeAbort(f"{self.name}: {flood} elements beyond demand or after a terminal signal")
            limit = env.settings.after_cancel_limit
            if after_cancel and self.cancel_ran_at is None and self.cancel_queued_at is not None:
                self._cancel_not_run(after_cancel, seq, after_cancel > limit)
            if after_cancel > limit:
                if after_cancel == limit + 1:
                    env.violation(
                        "1.8", f"signals to stop after cancel(), within {limit} more elements",
                        f"{after_cancel} elements after cancel() and still flowing",
                        hint="re-read the cancelled flag per element, or raise after_cancel_limit "
                        "if larger batches legitimately follow a cancel",
                        evidence=cite(self.cancel_seq, seq),
                        setting="after_cancel_limit",
                    )
                raise ProbeAbort(f"{self.name}: {after_cancel} elements after cancel()")
            if self._racy:
                time.sleep(self._pause_s)
            hook = self._on_next_hook
            if hook is not None:
                try:
                    hook(self, element)
                finally:  # a hook that raises (a failing subscriber) changed state a wait may read
                    self._rewake()
        finally:
            with self._lock:
                left = sections[me] - 1
                if left:
                    sections[me] = left
                else:
                    del sections[me]
                    self._methods.pop(me, None)
                if depth > 1:
                    depths[me] = depth - 1
                else:
                    del depths[me]
                if not sections and not depths and self._fast_owner is None:
                    self._fast_start(me)

    def _next_problems(self, element: Any, before: int) -> list[tuple[str, str, str]]:
        """The rare path of on_next (called under the lock): what this element breaks."""
        problems: list[tuple[str, str, str]] = []
        if self.subscription is None:
            problems.append(("1.9", "on_subscribe before any other signal",
                             f"on_next({short_repr(element)}) before on_subscribe"))
        if self.terminal is not None:
            self.after_terminal += 1
            if self.after_terminal == 1:
                problems.append(("1.7", f"no signal after {self.terminal}",
                                 f"on_next({short_repr(element)}) after {self.terminal}"))
        if self._cancelled:
            self.after_cancel += 1
        if element is None:
            problems.append(("2.13", "elements are never None", "on_next(None)"))
        if before <= 0 and self.subscription is not None and not (self._cancelled and self.requested_after_cancel):
            self.excess += 1
            if self.excess == 1:
                problems.append((
                    "1.1",
                    f"at most {self._requested_text()} on_next in total (the demand requested so far)",
                    f"on_next #{self.received} ({short_repr(element)}) with no outstanding demand",
                ))
        elif before < MAX_DEMAND:
            self.demand = before - 1
        return problems

    def on_error(self, exc: BaseException) -> None:
        self._terminate("on_error", exc)

    def on_complete(self) -> None:
        self._terminate("on_complete", None)

    def _terminate(self, signal: str, exc: BaseException | None) -> None:
        if self.env.closed:
            raise ProbeAbort(f"{self.name}: signal after its verification ended")
        overlap = self._enter(signal)
        try:
            self.env.bump()
            problems: list[tuple[str, str, str]] = []
            shown = f"{signal}({short_repr(exc)})" if signal == "on_error" else "on_complete()"
            with self._lock:
                self._others += 1
                self.signals += 1
                if self.subscription is None:
                    problems.append(("1.9", "on_subscribe before any other signal", f"{shown} before on_subscribe"))
                if self.terminal is not None:
                    self.after_terminal += 1
                    if self.after_terminal == 1:
                        problems.append(("1.7", f"no signal after {self.terminal}", f"{shown} after {self.terminal}"))
                elif signal == "on_error" and exc is None:
                    problems.append(("2.13", "on_error with an exception", "on_error(None)"))
                record = self._record(signal, short_repr(exc) if signal == "on_error" else "")
                if self.terminal is None:
                    self._fast_end()
                    self.terminal = signal
                    self.error = exc
                    self.terminal_seq = record
                    if signal == "on_error" and self.requested == 0 and not _relayed(exc) and self._served_beside():
                        self.env.refused.append(f"{self.name} got {shown}")
                if self._waiters:
                    self._wake()
            self._flag(problems, overlap, record)
            self._pause()
        finally:
            self._exit()

    def _served_beside(self) -> bool:
        """Whether another probe of this verification is subscribed and not ended: an on_error
        before this one asked for anything then reads as a refusal (a unicast subject)."""
        return any(p is not self and p.subscription is not None and p.terminal is None
                   for p in list(self.env.probes))

    # -- rule 1.3: serial signalling ---------------------------------------------------------

    def _enter(self, what: str) -> tuple[str, str, str, tuple[int, ...]] | None:
        """Note this thread inside a signal method; the first overlap is returned as a problem."""
        me = get_ident()
        with self._lock:
            rival = self._fast_end() if self._fast_owner not in (None, me) else None
            sections = self._sections
            count = sections.get(me, 0)
            sections[me] = count + 1
            if not count:
                self._methods[me] = what
            overlap = self._overlap(what, me, rival) if len(sections) > 1 or rival else None
            if me not in self._threads:
                self._new_thread(me)
        return overlap

    def _overlap(
        self, what: str, me: int, rival: int | None = None
    ) -> tuple[str, str, str, tuple[int, ...]] | None:
        # Called with the lock held, when another thread is inside a signal method too:
        # ``rival`` is the fast path's owner, caught inside on_next by ``_fast_end``.
        others = [t for t in self._sections if t != me and self._handoffs.get(t) != me]
        methods = dict(self._methods)
        if rival is not None and rival not in others:
            others.append(rival)
            methods[rival] = "on_next"
        if not others:
            return None
        self.concurrent_entries += 1
        if self.concurrent_entries > 1:
            return None
        inside = tuple(sorted(self._inside_seq[t] for t in others if t in self._inside_seq))
        overlapped = ", ".join(f"{methods.get(t, 'a signal method')} was running on thread {_thread_name(t)}"
                               for t in others)
        return (
            "1.3",
            "signals delivered one at a time (never two threads inside the subscriber at once)",
            (f"{what} entered on thread {threading.current_thread().name} while {overlapped}, "
             "in the same subscriber"),
            inside,
        )

    def _fast_start(self, me: int) -> None:
        """Open the fast path of on_next to thread ``me`` if nothing needs the full one.

        Called with the lock held, at the end of a full on_next with no signal method running.
        The fast path makes every check the full path would make of such a signal (the demand
        is positive, the element not None, the stream neither over nor cancelled) and records
        it alike; it skips what cannot apply: a second thread (any other thread closes the path
        first, and sees whether ``me`` was inside: rule 1.3), the pause (no race possible: none
        asked for, or only ``me`` signalled on the verification's thread), the hook, the flood
        limits (nothing beyond demand yet). A publisher that calls on_subscribe on the caller's
        thread and on_next on its own (every asynchronous one) takes it too, once ``me`` is known. Its trace rows go straight to the tail, so
        it waits until the trace's head is full.
        """
        if (self._on_next_hook is not None or self._racy or me not in self._threads
                or self.subscription is None or self.terminal is not None or self._cancelled
                or self.excess or self.env.closed):
            return
        sink = self.env.trace.tail_sink()
        if sink is None:
            return
        self._fast_seqs, self._fast_append = sink
        self._fast_key = (threading.current_thread().name, self.name, "on_next")
        self._fast_owner = me

    def _fast_end(self) -> int | None:
        """Close the fast path (lock held); returns its owner if that thread was inside it.

        Its owner changes the counters without the lock, so before another thread touches
        them it waits until the owner is out: a few bytecodes, with no call out of the probe
        but an element's ``__repr__``. The owner's last record becomes the one it is "inside"
        for rule 1.3, as on the full path.
        """
        owner = self._fast_owner
        if owner is None:
            return None
        self._fast_owner = None
        inside = False
        if owner != get_ident():
            while self._fast_inside:
                inside = True
                time.sleep(0)
        seq = self._fast_seq
        if seq is not None and seq > self._inside_seq.get(owner, -1):
            self._inside_seq[owner] = seq
        return owner if inside else None

    def _new_thread(self, me: int) -> None:
        # Called with the lock held. A race needs a second thread: pause from now on if one
        # can be there (a thread not the verification's own, or a second one).
        self._threads.add(me)
        self.env.threads.add(me)
        if not self._racy:
            self._racy = self.yield_s is not None and (len(self._threads) > 1 or me != self.env.body_ident)

    def _record(self, signal: str, detail: str, demand: int | None = None) -> int:
        """Trace a signal received, remembering it as the one this thread is inside (rule 1.3)."""
        seq = self.env.trace.log(self.name, signal, detail, self.demand if demand is None else demand)
        self._inside_seq[get_ident()] = seq
        return seq

    def _flag(
        self,
        problems: list[tuple[str, str, str]],
        overlap: tuple[str, str, str, tuple[int, ...]] | None,
        seq: int,
    ) -> None:
        """Record the problems a signal showed, citing its trace record (and, for 1.3, the other's)."""
        if overlap is not None:
            rule, expected, observed, inside = overlap
            self.env.violation(rule, expected, observed, evidence=(*inside, seq))
        for rule, expected, observed in problems:
            self.env.violation(rule, expected, observed, evidence=(seq,))

    def _exit(self) -> None:
        me = get_ident()
        with self._lock:
            left = self._sections.get(me, 1) - 1
            if left:
                self._sections[me] = left
            else:
                self._sections.pop(me, None)
                self._methods.pop(me, None)

    def _pause(self) -> None:
        if self._racy:
            time.sleep(self._pause_s)

    # -- waiting: each wait is woken once, when what it waits for holds ------------------------

    def _wake(self) -> None:
        """Release the waits whose condition now holds (called with the lock held)."""
        for waiter in [w for w in self._waiters if w.predicate()]:
            self._waiters.remove(waiter)
            waiter.gate.release()

    def _rewake(self) -> None:
        # A hook may change what a wait looks at (a flag it sets) after the signal was counted.
        if self._waiters:
            with self._lock:
                self._wake()

    # -- the TCK side: acting on the subscription --------------------------------------------

    def request(self, n: int) -> None:
        """Request ``n`` through the subscription, counting the demand as the probe sees it."""
        subscription = self._require_subscription("request")
        self._after_on_subscribe("request", n)
        with self._lock:
            if self._fast_owner not in (None, get_ident()):
                self._fast_end()
            if n > 0 and not self._cancelled and self.terminal is None:
                self.demand = min(MAX_DEMAND, self.demand + n)
                self.requested = min(MAX_DEMAND, self.requested + n)
            elif n > 0 and self._cancelled:
                # Demand the probe signalled after cancel(): an element it brings breaks 3.6,
                # which the test judges; it is not an element nobody asked for (1.1).
                self.requested_after_cancel = True
            demand = self.demand
        self.call_seq = self.env.trace.log(self.name, "request", str(n), demand)
        self._call("request", self._request_now(subscription), n)

    def _request_now(self, subscription: Subscription) -> Callable[[int], None]:
        """``subscription.request`` that counts itself running (``requesting``) while it runs."""

        def request(n: int) -> None:
            with self._lock:
                self._requesting += 1
            try:
                subscription.request(n)
            finally:
                with self._lock:
                    self._requesting -= 1

        return request

    @property
    def requesting(self) -> bool:
        """Whether a request() of this probe is running in the subject now (an element that
        arrives meanwhile is delivered inside it, rule 3.10)."""
        return self._requesting > 0

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
        self._call("cancel", self._cancel_now(subscription))

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

    def _cancel_not_run(self, after_cancel: int, seq: int, flood: bool) -> None:
        """An element after a cancel() that has not begun to run: is the caller shut out?

        With ``--rs-loop=asyncio`` every call is made on the subject's event loop; a publisher
        that keeps the loop (a drain that never returns to it) delivers element after element
        while the subscriber's cancel() waits in the loop's queue. The subscription was never
        cancelled, so rule 1.8 cannot be judged; rule 3.5 can: the caller's cancel() did not
        return in a timely manner. Said once ``timeout`` has passed or ``after_cancel_limit``
        elements have come (``flood``), whichever is first (the verdict rests on it), and the
        flood is stopped then, which gives the loop back. (Loop callbacks run in order: a
        publisher that yields between batches lets a queued cancel() run after one batch.)
        """
        queued = self.cancel_queued_at
        assert queued is not None
        waited = monotonic() - queued
        if waited <= self.env.settings.timeout and not flood:
            return
        if not self._cancel_told:
            self._cancel_told = True
            self.env.violation(
                "3.5", "cancel() to run and return in a timely manner (on an event loop, once the "
                "loop is given back)",
                f"cancel() was made {waited * 1000:.0f} ms ago and has not run: the event loop was busy "
                f"in the publisher all that time, delivering {after_cancel} element(s) meanwhile, so a "
                "cancel from the subscriber could not land (rule 1.8 cannot be judged: the subscription "
                "was never cancelled)",
                hint="give the loop back between batches (schedule the rest with loop.call_soon, or "
                "await asyncio.sleep(0)): a drain that never returns to the loop shuts out every call "
                "its subscriber makes",
                evidence=cite(self.cancel_seq, seq),
                setting="after_cancel_limit" if flood and waited <= self.env.settings.timeout else "timeout",
            )
        raise ProbeAbort(f"{self.name}: cancel() has not run for {waited * 1000:.0f} ms")

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

    def _call(self, what: str, fn: Callable[..., Any], *args: Any) -> None:
        try:
            self.env.invoke(f"{what}({', '.join(map(str, args))})", fn, *args)
        except ProbeAbort:
            pass  # our own flood guard unwinding through a synchronous publisher
        except Exception as exc:
            if passes_on_failure(exc):
                # A raising probe's own failure, passed on to the caller as rule 2.13 allows.
                self.env.trace.note(f"{what}() passed on the subscriber's failure: {short_repr(exc)}")
                return
            rule = "3.16" if what == "request" else "3.15"
            shown = f"{what}({', '.join(map(str, args))})"
            note = self.env.trace.note(f"{shown} raised {short_repr(exc)}")
            violation = RuleViolation(
                rule,
                f"{shown} to return normally (failures go to on_error)",
                f"it raised {type(exc).__name__}: {short_repr(exc, 200)}",
                evidence=(note.seq,),
            )
            violation.__cause__ = exc
            self.env.flop(violation)

    def _requested_text(self) -> str:
        return "unbounded" if self.requested >= MAX_DEMAND else str(self.requested)

    # -- expectations, called by the verification thread -------------------------------------

    def _wait(self, predicate: Callable[[], bool], timeout: float) -> bool:
        """Block until ``predicate`` holds (checked first, then on each signal), or time out
        (``timeout`` of time the process could run: ``rstck.clock``)."""
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

    def next_element(self, *, timeout: float | None = None, rule: str | None = None, what: str = "an element") -> Any:
        """Wait for the next unconsumed element; a terminal signal first is a violation."""
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
                            setting="timeout", evidence=self.evidence())

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
        ``limit`` (default: the timeout plus one window), so a publisher that never stops
        cannot keep us here.
        """
        window = self.env.settings.no_signal_window if window is None else window
        limit = self.env.settings.timeout + window if limit is None else limit
        deadline = time.monotonic() + limit
        first = self.mark()
        with self.env.aside():
            while True:
                if not self._wait(_changed(self, self.mark()), window):
                    return self.signals - first, True
                if time.monotonic() >= deadline:
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


def _relayed(exc: BaseException | None) -> bool:
    """Whether ``exc`` is, or was caused by, an error the TCK signalled (the kit's own classes)."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        if type(exc).__module__.split(".")[0] in ("rstck", "tck"):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


def _no_row(row: tuple[Any, ...]) -> None:
    raise AssertionError("the fast path is closed")


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
