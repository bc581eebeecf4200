"""The per-verification environment: settings, the signal trace and the error sink.

Probes run on whatever thread the subject uses, so they never raise a verdict there: they
*record* problems here, and the verification's own thread raises them at its next check.
Errors raised on threads the subject owns (``threading.excepthook``) and in finalizers
(``sys.unraisablehook``) are captured too, and every one of them is reported, not the first.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
import weakref
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Iterator
from dataclasses import dataclass
from types import TracebackType
from typing import Any
from typing import Protocol
from typing import Self

from ..errors import RuleViolation
from ..settings import Settings
from .trace import Trace
from .trace import short_repr

#: Problems kept per verification; more are counted, not kept.
MAX_PROBLEMS = 50


@dataclass(frozen=True)
class Problem:
    """Something that went wrong off the verification's thread, with where it happened."""

    error: BaseException
    thread: str
    source: str  # "probe", "thread", "unraisable"

    @property
    def origin(self) -> str:
        """Where the problem was seen, for the report."""
        where = {
            "probe": "seen by a probe",
            "thread": "uncaught in a thread",
            "unraisable": "unraisable (e.g. in __del__ or a callback)",
            "loop": "raised in an event-loop callback or task",
        }[self.source]
        return f"{where}, on thread {self.thread}"


class Slot(Protocol):
    """A scheduler's permission to call the subject; the test's body gives it up to only wait."""

    def release(self) -> None: ...

    def acquire(self) -> None: ...

    def close(self) -> None: ...


class Environment:
    """Collects problems and signals for one verification run."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.trace = Trace(settings.trace_keep)
        self._lock = threading.Lock()
        self._problems: list[Problem] = []
        self._changed = threading.Condition(self._lock)
        self._progress = 0
        self.problems_dropped = 0
        self._installed = False
        #: The call into the subject the verification thread is blocked in, and since when.
        self.current_call: tuple[str, float] | None = None
        #: Identity of the thread running the verification body (the one the watchdog watches).
        self.body_ident: int | None = None
        #: The rule the running verification checks; expectations cite it by default.
        self.rule: str | None = None
        self.closed = False
        #: Rounds a test that repeats a race ran, and how many showed it (``{"ran", "showed"}``).
        self.iterations: dict[str, int] | None = None
        #: The probes of this verification (weakly: a rule 3.13 test waits for one to be
        #: collected), and the subscribers refused while another was served: ``name: signal``.
        self.probes: weakref.WeakSet[Any] = weakref.WeakSet()
        self.refused: list[str] = []
        #: How calls into the subject are made; the default calls on the current thread.
        self.dispatch: Callable[..., Any] = self._direct
        #: Threads seen working for this verification (its body, threads that signalled its
        #: probes or called its upstream): errors on them are this verification's, even while
        #: other verifications run at the same time.
        self.threads: set[int] = set()
        #: The scheduler's say in when this verification may call its subject (``aside``).
        self.slot: Slot | None = None
        self._turn_waited = 0.0
        self._turn_since: float | None = None
        self._aside = False
        #: Turns the watchdog's "blocked" verdict into one that says where the body was (a fuzz
        #: verification names its scenario, its trace and its replay token); None: as it is.
        self.on_stall: Callable[[RuleViolation], RuleViolation] | None = None
        #: The environment nested in this one that is recording now (a fuzz scenario's).
        self.nested: Environment | None = None

    # -- problems ---------------------------------------------------------------------------

    def flop(self, error: BaseException, source: str = "probe") -> None:
        """Record a problem; the verification raises it at its next check."""
        if self.closed:
            return
        if isinstance(error, RuleViolation):
            self.trace.keep(error.evidence)  # still among the last records: kept for the report
        with self._lock:
            self._keep(Problem(error, threading.current_thread().name, source))

    def violation(
        self,
        rule: str | None,
        expected: str,
        observed: str,
        *,
        hint: str = "",
        evidence: Iterable[int] = (),
        setting: str | None = None,
    ) -> None:
        """Record a violation seen off the verification's thread, citing the records that show it.

        Without ``evidence`` the violation cites the note it leaves in the trace, which marks
        the moment it was seen.
        """
        note = self.trace.note(f"violation of rule {rule}: {observed}" if rule else f"problem: {observed}")
        cited = tuple(evidence) or (note.seq,)
        self.flop(RuleViolation(rule, expected, observed, hint=hint, evidence=cited, setting=setting))

    def _keep(self, problem: Problem) -> None:
        # Bounded, like the trace: a subject that fails on every element must not turn the
        # report into megabytes. The count of the rest is still reported.
        if len(self._problems) < MAX_PROBLEMS:
            self._problems.append(problem)
        else:
            self.problems_dropped += 1
        self._changed.notify_all()

    @property
    def problems(self) -> list[Problem]:
        with self._lock:
            return list(self._problems)

    def check(self) -> None:
        """Raise the first recorded problem; the runner reports the others beside it."""
        problems = self.problems
        if problems:
            raise as_violation(problems[0], self.rule)

    def count_iterations(self, ran: int, showed: int) -> None:
        """Note how many rounds of a race a test ran so far, and how many showed it."""
        self.iterations = {"ran": ran, "showed": showed}

    # -- progress, for the watchdog ---------------------------------------------------------

    @contextlib.contextmanager
    def aside(self) -> Iterator[None]:
        """A wait during which the body calls nothing (a no-signal window): the scheduler may
        let another verification call its own subject meanwhile; the slot is taken back (which
        may wait) before the body goes on. A no-op off the body's thread, when nested, and
        inside a call into the subject: the subject's code is then on the stack, perhaps
        holding a lock the verification given the slot would wait for (a deadlock)."""
        slot = self.slot
        if (slot is None or self._aside or threading.get_ident() != self.body_ident
                or self.current_call is not None):
            yield
            return
        self._aside = True
        slot.release()
        try:
            yield
        finally:
            self._aside = False
            self._turn_since = time.monotonic()
            try:
                slot.acquire()
            finally:
                self._turn_waited += time.monotonic() - self._turn_since
                self._turn_since = None

    def turn_waited(self) -> float:
        """Seconds spent waiting for the turn back after a window, while other tests called their
        subjects: not this test's time, so not held against its limit (``test_limit``)."""
        since = self._turn_since
        return self._turn_waited + (time.monotonic() - since if since is not None else 0.0)

    def racing(self, probe: object = None) -> bool:
        """Whether ``probe``'s signal on a thread that may be raced (see ``ProbeSignals._racy``)
        should yield for a moment, so that a second thread entering the subscriber shows: here
        always; a fuzz scenario, which knows what its threads wait for, says when none could.
        """
        return True

    def bump(self) -> None:
        """Note that a signal arrived: the subject is alive even if a call has not returned."""
        self._progress += 1  # a racy increment is fine: the watchdog only looks for change

    @property
    def progress(self) -> int:
        return self._progress

    # -- hooks for errors on foreign threads -------------------------------------------------

    def install(self) -> None:
        _ROUTER.add(self)
        self._installed = True

    def uninstall(self) -> None:
        if not self._installed:
            return
        _ROUTER.remove(self)
        self._installed = False
        self.closed = True
        for probe in list(self.probes):
            probe._fast_close()

    def owns(self, ident: int) -> bool:
        return ident in self.threads or ident == self.body_ident

    def _excepthook(self, args: threading.ExceptHookArgs) -> None:
        if args.exc_type is SystemExit or args.exc_value is None:
            return
        if getattr(args.exc_value, "rs_tck_internal", False):
            return  # our own flood guard, already reported as the violation it stands for
        name = args.thread.name if args.thread is not None else "?"
        with self._lock:
            self._keep(Problem(args.exc_value, name, "thread"))
        self.trace.note(f"uncaught {short_repr(args.exc_value)} in thread {name}")

    def _unraisablehook(self, args: Any) -> None:
        exc = args.exc_value
        if exc is None:
            return
        with self._lock:
            self._keep(Problem(exc, threading.current_thread().name, "unraisable"))

    def __enter__(self) -> Self:
        self.install()
        return self

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.uninstall()

    def invoke(self, label: str, fn: Callable[..., Any], *args: Any) -> Any:
        """Call into the subject: watched by the watchdog, and run where the subject lives.

        Every call the TCK makes into a subject goes through here, so a subject that must be
        called on a particular thread or event loop can be served by replacing ``dispatch``.
        """
        # ``_direct`` is called only where another dispatch is set: a call less on every
        # request of a probe.
        dispatch = self.dispatch
        if self.current_call is not None or _get_ident() != self.body_ident:
            # Only the verification thread's outermost call is marked (``calling``); a
            # feeder's or a subject's thread just calls.
            return fn(*args) if dispatch is _DIRECT else dispatch(fn, *args)
        if type(self).calling is not Environment.calling:  # marked elsewhere (a fuzz scenario's)
            with self.calling(label):
                return dispatch(fn, *args)
        # ``calling``, inlined: a test makes thousands of calls.
        self.current_call = (label, _monotonic())
        try:
            return fn(*args) if dispatch is _DIRECT else dispatch(fn, *args)
        finally:
            self.current_call = None

    @staticmethod
    def _direct(fn: Callable[..., Any], *args: Any) -> Any:
        return fn(*args)

    @contextlib.contextmanager
    def calling(self, label: str) -> Iterator[None]:
        """Mark the verification thread as inside a call into the subject, for the watchdog."""
        mine = threading.get_ident() == self.body_ident and self.current_call is None
        if mine:
            self.current_call = (label, time.monotonic())
        try:
            yield
        finally:
            if mine:
                self.current_call = None


_DIRECT = Environment._direct
_get_ident = threading.get_ident
_monotonic = time.monotonic


class _Router:
    """The process's thread and unraisable hooks while verifications run, shared by all of them.

    Verifications overlap (their no-signal windows, or ``concurrency``), so the hooks are
    installed once, by the first, and restored by the last. An error goes to the verification
    that owns the thread it happened on; one on a thread nobody owns goes to the verification
    started last, as it did when only one ran at a time.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._active: list[Environment] = []
        self._previous: tuple[Callable[[threading.ExceptHookArgs], Any], Callable[[Any], Any]] | None = None

    def add(self, env: Environment) -> None:
        with self._lock:
            if not self._active:
                self._previous = (threading.excepthook, sys.unraisablehook)
                threading.excepthook = self._excepthook
                sys.unraisablehook = self._unraisablehook
            self._active.append(env)

    def remove(self, env: Environment) -> None:
        with self._lock:
            if env in self._active:
                self._active.remove(env)
            if self._active or self._previous is None:
                return
            # Only restore if nobody replaced our hooks meanwhile; otherwise leave theirs alone.
            if threading.excepthook == self._excepthook:
                threading.excepthook = self._previous[0]
            if sys.unraisablehook == self._unraisablehook:
                sys.unraisablehook = self._previous[1]
            self._previous = None

    def owner(self, ident: int) -> Environment | None:
        with self._lock:
            for env in reversed(self._active):
                if env.owns(ident):
                    return env
            return self._active[-1] if self._active else None

    def _excepthook(self, args: threading.ExceptHookArgs) -> None:
        thread = args.thread
        env = self.owner(thread.ident if thread is not None and thread.ident else threading.get_ident())
        if env is not None:
            env._excepthook(args)

    def _unraisablehook(self, args: Any) -> None:
        env = self.owner(threading.get_ident())
        if env is not None:
            env._unraisablehook(args)


_ROUTER = _Router()


def as_violation(problem: Problem, rule: str | None = None) -> RuleViolation:
    """The problem as a violation: itself if it is one, else "an exception escaped"."""
    if isinstance(problem.error, RuleViolation):
        return problem.error
    error = problem.error
    where = {"thread": "a thread", "unraisable": "a finalizer or callback", "probe": "a probe",
             "loop": "the event loop"}
    violation = RuleViolation(
        rule,
        f"no exception escaping {where[problem.source]}",
        f"{short_repr(error, 200)} on thread {problem.thread}",
    )
    violation.__cause__ = error
    violation.problem = problem  # type: ignore[attr-defined]  # so reports list it only once
    return violation
