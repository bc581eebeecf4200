"""Exceptions through which a verification reports its verdict.

The core never imports pytest: it raises these, and the pytest plugin (or any other runner)
maps them to outcomes.
"""

from __future__ import annotations

import traceback
from collections.abc import Iterable

from .results import Failure
from .results import Verdict
from .rules import Rule
from .rules import rule as _rule


class TckError(Exception):
    """Base of everything the TCK raises on purpose."""


class RuleViolation(AssertionError, TckError):
    """The subject broke a rule: expected one thing, observed another.

    ``evidence`` names the trace records (by ``seq``) that show it, and ``setting`` the
    heuristic setting the verdict rests on (a timeout, a window), so that reports can point
    at both. The text is never assembled at a call site: it is the failure's headline.
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

    def failure(self) -> Failure:
        """This violation as the data the results carry."""
        return Failure(
            rule=self.rule.id if self.rule else None,
            expected=self.expected,
            observed=self.observed,
            hint=self.hint,
            evidence=self.evidence,
            setting=self.setting,
        )

    def headline(self) -> str:
        return self.failure().headline()


class NotVerified(TckError):
    """The test does not apply, or cannot run here; carries the reason shown to the user.

    ``kind`` says which: ``"not_applicable"`` (the subject lacks a capability the test needs,
    e.g. no failed publisher or too few elements), ``"untested"`` (the TCK cannot observe the
    rule from outside), ``"deselected"`` (the user switched it off) or
    ``"optional_unsupported"`` (an optional behaviour the subject does not implement).
    """

    def __init__(self, reason: str, *, kind: Verdict | str = Verdict.NOT_APPLICABLE) -> None:
        self.reason = reason
        self.kind = Verdict(kind)
        super().__init__(reason)


class SetupError(TckError):
    """Bad input to the TCK itself (a wrong factory spec, a bad option value)."""


def format_frames(frames: Iterable[traceback.FrameSummary]) -> str:
    """Frames as ``traceback.format_list`` writes them, without the column carets.

    On Python 3.11 the carets come from ``ast.parse``, whose node constructor keeps one
    recursion count per interpreter: two threads building AST nodes at once can fail with
    "SystemError: AST constructor recursion depth mismatch" (CPython issue 106905), and the
    kit's threads format tracebacks while the host (pytest) may be parsing on its own.
    """
    return "".join(f'  File "{f.filename}", line {f.lineno}, in {f.name}\n'
                   + (f"    {f.line.strip()}\n" if f.line else "") for f in frames)


def format_exception(exc: BaseException, *, limit: int = 8) -> str:
    """``exc`` with its last ``limit`` frames, as ``traceback.format_exception`` writes it, without
    carets (see ``format_frames``)."""
    frames = traceback.extract_tb(exc.__traceback__)[-limit:]
    head = "Traceback (most recent call last):\n" if frames else ""
    return head + format_frames(frames) + "".join(traceback.format_exception_only(type(exc), exc))

