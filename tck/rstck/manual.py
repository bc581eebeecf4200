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
feeder thread that delivers ``n`` elements as demand arrives (the upstream of a processor under
test); or ``count=n, inline=True``, which delivers inside ``request()`` itself, as rules 3.10
and 3.11 allow a publisher to, so a subscriber that is not ready for it is caught.
"""

from __future__ import annotations

import os
import re
import sys
import threading
import time
import weakref
from collections.abc import Callable
from collections.abc import Iterator
from functools import partial
from types import CodeType
from types import FrameType
from typing import Any

from .api import MAX_DEMAND
from .clock import starved_wait
from .environment import Environment
from .errors import RuleViolation
from .errors import SetupError
from .evidence import cite
from .probe import passes_on_failure
from .reach import KIT_PREFIX
from .reach import nothing_else_runs
from .reach import thread_frames
from .trace import short_repr
from .worker import spawn

#: ``listener(signal, value)`` is told of each signal just before it is delivered.
Listener = Callable[[str, Any], None]

_UNSET: Any = object()

#: The kit's own source files: their calls are not steps of the subject's code (``Preemption``).
_KIT = os.path.dirname(os.path.abspath(__file__)) + os.sep
#: ...except the reference implementations shipped with it, which are subjects like any other.
_REFERENCE = _KIT + "reference" + os.sep
#: The standard library's own folder: its code runs on behalf of whoever called it.
_STDLIB = os.path.dirname(os.path.abspath(threading.__file__)) + os.sep


def _stdlib(filename: str) -> bool:
    # (a user's code installed beside it, in site-packages, is not). "<string>": code the
    # standard library generated, such as a dataclass's __init__, runs for whoever called it too.
    return filename.startswith("<frozen ") or filename == "<string>" or (
        filename.startswith(_STDLIB) and "-packages" not in filename[len(_STDLIB):])


def kits_step(frame: Any) -> bool:
    """Whether ``frame`` runs the kit's code, or the standard library's on the kit's behalf.

    A whitebox probe's report, or the subscription's own exit, calls into ``threading``: those
    events are the kit's, not steps of the subject's code after its call.
    """
    for step in _stack(frame):
        name = step.f_code.co_filename
        if not _stdlib(name):
            return name.startswith(_KIT) and not name.startswith(_REFERENCE)
    return False


def _stack(frame: Any) -> Iterator[FrameType]:
    """``frame`` and its callers, innermost first, stopping at anything that is not a frame.

    CPython 3.11 syncs a frame's locals with its ``f_locals`` dict around every trace and
    profile call (PEP 667 ended that in 3.13), so where the kit's hunts trace a thread, a stale
    dict written back has been seen to replace a local of a frame walk with another value (a
    dict, a code object). Walking in a generator keeps the cursor out of the caller's locals,
    and the type check ends a walk that would otherwise raise inside the subject's call.
    """
    while isinstance(frame, FrameType):
        yield frame
        frame = frame.f_back


def _subjects_file(filename: str) -> bool:
    return not _stdlib(filename) and (not filename.startswith(_KIT) or filename.startswith(_REFERENCE))


#: Per subscriber class: the code of its methods, and of the functions nested in them.
_OWN_CODE: weakref.WeakKeyDictionary[type, tuple[frozenset[CodeType], frozenset[CodeType]]] = (
    weakref.WeakKeyDictionary())


def _code_in(value: Any) -> list[CodeType]:
    """The code of a class attribute: a function, a static or class method, a property."""
    try:
        fns = ((value.fget, value.fset, value.fdel) if isinstance(value, property)
               else (getattr(value, "__func__", value),))
        codes = [getattr(fn, "__code__", None) for fn in fns]
    except Exception:  # an odd descriptor: no code of its own
        return []
    return [c for c in codes if isinstance(c, CodeType)]


def _own_code(cls: type) -> tuple[frozenset[CodeType], frozenset[CodeType]]:
    known = _OWN_CODE.get(cls)
    if known is not None:
        return known
    methods: set[CodeType] = set()
    for klass in cls.__mro__:
        for value in list(vars(klass).values()):
            methods.update(c for c in _code_in(value) if _subjects_file(c.co_filename))
    nested: set[CodeType] = set()
    todo = [c for m in methods for c in m.co_consts if isinstance(c, CodeType)]
    while todo:
        code = todo.pop()
        if code not in nested:
            nested.add(code)
            todo.extend(c for c in code.co_consts if isinstance(c, CodeType))
    known = _OWN_CODE[cls] = (frozenset(methods), frozenset(nested - methods))
    return known




def runs_code_of(subscriber: Any) -> bool:
    """Whether a thread other than the caller is inside ``subscriber``'s own code just now.

    Its own code: a method of its class (running for it or for another instance of it; the
    kit's own threads delivering signals left out), or a function nested in one (a worker's
    closure, a lambda). A worker processing an element is (however long that takes, sleeping
    or blocked in a call); a ``threading.Timer`` or an
    executor's thread waiting to run something is not, nor is a coroutine suspended at an
    ``await``. What ``rstck.reach`` is to threads, this is to the subscriber's work: evidence
    that it still has something to work off. One look at every thread's stack: microseconds.
    """
    try:
        methods, nested = _own_code(type(subscriber))
    except TypeError:  # a class that takes no weak reference: no evidence
        return False
    if not methods and not nested:
        return False
    me = threading.get_ident()
    names = {t.ident: t.name for t in threading.enumerate() if t.ident is not None}
    for ident, top in thread_frames().items():
        name = names.get(ident, "")
        if ident == me or (name.startswith(KIT_PREFIX) and "loop" not in name):
            continue  # the kit delivering a signal is not the subscriber's own work
        for step in _stack(top):
            code = step.f_code
            # Which instance a method runs for is not asked (``frame.f_locals`` on another
            # thread's frame is unsafe in CPython 3.11: it can write stale values back into
            # that frame): another instance of the class at work counts too, which only errs
            # towards not accusing.
            if code in nested or code in methods:
                return True
    return False


#: A ``ThreadPoolExecutor``'s worker's name: its prefix, an underscore and its number.
_POOLED = re.compile(r"(.+)_\d+")


def _pool_of(name: str) -> str | None:
    match = _POOLED.fullmatch(name)
    return match.group(1) if match else None


def all_busy_in_subjects_code(idents: set[int]) -> bool:
    """Whether the threads ``idents`` (but the caller's, dead ones and the kit's) all run a
    subject's code now, and there is one at least.

    The threads that called a subscription include a shared pool's workers: while every one of
    them (the pool's others too, told by their names) is busy with some subject's task, the
    subscriber's own next task may be waiting behind them in the pool's queue, not running
    anywhere; once one is free, a task of its would run.
    The kit's own threads (but its event loops) only ever call subjects while a test drives
    them, and are left out.
    """
    frames = thread_frames()
    names = {t.ident: t.name for t in threading.enumerate() if t.ident is not None}
    me = threading.get_ident()
    # An executor's workers are named ``<prefix>_<n>``: the one that called stands for them all.
    pools = {_pool_of(names.get(i, "")) for i in idents} - {None}
    busy = False
    for ident in set(idents) | {i for i, n in names.items() if _pool_of(n) in pools}:
        frame: Any = frames.get(ident)
        name = names.get(ident, "")
        if frame is None or ident == me or (name.startswith(KIT_PREFIX) and "loop" not in name):
            continue
        if not any(_subjects_file(step.f_code.co_filename) for step in _stack(frame)):
            return False  # free: it would take a task of the subscriber's now
        busy = True
    return busy


#: How long after a terminal signal the 2.4 tests keep watching for a request or cancel: the
#: period of a credit timer, the time a worker takes to drain a backlog. A closing window,
#: overlapped with the next tests.
AFTER_TERMINAL_WINDOW_S = 1.0
#: Once that watch has been quiet for a window, how often it looks again for a thread that could
#: still call (``rstck.reach``): the thread in the way is often only busy for a moment.
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


def _at_most(n: int) -> str:
    return "none" if n == 0 else f"at most {n}"


def _demand_text(n: int) -> str:
    return "unbounded" if n >= MAX_DEMAND else str(n)


class ManualSubscription:
    """The subscription handed to the subject: it records, checks and accounts every call."""

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

    def _begin_request(self, n: Any) -> tuple[int, bool]:
        """Count a request as it begins: its number among those after the end (0: before it)."""
        amount = n if isinstance(n, int) and not isinstance(n, bool) and n > 0 else 0
        with self.publisher._mutex:
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
            busy = ", ".join(f"{_thread_name(t)} in {w}" for t, w in others.items())
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
            spawn(partial(self._feed, subscription), f"rs-tck:{self.name}-feeder")
        return subscription

    # -- the TCK's side: sending -------------------------------------------------------------

    def send_next(self, *, subscription: ManualSubscription | None = None,
                  timeout: float | None = None, rule: str | None = None) -> Any:
        """Wait for demand, then deliver the next element; never sends beyond demand."""
        sub = subscription or self.subscription
        timeout = self.env.settings.timeout if timeout is None else timeout
        with self._cond:
            ready = starved_wait(
                lambda step: self._cond.wait_for(lambda: sub.demand > 0 or self._answering(sub), step), timeout)
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
        """Outstanding demand once there is some, or 0 if none arrives in time.

        ``until_cancelled``: stop waiting at a cancel() too (none will come after it).
        """
        sub = subscription or self.subscription
        timeout = self.env.settings.timeout if timeout is None else timeout
        with self._cond:
            self._cond.wait_for(lambda: sub.demand > 0 or (until_cancelled and sub.cancelled), timeout)
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
        with self._cond:
            done = self._cond.wait_for(lambda: sub.requested >= total, timeout)
            seen = sub.describe()
        if not done:
            raise RuleViolation(rule or self.env.rule,
                                f"{what or f'requests adding up to {total}'} within {_ms(timeout)}",
                                seen, setting="timeout", evidence=sub.evidence())

    def expect_request(self, *, subscription: ManualSubscription | None = None,
                            timeout: float | None = None, rule: str | None = None,
                            what: str = "") -> None:
        """Wait until the subscriber has called request() at least once.

        Unlike ``expect_demand`` it also sees a request whose demand inline delivery used up
        before it returned.
        """
        sub = subscription or self.subscription
        timeout = self.env.settings.timeout if timeout is None else timeout
        with self._cond:
            done = self._cond.wait_for(lambda: sub.request_count > 0, timeout)
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
        with self._cond:
            return self._cond.wait_for(lambda: sub.cancelled, timeout)

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
        call (``rstck.reach``). Idle: a quiet window since the end, its latest call and the last
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
                        if quiet_for >= quiet:
                            sub.idle = True  # the backlog is worked off: any request now is unexplained
                    if sub.idle:
                        if on_loop:
                            step = remaining  # the loop runs the subject's callbacks: the whole watch
                        elif nothing_else_runs():
                            return  # no thread is left that could make a request (rstck.reach)
                        else:
                            # Another thread is busy (pytest reporting a verdict, a subject's
                            # worker): look again soon rather than a whole window later.
                            step = _RECHECK_S
                    seen = sub.calls
                    self._cond.wait_for(_changed(sub, seen), min(step, remaining))

        return claim

    def settle(self, *, subscription: ManualSubscription | None = None,
               window: float | None = None, limit: float | None = None, idle: bool = True) -> bool:
        """Return once a whole window passes with no request or cancel; False if never.

        The subscriber is then idle (see ``ManualSubscription._late``) until it is sent or asked
        for something, or calls again, unless one of its threads was seen in its code during
        the window (``runs_code_of``: a worker still busy with an element); with ``idle=False``
        (a window too short to tell a finished subscriber from a slow one) it is not marked so.
        Marking it starts the 2.4 watch (``ManualSubscription.watch``).
        """
        sub = subscription or self.subscription
        window = self.env.settings.no_signal_window if window is None else window
        limit = self.env.settings.timeout + window if limit is None else limit
        deadline = time.monotonic() + limit
        if idle:
            sub.watch()
        with self.env.aside(), self._cond:
            while True:
                seen = sub.calls
                until = time.monotonic() + window
                worked = False
                while sub.calls == seen:
                    left = until - time.monotonic()
                    if left <= 0:
                        break
                    self._cond.wait_for(_changed(sub, seen), min(left, _WORK_POLL_S) if idle else left)
                    worked = (idle and sub.working()) or worked
                if sub.calls == seen:
                    sub.idle = sub.idle or (idle and not worked)
                    return True
                if time.monotonic() >= deadline:
                    return False

    def wait_sent(self, count: int, *, subscription: ManualSubscription | None = None,
                  timeout: float | None = None) -> bool:
        """Wait until ``count`` elements went out (automatic modes)."""
        sub = subscription or self.subscription
        timeout = self.env.settings.timeout if timeout is None else timeout
        with self._cond:
            return self._cond.wait_for(
                lambda: sub.sent >= count or sub.broken or sub.terminal is not None, timeout
            )

    # -- machinery ---------------------------------------------------------------------------

    def _pause(self) -> None:
        if self.yield_s is not None:
            time.sleep(self.yield_s)

    def _next(self, sub: ManualSubscription, rule: str | None) -> Any:
        """Deliver the next element; ``_UNSET`` (nothing sent) once an illegal request is answered."""
        with self._mutex:
            if self._answering(sub):
                return _UNSET
            self._claim(sub)
            index = sub.sent
            before = sub.demand
            sub.sent += 1
            sub.idle = False
            if before < MAX_DEMAND:
                sub.demand = before - 1
            if self._cond._waiters:  # type: ignore[attr-defined]  # wait_sent, the feeder
                self._cond.notify_all()
        try:
            element = self.element(index)
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
        self.env.bump()

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
            answer = self._take_answer(sub) if left == 0 else None
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
        count = self.count if self.count is not None else 0
        limit = self.env.settings.test_limit
        def ready() -> bool:
            return self._stopped(sub) or sub.sent >= count or sub.demand > 0

        while True:
            with self._mutex:
                # Demand already there (the usual case in a long stream): no wait to set up.
                if not ready() and not self._cond.wait_for(ready, limit):
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


class Preemption:
    """Pause a subject's thread in its own code, just after it left a request/cancel (rule 2.7).

    Under the interpreter lock, a thread runs the few instructions after a call in one go, so
    a signal from the TCK almost never lands between them: a delivery loop that gives up its
    turn and then makes one more pass hides the moment when a second worker can start beside it.
    Armed with ``k``, the next subject thread to leave the subscription stops at its ``k``-th
    call event outside the kit's own code (a profile hook on that thread only) and
    waits there, bounded, while the TCK delivers a signal; sweeping ``k`` walks the signal across
    the subject's code after the call. The hook removes itself at once after; a thread that
    already has a profiler (the user's) is left alone.
    """

    #: The longest a paused thread waits for the TCK (a signal blocked on a lock the paused
    #: thread holds ends the pause this way).
    PAUSE_S = 0.01

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._target: int | None = None  # armed: pause at this many call events
        self._round = 0
        self._paused = 0  # the round a thread is paused in
        self._resumed = 0  # the last round the TCK is done with

    def arm(self, k: int) -> None:
        with self._cond:
            self._round += 1
            self._target = k

    @property
    def armed(self) -> bool:
        """A thread leaving the subscription now is to be paused: calls hold no longer."""
        return self._target is not None

    def wait_paused(self, timeout: float) -> bool:
        with self._cond:
            return self._cond.wait_for(lambda: self._paused == self._round, timeout)

    def resume(self) -> None:
        with self._cond:
            self._target = None
            self._resumed = self._round
            self._cond.notify_all()

    def install(self) -> None:
        with self._cond:
            target, round_ = self._target, self._round
            if target is None:
                return
            self._target = None  # one thread per round
        if sys.getprofile() is not None:
            return  # a profiler of the user's own is on this thread: leave it alone
        left = [target]

        def hook(frame: Any, event: str, arg: Any) -> None:
            if event not in ("call", "c_call") or kits_step(frame):
                return  # the kit's own code (a whitebox probe's report) is not the subject's step
            left[0] -= 1
            if left[0] > 0:
                return
            sys.setprofile(None)
            with self._cond:
                if self._resumed >= round_:
                    return
                self._paused = round_
                self._cond.notify_all()
                self._cond.wait_for(lambda: self._resumed >= round_, self.PAUSE_S)

        sys.setprofile(hook)


def _changed(sub: ManualSubscription, seen: int) -> Callable[[], bool]:
    return lambda: sub.calls != seen


def _thread_name(ident: int) -> str:
    for thread in threading.enumerate():
        if thread.ident == ident:
            return thread.name
    return str(ident)
