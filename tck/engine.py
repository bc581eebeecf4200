"""Running whole verifications without a test framework (campaigns, scripts, other runners)."""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Iterable

from .results import TestResult
from .runner import run_test
from .settings import Settings
from .subjects import PublisherSubject
from .verifications import publisher
from .verifications._base import TckTest


def select(
    tests: Iterable[TckTest], *, rules: Iterable[str] = (), skip_rules: Iterable[str] = ()
) -> list[TckTest]:
    """Tests whose rule is in ``rules`` (all if empty) and not in ``skip_rules``.

    ``"sanity"`` names the tests that check the factory itself rather than a rule.
    """
    wanted, unwanted = set(rules), set(skip_rules)

    def key(test: TckTest) -> str:
        return test.rule_id or "sanity"

    return [t for t in tests if (not wanted or key(t) in wanted) and key(t) not in unwanted]


def run_publisher_verification(
    subject: PublisherSubject,
    settings: Settings | None = None,
    *,
    rules: Iterable[str] = (),
    skip_rules: Iterable[str] = (),
    on_result: Callable[[TestResult], None] | None = None,
) -> list[TestResult]:
    """Run every selected publisher test against ``subject`` and return the results."""
    settings = subject.apply(settings or Settings())
    results = []
    for test in select(publisher.TESTS, rules=rules, skip_rules=skip_rules):
        result = run_test(
            test,
            lambda env: publisher.PublisherContext(env, subject),
            settings,
            subject_label=subject.label,
        )
        results.append(result)
        if on_result is not None:
            on_result(result)
    return results
