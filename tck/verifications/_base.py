"""What every verification is made of: a registry of rule tests, each a function of a context."""

from __future__ import annotations

import contextlib
import inspect
import re
import sys
import time
from collections.abc import Callable
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..errors import NotVerified
from ..manual import Preemption
from ..results import LEVELS
from ..rules import Rule
from ..rules import rule as lookup_rule

_NAME = re.compile(rf"^({'|'.join(LEVELS)})_(spec(\d)(\d\d)|sanity)_[a-z0-9_]+$")
#: Fuzz tests check every rule they can observe, so they name none: ``fuzz_<what>``.
_FUZZ_NAME = re.compile(r"^fuzz_[a-z0-9_]+$")


#: The thread switch interval while a test hunts a race. The interpreter's default (5 ms) lets
#: one thread run a whole signal method before another gets the lock, hiding most overlaps;
#: 10 us interleaves them. The runner restores the previous interval even if a test is abandoned.
RACE_SWITCH_INTERVAL = 1e-5


#: How long a call on the TCK's subscription from one of the subject's own threads waits for a
#: rival thread in the 2.7 tests (it ends the moment one enters). Two threads released together
#: are then caught even when the scheduler wakes the second late: with a 0.5 ms pause alone, a
#: processor that splits each request across two threads passed one run in six on an idle machine.
RIVAL_HOLD_S = 0.005


#: Elements sent by a subscriber-side 2.7 hunt: two of three on time, one late (see race_rounds).
RACE_ROUNDS = 72
#: How far into its own code after a request/cancel a subject's thread is paused for a late
#: element, swept from 1 call event to this many: a loop that ends its turn and then makes one
#: more pass does so a dozen events after its request returns.
PREEMPT_SWEEP = 24
#: How long a late element waits for the subject's thread to reach its pause.
PREEMPT_WAIT_S = 0.002
#: How long an element on time waits for a request of the subscriber's own to be in progress.
PROMPT_WAIT_S = 0.002
#: How long a late element waits, at most, for the subscriber to work off the elements before it.
CATCH_UP_S = 0.05


def race_rounds(env: Any, upstream: Any, rounds: int, sent: list[Any] | None = None,
                caught_up: Callable[[float], bool] | None = None) -> list[Any]:
    """Send up to ``rounds`` elements as demand allows, two on time, then one late; returns them.

    An element on time goes out while the subscriber's request() is still held (waiting for a
    rival thread): a second worker the subscriber starts for it is caught there, and two in a
    row catch a worker that handles one more signal after giving up its turn. For a late one
    the TCK lets the request return and pauses the subscriber's thread a swept number of call
    events into its own code (``Preemption``), delivers the element meanwhile, then lets the
    thread go on: the element lands, in turn, at each point of the code that follows a request,
    among them the moment when a delivery loop has given up its turn but still has work in hand.
    ``caught_up(timeout)`` (the whitebox probe's: one element at most left to process) holds a
    late element back until the subscriber has worked off the others, so that its loop is about
    to run dry. Stops at a cancel() or when demand runs out.
    """
    sub = upstream.subscription
    sent = [] if sent is None else sent
    direct = env.dispatch is type(env)._direct
    requested, first = sub.request_count, len(sent)
    preemption = sub.preemption = Preemption()
    try:
        for i in range(rounds):
            if upstream.wait_demand(until_cancelled=True) <= 0 or sub.cancelled:
                break
            # A call from the test's thread (a synchronous subscriber) has no thread to pause, and
            # a subject served on its event loop would have the TCK's signal wait on the pause.
            threaded = sub.last_caller != env.body_ident
            late = i % 3 == 2 and threaded and direct
            if not late and threaded and 2 * (sub.request_count - requested) >= len(sent) - first:
                # On time means while a request of the subscriber's own is held: with demand to
                # spare (a whitebox puppet's), a subscriber that answers most elements with a
                # request is given a moment to begin one (one that asks in batches is not).
                sub.wait_inside(PROMPT_WAIT_S)
            if late:
                if caught_up is not None:
                    deadline = time.monotonic() + CATCH_UP_S
                    while not caught_up(PREEMPT_WAIT_S) and time.monotonic() < deadline:
                        sub.release()  # holds end early while the subscriber catches up
                preemption.arm(1 + (i // 3) % PREEMPT_SWEEP)
                sub.release()
                preemption.wait_paused(PREEMPT_WAIT_S)
            try:
                sent.append(upstream.send_next())
            finally:
                if late:
                    preemption.resume()
            env.count_iterations(len(sent), sub.overlaps)
            env.check()
    finally:
        sub.preemption = None
        preemption.resume()
    return sent


@contextlib.contextmanager
def aggressive_switching(interval: float = RACE_SWITCH_INTERVAL) -> Iterator[None]:
    """Switch threads as often as ``interval`` for the duration (never less often than now)."""
    previous = sys.getswitchinterval()
    sys.setswitchinterval(min(previous, interval))
    try:
        yield
    finally:
        sys.setswitchinterval(previous)


@dataclass(frozen=True)
class TckTest:
    """One verification of one rule; ``func`` is its body, run on a TCK-owned thread."""

    name: str
    verification: str
    rule: Rule | None
    level: str
    func: Callable[[Any], None]
    doc: str
    untested_reason: str = ""

    @property
    def rule_id(self) -> str | None:
        return self.rule.id if self.rule else None

    @property
    def test_id(self) -> str:
        """The id shown to users, carrying the rule: ``required_spec309_...[3.9]``, ``fuzz_...[fuzz]``."""
        if self.level == "fuzz":
            return f"{self.name}[fuzz]"
        return f"{self.name}[{self.rule.id if self.rule else 'sanity'}]"


class Registry:
    """The ordered tests of one verification class."""

    def __init__(self, verification: str) -> None:
        self.verification = verification
        self.tests: list[TckTest] = []

    def __call__(self, rule_id: str | None, level: str) -> Callable[[Callable[[Any], None]], Callable[[Any], None]]:
        """Register a test; its name must spell its level and rule (``required_spec309_...``)."""

        def register(func: Callable[[Any], None]) -> Callable[[Any], None]:
            self._add(func.__name__, rule_id, level, func, func.__doc__ or "")
            return func

        return register

    def untested(self, name: str, rule_id: str, reason: str) -> None:
        """Register a rule this verification cannot observe, with the reason shown in reports."""

        def body(ctx: Any) -> None:
            raise NotVerified(reason, kind="untested")

        self._add(name, rule_id, "untested", body, reason, untested_reason=reason)

    def include(self, tests: list[TckTest], *, via: Callable[[Any], Any] | None = None) -> None:
        """Run another verification's ``tests`` here too, under their own names and rules.

        ``via`` gives each test the view of this verification's context that it was written
        for (a processor's publisher view runs the publisher tests).
        """
        for test in tests:
            func = test.func if via is None else _through(via, test.func)
            self._add(test.name, test.rule_id, test.level, func, test.doc, test.untested_reason)

    def _add(self, name: str, rule_id: str | None, level: str, func: Callable[[Any], None], doc: str,
             untested_reason: str = "") -> None:
        if level == "fuzz":
            if not _FUZZ_NAME.match(name) or rule_id is not None:
                raise ValueError(f"fuzz test name {name!r} must start with 'fuzz_' and name no rule")
            if any(t.name == name for t in self.tests):
                raise ValueError(f"duplicate test name {name!r}")
            self.tests.append(TckTest(name, self.verification, None, level, func, _dedent(doc)))
            return
        match = _NAME.match(name)
        if level not in LEVELS or not match or match.group(1) != level:
            raise ValueError(f"test name {name!r} must start with '{level}_spec<rule>_' or '{level}_sanity_'")
        if rule_id is not None:
            major, minor = match.group(3), match.group(4)
            if match.group(2) == "sanity" or f"{int(major)}.{int(minor)}" != rule_id:
                raise ValueError(f"test name {name!r} does not spell its rule {rule_id}")
        if any(t.name == name for t in self.tests):
            raise ValueError(f"duplicate test name {name!r}")
        rule = lookup_rule(rule_id) if rule_id is not None else None
        self.tests.append(TckTest(name, self.verification, rule, level, func, _dedent(doc), untested_reason))


def _through(via: Callable[[Any], Any], func: Callable[[Any], None]) -> Callable[[Any], None]:
    def body(ctx: Any) -> None:
        func(via(ctx))

    body.__name__ = body.__qualname__ = func.__name__
    body.__doc__ = func.__doc__
    return body


def _dedent(doc: str) -> str:
    return inspect.cleandoc(doc) if doc else ""
