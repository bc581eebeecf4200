"""A library's whole TCK in its own tests: subjects declared beside its unit tests, one run, one report.

The way JVM libraries use their TCK (RxJava's one ``*TckTest`` class per operator): a test
folder with nine declared subjects of the four kinds and plain unit tests, run by plain
``pytest``; the same through repeated command-line options; and bad declarations stopped
before any test with one line each.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

#: A small library: pass-through operators over the reference range publisher, one of them broken.
MYLIB = '''
from rstck.reference import range_publisher


class _Through:
    def __init__(self, downstream, fn):
        self.downstream, self.fn = downstream, fn

    def on_subscribe(self, subscription):
        self.downstream.on_subscribe(subscription)

    def on_next(self, element):
        if element is None:
            raise TypeError("element is None")
        self.downstream.on_next(self.fn(element))

    def on_error(self, error):
        if error is None:
            raise TypeError("error is None")
        self.downstream.on_error(error)

    def on_complete(self):
        self.downstream.on_complete()


class Operator:
    """A publisher that hands each element of its upstream on through ``fn``."""

    def __init__(self, upstream, fn):
        self.upstream, self.fn = upstream, fn

    def subscribe(self, subscriber):
        if subscriber is None:
            raise TypeError("subscriber is None")
        self.upstream.subscribe(_Through(subscriber, self.fn))


def from_iterable(n):
    return Operator(range_publisher(n), lambda x: x)


def map_publisher(n):
    return Operator(range_publisher(n), lambda x: x * 2)


def filter_publisher(n):
    return Operator(range_publisher(n), lambda x: x)


def take_publisher(n):
    return Operator(range_publisher(n), lambda x: x)


class _IgnoresZero:
    def __init__(self, subscription):
        self.subscription = subscription

    def request(self, n):
        if n > 0:
            self.subscription.request(n)

    def cancel(self):
        self.subscription.cancel()


class _Hiding(_Through):
    def on_subscribe(self, subscription):
        self.downstream.on_subscribe(_IgnoresZero(subscription))


class Broken(Operator):
    def subscribe(self, subscriber):
        if subscriber is None:
            raise TypeError("subscriber is None")
        self.upstream.subscribe(_Hiding(subscriber, self.fn))


def broken_publisher(n):
    """Swallows request(n <= 0): fails rule 3.9."""
    return Broken(range_publisher(n), lambda x: x)
'''

TEST_RS = '''
import rstck.pytest as rs
from rstck.reference import failed_publisher, range_publisher
from rstck.reference.asyncio_publishers import asyncio_range_publisher
from rstck.reference.processors import identity_processor
from rstck.reference.subscribers import sync_subscriber, sync_whitebox_subscriber

import mylib

test_range = rs.publisher_verification(range_publisher, id="range", failed=failed_publisher)
test_from_iterable = rs.publisher_verification(mylib.from_iterable)
test_map = rs.publisher_verification("mylib:map_publisher", id="map", max_subscribers=1)
test_take = rs.publisher_verification(mylib.take_publisher, skip_rules={"3.9": "take hands request(n) on"})
test_interval = rs.publisher_verification(asyncio_range_publisher, id="interval", loop="asyncio")
test_broken = rs.publisher_verification(mylib.broken_publisher, id="broken")
test_collect = rs.subscriber_verification(sync_subscriber, id="collect")
test_probed = rs.whitebox_verification(sync_whitebox_subscriber, id="probed")
test_identity = rs.processor_verification(identity_processor, id="identity", max_subscribers=1)


class TestFilter(rs.PublisherVerification):
    id = "filter"

    def create_publisher(self, n):
        return mylib.filter_publisher(n)

    def create_failed_publisher(self):
        return failed_publisher()
'''

TEST_UNITS = '''
import mylib


def test_operator_maps():
    seen = []

    class S:
        def on_subscribe(self, s): s.request(3)
        def on_next(self, x): seen.append(x)
        def on_error(self, e): raise e
        def on_complete(self): seen.append("done")

    mylib.map_publisher(3).subscribe(S())
    assert seen == [0, 2, 4, "done"]


def test_second_unit():
    assert True
'''

#: Few rules, of every kind: the point is the host, not the verdicts.
RULES = "--rs-rules=sanity,1.9,2.5,3.9"
SUBJECTS = ["range", "from_iterable", "map", "take", "interval", "broken", "collect", "probed", "identity",
            "filter"]


@pytest.fixture
def library(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(mylib=MYLIB)
    (pytester.path / "tests").mkdir()
    (pytester.path / "tests" / "test_rs.py").write_text(TEST_RS)
    (pytester.path / "tests" / "test_units.py").write_text(TEST_UNITS)
    pytester.syspathinsert()
    return pytester


def _results(path: object) -> list[dict[str, object]]:
    return list(json.loads(Path(str(path)).read_text(encoding="utf-8"))["results"])


def test_plain_pytest_runs_every_subject_and_the_unit_tests(library: pytest.Pytester) -> None:
    out = library.path / "rs.json"
    result = library.runpytest(RULES, f"--rs-report-json={out}", "--rs-report-html=rs.html",
                               "--junitxml=junit.xml", "--rs-baseline-write=baseline.txt")
    outcomes = result.parseoutcomes()
    assert result.ret == 1
    assert outcomes["failed"] == 3  # broken's three required 3.9 tests
    result.stdout.fnmatch_lines(["*tests/test_units.py::test_operator_maps PASSED*"]
                                if "-v" in result.stdout.str() else ["*rs-tck conformance by subject*"])
    # One compact line per subject, the broken one naming its rule.
    text = result.stdout.str()
    lines = text.split("rs-tck conformance by subject")[1].splitlines()[1:11]
    assert [line.split()[0] for line in lines] == SUBJECTS
    assert all(len(line) <= 100 for line in lines)
    assert any(line.startswith("broken") and "FAILED" in line and "failed: 3.9" in line for line in lines)
    # One results file of every subject, each result naming its subject.
    results = _results(out)
    assert [r for r in results if "subject_id" not in r] == []
    assert list(dict.fromkeys(r["subject_id"] for r in results)) == SUBJECTS
    doc = json.loads(out.read_text())
    assert set(SUBJECTS) <= set(doc["subjects"])
    # The subject's own settings and skipped rules.
    take = [r for r in results if r["subject_id"] == "take" and r["rule"] == "3.9"]
    assert take
    assert all(r["verdict"] == "deselected" and "take hands request(n) on" in str(r["message"])
                        for r in take)
    # JUnit: the unit tests and each subject's tests, each subject its own classname.
    cases = list(ET.parse(library.path / "junit.xml").getroot().iter("testcase"))
    classnames = {str(c.get("classname")) for c in cases}
    assert "tests.test_units" in classnames
    assert {f"tests.test_rs.{n}" for n in ("test_range", "test_map", "TestFilter")} <= classnames
    assert (library.path / "rs.html").exists()
    # One baseline for the whole library, keyed by subject; it gates the next run.
    baseline = (library.path / "baseline.txt").read_text()
    assert "broken::required_spec309_request_zero_must_signal_value_error" in baseline
    again = library.runpytest(RULES, "--rs-baseline=baseline.txt")
    assert again.ret == 0, again.stdout.str()
    again.stdout.fnmatch_lines(["*3 known deviation(s), 0 new failure(s), 0 stale entries*"])


def test_unit_tests_alone_run_no_tck_test(library: pytest.Pytester) -> None:
    result = library.runpytest("tests/test_units.py", "-v")
    result.assert_outcomes(passed=2)
    assert "rs-tck" not in result.stdout.str()


def test_k_pasted_ids_and_last_failed_select_per_subject(library: pytest.Pytester) -> None:
    result = library.runpytest(RULES, "-k", "test_map", "-q", "--co")
    ids = [line for line in result.stdout.lines if "::" in line]
    assert ids
    assert all(line.startswith("tests/test_rs.py::test_map::") for line in ids)
    one = "tests/test_rs.py::test_map::required_spec309_request_zero_must_signal_value_error[3.9]"
    result = library.runpytest(RULES, one, "-v")
    result.assert_outcomes(passed=1)
    first = library.runpytest(RULES)
    assert first.ret == 1
    last = library.runpytest(RULES, "--lf", "-v")
    last.assert_outcomes(failed=3)
    assert all("test_broken" in line for line in last.stdout.lines if " FAILED" in line and "::" in line)


def test_repeated_options_with_ids_verify_several_subjects(library: pytest.Pytester) -> None:
    out = library.path / "cli.json"
    result = library.runpytest(
        RULES, "--rs-publisher=map=mylib:map_publisher", "--rs-publisher=broken=mylib:broken_publisher",
        "--rs-publisher=range=rstck.reference:range_publisher",
        "--rs-failed-publisher=range=rstck.reference:failed_publisher",
        "--rs-subscriber=collect=rstck.reference.subscribers:sync_subscriber", f"--rs-report-json={out}",
        "--junitxml=junit.xml", "-v")
    assert result.ret == 1
    assert "test_units" not in result.stdout.str()  # subjects on the command line, no paths: the TCK alone
    results = _results(out)
    assert list(dict.fromkeys(r["subject_id"] for r in results)) == ["map", "broken", "range", "collect"]
    failed = {(r["subject_id"], r["rule"]) for r in results if r["outcome"] == "failed"}
    assert failed == {("broken", "3.9")}
    result.stdout.fnmatch_lines(["map::required_spec309_request_zero_must_signal_value_error?3.9? PASSED*"])
    classnames = {str(c.get("classname")) for c in ET.parse(library.path / "junit.xml").getroot().iter("testcase")}
    assert classnames == {"map", "broken", "range", "collect"}
    # A pasted id of one of them runs that test alone.
    one = library.runpytest("--rs-publisher=map=mylib:map_publisher", "--rs-publisher=broken=mylib:broken_publisher",
                            "broken::required_spec309_request_zero_must_signal_value_error", "-v")
    one.assert_outcomes(failed=1)


def test_ini_subjects_run_only_when_the_run_selects_them(library: pytest.Pytester) -> None:
    library.makeini("[pytest]\nrs_publisher = map=mylib:map_publisher\n    broken=mylib:broken_publisher\n")
    (library.path / "tests" / "test_rs.py").unlink()
    units = library.runpytest("tests/test_units.py", "-v")
    units.assert_outcomes(passed=2)
    whole = library.runpytest(RULES, "-v")
    assert whole.ret == 1
    whole.stdout.fnmatch_lines(["*tests/test_units.py::test_second_unit PASSED*",
                                "map::required_spec309_request_zero_must_signal_value_error?3.9? PASSED*"])
    named = library.runpytest(RULES, "map", "-v")
    assert named.ret == 0
    assert "broken::" not in named.stdout.str()
    assert "test_units" not in named.stdout.str()


BAD = {
    "same id": (('test_a = rs.publisher_verification(range_publisher, id="a")\n'
                 'test_b = rs.publisher_verification(range_publisher, id="a")\n'), 4, "two subjects with the id 'a'"),
    "bad id": ('test_a = rs.publisher_verification(range_publisher, id="not valid")\n', 3,
               "is not a valid identifier"),
    "no factory": ("class TestA(rs.PublisherVerification):\n    pass\n", 3, "has no create_publisher() method"),
    "raises on import": ('test_a = rs.publisher_verification("nosuchlib.streams:range_publisher")\n', 3,
                         "cannot import module 'nosuchlib.streams'"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_a_bad_declaration_stops_the_run_with_one_line(library: pytest.Pytester, case: str) -> None:
    source, line, words = BAD[case]
    header = "import rstck.pytest as rs\nfrom rstck.reference import range_publisher\n"
    (library.path / "tests" / "test_rs.py").write_text(header + source)
    result = library.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.stderr.lines if line.startswith("ERROR:")]
    assert len(errors) == 1, result.stderr.str()
    assert errors[0].startswith(f"ERROR: tests/test_rs.py:{line}: "), errors
    assert words in errors[0]
    assert "passed" not in result.stdout.str()
    # The library's unit tests alone are not disturbed.
    library.runpytest("tests/test_units.py").assert_outcomes(passed=2)


def test_under_xdist_loadgroup_each_subject_stays_on_one_worker(library: pytest.Pytester) -> None:
    out = library.path / "xdist.json"
    result = library.runpytest_subprocess(RULES, "-n", "2", "--dist", "loadgroup", "-v",
                                          f"--rs-report-json={out}", "tests/test_rs.py")
    assert result.ret == 1  # broken's 3.9
    workers: dict[str, set[str]] = {}
    for line in result.stdout.lines:
        if line.startswith("[gw") and "tests/test_rs.py::" in line:
            worker, nodeid = line.split()[0], line.split()[-1]
            workers.setdefault(nodeid.split("::")[1], set()).add(worker)
    assert set(workers) == {f"test_{s}" if s not in ("filter",) else "TestFilter" for s in SUBJECTS}
    assert all(len(w) == 1 for w in workers.values()), workers
    results = _results(out)
    assert set(dict.fromkeys(r["subject_id"] for r in results)) == set(SUBJECTS)
    assert set(json.loads(out.read_text())["subjects"]) >= set(SUBJECTS)


def test_the_environment_takes_several_and_an_option_may_name_a_declaration(
    library: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    library.makepyfile(declared_subjects=(
        "import rstck.pytest as rs\nimport mylib\n"
        "take = rs.publisher_verification(mylib.take_publisher, skip_rules={'3.9': 'hands request(n) on'})\n"))
    monkeypatch.setenv("RS_TCK_PUBLISHER", "map=mylib:map_publisher, take=declared_subjects:take")
    out = library.path / "env.json"
    result = library.runpytest(RULES, f"--rs-report-json={out}")
    assert result.ret == 0, result.stdout.str()
    results = _results(out)
    assert list(dict.fromkeys(r["subject_id"] for r in results)) == ["map", "take"]
    take = [r for r in results if r["subject_id"] == "take" and r["rule"] == "3.9"]
    assert take
    assert all(r["verdict"] == "deselected" for r in take)
