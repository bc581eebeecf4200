"""The HTML report's layout, read as a browser reads it (html5lib): what a reader sees first,
what the "did not pass" filter hides, and a trace of many probes that still fits."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import html5lib
from rstck.results import RunResults
from rstck.results import TestResult
from rstck_plugins.reports.html_report import render

SVG = "{http://www.w3.org/2000/svg}"


def _page(results: list[TestResult]) -> ET.Element:
    settings = {f"knob_{i}": i for i in range(22)}
    return html5lib.parse(render(RunResults(results, subjects={"publisher": "s"}, settings=settings)),
                          namespaceHTMLElements=False)


def _result(test: str, rule: str, verdict: str, trace: list[dict[str, object]] | None = None) -> TestResult:
    outcome = {"passed": "passed", "failed": "failed"}.get(verdict, "skipped")
    return TestResult(test, "publisher", rule, "required", outcome, verdict, 0.01,
                      message="" if verdict == "passed" else f"[rule {rule}] expected a; observed b",
                      trace=trace or [], trace_total=len(trace or []), subject="s")


def _order(root: ET.Element) -> list[str]:
    return [e.get("id", "") for e in root.iter() if e.get("id")]


def test_the_failures_come_first_and_the_settings_folded_after() -> None:
    root = _page([_result("required_spec309_x", "3.9", "failed"), _result("required_spec101_y", "1.1", "passed")])
    ids = _order(root)
    assert ids.index("failures") < ids.index("conformance-h") < ids.index("run")
    assert ids.index("fail-publisher-required_spec309_x") < ids.index("conformance")
    details = [d for d in root.iter("details") if "Settings" in "".join(d.itertext())]
    assert len(details) == 1
    assert "knob_21" in "".join(details[0].itertext())
    body = next(root.iter("main"))
    before = []
    for element in body.iter():
        if element.get("id") == "failures":
            break
        before.append(element)
    assert not any(e.tag == "table" for e in before)  # no table stands before the failures


def test_only_rules_that_did_not_pass_keeps_no_passed_row() -> None:
    """A rule whose cell shows passed, its other tests not applicable, passed: the filter hides it."""
    root = _page([_result("required_spec309_a", "3.9", "passed"), _result("required_spec309_b", "3.9", "not_applicable"),
                  _result("required_spec101_a", "1.1", "failed"), _result("required_spec102_a", "1.2", "not_applicable")])
    rows = {tr.get("data-rule"): tr.get("class") for tr in root.iter("tr") if tr.get("data-rule")}
    assert rows["3.9"] == "clean"
    assert rows["1.1"] == "problem"
    assert rows["1.2"] == "problem"  # not applicable only: it did not pass


def test_a_trace_of_forty_probes_keeps_every_thread_lane_on_the_page() -> None:
    trace: list[dict[str, object]] = []
    for i in range(40):
        trace.append({"seq": 2 * i, "t_ms": float(i), "thread": "main", "actor": f"probe{i}",
                      "signal": "request", "detail": "1", "demand": 1})
        trace.append({"seq": 2 * i + 1, "t_ms": i + 0.5, "thread": f"pool-{i % 3}", "actor": f"probe{i}",
                      "signal": "on_next", "detail": str(i), "demand": 0})
    root = _page([_result("required_spec101_x", "1.1", "failed", trace)])
    (svg,) = [s for s in root.iter(f"{SVG}svg") if "trace" in (s.get("class") or "")]
    lanes = [float(t.get("x", "0")) for t in svg.iter(f"{SVG}text") if "lane" in (t.get("class") or "").split()]
    assert len(lanes) == 4
    assert max(lanes) < 1000, lanes  # the last thread's lane within a laptop screen's width
    labels = ["".join(t.itertext()) for t in svg.iter(f"{SVG}text") if "label" in (t.get("class") or "")]
    assert any("probe39 request(1)" in label and "demand=1" in label for label in labels)


def test_the_page_of_a_run_is_the_page_of_its_saved_results() -> None:
    """A time shown from memory and from the results file (rounded to the microsecond) must not
    differ in a last digit: ``rs-tck report`` renders the same page as the run wrote."""
    failed = _result("required_spec309_x", "3.9", "failed")
    durations = [0.30214999999, 0.0012345678, 1.99995000001]
    results = [TestResult.from_json(failed.to_json() | {"duration_s": d, "started_at": 100.0,
                                                        "finished_at": 100.0 + d}) for d in durations]
    run = RunResults(results, subjects={"publisher": "s"}, settings={})
    saved = RunResults.from_json(run.to_json())
    assert render(run) == render(saved)
