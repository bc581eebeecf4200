"""The pytest front end, exercised through real pytest runs (pytester)."""

from __future__ import annotations

import itertools
import json
import xml.etree.ElementTree as ET
from importlib import resources

import jsonschema
import pytest

REF = "--rs-publisher=rstck.reference:range_publisher"
FAILED = "--rs-failed-publisher=rstck.reference:failed_publisher"

BROKEN = '''
from tests.broken.publishers import IgnoresRequestZero
from tests.broken.publishers import factory

#: Drops request(n) for n <= 0 silently: breaks rule 3.9 (the catalogue's own case).
ignores_zero = factory(IgnoresRequestZero)

def raises(n):
    raise RuntimeError("cannot build")

def not_a_publisher(n):
    return 42

NOT_CALLABLE = 7

def slow_factory(n):
    """Conforming, but each publisher takes a while to make: slow, not broken."""
    import time
    from rstck.reference import range_publisher
    time.sleep(0.15)
    return range_publisher(n)
'''


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(subjects=BROKEN)
    pytester.makepyfile(test_user="def test_user_own():\n    assert False, 'user test ran'\n")
    pytester.syspathinsert()
    return pytester


def test_only_tck_runs_without_test_paths(project: pytest.Pytester) -> None:
    result = project.runpytest(REF, FAILED)
    result.assert_outcomes(passed=60, skipped=6)
    result.stdout.fnmatch_lines(["*fuzz *passed*1 fuzz*"])
    assert "user test ran" not in result.stdout.str()


def test_ids_carry_verification_and_rule(project: pytest.Pytester) -> None:
    result = project.runpytest(REF, "--co", "-q")
    result.stdout.fnmatch_lines([
        "publisher::required_sanity_factory_1_produces_exactly_1_element[[]sanity[]]",
        "publisher::required_spec309_request_zero_must_signal_value_error[[]3.9[]]",
    ])


def test_tck_runs_beside_given_test_paths(project: pytest.Pytester) -> None:
    result = project.runpytest("test_user.py", REF, "--rs-rules=3.9")
    result.assert_outcomes(passed=4, failed=1)
    result.stdout.fnmatch_lines(["*user test ran*"])


@pytest.mark.parametrize(
    ("options", "count"),
    [
        (["--rs-rules=3.9"], 4),
        (["--rs-rules=sanity,1.2"], 4),
        (["--rs-skip-rules=1.3,3.13,sanity"], 59),
        (["--rs-skip-rules=1.3,3.13,sanity,fuzz"], 58),
        (["--rs-rules=fuzz,sanity"], 4),
    ],
)
def test_rule_selection(project: pytest.Pytester, options: list[str], count: int) -> None:
    result = project.runpytest(REF, "--co", "-q", *options)
    result.stdout.fnmatch_lines([f"{count} tests collected*"])


def test_broken_publisher_fails_citing_the_rule(project: pytest.Pytester) -> None:
    result = project.runpytest("--rs-publisher=subjects:ignores_zero", "--rs-rules=3.9", "--rs-timeout-ms=300")
    result.assert_outcomes(failed=3, skipped=1)
    out = result.stdout.str()
    assert "[rule 3.9] expected on_error(ValueError)" in out
    assert "request(0)" in out  # the trace shows the offending call
    assert "spec    : https://github.com/reactive-streams/reactive-streams-jvm/blob/v1.0.1/README.md#3.9" in out


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("nomodule_xyz:f", "cannot import module 'nomodule_xyz'"),
        ("subjects:missing", "module 'subjects' has no attribute 'missing'"),
        ("subjects:NOT_CALLABLE", "int object is not callable"),
        ("subjects", "must be 'module:attribute'"),
        ("subjects:raises", "raised RuntimeError: cannot build"),
        ("subjects:not_a_publisher", "returned int 42, which is not a Publisher"),
    ],
)
def test_bad_publisher_option_is_a_usage_error(project: pytest.Pytester, spec: str, message: str) -> None:
    result = project.runpytest(f"--rs-publisher={spec}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert message in err
    assert "Traceback" not in err + result.stdout.str()


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        ([REF, "--rs-rules=3.99"], {}, "unknown rule id(s) 3.99"),
        ([REF, "--rs-timeout-ms=abc"], {}, "command line --rs-timeout-ms: rs-timeout-ms must be a positive number"),
        ([REF], {"RS_TCK_NO_SIGNAL_MS": "-5"}, "environment variable RS_TCK_NO_SIGNAL_MS"),
        ([REF, "--rs-recursion-depth=0"], {}, "--rs-recursion-depth must be >= 1"),
        (["--rs-failed-publisher=subjects:raises"], {}, "--rs-failed-publisher needs --rs-publisher"),
        ([REF, "--rs-report-json=subjects.py/d/r.json"], {}, "cannot create directory subjects.py/d"),
    ],
)
def test_bad_settings_are_usage_errors(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, args: list[str], env: dict[str, str], message: str
) -> None:
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    result = project.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str()


def test_settings_precedence_command_line_env_ini(project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    project.makeini("[pytest]\nrs_timeout_ms = 700\nrs_no_signal_ms = 60\nrs_gc_ms = 900\n")
    monkeypatch.setenv("RS_TCK_NO_SIGNAL_MS", "70")
    result = project.runpytest(REF, "--rs-gc-ms=800", "--co")
    result.stdout.fnmatch_lines(["rs-tck: timeout 700 ms, no-signal window 70 ms, gc window 800 ms*"])


def test_json_report_follows_the_schema(project: pytest.Pytester) -> None:
    path = project.path / "out.json"
    result = project.runpytest("--rs-publisher=subjects:ignores_zero", FAILED, f"--rs-report-json={path}",
                               "--rs-rules=3.9,1.10,1.4", "--rs-timeout-ms=300")
    result.assert_outcomes(passed=2, failed=3, skipped=2)
    data = json.loads(path.read_text())
    schema = json.loads(resources.files("rstck").joinpath("schemas/rs-tck-results-1.schema.json").read_text())
    jsonschema.validate(data, schema)
    assert data["subjects"]["publisher"] == "subjects:ignores_zero"
    assert data["summary"]["total"] == 7
    assert data["summary"]["verdicts"]["optional_unsupported"] == 1
    by_test = {r["test"]: r for r in data["results"]}
    zero = by_test["required_spec309_request_zero_must_signal_value_error"]
    assert (zero["outcome"], zero["verdict"], zero["rule"], zero["level"]) == ("failed", "failed", "3.9", "required")
    assert any(rec["signal"] == "request" and rec["detail"] == "0" for rec in zero["trace"])
    untested = by_test["untested_spec110_subscribe_may_be_called_many_times_with_different_subscribers"]
    assert (untested["outcome"], untested["verdict"]) == ("skipped", "untested")
    assert "obligation on the caller" in untested["message"]


def test_junit_xml_carries_rule_properties(project: pytest.Pytester) -> None:
    result = project.runpytest(REF, "--rs-rules=3.9", "--junitxml=junit.xml")
    result.assert_outcomes(passed=4)
    root = ET.parse(project.path / "junit.xml").getroot()
    props = [
        {p.get("name"): p.get("value") for p in case.iter("property")} for case in root.iter("testcase")
    ]
    assert props
    assert all(p == {"rs_rule": "3.9", "rs_level": p["rs_level"], "rs_verification": "publisher",
                     "rs_subject": "publisher"} for p in props)
    assert {p["rs_level"] for p in props} == {"required", "optional"}


@pytest.mark.parametrize("concurrency", [1, 4])
def test_overlapping_tests_keep_their_own_verdicts(project: pytest.Pytester, concurrency: int) -> None:
    """Closing windows overlap the next test (and with --rs-concurrency, whole tests do): each
    test still reports its own verdict, and the file shows when each started and ended."""
    path = project.path / "out.json"
    result = project.runpytest("--rs-publisher=subjects:ignores_zero", FAILED, f"--rs-report-json={path}",
                               "--rs-rules=1.5,1.6,1.7,3.6,3.7,3.9", f"--rs-concurrency={concurrency}",
                               "--rs-timeout-ms=300")
    result.assert_outcomes(passed=9, failed=3, skipped=2)
    results = json.loads(path.read_text())["results"]
    failed = sorted(r["test"] for r in results if r["outcome"] == "failed")
    assert failed == ["required_spec309_request_negative_number_must_signal_value_error",
                      "required_spec309_request_zero_from_inside_on_next_must_signal_value_error",
                      "required_spec309_request_zero_must_signal_value_error"]
    spans = sorted((r["started_at"], r["finished_at"]) for r in results)
    assert all(0 < start <= end for start, end in spans)
    # Some test started before the one before it had its verdict: the windows overlapped.
    assert any(later[0] < earlier[1] for earlier, later in itertools.pairwise(spans))


def test_concurrency_must_be_positive(project: pytest.Pytester) -> None:
    result = project.runpytest(REF, "--rs-concurrency=0")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--rs-concurrency must be >= 1, got 0*"])


def test_a_test_too_slow_for_its_limit_is_inconclusive_not_a_rule_failure(project: pytest.Pytester) -> None:
    """A hundred slow factories overrun a short limit: an error that blames no rule, and says why."""
    path = project.path / "results.json"
    result = project.runpytest("--rs-publisher=subjects:slow_factory", "--rs-rules=1.3", "--rs-test-limit-ms=2000",
                               "--rs-timeout-ms=500", f"--rs-report-json={path}")
    result.assert_outcomes(passed=1, errors=0, failed=1)
    out = result.stdout.str()
    assert "inconclusive: too slow for this test within --rs-test-limit-ms (2000 ms)" in out
    assert "INCONCLUSIVE" in out
    (slow,) = [r for r in json.loads(path.read_text())["results"] if r["outcome"] != "passed"]
    assert (slow["outcome"], slow["verdict"]) == ("error", "error")
    assert [(f["rule"], f["setting"]) for f in slow["failures"]] == [(None, "test_limit")]
