"""The ``rs`` edition: its rule map, its conforming and broken publishers, and a real pytest run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rstck._internal.contexts.rs_publisher import RsPublisherContext
from rstck._internal.one_rule import run_test
from rstck.editions import EDITIONS
from rstck.editions import check_tables
from rstck.editions import rule_map_markdown
from rstck.results import TestResult
from rstck.rules import RULES
from rstck.settings import Settings
from rstck.subjects import PublisherSubject
from rstck.verifications import for_edition

from ..broken import rs_edition as broken
from ..conforming import rs_edition as conforming

RS = EDITIONS["rs"]
TESTS = for_edition("rs")["publisher"].tests
BY_NAME = {t.name: t for t in TESTS}
SETTINGS = Settings(timeout=0.5, no_signal_window=0.05, gc_window=1.0, after_cancel_limit=10_000, edition="rs")
REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "editions.md"


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A pytest run in a subprocess that can import this repository's ``tests`` package."""
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    return pytester


def run(name: str, factory: object, settings: Settings = SETTINGS) -> TestResult:
    subject = PublisherSubject(factory, conforming.failed, label=getattr(factory, "__name__", ""))  # type: ignore[arg-type]
    result = run_test(BY_NAME[name], lambda env: RsPublisherContext(env, subject), subject.apply(settings))
    return RS.present(result)


def test_every_jvm_rule_is_mapped_or_not_applicable_exactly_once() -> None:
    check_tables()
    for own, rule in RS.rules.items():
        assert RS.own_id(RS.internal_id(own)) == own
        if rule.jvm_id is not None:
            assert RS.own_id(rule.jvm_id) == own
    assert all(RS.own_id(jvm) is None for jvm in RS.not_applicable)
    assert RS.rules["3.11"].jvm_id == "3.12"
    assert RS.rules["1.10"].jvm_id == "1.11"
    assert RS.rules["1.11"].jvm_id is None


def test_tests_carry_the_editions_own_ids_and_leave_out_what_does_not_apply() -> None:
    ids = {t.test_id for t in TESTS}
    assert "required_spec311_cancel_must_make_the_publisher_eventually_stop_signalling[3.11]" in ids
    assert "optional_spec110_may_support_multi_subscribe[1.10]" in ids
    assert not [t for t in TESTS if t.rule_id in RS.not_applicable]
    assert "required_spec109_subscribe_none_must_raise_type_error" not in BY_NAME


@pytest.mark.parametrize("factory", [conforming.sync_range, conforming.async_range], ids=["sync", "async"])
def test_conforming_rs_publishers_pass_every_test(factory: object) -> None:
    bad = []
    for test in TESTS:
        result = run(test.name, factory)
        if result.outcome not in ("passed", "skipped") or result.verdict == "optional_unsupported":
            bad.append(f"{test.test_id}: {result.verdict}: {result.message.splitlines()[0] if result.message else ''}")
    assert not bad, "\n".join(bad)


#: (broken factory, the test that must fail, the rs rule it must cite, a fragment of the message)
CASES = [
    (broken.no_finaliser, "required_spec312_dropping_the_subscription_must_make_the_publisher_drop_the_subscriber",
     "3.12", "still referenced"),
    (broken.with_ignored, "required_spec312_leaving_the_with_block_must_make_the_publisher_drop_the_subscriber",
     "3.12", "still referenced"),
    (broken.flushes_on_drop,
     "required_spec311_dropping_the_subscription_must_make_the_publisher_eventually_stop_signalling",
     "3.11", "at most the 15 requested"),
    (broken.flushes_on_exit,
     "required_spec311_leaving_the_with_block_must_make_the_publisher_eventually_stop_signalling",
     "3.11", "at most the 15 requested"),
    (broken.tied_to_publisher, "required_spec111_subscriptions_must_keep_working_after_the_publisher_is_dropped",
     "1.11", "rule 1.11"),
    (broken.returns_nothing, "required_spec109_subscribe_must_return_normally", "1.9", "it returned None"),
]


@pytest.mark.parametrize(("factory", "test", "rule", "fragment"), CASES, ids=[c[0].__name__ for c in CASES])
def test_broken_rs_publishers_fail_on_their_rs_rule(factory: object, test: str, rule: str, fragment: str) -> None:
    result = run(test, factory)
    assert result.verdict == "failed", result.message
    assert result.rule == rule
    assert rule in {f.rule for f in result.failures}, result.message
    assert fragment in result.message
    jvm = RS.rules[rule].jvm_id
    assert result.jvm_rule == jvm
    if jvm is not None:
        assert f"(JVM {jvm})" in result.message


def test_every_test_of_the_editions_own_has_a_broken_case() -> None:
    from rstck._internal.verifications.rs_publisher import OWN

    assert {t.name for t in OWN} <= {test for _, test, _, _ in CASES}


def test_the_broken_cases_pass_every_other_kind_of_cancel() -> None:
    """Each broken case is broken in one way only: cancel() still works (a control)."""
    name = "required_spec312_cancel_must_make_the_publisher_eventually_drop_all_references_to_the_subscriber"
    for factory in (broken.no_finaliser, broken.with_ignored):
        assert run(name, factory).verdict == "passed"


def test_docs_editions_rule_map_is_generated_from_the_table() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert rule_map_markdown() in text, "regenerate: python -m rstck rules --update-map docs/editions.md"


def test_rules_lists_either_edition(capsys: pytest.CaptureFixture[str]) -> None:
    from rstck.__main__ import main

    assert main(["rules", "--edition", "rs"]) == 0
    out = capsys.readouterr().out
    assert "[JVM 3.12]" in out
    assert "[rs only]" in out
    assert main(["rules"]) == 0
    assert "rs only" not in capsys.readouterr().out


def test_pytest_run_in_the_rs_edition(project: pytest.Pytester) -> None:
    pytester = project
    out = pytester.path / "results.json"
    html = pytester.path / "report.html"
    res = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--rs-edition=rs", "--rs-publisher=tests.conforming.rs_edition:sync_range",
        "--rs-failed-publisher=tests.conforming.rs_edition:failed", "--rs-timeout-ms=500",
        "--rs-no-signal-ms=50", f"--rs-report-json={out}", f"--rs-report-html={html}",
    )
    assert res.ret == 0, res.stdout.str()
    text = res.stdout.str()
    assert "edition rs" in text
    assert "3.11 [JVM 3.12]" in text
    assert "1.11 [rs only]" in text
    doc = json.loads(out.read_text())
    assert doc["edition"] == "rs"
    by_test = {r["test"]: r for r in doc["results"]}
    dropped = by_test["required_spec311_dropping_the_subscription_must_make_the_publisher_eventually_stop_signalling"]
    assert (dropped["rule"], dropped["jvm_rule"]) == ("3.11", "3.12")
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((Path(__file__).resolve().parents[2] / "tck" / "rstck" / "schemas"
                         / "rs-tck-results-1.schema.json").read_text())
    jsonschema.validate(doc, schema)
    page = html.read_text()
    assert "edition rs" in page
    assert "[JVM 3.12]" in page


def test_pytest_run_in_the_rs_edition_with_rs_rule_ids(project: pytest.Pytester) -> None:
    pytester = project
    res = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--rs-publisher=tests.conforming.rs_edition:async_range",
        "--rs-rules=1.11,3.11", "--rs-timeout-ms=500", "--rs-no-signal-ms=50",
        "-o", "rs_edition=rs", "-p", "xdist", "-n", "2",  # the ini form, results crossing from workers
    )
    assert res.ret == 0, res.stdout.str()
    res.stdout.fnmatch_lines(["*3.11 ?JVM 3.12?*3 required*", "*4 passed*"])


@pytest.mark.parametrize(("args", "message"), [
    (["--rs-edition=rs", "--rs-rules=3.17"], "unknown rs rule id(s) 3.17"),
    (["--rs-edition=rs", "--rs-subscriber=tests.conforming.subscribers:x"], "publisher subjects only"),
    (["--rs-edition=cpp"], "rs-edition must be one of jvm-1.0.1, rs"),
])
def test_rs_edition_usage_errors(project: pytest.Pytester, args: list[str], message: str) -> None:
    pytester = project
    res = pytester.runpytest_subprocess("-p", "no:cacheprovider",
                                        "--rs-publisher=tests.conforming.rs_edition:sync_range", *args)
    assert res.ret != 0
    assert message in res.stderr.str() + res.stdout.str()


def test_jvm_results_keep_their_shape() -> None:
    from rstck.results import document

    assert document([], subjects={}, settings={})["edition"] == "jvm-1.0.1"
    assert "jvm_rule" not in TestResult("t", "publisher", "1.1", "required", "passed", "passed", 0.0).to_json()
    assert set(RULES) >= set(RS.not_applicable)


def test_the_engine_runs_an_edition_without_pytest() -> None:
    from rstck.run_api import run_verification

    subject = PublisherSubject(conforming.async_range, conforming.failed, label="async")
    results = run_verification("publisher", subject, SETTINGS, rules=["1.11", "3.12"])
    assert {r.rule for r in results} == {"1.11", "3.12"}
    assert all(r.verdict in ("passed", "not_applicable") for r in results), [r.message for r in results]
    assert {r.jvm_rule for r in results} == {None, "3.13"}
    with pytest.raises(Exception, match="publisher subjects only"):
        run_verification("subscriber_blackbox", object(), SETTINGS)
