"""Running whole verifications without a test framework (campaigns, scripts, other runners)."""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Iterable
from typing import Any

from .results import TestResult
from .runner import run_test
from .settings import Settings
from .subjects import PublisherSubject
from .verifications import VERIFICATIONS
from .verifications import publisher
from .verifications._base import TckTest


def select(
    tests: Iterable[TckTest], *, rules: Iterable[str] = (), skip_rules: Iterable[str] = ()
) -> list[TckTest]:
    """Tests whose rule is in ``rules`` (all if empty) and not in ``skip_rules``.

    ``"sanity"`` names the tests that check the factory itself rather than a rule, ``"fuzz"``
    the fuzz tests (they check every rule they can observe).
    """
    wanted, unwanted = set(rules), set(skip_rules)

    def key(test: TckTest) -> str:
        return "fuzz" if test.level == "fuzz" else test.rule_id or "sanity"

    return [t for t in tests if (not wanted or key(t) in wanted) and key(t) not in unwanted]


def run_verification(
    name: str,
    subject: Any,
    settings: Settings | None = None,
    *,
    rules: Iterable[str] = (),
    skip_rules: Iterable[str] = (),
    on_result: Callable[[TestResult], None] | None = None,
) -> list[TestResult]:
    """Run every selected test of verification ``name`` against ``subject``."""
    verification = VERIFICATIONS[name]
    settings = settings or Settings()
    apply = getattr(subject, "apply", None)
    if callable(apply):
        settings = apply(settings)
    label = str(getattr(subject, "label", "") or subject)
    results = []
    for test in select(verification.tests, rules=rules, skip_rules=skip_rules):
        result = run_test(
            test,
            lambda env: verification.make_context(env, subject),
            settings,
            subject_label=label,
        )
        results.append(result)
        if on_result is not None:
            on_result(result)
    return results


def run_publisher_verification(
    subject: PublisherSubject,
    settings: Settings | None = None,
    *,
    rules: Iterable[str] = (),
    skip_rules: Iterable[str] = (),
    on_result: Callable[[TestResult], None] | None = None,
) -> list[TestResult]:
    """Run every selected publisher test against ``subject`` and return the results."""
    return run_verification(
        publisher.VERIFICATION, subject, settings, rules=rules, skip_rules=skip_rules, on_result=on_result
    )
