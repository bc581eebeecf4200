"""``rstck.pytest``: declarations as data, their problems kept for the host; baseline entries by subject."""

from __future__ import annotations

from pathlib import Path

import pytest
import rstck.pytest as rs
from rstck.errors import SetupError
from rstck.reference import range_publisher
from rstck.results import Level
from rstck.results import Outcome
from rstck.results import TestResult
from rstck.results import Verdict
from rstck.run_api import Run
from rstck_plugins.reports import baseline


def test_a_declaration_carries_its_own_settings_in_both_spellings() -> None:
    d = rs.publisher_verification(range_publisher, id="range", max_subscribers=1, timeout_ms=2500)
    assert d.problem is None
    assert d.settings == {"max_subscribers": 1, "timeout": 2.5}
    assert d.where[0] == __file__
    assert d.subject_id("test_whatever") == "range"
    assert rs.publisher_verification(range_publisher).subject_id("test_map") == "map"


@pytest.mark.parametrize(("kwargs", "words"), [
    ({"id": "not valid"}, "is not a valid identifier"),
    ({"no_such_knob": 1}, "unknown setting 'no_such_knob'"),
    ({"max_subscribers": 0}, "--rs-max-subscribers must be >= 1"),
    ({"concurrency": 2}, "belongs to the whole run"),
])
def test_a_bad_declaration_keeps_its_problem_instead_of_raising(kwargs: dict[str, object], words: str) -> None:
    d = rs.publisher_verification(range_publisher, **kwargs)
    assert d.problem is not None
    assert words in d.problem
    with pytest.raises(SetupError, match=words.replace("(", r"\(")):
        d.check()


def test_the_class_form_reads_its_factory_and_the_jvm_capability_methods() -> None:
    class TestMapTck(rs.PublisherVerification):
        def create_publisher(self, n: int) -> object:
            return range_publisher(n)

        def max_supported_subscribers(self) -> int:
            return 1

    d = rs.declaration_of(TestMapTck)
    assert d is not None
    assert d.problem is None
    assert d.subject_id("TestMapTck") == "MapTck"
    assert d.settings == {"max_subscribers": 1}

    class TestEmpty(rs.PublisherVerification):
        pass

    empty = rs.declaration_of(TestEmpty)
    assert empty is not None
    assert empty.problem is not None
    assert "has no create_publisher() method" in empty.problem
    assert rs.declaration_of(rs.PublisherVerification) is None  # the base class itself


def test_skipped_rules_report_their_reason_as_deselected() -> None:
    run = Run("publisher", range_publisher, rules=["3.9"], skipped={"3.9": "hands request(n) on"})
    results = list(run.results())
    assert results
    assert all(r.verdict == Verdict.DESELECTED and "hands request(n) on" in r.message for r in results)


def _result(key: str | None, rule: str = "3.9") -> TestResult:
    return TestResult(test="required_spec309_request_zero_must_signal_value_error", verification="publisher",
                      rule=rule, level=Level.REQUIRED, outcome=Outcome.FAILED, verdict=Verdict.FAILED,
                      duration_s=0.1, subject_id=key)


def test_baseline_entries_hold_for_one_subject_or_every_one() -> None:
    parsed = baseline.parse("map::3.9\nbroken::required_spec309_request_zero_must_signal_value_error\n"
                            "publisher::required_spec309_request_zero_must_signal_value_error\n", Path("b.txt"))
    by_rule, by_test, by_kind = parsed.entries
    assert by_rule.matches(_result("map"))
    assert not by_rule.matches(_result("filter"))
    assert by_test.matches(_result("broken"))
    assert not by_test.matches(_result("map"))
    assert by_kind.matches(_result("map"))  # a kind's entry, as older baselines hold, matches every subject
    rendered = baseline.render([_result("broken"), _result(None)], {})
    assert "broken::required_spec309_request_zero_must_signal_value_error" in rendered
    assert "publisher::required_spec309_request_zero_must_signal_value_error" in rendered


def test_thirty_subjects_are_thirty_lines_within_a_hundred_columns() -> None:
    from rstck.rules import RULES
    from rstck_plugins.reports import terminal

    results = []
    for n in range(30):
        key = f"operator_with_a_rather_long_name_{n}"
        for rid in RULES if n % 3 == 0 else ["1.1"]:  # a third of them fail every rule
            r = _result(key, rid)
            if n % 3:
                r.outcome, r.verdict = Outcome.PASSED, Verdict.PASSED
            results.append(r)
    lines = terminal.subject_lines(results)
    assert all(len(text) <= terminal.WIDTH for text, _colour in lines)
    firsts = [text for text, _colour in lines if not text.startswith(" ")]
    assert [t.split()[0] for t in firsts] == list(dict.fromkeys(r.key for r in results))  # names whole
    assert "failed: 1.1-1.11, 2.1-2.13, 3.1-3.17, 4.1-4.2" in " ".join(t.strip() for t, _c in lines[:3])
    assert terminal.several_subjects(results)
