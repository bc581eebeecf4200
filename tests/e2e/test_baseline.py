"""The baseline gate through real pytest runs: known failures pass, new ones and stale entries fail."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import jsonschema
import pytest
from rstck.results import TestResult
from rstck_plugins.reports.baseline import BaselineError
from rstck_plugins.reports.baseline import lucky
from rstck_plugins.reports.baseline import parse
from rstck_plugins.reports.baseline import read
from rstck_plugins.reports.baseline import stale

REF = "--rs-publisher=rstck.reference:range_publisher"
BROKEN = "--rs-publisher=subjects:ignores_zero"
FAST = "--rs-timeout-ms=300"
ZERO = "required_spec309_request_zero_must_signal_value_error"
NEGATIVE = "required_spec309_request_negative_number_must_signal_value_error"
INSIDE = "required_spec309_request_zero_from_inside_on_next_must_signal_value_error"

SUBJECTS = '''
from rstck.reference import range_publisher


from tests.broken.publishers import IgnoresRequestZero
from tests.broken.publishers import factory

#: Drops request(n) for n <= 0 silently: breaks rule 3.9 (the catalogue's own case).
ignores_zero = factory(IgnoresRequestZero)
'''


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(subjects=SUBJECTS)
    pytester.syspathinsert()
    return pytester


def baseline(project: pytest.Pytester, text: str) -> str:
    path = project.path / "baseline.txt"
    path.write_text(text)
    return f"--rs-baseline={path}"


def test_clean_run_with_an_empty_baseline_passes(project: pytest.Pytester) -> None:
    result = project.runpytest(REF, "--rs-rules=3.9,1.10", FAST, baseline(project, "# nothing known\n\n"))
    result.assert_outcomes(passed=4, skipped=1)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["0 known deviation(s), 0 new failure(s), 0 stale entries"])


def test_listed_failures_are_known_deviations(project: pytest.Pytester) -> None:
    report = project.path / "results.json"
    result = project.runpytest(BROKEN, "--rs-rules=3.9", FAST, f"--rs-report-json={report}",
                               baseline(project, "3.9  # request(0) is ignored, see issue 12\n"))
    result.assert_outcomes(xfailed=3, skipped=1)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines([
        "*3.9 * known deviation *3 required, 1 optional*",
        "3 known deviation(s), 0 new failure(s), 0 stale entries",
    ])
    data = json.loads(report.read_text())
    schema = json.loads(resources.files("rstck").joinpath("schemas/rs-tck-results-1.schema.json").read_text())
    jsonschema.validate(data, schema)
    known = [r for r in data["results"] if r.get("baseline") == "known"]
    assert {r["test"] for r in known} == {ZERO, NEGATIVE, INSIDE}
    assert all((r["outcome"], r["verdict"]) == ("failed", "failed") for r in known)
    assert "baseline" not in next(r for r in data["results"] if r["level"] == "optional")


def test_a_failure_not_listed_fails_the_run(project: pytest.Pytester) -> None:
    result = project.runpytest(BROKEN, "--rs-rules=3.9", FAST, baseline(project, f"publisher::{ZERO}\n"))
    result.assert_outcomes(failed=2, xfailed=1, skipped=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([
        "1 known deviation(s), 2 new failure(s), 0 stale entries",
        f"FAILED publisher::{NEGATIVE}*",
    ])


def test_a_fixed_deviation_makes_its_entry_stale(project: pytest.Pytester) -> None:
    result = project.runpytest(REF, "--rs-rules=3.9,1.9", FAST,
                               baseline(project, "# known\n3.9\n1.1  # not run: no test of it selected\n"))
    result.assert_outcomes(passed=8, skipped=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    path = project.path / "baseline.txt"
    result.stdout.fnmatch_lines([
        "0 known deviation(s), 0 new failure(s), 1 stale entry",
        f"stale: {path}:2: 3.9 passes now; remove it from the baseline",
        f"not run: {path}:3: 1.1 matched no test of this run",
    ])


def test_written_baseline_round_trips(project: pytest.Pytester) -> None:
    written = project.path / "written.txt"
    first = project.runpytest(BROKEN, "--rs-rules=3.9,1.2", FAST, f"--rs-baseline-write={written}")
    first.assert_outcomes(failed=3, passed=1, skipped=1)
    first.stdout.fnmatch_lines([f"rs-tck: wrote baseline {written} with 3 entries"])
    text = written.read_text()
    assert text.startswith("# Reactive Streams TCK baseline")
    entries = read(written).entries
    assert [(e.verification, e.test) for e in entries] == sorted(
        [("publisher", NEGATIVE), ("publisher", ZERO), ("publisher", INSIDE)], key=lambda e: text.index(e[1])
    )
    body = [line for line in text.splitlines() if line and not line.startswith("#")]
    assert body == sorted(body)
    assert all("# 3.9: [rule 3.9] expected on_error(ValueError)" in line for line in body)

    again = project.runpytest(BROKEN, "--rs-rules=3.9,1.2", FAST, f"--rs-baseline={written}",
                              f"--rs-baseline-write={written}")
    again.assert_outcomes(xfailed=3, passed=1, skipped=1)
    assert again.ret == pytest.ExitCode.OK
    assert written.read_text() == text  # the same failures write the same file


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("3.9\n3.99\n", "baseline.txt:2: unknown rule id '3.99'"),
        ("# c\n\npublisher::no_such_test\n", "baseline.txt:3: unknown test 'no_such_test' of verification 'publisher'"),
        ("nonesuch::x\n", "baseline.txt:1: unknown test 'x'"),
        ("bad-id::3.9\n", "baseline.txt:1: 'bad-id' in 'bad-id::3.9' is neither a verification"),
        ("3.9 1.1\n", "baseline.txt:1: expected one rule id or test name per line, found '3.9 1.1'"),
    ],
)
def test_malformed_baseline_is_a_usage_error(project: pytest.Pytester, content: str, message: str) -> None:
    result = project.runpytest(REF, baseline(project, content))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str()
    assert "Traceback" not in result.stderr.str()


def test_unreadable_baseline_is_a_usage_error(project: pytest.Pytester) -> None:
    result = project.runpytest(REF, f"--rs-baseline={project.path / 'missing.txt'}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"--rs-baseline: {project.path / 'missing.txt'}: cannot read the baseline" in result.stderr.str()


def test_baseline_write_to_a_directory_that_cannot_be_made_is_a_usage_error(project: pytest.Pytester) -> None:
    project.makefile(".txt", afile="")
    result = project.runpytest(REF, "--rs-baseline-write=afile.txt/d/b.txt")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--rs-baseline-write=afile.txt/d/b.txt: cannot create directory afile.txt/d (Not a directory)" in (
        result.stderr.str()
    )


def _result(test: str, rule: str | None, outcome: str, level: str = "required") -> TestResult:
    return TestResult(test, "publisher", rule, level, outcome, outcome, 0.0)


def test_entries_match_rules_tests_and_pytest_ids() -> None:
    parsed = parse(f"sanity\n{ZERO}[3.9]  # as pytest shows it\npublisher::{NEGATIVE}\n", Path("b.txt"))
    assert [(e.line, e.rule, e.verification, e.test) for e in parsed.entries] == [
        (1, "sanity", None, None), (2, None, None, ZERO), (3, None, "publisher", NEGATIVE),
    ]
    zero, negative = _result(ZERO, "3.9", "failed"), _result(NEGATIVE, "3.9", "passed")
    sanity = _result("required_sanity_factory_1_produces_exactly_1_element", None, "passed")
    assert parsed.match(zero) is parsed.entries[1]
    assert parsed.match(sanity) is parsed.entries[0]
    assert [e.line for e in stale(parsed, [zero, negative, sanity])] == [1, 3]
    with pytest.raises(BaselineError, match=r"^b\.txt:1: unknown rule id '9\.1'"):
        parse("9.1\n", Path("b.txt"))


def test_a_passing_stochastic_test_does_not_make_its_entry_stale() -> None:
    parsed = parse("1.3\n3.9\n", Path("b.txt"))
    race = _result("stochastic_spec103_must_signal_on_methods_sequentially", "1.3", "passed", "stochastic")
    zero = _result(ZERO, "3.9", "passed")
    assert [e.text for e in stale(parsed, [race, zero])] == ["3.9"]
    assert [e.text for e in lucky(parsed, [race, zero])] == ["1.3"]


def test_a_passing_fuzz_test_does_not_make_its_entry_stale(project: pytest.Pytester) -> None:
    """A search finds a bug by chance, as a race hunt does: its entry stays until it is removed."""
    entry = "publisher::fuzz_demand_cancel_orders  # found by a long scenario on a laptop\n"
    result = project.runpytest("--rs-publisher=rstck.reference:range_publisher", "--rs-rules=fuzz",
                               "--rs-fuzz-examples=5", baseline(project, entry))
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines([
        "0 known deviation(s), 0 new failure(s), 0 stale entries",
        "passed this time: *publisher::fuzz_demand_cancel_orders (a fuzz search finds it by chance:*",
    ])


@pytest.mark.parametrize("workers", ["0", "2"])
def test_the_baseline_summary_counts_alike_under_xdist(project: pytest.Pytester, workers: str) -> None:
    """The known deviations are marked on the workers; the summary is written by the controller."""
    result = project.runpytest(BROKEN, "--rs-rules=3.9", FAST, "-p", "xdist", "-n", workers,
                               baseline(project, "3.9  # request(0) is ignored\n"))
    result.assert_outcomes(xfailed=3, skipped=1)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["3 known deviation(s), 0 new failure(s), 0 stale entries"])
