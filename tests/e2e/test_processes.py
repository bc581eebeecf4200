"""A library's subjects dealt to worker processes (``--rs-processes``), through real pytest runs.

Each subject's factory leaves its process id in ``pids/``, so a test sees where it ran. The
verdicts, the results file and JUnit must be those of a run in one process; a subject a worker
cannot import runs in the pytest process; a worker killed mid-run costs only its own tests.
"""

from __future__ import annotations

import json
import os
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_library import MYLIB

#: Subjects of every kind, and one broken publisher; each factory notes its process in pids/.
TEST_RS = '''
import os
from pathlib import Path

import rstck.pytest as rs
from rstck.reference import failed_publisher, range_publisher
from rstck.reference.processors import identity_processor
from rstck.reference.subscribers import sync_subscriber, sync_whitebox_subscriber

import mylib


def noted(factory):
    def make(*args):
        Path("pids", str(os.getpid())).touch()
        return factory(*args)
    return make


test_range = rs.publisher_verification(noted(range_publisher), id="range", failed=failed_publisher)
test_map = rs.publisher_verification(noted(mylib.map_publisher), id="map", max_subscribers=1)
test_take = rs.publisher_verification(noted(mylib.take_publisher), skip_rules={"3.9": "take hands request(n) on"})
test_broken = rs.publisher_verification(noted(mylib.broken_publisher), id="broken")
test_collect = rs.subscriber_verification(noted(sync_subscriber), id="collect")
test_probed = rs.whitebox_verification(noted(sync_whitebox_subscriber), id="probed")
test_identity = rs.processor_verification(noted(identity_processor), id="identity", max_subscribers=1)


class TestFilter(rs.PublisherVerification):
    id = "filter"

    def create_publisher(self, n):
        Path("pids", str(os.getpid())).touch()
        return mylib.filter_publisher(n)
'''

#: The verdict-bearing fields of a result (not its timing, trace or wording of durations).
FIELDS = ("test", "verification", "rule", "level", "outcome", "verdict", "subject", "subject_id", "baseline")
RULES = "--rs-rules=sanity,1.9,2.5,3.9"


@pytest.fixture
def library(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(mylib=MYLIB)
    (pytester.path / "tests").mkdir()
    (pytester.path / "tests" / "test_rs.py").write_text(TEST_RS)
    (pytester.path / "pids").mkdir()
    pytester.syspathinsert()
    return pytester


def _pids(root: Path) -> set[int]:
    pids = {int(p.name) for p in (root / "pids").iterdir()}
    for p in (root / "pids").iterdir():
        p.unlink()
    return pids


def _verdicts(path: Path) -> list[dict[str, Any]]:
    results = json.loads(path.read_text(encoding="utf-8"))["results"]
    return [{k: r.get(k) for k in FIELDS} | {"failed_rules": [f["rule"] for f in r.get("failures", [])]}
            for r in results]


def _junit(path: Path) -> list[tuple[str, str, str]]:
    cases = []
    for case in ET.parse(path).getroot().iter("testcase"):
        outcome = next((child.tag for child in case if child.tag in ("failure", "error", "skipped")), "passed")
        cases.append((str(case.get("classname")), str(case.get("name")), outcome))
    return cases


def test_subjects_in_worker_processes_give_the_verdicts_files_and_junit_of_one_process(
        library: pytest.Pytester) -> None:
    root = library.path
    dealt = library.runpytest(RULES, "--rs-processes=2", "--rs-subjects-at-once=2", "--rs-report-json=dealt.json",
                              "--junitxml=dealt.xml")
    where = _pids(root)
    alone = library.runpytest(RULES, "--rs-processes=1", "--rs-report-json=alone.json", "--junitxml=alone.xml")
    here = _pids(root)
    # The subjects ran in two other processes; with one process, in this one alone.
    assert here == {os.getpid()}
    assert len(where - {os.getpid()}) == 2, where
    dealt.stdout.fnmatch_lines(["rs-tck: 8 subjects in 2 worker processes"])
    assert "worker processes" not in alone.stdout.str()
    # Same verdicts, results file and JUnit; the broken subject failed on its rule.
    assert dealt.parseoutcomes() == alone.parseoutcomes()
    assert dealt.ret == alone.ret == 1
    verdicts = _verdicts(root / "dealt.json")
    assert verdicts == _verdicts(root / "alone.json")
    assert {r["subject_id"] for r in verdicts if r["outcome"] == "failed"} == {"broken"}
    assert all(r["failed_rules"][0] == "3.9" for r in verdicts if r["outcome"] == "failed")
    assert _junit(root / "dealt.xml") == _junit(root / "alone.xml")
    # Each result whole: the fields of one process's, the failures' evidence, the traces.
    complete = json.loads((root / "dealt.json").read_text())["results"]
    assert [sorted(r) for r in complete] == [sorted(r) for r in json.loads((root / "alone.json").read_text())["results"]]
    assert all(r["failures"][0]["evidence"] and r["trace"] for r in complete if r["outcome"] == "failed")
    assert all(bool(r["trace"]) == (r["trace_total"] > 0) for r in complete if r["outcome"] == "passed")


def test_a_subject_a_worker_cannot_import_runs_in_the_pytest_process(library: pytest.Pytester) -> None:
    """``hostlib`` exists only in the pytest process (a conftest made it): the worker hands it back."""
    root = library.path
    (root / "tests" / "conftest.py").write_text(
        "import sys, types\nfrom rstck.reference import range_publisher\n"
        "hostlib = types.ModuleType('hostlib')\nhostlib.publisher = range_publisher\nsys.modules['hostlib'] = hostlib\n")
    (root / "tests" / "test_host.py").write_text(
        "import os\nfrom pathlib import Path\nimport rstck.pytest as rs\nimport hostlib\n\n"
        "def made(n):\n    Path('pids', f'host-{os.getpid()}').touch()\n    return hostlib.publisher(n)\n\n"
        "test_hosted = rs.publisher_verification(made, id='hosted')\n")
    result = library.runpytest(RULES, "--rs-processes=2", "--rs-report-json=out.json")
    verdicts = _verdicts(root / "out.json")
    hosted = [r for r in verdicts if r["subject_id"] == "hosted"]
    assert hosted
    assert all(r["outcome"] in ("passed", "skipped") for r in hosted)
    assert {p.name for p in (root / "pids").iterdir() if p.name.startswith("host-")} == {f"host-{os.getpid()}"}
    result.stdout.fnmatch_lines(["rs-tck: hosted ran in the pytest process: a worker could not rebuild it:*hostlib*"])
    assert {r["subject_id"] for r in verdicts if r["outcome"] == "failed"} == {"broken"}


def test_a_worker_killed_mid_run_costs_only_its_own_tests(library: pytest.Pytester,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """The ``doomed`` subject kills its worker on its fifth subscription; the others are verified."""
    root = library.path
    monkeypatch.setenv("HOST_PID", str(os.getpid()))
    (root / "tests" / "test_rs.py").write_text(
        "import itertools, os, signal\nimport rstck.pytest as rs\nfrom rstck.reference import range_publisher\n"
        "calls = itertools.count()\n\n"
        "def doomed(n):\n    if os.getpid() != int(os.environ['HOST_PID']) and next(calls) == 5:\n"
        "        os.kill(os.getpid(), signal.SIGKILL)\n    return range_publisher(n)\n\n"
        "test_doomed = rs.publisher_verification(doomed, id='doomed')\n"
        "test_one = rs.publisher_verification(range_publisher, id='one')\n"
        "test_two = rs.publisher_verification(range_publisher, id='two')\n")
    result = library.runpytest("--rs-rules=sanity,1.9,3.9,3.17", "--rs-processes=2", "--rs-subjects-at-once=1",
                               "--rs-report-json=out.json", "--rs-no-fuzz")
    verdicts = _verdicts(root / "out.json")
    assert {r["subject_id"] for r in verdicts} == {"doomed", "one", "two"}
    assert all(r["outcome"] in ("passed", "skipped") for r in verdicts if r["subject_id"] != "doomed")
    doomed = json.loads((root / "out.json").read_text())["results"]
    lost = [r for r in doomed if r.get("subject_id") == "doomed" and r["outcome"] == "error"]
    assert lost, result.stdout.str()
    assert all("killed by SIGKILL" in r["message"] and "doomed" in r["message"] for r in lost)
    assert result.ret == 1
    result.stdout.fnmatch_lines(["rs-tck: 3 subjects in 2 worker processes*"])


def test_under_xdist_its_workers_are_the_only_processes(library: pytest.Pytester) -> None:
    """``-n 2``: every subject is made and verified in one of xdist's two workers, none in a process of ours."""
    result = library.runpytest_subprocess(RULES, "-n", "2", "--dist", "loadgroup", "-p", "xdist")
    assert result.ret == 1
    assert "worker processes" not in result.stdout.str()
    assert len(_pids(library.path)) == 2


#: A third party's result hook that reads each passing result's trace, as a reporter of its own may.
READS_TRACES = '''
import json


def rstck_result(result):
    if result.outcome == "passed":
        with open("traces.jsonl", "a") as out:
            out.write(json.dumps([result.key, result.test, len(result.trace), result.trace_total]) + "\\n")
'''


def _table(lines: list[str]) -> list[str]:
    """The terminal's table by subject: from its title to the next section's rule."""
    start = next(i for i, line in enumerate(lines) if "rs-tck conformance by subject" in line)
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("="))
    return lines[start:end]


def _traces(root: Path) -> list[list[Any]]:
    lines = (root / "traces.jsonl").read_text().splitlines()
    (root / "traces.jsonl").unlink()
    return sorted(json.loads(line) for line in lines)


def test_a_run_that_reads_no_trace_and_one_whose_hook_reads_them_report_as_one_process(
        library: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a results file, HTML report or result hook of its own, a worker keeps passing
    results' traces to itself; JUnit, the terminal and the verdicts are those of one process. A
    conftest's ``rstck_result`` that reads them gets each passing result's trace, as in one process."""
    from rstck_plugins.host import process_host

    decided: list[bool] = []
    decide = process_host.reads_passing_traces

    def spy(config: pytest.Config, state: Any) -> bool:
        decided.append(decide(config, state))
        return decided[-1]

    monkeypatch.setattr(process_host, "reads_passing_traces", spy)
    root = library.path
    dealt = library.runpytest(RULES, "--rs-processes=2", "--junitxml=dealt.xml")
    assert decided == [False]  # the terminal table and JUnit read no trace: the workers keep them
    alone = library.runpytest(RULES, "--rs-processes=1", "--junitxml=alone.xml")
    dealt.stdout.fnmatch_lines(["rs-tck: 8 subjects in 2 worker processes"])
    assert dealt.parseoutcomes() == alone.parseoutcomes()
    assert dealt.ret == alone.ret == 1
    assert _junit(root / "dealt.xml") == _junit(root / "alone.xml")
    assert _table(dealt.outlines) == [*_table(alone.outlines), "rs-tck: 8 subjects in 2 worker processes"]
    (root / "tests" / "conftest.py").write_text(READS_TRACES)
    library.runpytest(RULES, "--rs-processes=2", "--rs-no-fuzz").stdout.fnmatch_lines(["rs-tck: 8 subjects in 2*"])
    dealt_traces = _traces(root)
    assert decided == [False, True]
    library.runpytest(RULES, "--rs-processes=1", "--rs-no-fuzz")
    alone_traces = _traces(root)
    # The same passing results, each with its trace (its records vary in number from run to run).
    assert [r[:2] for r in dealt_traces] == [r[:2] for r in alone_traces]
    assert all((kept > 0) == (total > 0) for _k, _t, kept, total in dealt_traces)
    assert sum(kept for *_r, kept, _total in dealt_traces) > 0


#: A subject whose module marks it expected to fail: pytest's skipping plugin reads the mark in
#: the call phase and its report (XFAIL where it fails, XPASS where it passes).
MARKED = '''
import pytest
import rstck.pytest as rs

import mylib

pytestmark = pytest.mark.xfail(reason="marked by its module")

test_marked = rs.publisher_verification(mylib.broken_publisher, id="marked")
'''


def _summary(result: pytest.RunResult) -> list[str]:
    """The progress lines, the short summary ``-rA`` lists, and the verdict line, without times and
    addresses (the failures' traces hold them)."""
    lines = result.stdout.lines
    start = next(k for k, line in enumerate(lines) if "short test summary info" in line)
    progress = [line for line in lines[:start] if line.startswith("tests/")]
    summary = [re.sub(r"[\d.]+ ms|0x[0-9a-f]+", "_", line) for line in lines[start:-1] if "worker processes" not in line]
    # The verdict line without its time, and without the padding pytest sizes to the time's digits.
    return [*progress, *summary, lines[-1].rsplit(" in ", 1)[0].strip("= ")]


def test_worker_results_report_as_one_process_does_under_rA_x_lf_and_a_skip_mark(library: pytest.Pytester) -> None:
    """Items whose results came from workers go through pytest's protocol without capture: every
    consumer of their reports (``-rA``, ``-x``, ``--lf``, JUnit, a user's skip mark) sees a run in one process."""
    root = library.path
    (root / "tests" / "test_marked.py").write_text(MARKED)
    seen: dict[str, list[Any]] = {}
    for mode in ("2", "1"):
        full = library.runpytest(RULES, f"--rs-processes={mode}", "-rA", f"--junitxml=full{mode}.xml")
        lastfailed = json.loads((root / ".pytest_cache" / "v" / "cache" / "lastfailed").read_text())
        again = library.runpytest(RULES, f"--rs-processes={mode}", "--lf", "-rA")
        stopped = library.runpytest(RULES, f"--rs-processes={mode}", "-x", "-rA", f"--junitxml=x{mode}.xml")
        seen[mode] = [_summary(full), full.ret, lastfailed, _summary(again), again.ret, _summary(stopped),
                      stopped.ret, _junit(root / f"full{mode}.xml"), _junit(root / f"x{mode}.xml")]
        if mode == "2":
            full.stdout.fnmatch_lines(["rs-tck: 9 subjects in 2 worker processes"])
    assert seen["2"] == seen["1"]
    full_lines, _, lastfailed, _, _, stopped_lines, stopped_ret, *_ = seen["2"]
    assert any(line.startswith("XFAIL") and "marked by its module" in line for line in full_lines)
    assert any(line.startswith("XPASS") and "test_marked" in line for line in full_lines)
    assert lastfailed
    assert all("test_broken" in nodeid for nodeid in lastfailed)
    assert stopped_ret == 1
    assert len([line for line in stopped_lines if line.startswith("FAILED")]) == 1


#: A conftest that marks single kit items as users do: skip, a false skipif, and xfail.
MARKS_ITEMS = '''
import pytest


def pytest_collection_modifyitems(items):
    for item in items:
        if item.nodeid.endswith("[3.9]") and "::test_range::" in item.nodeid:
            item.add_marker(pytest.mark.skip(reason="skipped by the library"))
        elif item.nodeid.endswith("[1.9]") and "::collect::" not in item.nodeid:
            item.add_marker(pytest.mark.skipif(True, reason="skipif by the library"))
        elif item.nodeid.endswith("[2.5]"):
            item.add_marker(pytest.mark.xfail(reason="xfail by the library", strict=False))
'''


def test_a_users_skip_and_xfail_marks_on_single_items_report_at_the_declaration(library: pytest.Pytester) -> None:
    """pytest places a mark's skip at its item's ``reportinfo`` line: a declared subject's file and
    line, a command-line subject's key. Both in one process and dealt to workers."""
    (library.path / "conftest.py").write_text(MARKS_ITEMS)
    line = next(k for k, text in enumerate(TEST_RS.splitlines(), start=1) if text.startswith("test_range ="))
    seen = {}
    for mode in ("2", "1"):
        result = library.runpytest("tests", RULES, f"--rs-processes={mode}", "-rsxX",
                                   "--rs-publisher=rstck.reference:range_publisher")
        assert "INTERNALERROR" not in result.stdout.str()
        # pytest folds a skip mark's reports by file, a skipif's by file and line
        result.stdout.fnmatch_lines_random(["SKIPPED [[]4[]] tests/test_rs.py: skipped by the library",
                                            f"SKIPPED [[]5[]] tests/test_rs.py:{line}: skipif by the library",
                                            "SKIPPED [[]5[]] publisher:1: skipif by the library",
                                            "XPASS *::test_probed::*[[]2.5[]] - xfail by the library"])
        seen[mode] = _summary(result)
        assert result.ret == 1  # the broken publisher still fails
    assert seen["2"] == seen["1"]


#: A subject that prints and logs, passing, and one that prints, logs and fails rule 1.9.
NOISY = '''
import logging
import rstck.pytest as rs
from rstck.reference import range_publisher


def chatty(n):
    print("chatty made", n)
    return range_publisher(n)


def noisy(n):
    print("noisy made", n)
    logging.getLogger("mylib").warning("noisy warns at %s", n)

    class Publisher:
        def subscribe(self, subscriber):
            if subscriber is not None:  # subscribe(None) returns quietly: rule 1.9
                range_publisher(n).subscribe(subscriber)
    return Publisher()


test_chatty = rs.publisher_verification(chatty, id="chatty")
test_noisy = rs.publisher_verification(noisy, id="noisy")
'''


def _sections(result: pytest.RunResult) -> list[str]:
    """The captured sections of the report, with their headers, in order."""
    kept, inside = [], False
    for line in result.stdout.lines:
        if re.match(r"-+ Captured (stdout|stderr|log) call -+", line):
            inside = True
        elif line.startswith(("=", "_")) or re.match(r"-+ \w", line):
            inside = False
        if inside and line:
            kept.append(line)
    return kept


def test_what_a_subject_prints_and_logs_in_a_worker_reaches_its_tests_report(pytester: pytest.Pytester) -> None:
    """pytest gives a test what was printed and logged while it ran; a worker keeps the same and
    sends it with the result: a failing subject's prints show under its failure, a passing one's
    under ``-rP``, and nothing of one subject under another's."""
    pytester.makepyfile(test_noisy=NOISY)
    # in a child process: an in-process pytester run's capture would sit inside this run's
    failing = pytester.runpytest_subprocess("--rs-rules=1.9", "--rs-processes=2")
    passing = pytester.runpytest_subprocess("--rs-rules=1.9", "--rs-processes=2", "-rP")
    assert failing.ret == 1
    failing.stdout.fnmatch_lines(["rs-tck: 2 subjects in 2 worker processes"])
    failed_sections = _sections(failing)
    assert failed_sections[0] == "-" * 29 + " Captured stdout call " + "-" * 29
    assert "noisy made 0" in failed_sections  # its own print, though a test beside it took its turn
    assert any(re.match(r"WARNING +mylib:test_noisy.py:\d+ noisy warns at 0", line) for line in failed_sections)
    assert not any("chatty" in line for line in failed_sections)
    passing.stdout.fnmatch_lines(["rs-tck: 2 subjects in 2 worker processes"])
    assert any(line.startswith("chatty made") for line in _sections(passing))


#: A conforming publisher whose registries of subscribers (one per stream length) are made at
#: import, added to in place and replaced by a copy on each removal; each registry refers to
#: itself, so a replaced one is freed only by the cyclic collector. Whatever the kit does to the
#: collector (``gc.freeze`` leaves what lives by then out of every walk), a cancelled subscriber
#: must be found collectable (rule 3.13). Made as a conftest imports the library, before the
#: kit's run configures (the pytest process freezes what lives by then), the first subscriber of
#: the length rule 3.13 asks for joins a registry made then, and its cancel leaves that registry
#: garbage, holding it, once replaced by a copy.
REGISTRIES_AT_IMPORT = '''
import threading

from rstck.reference import range_publisher


class Registry:
    def __init__(self, subscribers):
        self.subscribers = list(subscribers)
        self.me = self


class Hub:
    def __init__(self):
        self.lock = threading.Lock()
        self.registry = Registry(())

    def add(self, subscriber):
        with self.lock:
            self.registry.subscribers.append(subscriber)

    def remove(self, subscriber):
        with self.lock:
            self.registry = Registry(s for s in self.registry.subscribers if s is not subscriber)


HUBS = {n: Hub() for n in range(64)}


class Tracked:
    def __init__(self, inner, subscriber, hub):
        self.inner, self.subscriber, self.hub = inner, subscriber, hub

    def request(self, n):
        self.inner.request(n)

    def cancel(self):
        self.hub.remove(self.subscriber)
        self.inner.cancel()


class Relay:
    def __init__(self, downstream, hub):
        self.downstream, self.hub = downstream, hub

    def on_subscribe(self, subscription):
        self.downstream.on_subscribe(Tracked(subscription, self.downstream, self.hub))

    def on_next(self, element):
        self.downstream.on_next(element)

    def on_error(self, error):
        self.hub.remove(self.downstream)
        self.downstream.on_error(error)

    def on_complete(self):
        self.hub.remove(self.downstream)
        self.downstream.on_complete()


class Registered:
    def __init__(self, n):
        self.n = n

    def subscribe(self, subscriber):
        if subscriber is None:
            raise TypeError("subscriber is None")
        hub = HUBS.setdefault(self.n, Hub())
        hub.add(subscriber)
        range_publisher(self.n).subscribe(Relay(subscriber, hub))
'''

#: The library above, with its subjects declared in the test module that imports it.
REGISTRY_AT_IMPORT = '''
import rstck.pytest as rs
from mylib_registries import Registered
from rstck.reference import range_publisher

test_registered = rs.publisher_verification(Registered, id="registered")
test_range = rs.publisher_verification(range_publisher, id="range")
'''


@pytest.mark.parametrize("processes", ["1", "2"])
def test_a_registry_made_at_import_lets_a_cancelled_subscriber_go(pytester: pytest.Pytester, processes: str) -> None:
    """Rule 3.13 is judged on what the subject holds, not on what the kit keeps from the
    collector: in the pytest process and in a worker, the first subscriber of a registry made
    at import is collected once cancelled."""
    pytester.makepyfile(mylib_registries=REGISTRIES_AT_IMPORT, test_registry=REGISTRY_AT_IMPORT)
    result = pytester.runpytest_subprocess("--rs-rules=3.13", f"--rs-processes={processes}")
    result.assert_outcomes(passed=4)


def test_a_registry_made_before_the_run_configures_lets_a_cancelled_subscriber_go(pytester: pytest.Pytester) -> None:
    """What the pytest process froze as the kit's run configured (pytest, the plugins, what a
    conftest imported) is out of the collector's walks until rule 3.13 needs it back: a
    registry made then, garbage once the subscriber cancels, lets it go."""
    pytester.makepyfile(mylib_registries=REGISTRIES_AT_IMPORT)
    pytester.makeconftest("import mylib_registries  # noqa: F401\n")
    result = pytester.runpytest_subprocess("--rs-publisher=mylib_registries:Registered", "--rs-rules=3.13")
    result.assert_outcomes(passed=2)
