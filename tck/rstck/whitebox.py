"""The whitebox probe: how a subscriber under test tells the TCK what it really did.

A whitebox factory ``f(probe) -> Subscriber`` builds the subscriber around the probe it is
given. The subscriber hands the probe a *puppet* (two callables through which the TCK makes it
request or cancel) and wraps the processing of each signal in a context manager::

    def on_subscribe(self, subscription):
        self.subscription = subscription
        self.probe.register(request=subscription.request, cancel=subscription.cancel)

    def on_next(self, element):
        with self.probe.next(element):      # counts once the block exits normally
            self.handle(element)

A report counts when its ``with`` block is left normally: "processed", not "the call
returned". So an asynchronous subscriber reports from the thread that does the work, and the
TCK waits for that. Every report is checked against the signals the TCK really sent: an element
processed twice, one never signalled or a completion that never happened breaks rule 2.11 (the
processing must see the signals as they were made). See ``docs/whitebox.md``.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable
from types import TracebackType
from typing import Any
from typing import Protocol

from ._internal.clock import starved_wait
from ._internal.environment import Environment
from ._internal.evidence import cite
from ._internal.trace import short_repr
from .errors import RuleViolation


class Puppet(Protocol):
    """What the TCK pulls: make the subscriber request ``n`` more (possibly in parts), or cancel."""

    def request(self, n: int) -> None: ...

    def cancel(self) -> None: ...


class _Callables:
    """A puppet made of two callables."""

    __slots__ = ("_cancel", "_request")

    def __init__(self, request: Callable[[int], Any], cancel: Callable[[], Any]) -> None:
        self._request = request
        self._cancel = cancel

    def request(self, n: int) -> None:
        self._request(n)

    def cancel(self) -> None:
        self._cancel()


class Report:
    """``with probe.next(x):``: the signal counts as processed when the block exits normally.

    A report that is created but never entered is a mistake in the test wrapper (the call
    alone reports nothing); the TCK says so instead of timing out without a hint.
    """

    __slots__ = ("_probe", "_signal", "_state", "_value")

    def __init__(self, probe: WhiteboxProbe, signal: str, value: Any) -> None:
        self._probe = probe
        self._signal = signal
        self._value = value
        self._state = "new"

    def __enter__(self) -> None:
        self._state = "entered"

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._state = "done"
        if ev is None:
            self._probe._processed(self._signal, self._value)
        else:
            self._probe._failed(self._signal, self._value, ev)

    def __del__(self) -> None:
        if getattr(self, "_state", "done") == "new":
            # No locks here: a finalizer may run anywhere. The TCK thread reads this list.
            self._probe._unused.append(_shown(self._signal, self._value))


class WhiteboxProbe:
    """Given to the whitebox factory; the subscriber reports to it, the TCK waits on it."""

    def __init__(self, env: Environment, name: str = "probe") -> None:
        self._env = env
        self._name = name
        self._cond = threading.Condition()
        self._puppet: Puppet | None = None
        self._registrations = 0
        self._pending: list[Any] = []  # elements signalled, not yet reported processed
        self._done: collections.deque[Any] = collections.deque()  # reported, not yet expected
        self._terminal: tuple[str, BaseException | None] | None = None  # signalled
        self._reported_terminal: list[tuple[str, BaseException | None]] = []
        self._processed_count = 0
        self._unused: list[str] = []
        #: Every exception the TCK signalled with on_error to the subscriber (``signalled``).
        self._errors_sent: list[BaseException] = []
        #: A processor's own failures that reached its TCK downstream (``own_error``).
        self._own_errors: list[BaseException] = []

    def __repr__(self) -> str:
        return f"WhiteboxProbe({self._name!r})"

    # -- the subscriber's side ---------------------------------------------------------------

    def register(
        self,
        puppet: Puppet | None = None,
        /,
        *,
        request: Callable[[int], Any] | None = None,
        cancel: Callable[[], Any] | None = None,
    ) -> None:
        """Hand the TCK the puppet: an object with ``request(n)``/``cancel()``, or two callables.

        Call it once, when the subscription has been received (usually in ``on_subscribe``);
        later registrations are ignored. The puppet must act *through the subscriber*: a
        subscriber that serialises its calls on the subscription routes these too (rule 2.7).
        """
        if puppet is not None:
            if request is not None or cancel is not None:
                raise TypeError("probe.register(): pass a puppet or request=/cancel=, not both")
            request = getattr(puppet, "request", None)
            cancel = getattr(puppet, "cancel", None)
        if not callable(request) or not callable(cancel):
            raise TypeError(
                "probe.register() needs a request(n) and a cancel() callable, e.g. "
                "probe.register(request=subscription.request, cancel=subscription.cancel)"
            )
        with self._cond:
            self._registrations += 1
            first = self._puppet is None
            if first:
                self._puppet = _Callables(request, cancel)
            self._cond.notify_all()
        self._env.trace.add(self._name, "register", "puppet" if first else "puppet again: ignored")

    def next(self, element: Any) -> Report:
        """``with probe.next(element):`` around the processing of one element."""
        return Report(self, "on_next", element)

    def complete(self) -> Report:
        """``with probe.complete():`` around the processing of on_complete."""
        return Report(self, "on_complete", None)

    def error(self, exc: BaseException) -> Report:
        """``with probe.error(exc):`` around the processing of on_error."""
        return Report(self, "on_error", exc)

    # -- reports, from any thread ------------------------------------------------------------

    def _processed(self, signal: str, value: Any) -> None:
        self._env.bump()
        problem = ""
        with self._cond:
            self._processed_count += 1
            if signal == "on_next":
                index = _find(self._pending, value)
                if index is None:
                    problem = (
                        f"processed on_next({short_repr(value)}), which "
                        + ("was already processed" if _find(self._done, value) is not None
                           else "was never signalled or was already processed")
                    )
                else:
                    del self._pending[index]
                    self._done.append(value)
            else:
                sent = self._terminal
                if sent is None or sent[0] != signal:
                    problem = f"processed {_shown(signal, value)}, which was never signalled"
                elif self._reported_terminal:
                    problem = f"processed {_shown(signal, value)} a second time"
                self._reported_terminal.append((signal, value))
            self._cond.notify_all()
        self._env.trace.add(self._name, "processed", _shown(signal, value))
        if problem:
            self._env.violation(
                "2.11",
                "the processing to see each signal exactly as it was made, once",
                problem,
                hint="hand each signal to the processing logic through a queue (not a shared field "
                "that the next signal overwrites), and report what was processed",
            )

    def _failed(self, signal: str, value: Any, error: BaseException) -> None:
        self._env.trace.note(
            f"{self._name}: processing {_shown(signal, value)} raised {short_repr(error)}"
        )

    # -- the TCK's side ----------------------------------------------------------------------

    def signalled(self, signal: str, value: Any) -> None:
        """Listener for the upstream: note each signal before it is delivered."""
        with self._cond:
            if signal == "on_next":
                self._pending.append(value)
            elif signal in ("on_complete", "on_error"):
                self._terminal = (signal, value)
                if signal == "on_error" and value is not None:
                    self._errors_sent.append(value)

    def relays_sent_error(self, exc: BaseException) -> bool:
        """Whether ``exc`` is (or chains) an exception the TCK signalled with on_error.

        A processor's TCK downstream reports an on_error as the processing of the TCK's only
        then: a processor is a publisher too, and may end its stream with a failure of its own
        (rules 1.4, 4.1), such as the on_error some processors send after refusing a None
        argument (rule 2.13). The TCK's exceptions are its own objects, so identity tells them
        apart: a relay of one, made twice or when none was signalled, is still caught (2.11).
        """
        with self._cond:
            sent = list(self._errors_sent)
        return any(_carries(exc, error) for error in sent)

    def own_error(self, exc: BaseException) -> None:
        """A processor signalled a failure of its own downstream: noted, not counted as processing."""
        with self._cond:
            self._own_errors.append(exc)
            self._cond.notify_all()
        self._env.trace.note(
            f"{self._name}: the processor's own on_error({short_repr(exc)}) reached its downstream: not a "
            "relay of a signal the TCK sent (a processor may fail on its own, rules 1.4 and 4.1)")

    @property
    def registrations(self) -> int:
        return self._registrations

    def expect_puppet(self, *, timeout: float | None = None, rule: str | None = None) -> Puppet:
        timeout = self._env.settings.timeout if timeout is None else timeout
        with self._cond:
            starved_wait(lambda step: self._cond.wait_for(lambda: self._puppet is not None, step), timeout)
            puppet = self._puppet
        if puppet is None:
            raise RuleViolation(
                rule or self._env.rule,
                f"probe.register(...) within {timeout * 1000:.0f} ms of on_subscribe",
                "no puppet was registered",
                setting="timeout",
                hint="the whitebox subscriber must call probe.register(request=..., cancel=...) "
                "once it has its subscription; see docs/whitebox.md",
            )
        return puppet

    def expect_next(self, element: Any, *, timeout: float | None = None,
                    rule: str | None = None) -> None:
        """Wait until the processing of ``element`` is reported."""
        self._expect(f"processing of on_next({short_repr(element)}) reported",
                     lambda: _find(self._done, element) is not None, timeout, rule,
                     "wrap the processing in `with probe.next(element):`",
                     signal=f"on_next({short_repr(element)})")
        with self._cond:
            index = _find(self._done, element)
            if index is not None:
                del self._done[index]

    @property
    def processed_count(self) -> int:
        """Reports of processing so far: it moves while a subscriber works off a backlog."""
        return self._processed_count

    def wait_pending(self, most: int, timeout: float) -> bool:
        """Wait until at most ``most`` elements signalled are not yet reported processed."""
        with self._cond:
            return starved_wait(lambda step: self._cond.wait_for(lambda: len(self._pending) <= most, step), timeout)

    def expect_complete(self, *, timeout: float | None = None, rule: str | None = None) -> None:
        self._expect("processing of on_complete() reported",
                     lambda: any(s == "on_complete" for s, _ in self._reported_terminal),
                     timeout, rule, "wrap the processing in `with probe.complete():`", signal="on_complete()")

    def expect_error(self, error: BaseException, *, timeout: float | None = None,
                     rule: str | None = None) -> None:
        """Wait for the report of on_error; it must carry ``error`` (or chain it)."""
        self._expect("processing of on_error() reported",
                     lambda: any(s == "on_error" for s, _ in self._reported_terminal),
                     timeout, rule, "wrap the processing in `with probe.error(exc):`", signal="on_error(")
        with self._cond:
            reported = next(v for s, v in self._reported_terminal if s == "on_error")
        if not _carries(reported, error):
            raise RuleViolation(
                rule or self._env.rule,
                f"on_error processed with the exception signalled, {short_repr(error)}",
                f"it reported {short_repr(reported)}", evidence=self._sent("on_error("),
            )

    def _sent(self, signal: str) -> tuple[int, ...]:
        """The record of the latest ``signal`` sent to the subscriber (``on_next(3)``, or a
        prefix such as ``on_error(``): what a report of its processing answers."""
        for record in reversed(self._env.trace.records()):
            if f"{record.signal}({record.detail})".startswith(signal) and record.actor != self._name:
                return (record.seq,)
        return ()

    def _expect(self, what: str, predicate: Callable[[], bool], timeout: float | None,
                rule: str | None, hint: str, signal: str = "") -> None:
        timeout = self._env.settings.timeout if timeout is None else timeout
        self._check_unused()
        with self._cond:
            # A processor that ended its stream with a failure of its own reports nothing more.
            starved_wait(lambda step: self._cond.wait_for(lambda: predicate() or bool(self._own_errors), step), timeout)
            done = predicate()
            status = self._status()
            own = list(self._own_errors)
        self._check_unused()
        if not done and own:
            raise RuleViolation(
                rule or self._env.rule, what,
                f"the processor ended its stream with an on_error of its own, "
                f"{short_repr(own[0])}, which neither is nor wraps an exception the TCK signalled ({status})",
                hint="relay the upstream's signals as they came (an error as it is, or as the cause of "
                "the one relayed)", evidence=cite(*self._sent(signal), *self._sent("on_error(")))
        if not done:
            raise RuleViolation(rule or self._env.rule, f"{what} within {timeout * 1000:.0f} ms",
                                f"no such report ({status})", hint=hint, setting="timeout",
                                evidence=self._sent(signal) or self._sent(""))

    def _check_unused(self) -> None:
        if self._unused:
            raise RuleViolation(
                None,
                f"`with probe.{_method(self._unused[0])}:` around the processing",
                f"{self._unused[0]} was reported with a plain call, which reports nothing",
                hint="probe.next/complete/error return context managers: the signal counts as "
                "processed when the `with` block exits",
            )

    def _status(self) -> str:
        terminal = ", ".join(_shown(s, v) for s, v in self._reported_terminal) or "no terminal"
        own = "".join(f"; the processor's own on_error({short_repr(e)}) downstream" for e in self._own_errors)
        return (
            f"{self._name} so far: {self._processed_count} report(s); "
            f"{len(self._pending)} element(s) signalled but not reported; {terminal} reported{own}"
        )


def _shown(signal: str, value: Any) -> str:
    return f"{signal}({'' if signal == 'on_complete' else short_repr(value)})"


def _method(shown: str) -> str:
    name = shown.split("(", 1)[0].removeprefix("on_")
    return f"{name}(...)"


def _find(items: Any, value: Any) -> int | None:
    """Index of ``value`` in ``items``: the same object first, else an equal one."""
    for i, item in enumerate(items):
        if item is value:
            return i
    for i, item in enumerate(items):
        if _equal(item, value):
            return i
    return None


def _equal(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:  # an element type with a broken __eq__ is matched by identity only
        return False


def _carries(reported: BaseException | None, error: BaseException) -> bool:
    """``reported`` is ``error``, or wraps it as its cause or context."""
    seen: set[int] = set()
    current = reported
    while current is not None and id(current) not in seen:
        if current is error:
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False
