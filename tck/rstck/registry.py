"""The test record and the registry every verification kind fills: a rule test is a function of a
context, registered with the rule it verifies, its level, and what it declares about itself.

A test declares, at its registration and nowhere else, everything the kit says about it: where it
stands against the JVM TCK (``parity``), the calling contexts of rules it creates (``covers``,
the rows of the rule x context table) and the editions that leave it out (``left_out_of``). The
tables of docs/verifications.md, the README and the editions are derived from these records.

Low in the tower on purpose: the runner and the scheduler run ``TckTest`` records without
loading the verifications that define them (``rstck.verifications``).
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ._internal.matrix import Cover
from ._internal.parity import Parity
from .errors import NotVerified
from .results import LEVELS
from .results import Level
from .rules import Rule
from .rules import rule as lookup_rule

_NAME = re.compile(rf"^({'|'.join(LEVELS)})_(spec(\d)(\d\d)|sanity)_[a-z0-9_]+$")
#: Fuzz tests check every rule they can observe, so they name none: ``fuzz_<what>``.
_FUZZ_NAME = re.compile(r"^fuzz_[a-z0-9_]+$")


@dataclass(frozen=True)
class TckTest:
    """One verification of one rule; ``func`` is its body, run on a TCK-owned thread."""

    name: str
    verification: str
    rule: Rule | None
    level: Level
    func: Callable[[Any], None]
    doc: str
    untested_reason: str = ""
    #: Mostly the TCK's own work on the subject (thousands of elements), few windows: it starts
    #: after the tests that mostly wait, so its work fills their windows (``Schedule``).
    busy: bool = False
    #: Where it stands against the JVM TCK; every test of the kit's own declares it.
    parity: Parity | None = None
    #: The rules' calling contexts it creates (``rstck._internal.matrix``), declared where it is defined.
    covers: tuple[Cover, ...] = ()
    #: (edition, why) for each edition whose verification leaves this test out.
    left_out_of: tuple[tuple[str, str], ...] = ()

    def left_out_reason(self, edition: str) -> str | None:
        """Why edition ``edition`` leaves this test out, or None if it runs it."""
        return dict(self.left_out_of).get(edition)

    def __post_init__(self) -> None:
        object.__setattr__(self, "level", Level(self.level))  # a word given is its member

    @property
    def rule_id(self) -> str | None:
        return self.rule.id if self.rule else None

    @property
    def test_id(self) -> str:
        """The id shown to users, carrying the rule: ``required_spec309_...[3.9]``, ``fuzz_...[fuzz]``."""
        if self.level == Level.FUZZ:
            return f"{self.name}[fuzz]"
        return f"{self.name}[{self.rule.id if self.rule else 'sanity'}]"


class Registry:
    """The ordered tests of one verification class."""

    def __init__(self, verification: str) -> None:
        self.verification = verification
        self.tests: list[TckTest] = []

    def __call__(self, rule_id: str | None, level: str, *, busy: bool = False, parity: Parity | None = None,
                 covers: tuple[Cover, ...] = (), left_out_of: Mapping[str, str] | None = None,
                 ) -> Callable[[Callable[[Any], None]], Callable[[Any], None]]:
        """Register a test; its name must spell its level and rule (``required_spec309_...``).

        ``parity``, ``covers`` and ``left_out_of`` are what the test declares about itself (see
        ``TckTest``); the rule tables are derived from them.
        """

        def register(func: Callable[[Any], None]) -> Callable[[Any], None]:
            self._add(func.__name__, rule_id, level, func, func.__doc__ or "", busy=busy,
                      facts=_Facts(parity, covers, tuple((left_out_of or {}).items())))
            return func

        return register

    def untested(self, name: str, rule_id: str, reason: str, *, parity: Parity | None = None,
                 left_out_of: Mapping[str, str] | None = None) -> None:
        """Register a rule this verification cannot observe, with the reason shown in reports."""

        def body(ctx: Any) -> None:
            raise NotVerified(reason, kind="untested")

        self._add(name, rule_id, "untested", body, reason, untested_reason=reason,
                  facts=_Facts(parity, (), tuple((left_out_of or {}).items())))

    def include(self, tests: list[TckTest], *, via: Callable[[Any], Any] | None = None) -> None:
        """Run another verification's ``tests`` here too, under their own names and rules.

        ``via`` gives each test the view of this verification's context that it was written
        for (a processor's publisher view runs the publisher tests).
        """
        for test in tests:
            func = test.func if via is None else _through(via, test.func)
            # The contexts it creates stay declared where it is defined (one row each, not two).
            facts = _Facts(test.parity, (), test.left_out_of)
            self._add(test.name, test.rule_id, test.level, func, test.doc, test.untested_reason,
                      busy=test.busy, facts=facts)

    def _add(self, name: str, rule_id: str | None, level: str, func: Callable[[Any], None], doc: str,
             untested_reason: str = "", *, busy: bool = False, facts: _Facts | None = None) -> None:
        facts = facts or _Facts()
        for cover in facts.covers:
            lookup_rule(cover.rule)  # a KeyError naming the valid ids
        if level == Level.FUZZ:
            if not _FUZZ_NAME.match(name) or rule_id is not None:
                raise ValueError(f"fuzz test name {name!r} must start with 'fuzz_' and name no rule")
            if any(t.name == name for t in self.tests):
                raise ValueError(f"duplicate test name {name!r}")
            self.tests.append(TckTest(name, self.verification, None, Level(level), func, _dedent(doc),
                                      parity=facts.parity, covers=facts.covers,
                                      left_out_of=facts.left_out_of))
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
        self.tests.append(TckTest(name, self.verification, rule, Level(level), func, _dedent(doc),
                                  untested_reason, busy, facts.parity, facts.covers, facts.left_out_of))


@dataclass(frozen=True)
class _Facts:
    """What a test declares about itself at its registration (see ``TckTest``)."""

    parity: Parity | None = None
    covers: tuple[Cover, ...] = ()
    left_out_of: tuple[tuple[str, str], ...] = ()


def _through(via: Callable[[Any], Any], func: Callable[[Any], None]) -> Callable[[Any], None]:
    def body(ctx: Any) -> None:
        func(via(ctx))

    body.__name__ = body.__qualname__ = func.__name__
    body.__doc__ = func.__doc__
    return body


def _dedent(doc: str) -> str:
    return inspect.cleandoc(doc) if doc else ""
