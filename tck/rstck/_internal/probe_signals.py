"""The probe's subscriber side: what it holds, and the rules a signal breaks as it arrives.

``ProbeSubscriber`` (``rstck.probe``) is this class with the TCK's side added: its requests and
cancels on the subscription, and the bounded waits a verification makes for the signals it
expects. Here are the signals themselves: each is checked for the publisher-side rules any
single signal can break (order, demand, termination, serial delivery, 1.3) at the moment it
arrives, on the publisher's thread, recorded in the environment, and wakes the waits it
satisfies. on_next has a fast path for a long stream from one thread (``_fast_start``).
"""

from __future__ import annotations

import collections
import threading
import time
from _thread import get_ident
from collections.abc import Callable
from collections.abc import Iterator
from time import monotonic
from typing import Any

from ..api import MAX_DEMAND
from ..api import Subscription
from ..errors import RuleViolation
from .environment import Environment
from .evidence import cite
from .reach import alone_with_idle_kit_threads
from .trace import short_repr
from .watching import thread_name


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


#: A hook a test hangs on a probe signal: called with the probe (a ``ProbeSubscriber``) and the value.
Hook = Callable[[Any, Any], None]


class _Waiter:
    """A bounded wait for one condition, woken only when that condition holds."""

    __slots__ = ("gate", "predicate")

    def __init__(self, predicate: Callable[[], bool]) -> None:
        self.predicate = predicate
        self.gate = threading.Lock()
        self.gate.acquire()


class ProbeSignals:
    """The probe's subscriber side: its state, and the checks each signal gets as it arrives."""

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
        self._init_counts()

    def _init_counts(self) -> None:
        """The subscription, demand and signal counts, and the records verdicts cite."""
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
        #: The probe's request() calls running in the subject right now, one entry each (counted
        #: where they run: on an event loop, only while the loop runs them).
        self._requesting: collections.deque[int] = collections.deque()
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
            if self._fast_owner == me and before > 0 and element is not None:
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
        if env.closed:  # the verification is over: stop a runaway publisher burning a core
            raise ProbeAbort(f"{self.name}: signal after its verification ended")
        # The full path: entering (rule 1.3, nesting depth), checking and recording the element
        # under one hold of the lock (not ``with``: on CPython 3.11 that costs the lock twice over).
        sections, depths, lock = self._sections, self._depths, self._lock
        problems: list[tuple[str, str, str]] | None = None
        lock.acquire()
        try:
            rival = self._fast_end() if self._fast_owner not in (None, me) else None
            count = sections.get(me, 0)
            sections[me] = count + 1
            if not count:
                self._methods[me] = "on_next"
            overlap = self._overlap("on_next", me, rival) if len(sections) > 1 or rival else None
            depth = depths[me] = depths.get(me, 0) + 1
            if depth > 1 or not self.max_depth:  # (max() is a call: only when it may change)
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
            seq = self._inside_seq[me] = env.trace.log(  # an int is shown when read, as on the fast path
                self.name, "on_next", element if type(element) is int else short_repr(element), before)
            if self._waiters:
                self._wake()
            after_terminal, excess, after_cancel = self.after_terminal, self.excess, self.after_cancel
        finally:
            lock.release()
        try:
            if problems or overlap:
                self._flag(problems or [], overlap, seq)
            if after_terminal > self.storm_limit or excess > self.storm_limit or after_cancel:
                self._beyond(max(after_terminal, excess), after_cancel, seq)
            if self._racy and env.racing(self) and (me != env.body_ident or not alone_with_idle_kit_threads()):
                time.sleep(self._pause_s)
            hook = self._on_next_hook
            if hook is not None:
                try:
                    hook(self, element)
                finally:  # a hook that raises (a failing subscriber) changed state a wait may read
                    if self._waiters:
                        self._rewake()
        finally:
            self._leave_next(me, depth)

    def _leave_next(self, me: int, depth: int) -> None:
        """on_next returns on thread ``me``: out of its section; the fast path opens once no
        thread is inside a signal (``_fast_start``)."""
        sections, depths = self._sections, self._depths
        lock = self._lock
        lock.acquire()  # (not ``with``: see ``on_next``)
        try:
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
            if not sections and not depths and self._fast_owner is None and self._on_next_hook is None:
                self._fast_start(me)
        finally:
            lock.release()

    def _beyond(self, flood: int, after_cancel: int, seq: int) -> None:
        """An element beyond demand, after a terminal signal or after cancel(): past the limits,
        the flood is stopped (``ProbeAbort``) once its verdict is recorded (1.8, 3.5)."""
        env = self.env
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
        overlapped = ", ".join(f"{methods.get(t, 'a signal method')} was running on thread {thread_name(t)}"
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
        thread and on_next on its own (every asynchronous one) takes it too, once ``me`` is
        known. Its trace rows go straight to the tail, so it waits until the trace's head is
        full; the end of the verification closes it (``_fast_close``).
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
        if self.env.closed:  # closed meanwhile: ``_fast_close`` may have run before the line above
            self._fast_owner = None

    def _fast_close(self) -> None:
        """The verification ended (``Environment.uninstall``): the next signal takes the full
        path, which stops the publisher (``ProbeAbort``). An element on the fast path right
        now is still counted, as one that came a moment earlier would have been."""
        self._fast_owner = None

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
        # On the verification's thread with every other thread idle, no rival can come in.
        if self._racy and self.env.racing(self) and (
                get_ident() != self.env.body_ident or not alone_with_idle_kit_threads()):
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

    def _call(self, what: str, fn: Callable[..., Any], *args: Any, shown: str | None = None) -> None:
        """Make the call ``what`` (``fn(*args)``, shown as ``what(args)`` unless ``shown`` says
        otherwise) through the environment; what it raises is judged here (3.15, 3.16)."""
        if shown is None:
            shown = f"{what}({', '.join(map(str, args))})"
        try:
            self.env.invoke(shown, fn, *args)
        except ProbeAbort:
            pass  # our own flood guard unwinding through a synchronous publisher
        except Exception as exc:
            self._call_raised(what, shown, exc)

    def _call_raised(self, what: str, shown: str, exc: Exception) -> None:
        """The call ``what`` (shown as ``shown``) raised ``exc``: a violation (3.15, 3.16), unless
        it passes on a raising probe's own failure."""
        if passes_on_failure(exc):
            # A raising probe's own failure, passed on to the caller as rule 2.13 allows.
            self.env.trace.note(f"{what}() passed on the subscriber's failure: {short_repr(exc)}")
            return
        rule = "3.16" if what == "request" else "3.15"
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
