"""Reports of a run: the HTML page, the report command, JUnit properties, the terminal table."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import html5lib
import pytest
from rstck.results import RunResults
from rstck.results import TestResult
from rstck.rules import RULES
from rstck.rules import SPEC_URL
from rstck_plugins.reports.html_report import render

REF = "--rs-publisher=rstck.reference:range_publisher"
FAILED = "--rs-failed-publisher=rstck.reference:failed_publisher"
FAST = "--rs-timeout-ms=300"
SVG = "{http://www.w3.org/2000/svg}"
SCRIPT = "<script>alert(1)</script>"
ATTR = '"onmouseover="x'

SUBJECTS = '''
import threading

SCRIPT = "<script>alert(1)</script>"
ATTR = '"onmouseover="x'


class HostileSubscription:
    """Sends one element too many (rule 1.1) from a thread whose name is markup, whose elements
    are markup, and whose cancel raises with markup in the message (rule 3.15)."""

    def __init__(self, subscriber, n):
        self.subscriber = subscriber
        self.n = n
        self.sent = 0
        self.done = False

    def request(self, k):
        if self.done:
            return
        if k <= 0:
            self.done = True
            self.subscriber.on_error(ValueError(ATTR + SCRIPT))
            return

        def emit():
            for _ in range(k + 1):
                if self.done or self.sent >= self.n:
                    break
                self.sent += 1
                self.subscriber.on_next(SCRIPT + ATTR)
            if self.sent >= self.n and not self.done:
                self.done = True
                self.subscriber.on_complete()

        thread = threading.Thread(target=emit, name=SCRIPT + ATTR)
        thread.start()
        thread.join()

    def cancel(self):
        self.done = True
        raise RuntimeError(ATTR + SCRIPT)


class HostilePublisher:
    def __init__(self, n):
        self.n = n

    def subscribe(self, subscriber):
        if subscriber is None:
            raise TypeError("null")
        subscriber.on_subscribe(HostileSubscription(subscriber, self.n))


def hostile(n):
    return HostilePublisher(n)


from tests.broken.publishers import ExtraElement
from tests.broken.publishers import IgnoresRequestZero
from tests.broken.publishers import factory

#: Drops request(n) for n <= 0 silently: breaks rule 3.9 (the catalogue's own case).
ignores_zero = factory(IgnoresRequestZero)
#: One element more than requested: breaks rule 1.1, and the probe cites the on_next that did.
extra = factory(ExtraElement)
'''


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(subjects=SUBJECTS)
    pytester.syspathinsert()
    return pytester


def parse(path: Path) -> ET.Element:
    """Parse as a browser would (WHATWG algorithm), HTML elements without a namespace."""
    root: ET.Element = html5lib.parse(path.read_text(encoding="utf-8"), namespaceHTMLElements=False)
    return root


def text(element: ET.Element) -> str:
    return "".join(element.itertext())


def by_id(root: ET.Element, ident: str) -> ET.Element:
    found = [e for e in root.iter() if e.get("id") == ident]
    assert len(found) == 1, ident
    return found[0]


def rule_rows(root: ET.Element) -> dict[str, ET.Element]:
    table = by_id(root, "conformance")
    return {tr.get("data-rule", ""): tr for tr in table.iter("tr") if tr.get("data-rule")}


def cells(row: ET.Element) -> list[ET.Element]:
    return list(row.iter("td"))


def badge(cell: ET.Element) -> str:
    return text(next(e for e in cell.iter() if "badge" in (e.get("class") or "").split()))


def test_conformance_table_has_one_row_per_rule_with_verdicts(project: pytest.Pytester) -> None:
    out = project.path / "report.html"
    result = project.runpytest(REF, FAILED, FAST, "--rs-rules=sanity,1.9,1.10,1.11,3.9", "--rs-max-subscribers=1",
                               f"--rs-report-html={out}")
    result.assert_outcomes(passed=12, skipped=6)
    root = parse(out)
    assert root.find("head/title") is not None
    assert "rstck.reference:range_publisher" in text(root.find("head/title"))  # type: ignore[arg-type]
    rows = rule_rows(root)
    assert list(rows) == list(RULES)  # 43 rows, in the specification's order
    for rid, row in rows.items():
        links = [a.get("href") for a in row.iter("a")]
        assert f"{SPEC_URL}#{rid}" in links
    header = text(by_id(root, "conformance").find("thead"))  # type: ignore[arg-type]
    assert "publisher" in header

    one_nine = cells(rows["1.9"])[3]
    assert badge(one_nine) == "passed"
    assert "5 tests: 5 passed" in text(one_nine)
    assert len(one_nine.findall(".//li")) == 5  # the per-test breakdown
    untested = cells(rows["1.10"])[3]
    assert badge(untested) == "untested"
    assert "obligation on the caller" in text(untested)
    multi = cells(rows["1.11"])[3]
    assert badge(multi) == "not applicable"
    assert "5 tests: 5 not applicable" in text(multi)
    assert "subscriber" in text(multi)  # the reason
    assert badge(cells(rows["1.1"])[3]) == "not run"
    assert text(cells(rows["2.1"])[3]).strip() == "—"
    assert cells(rows["1.9"])[1].text == "MUST"

    page = text(root)
    assert "No failures" in page
    assert "timeout_ms" in page
    assert "300 ms" in page
    assert "Python" in page
    assert "rs-tck-results/1" in page
    assert not [e for e in root.iter() if "failure" in (e.get("class") or "").split()]
    sanity = by_id(root, "sanity")
    assert sanity is not None
    # self-contained: nothing to fetch, nothing to run
    assert not [e.tag for e in root.iter() if e.get("src") is not None or e.tag in ("link", "script", "iframe")]
    assert "url(" not in text(root.find("head"))  # type: ignore[arg-type]


def test_failures_show_expected_observed_and_trace_timeline(project: pytest.Pytester) -> None:
    out = project.path / "report.html"
    result = project.runpytest("--rs-publisher=subjects:ignores_zero", "--rs-rules=3.9", FAST,
                               f"--rs-report-html={out}")
    result.assert_outcomes(failed=3, skipped=1)
    root = parse(out)
    cell = cells(rule_rows(root)["3.9"])[3]
    assert badge(cell) == "failed"
    assert "3 failed, 1 optional unsupported" in text(cell)
    articles = [e for e in root.iter("article") if "failure" in (e.get("class") or "")]
    assert len(articles) == 3
    ids = {a.get("id") for a in articles}
    assert {a.get("href", "")[1:] for a in cell.iter("a") if a.get("href", "").startswith("#")} == ids

    zero = by_id(root, "fail-publisher-required_spec309_request_zero_must_signal_value_error")
    facts = {text(dt): text(dd) for dt, dd in zip(zero.iter("dt"), zero.iter("dd"), strict=True)}
    assert facts["expected"].startswith("on_error(ValueError)")
    assert "no terminal signal" in facts["observed"]
    assert "3.9" in facts["rule"]
    svgs = list(zero.iter(f"{SVG}svg"))
    assert len(svgs) == 1
    labels = [t.text or "" for t in svgs[0].iter(f"{SVG}text")]
    assert any("request(0)" in label for label in labels)
    assert "rs-tck-body" in labels  # a thread lane
    assert "demand" in labels
    assert svgs[0].find(f"{SVG}title") is not None
    assert "[rule 3.9] expected on_error(ValueError)" in text(zero)  # the full message
    banner = text(root)
    assert "3 failed test(s)" in banner
    assert "Rules broken: 3.9" in banner


def _facts(element: ET.Element) -> list[dict[str, str]]:
    """The term -> text of each fact list in ``element``, in order."""
    return [{text(dt): text(dd) for dt, dd in zip(dl.iter("dt"), dl.iter("dd"), strict=True)}
            for dl in element.iter("dl")]


def test_each_problem_shows_its_rule_evidence_and_setting(project: pytest.Pytester) -> None:
    out = project.path / "report.html"
    results = project.path / "results.json"
    result = project.runpytest("--rs-publisher=subjects:extra", "--rs-rules=1.1", FAST, f"--rs-report-html={out}",
                               f"--rs-report-json={results}")
    assert result.parseoutcomes()["failed"] >= 1
    data = json.loads(results.read_text())
    root = parse(out)
    cited = 0
    for r in data["results"]:
        if r["outcome"] != "failed":
            continue
        article = by_id(root, "fail-publisher-" + r["test"])
        findings = [e for e in article.iter("section") if "finding" in (e.get("class") or "")]
        assert len(findings) == len(r["failures"]) >= 1
        for finding, failure in zip(findings, r["failures"], strict=True):
            facts = _facts(finding)[0]
            assert facts["expected"] == failure["expected"]
            assert facts["observed"] == failure["observed"]
            if failure["rule"] != r["rule"]:
                assert failure["rule"] in facts["broke rule"]
            links = [a.get("href", "") for a in finding.iter("a") if a.get("href", "").startswith("#")]
            kept = {rec["seq"] for rec in r["trace"]}
            assert links == [f"#fail-publisher-{r['test']}-rec-{seq}" for seq in failure["evidence"] if seq in kept]
            for link in links:  # each goes to the highlighted row of that record in the timeline
                target = by_id(root, link[1:])
                assert target.tag == f"{SVG}rect"
                assert "band" in (target.get("class") or "")
            cited += len(links)
    assert cited >= 1, "a 1.1 violation cites the on_next that broke it"


def test_a_verdict_that_rests_on_a_setting_names_it_with_its_value(project: pytest.Pytester) -> None:
    out = project.path / "report.html"
    project.runpytest("--rs-publisher=subjects:ignores_zero", "--rs-rules=3.9", FAST, f"--rs-report-html={out}")
    zero = by_id(parse(out), "fail-publisher-required_spec309_request_zero_must_signal_value_error")
    rests_on = [facts["rests on"] for facts in _facts(zero) if "rests on" in facts]
    assert len(rests_on) == 1
    assert "timeout = 300 ms" in rests_on[0]
    assert "--rs-timeout-ms" in rests_on[0]


def test_reports_read_the_failures_not_the_message() -> None:
    from rstck.results import Failure
    from rstck_plugins.reports.terminal import table

    trace = [_record(0, "request", "1", demand=1), _record(1, "on_next", "0"), _record(2, "on_next", "1")]
    misleading = "[rule 2.2] expected nothing; observed nothing\n  check   : not this"
    r = TestResult("required_spec309_x", "publisher", "3.9", "required", "failed", "failed", 0.01,
                   message=misleading, trace=trace, trace_total=500, subject="s",
                   failures=[Failure("1.1", "at most 1 on_next", "on_next #2 without demand", hint="count demand",
                                     evidence=(2,)),
                             Failure("3.9", "on_error(ValueError)", "nothing", evidence=(400,), setting="timeout")],
                   iterations={"ran": 10, "showed": 3})
    root = html5lib.parse(render(RunResults([r], subjects={"publisher": "s"}, settings={"timeout_ms": 250.0})),
                          namespaceHTMLElements=False)
    article = by_id(root, "fail-publisher-required_spec309_x")
    first, second = (_facts(e)[0] for e in article.iter("section") if "finding" in (e.get("class") or ""))
    assert "1.1" in first["broke rule"]
    assert first["expected"] == "at most 1 on_next"
    assert first["check"] == "count demand"
    assert "#2" in first["evidence"]
    assert "broke rule" not in second
    assert "#400 (not kept in the trace)" in second["evidence"]
    assert "timeout = 250 ms" in second["rests on"]
    assert "Problem 2 of 2" in text(article)
    assert "10 run, 3 of them showed the race" in text(article)
    assert "Rules broken: 1.1, 3.9" in text(root)
    assert "broken as well while verifying rule 3.9" in text(cells(rule_rows(root)["1.1"])[3])
    assert "broken as well" not in text(cells(rule_rows(root)["2.2"])[3])
    lines = [line for line, _colour in table([r])]
    assert any(line.startswith("1.1") and "also broken in tests of 3.9" in line for line in lines)
    assert not any(line.startswith("2.2") for line in lines)


def test_hostile_subject_cannot_inject_markup(project: pytest.Pytester) -> None:
    out = project.path / "report.html"
    results = project.path / "results.json"
    result = project.runpytest("--rs-publisher=subjects:hostile", "--rs-rules=1.1,3.9,3.15", FAST,
                               f"--rs-report-html={out}", f"--rs-report-json={results}")
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed", 0) >= 2
    source = out.read_text(encoding="utf-8")
    data = json.loads(results.read_text())
    assert any(SCRIPT in r["message"] for r in data["results"])  # the subject's text reached the results
    assert any(rec["thread"] == SCRIPT + ATTR for r in data["results"] for rec in r["trace"])
    assert "<script" not in source.lower()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in source
    assert "&quot;onmouseover=&quot;x" in source

    root = parse(out)
    elements = list(root.iter())
    assert not [e.tag for e in elements if str(e.tag).lower().endswith("script")]
    assert not [(e.tag, name) for e in elements for name in e.attrib if name.lower().startswith("on")]
    page = text(root)
    assert SCRIPT in page  # shown as text, in the message and in the trace
    assert ATTR in page
    svg_text = [t.text or "" for svg in root.iter(f"{SVG}svg") for t in svg.iter(f"{SVG}text")]
    assert any(SCRIPT in t for t in svg_text)  # the thread lane's name, as text
    titles = [text(t) for t in root.iter(f"{SVG}title")]
    assert any(f"thread {SCRIPT}{ATTR}" in t for t in titles)


def test_report_command_renders_the_same_page_from_a_saved_file(project: pytest.Pytester) -> None:
    live = project.path / "live.html"
    results = project.path / "results.json"
    result = project.runpytest("--rs-publisher=subjects:ignores_zero", FAILED, "--rs-rules=3.9,1.4", FAST,
                               f"--rs-report-html={live}", f"--rs-report-json={results}")
    result.assert_outcomes(passed=2, failed=3, skipped=1)
    later = project.path / "later.html"
    proc = subprocess.run([sys.executable, "-m", "rstck_plugins", "report", str(results), "-o", str(later)],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "6 test(s), 3 failed" in proc.stdout
    assert later.read_text() == live.read_text()


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (None, "cannot read results file"),
        ("{not json", "not valid JSON (line 1, column 2)"),
        ('{"schema": "other/9"}', "expected a results file with schema 'rs-tck-results/1'"),
        ('{"schema": "rs-tck-results/1", "results": [{"test": "x"}]}', "results[0] is malformed"),
    ],
)
def test_report_command_rejects_a_bad_results_file(tmp_path: Path, content: str | None, problem: str) -> None:
    path = tmp_path / "results.json"
    if content is not None:
        path.write_text(content)
    proc = subprocess.run([sys.executable, "-m", "rstck_plugins", "report", str(path), "-o", str(tmp_path / "r.html")],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert str(path) in lines[0]
    assert problem in lines[0]
    assert not (tmp_path / "r.html").exists()


def test_report_html_to_a_directory_that_cannot_be_made_is_a_usage_error(project: pytest.Pytester) -> None:
    project.makefile(".txt", afile="")
    result = project.runpytest(REF, "--rs-report-html=afile.txt/d/r.html")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--rs-report-html=afile.txt/d/r.html: cannot create directory afile.txt/d" in result.stderr.str()


def test_junit_xml_properties_on_failed_and_skipped_tests(project: pytest.Pytester) -> None:
    result = project.runpytest("--rs-publisher=subjects:ignores_zero", "--rs-rules=3.9,1.10", FAST,
                               "--junitxml=junit.xml")
    result.assert_outcomes(failed=3, skipped=2)
    root = ET.parse(project.path / "junit.xml").getroot()
    seen = set()
    for case in root.iter("testcase"):
        props = {p.get("name"): p.get("value") for p in case.iter("property")}
        kind = next((child.tag for child in case if child.tag in ("failure", "skipped")), "passed")
        rule = "1.10" if "spec110" in case.get("name", "") else "3.9"
        level = case.get("name", "").split("_", 1)[0]
        assert props == {"rs_rule": rule, "rs_level": level, "rs_verification": "publisher",
                         "rs_subject": "publisher"}, case.get("name")
        seen.add((kind, level))
    assert seen == {("failure", "required"), ("skipped", "optional"), ("skipped", "untested")}


def test_terminal_summary_has_a_row_per_rule(project: pytest.Pytester) -> None:
    result = project.runpytest("--rs-publisher=subjects:ignores_zero", FAILED, "--rs-rules=sanity,3.9,1.4,1.10",
                               FAST)
    result.assert_outcomes(passed=5, failed=3, skipped=2)
    result.stdout.re_match_lines([
        r"=+ rs-tck conformance by rule =+",
        r"rule +keyword +publisher +tests",
        r"sanity +passed +3 required",
        r"1\.4 +MUST +passed +2 required",
        r"1\.10 +MUST +untested +1 untested",
        r"3\.9 +MUST +FAILED +3 required, 1 optional: 3 failed, 1 optional unsupported",
        r"not selected in this run: 1\.1-1\.3, 1\.5-1\.9, 1\.11, 2\.13, 3\.1-3\.8, 3\.10-3\.17",
        r"no test in publisher: 2\.1-2\.12, 4\.1-4\.2",
    ])


def test_terminal_summary_only_when_a_subject_is_verified(project: pytest.Pytester) -> None:
    project.makepyfile(test_user="def test_ok():\n    pass\n")
    result = project.runpytest("test_user.py")
    result.assert_outcomes(passed=1)
    assert "rs-tck conformance" not in result.stdout.str()


def _record(seq: int, signal: str, detail: str, thread: str = "main", demand: int | None = 0) -> dict[str, object]:
    return {"seq": seq, "t_ms": seq * 0.5, "thread": thread, "actor": "probe", "signal": signal,
            "detail": detail, "demand": demand}


def test_render_shows_gaps_unbounded_demand_and_survives_odd_text() -> None:
    trace = [_record(0, "request", str(2**63 - 1), demand=2**63 - 1),
             _record(1, "on_next", "0", thread="pool\x00\ud800"),
             _record(5000, "on_next", "4999", thread="pool\x00\ud800"),
             _record(5001, "cancel", "")]
    failed = TestResult("required_spec101_x", "publisher", "1.1", "required", "failed", "failed", 0.01,
                        message="[rule 1.1] expected a; observed b\n  trace   : 6000 record(s)\n  #0 ...",
                        trace=trace, trace_total=6000, subject="s")
    html_text = render(RunResults([failed], subjects={"publisher": "s"}, settings={}))
    html_text.encode("utf-8")  # no lone surrogate left to break the file
    root = html5lib.parse(html_text, namespaceHTMLElements=False)
    labels = [t.text or "" for t in root.iter(f"{SVG}text")]
    assert "… 4,998 record(s) not kept …" in labels
    assert "… 998 record(s) not kept …" in labels  # the records after the last one kept
    assert "∞" in labels
    assert "\x00" not in html_text
    assert "6,000 records, 4 kept" in text(root)


def test_render_of_an_empty_document() -> None:
    root = html5lib.parse(render(RunResults([], subjects={}, settings={})), namespaceHTMLElements=False)
    assert len(rule_rows(root)) == len(RULES)
    assert "No test results" in text(root)


def test_every_field_of_a_crafted_results_file_is_escaped() -> None:
    evil = f'{SCRIPT}{ATTR} \'><svg onload=alert(1)><a href="javascript:x">'
    record = {"seq": 0, "t_ms": 0.1, "thread": evil, "actor": evil, "signal": evil, "detail": evil, "demand": 3}
    results = [
        # Every text field crafted; the enums must be their words, or reading the file stops with an error.
        {"test": evil, "verification": evil, "rule": rule, "level": "required", "outcome": "failed", "verdict": "failed",
         "duration_s": 0.1, "message": f"[rule 1.1] expected {evil}; observed {evil}\n  check   : {evil}",
         "trace": [record, {**record, "seq": 7, "signal": "note", "detail": "violation " + evil}],
         "trace_total": 9, "subject": evil, "baseline": "known",
         "failures": [{"rule": evil, "expected": evil, "observed": evil, "hint": evil, "evidence": [0, 7, 99],
                       "setting": evil}]}
        for rule in ("1.1", evil)
    ]
    run = RunResults([TestResult.from_json(r) for r in results], subjects={evil: evil, "publisher": evil},
                     settings={evil: evil}, tck_version=evil, python=evil)
    root = html5lib.parse(render(run), namespaceHTMLElements=False)
    elements = list(root.iter())
    assert not [e.tag for e in elements if str(e.tag).lower().endswith("script")]
    assert not [(e.tag, a) for e in elements for a in e.attrib if a.lower().startswith("on")]
    assert not [e for e in elements if "javascript:" in (e.get("href") or "")]
    svg_tags = {str(e.tag) for svg in root.iter(f"{SVG}svg") for e in svg.iter()}
    assert f"{SVG}svg" not in {str(e.tag) for svg in root.iter(f"{SVG}svg") for e in list(svg.iter())[1:]}
    assert svg_tags <= {f"{SVG}{t}" for t in ("svg", "title", "text", "line", "rect", "path", "circle")}
    assert evil in text(root)
