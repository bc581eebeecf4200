"""Exceptions through which a verification reports its verdict.

The core never imports pytest: it raises these, and the pytest plugin (or any other runner)
maps them to outcomes.
"""

from __future__ import annotations

from collections.abc import Iterable

from .rules import Rule
from .rules import rule as _rule


class TckError(Exception):
    """Base of everything the TCK raises on purpose."""


class RuleViolation(AssertionError, TckError):
    """The subject broke a rule: expected one thing, observed another.

    The message is assembled here, never by hand at a call site, so every failure reads the
    same way: rule and expectation first, then what was seen, then what to check.
    """

    def __init__(
        self,
        rule: Rule | str | None,
        expected: str,
        observed: str,
        *,
        hint: str = "",
        evidence: Iterable[int] = (),
        setting: str | None = None,
    ) -> None:
        self.rule = _rule(rule) if isinstance(rule, str) else rule
        self.expected = expected
        self.observed = observed
        self.hint = hint
        self.evidence = tuple(evidence)
        self.setting = setting
        super().__init__(self.headline())

    def headline(self) -> str:
        where = f"rule {self.rule.id}" if self.rule else "sanity"
        return f"[{where}] expected {self.expected}; observed {self.observed}"

    def details(self) -> list[str]:
        lines = [self.headline()]
        if self.hint:
            lines.append(f"  check   : {self.hint}")
        if self.evidence:
            lines.append(f"  evidence: trace records {', '.join(f'#{n}' for n in self.evidence)}")
        if self.setting:
            lines.append(f"  setting : the verdict rests on the {self.setting} setting")
        if self.rule:
            lines.append(f"  rule    : {self.rule.id} ({self.rule.strength.value}) {self.rule.summary}")
            lines.append(f"  spec    : {self.rule.url}")
        return lines


class NotVerified(TckError):
    """The test does not apply, or cannot run here; carries the reason shown to the user.

    ``kind`` says which: ``"not_applicable"`` (the subject lacks a capability the test needs,
    e.g. no failed publisher or too few elements), ``"untested"`` (the TCK cannot observe the
    rule from outside), ``"deselected"`` (the user switched it off) or
    ``"optional_unsupported"`` (an optional behaviour the subject does not implement).
    """

    def __init__(self, reason: str, *, kind: str = "not_applicable") -> None:
        self.reason = reason
        self.kind = kind
        super().__init__(reason)


class SetupError(TckError):
    """Bad input to the TCK itself (a wrong factory spec, a bad option value)."""
