"""Shared pieces of the unit tests: a subscription that records, the probe environment."""

from __future__ import annotations

import threading
from typing import Any

from rstck import MAX_DEMAND
from rstck._internal.environment import Environment
from rstck.errors import RuleViolation
from rstck.probe import ProbeSubscriber


class NullSubscription:
    def __init__(self) -> None:
        self.requests: list[int] = []
        self.cancels = 0

    def request(self, n: int) -> None:
        self.requests.append(n)

    def cancel(self) -> None:
        self.cancels += 1



class HoldingSubscriber:
    """A subscriber that keeps its subscription and does nothing with what it is sent."""

    subscription: Any = None

    def on_subscribe(self, s: Any) -> None:
        self.subscription = s

    def on_next(self, element: Any) -> None:
        pass

    def on_error(self, error: BaseException) -> None:
        pass

    def on_complete(self) -> None:
        pass


def zero_sleeps(monkeypatch: Any) -> list[str]:
    """From now on, the names of the threads that make a 0 s ``time.sleep`` (a yield of the turn)."""
    import time

    sleeps: list[str] = []
    sleep = time.sleep

    def counting(seconds: float) -> None:
        if seconds == 0:
            sleeps.append(threading.current_thread().name)
        sleep(seconds)

    monkeypatch.setattr(time, "sleep", counting)
    return sleeps


def rules_flagged(env: Environment) -> list[str | None]:
    return [p.error.rule.id if isinstance(p.error, RuleViolation) and p.error.rule else None for p in env.problems]


# -- the probe's fast path: every check it skips must come back when it could matter -------------


def fast_probe(env: Environment, *, demand: int = MAX_DEMAND, elements: int | None = None,
               **kwargs: Any) -> ProbeSubscriber:
    """A probe signalled on the verification's own thread past the trace's head: on its fast path."""
    env.body_ident = threading.get_ident()
    probe = ProbeSubscriber(env, **kwargs)
    probe.on_subscribe(NullSubscription())
    probe.request(demand)
    for i in range(2 * env.settings.trace_keep if elements is None else elements):
        probe.on_next(i)
    assert probe._fast_owner == threading.get_ident()
    return probe


def overlap_of(env: Environment) -> RuleViolation:
    violations = [p.error for p in env.problems if isinstance(p.error, RuleViolation)]
    assert [v.rule.id for v in violations if v.rule] == ["1.3"], env.problems
    return violations[0]
