"""The daily loop around a failure: rerun what failed, read the evidence, trust the figures.

Each test runs real pytest sessions (pytester) as a user types them, with the cache on where the
test is about it (``--lf``, ``--sw``).
"""

from __future__ import annotations

import json

import pytest

REF = "--rs-publisher=rstck.reference:range_publisher"
FAILED = "--rs-failed-publisher=rstck.reference:failed_publisher"
BROKEN = "--rs-publisher=subjects:ignores_zero"
FAST = "--rs-timeout-ms=200"
ZERO_ID = "publisher::required_spec309_request_zero_must_signal_value_error[3.9]"

SUBJECTS = '''
from tests.broken.publishers import IgnoresRequestZero
from tests.broken.publishers import factory

ignores_zero = factory(IgnoresRequestZero)
'''


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(subjects=SUBJECTS)
    pytester.makepyfile(test_user="def test_user_own():\n    pass\n")
    pytester.syspathinsert()
    return pytester


def _ran(result: pytest.RunResult) -> list[str]:
    """The node ids a ``-rA`` run reports, in order."""
    return [line.split(" ", 1)[1].split(" - ")[0] for line in result.outlines
            if line.startswith(("PASSED ", "FAILED ", "SKIPPED ", "ERROR ", "XFAIL "))
            and "::" in line]


# -- node ids that select -------------------------------------------------------------------


def test_an_id_copied_from_a_failed_line_runs_only_that_test(project: pytest.Pytester) -> None:
    first = project.runpytest(BROKEN, FAST, "--rs-rules=3.9", "-p", "no:cacheprovider")
    # The id is the line's first word after FAILED; the crash message follows when it fits (always
    # in CI, which pytest detects by the CI variable).
    assert any(line.split(" ")[:2] == ["FAILED", ZERO_ID] for line in first.stdout.lines)
    again = project.runpytest(BROKEN, FAST, ZERO_ID, "-p", "no:cacheprovider", "-rA")
    again.assert_outcomes(failed=1)
    assert _ran(again) == [ZERO_ID]


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["in-process", "xdist"])
@pytest.mark.parametrize("how", ["CI", "-vv"])
def test_the_short_summary_gives_one_line_per_failure_in_ci_too(
        project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, how: str, workers: list[str]) -> None:
    """pytest writes the crash message uncut in CI and under -vv: the rule's line, not the whole report."""
    args = [BROKEN, FAST, "--rs-rules=3.9", "-p", "no:cacheprovider", *workers]
    if how == "CI":
        monkeypatch.setenv("CI", "true")
    else:
        args.append("-vv")
    result = project.runpytest(*args)
    result.assert_outcomes(failed=3, skipped=1)
    lines = result.stdout.lines
    summary = lines[lines.index(next(x for x in lines if "short test summary info" in x)) + 1:]
    failed = [x for x in summary if x.startswith("FAILED ")]
    assert len(failed) == 3, summary
    assert all(" - [rule 3.9] expected on_error(ValueError) within 200 ms; observed " in x for x in failed), failed
    assert summary[:3] == failed, summary[:6]  # one line each
    assert summary[3].startswith(("SKIPPED", "=")), summary[:6]
    assert "trace   :" in result.stdout.str()  # the failure section still carries the whole report


@pytest.mark.parametrize(
    ("arg", "count"),
    [
        ("publisher::required_spec309_request_zero_must_signal_value_error", 1),  # any parameter
        ("publisher", 4),  # the whole verification, as a file's id selects its tests
    ],
)
def test_a_test_name_or_verification_selects_as_pytest_does(project: pytest.Pytester, arg: str, count: int) -> None:
    result = project.runpytest(REF, "--rs-rules=3.9", arg, "--co", "-q", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines([f"{count} test* collected*"])


def test_an_id_beside_a_test_path_runs_both(project: pytest.Pytester) -> None:
    result = project.runpytest(REF, "test_user.py", ZERO_ID, "-p", "no:cacheprovider", "-rA")
    assert _ran(result) == ["test_user.py::test_user_own", ZERO_ID]


def test_an_unknown_id_is_a_usage_error_naming_it(project: pytest.Pytester) -> None:
    result = project.runpytest(REF, "publisher::required_spec999_nothing", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*not found: publisher::required_spec999_nothing: no test of that name*"])


def test_an_id_without_its_subject_option_names_the_option(project: pytest.Pytester) -> None:
    result = project.runpytest("processor::required_spec309_request_zero_must_signal_value_error[3.9]",
                               REF, "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*no --rs-processor subject was given*"])


def test_last_failed_reruns_only_the_failures(project: pytest.Pytester) -> None:
    first = project.runpytest(BROKEN, FAST, "--rs-rules=3.9")
    first.assert_outcomes(failed=3, skipped=1)
    again = project.runpytest(BROKEN, FAST, "--lf", "-rA")
    again.stdout.fnmatch_lines(["*run-last-failure: rerun previous 3 failures*"])
    again.assert_outcomes(failed=3, deselected=63)
    assert all("3.9" in nodeid for nodeid in _ran(again))


def test_the_cache_forgets_failures_that_pass_since(project: pytest.Pytester) -> None:
    project.runpytest(BROKEN, FAST, "--rs-rules=3.9").assert_outcomes(failed=3, skipped=1)
    project.runpytest(REF, "--rs-rules=3.9").assert_outcomes(passed=4)
    cache = project.path / ".pytest_cache" / "v" / "cache" / "lastfailed"
    assert json.loads(cache.read_text()) == {} if cache.exists() else True
    again = project.runpytest(REF, "--lf", "--rs-rules=3.9")
    again.stdout.fnmatch_lines(["*no previously failed tests*"])


def test_stepwise_resumes_at_the_failed_test(project: pytest.Pytester) -> None:
    first = project.runpytest(BROKEN, FAST, "--rs-rules=3.9", "--sw", "-rA")
    first.assert_outcomes(failed=1)
    failed = [nodeid for nodeid in _ran(first) if "3.9" in nodeid][-1]
    again = project.runpytest(BROKEN, FAST, "--rs-rules=3.9", "--sw", "-rA")
    again.stdout.fnmatch_lines(["*stepwise: skipping * already passed items*"])
    assert _ran(again)[0] == failed


# -- the fuzz replay line ---------------------------------------------------------------------


def test_the_fuzz_replay_line_is_a_whole_command_that_fails_the_same_way(project: pytest.Pytester) -> None:
    import shlex

    first = project.runpytest(BROKEN, FAST, "--rs-rules=fuzz", "-p", "no:cacheprovider")
    first.assert_outcomes(failed=1)
    line = next(line for line in first.outlines if line.startswith("  replay  : "))
    words = shlex.split(line.removeprefix("  replay  : "))
    assert words[0] == "pytest"
    assert BROKEN in words
    assert FAST in words
    assert "publisher::fuzz_demand_cancel_orders[fuzz]" in words
    assert any(w.startswith("--rs-fuzz-replay=rsfz1-publisher-") for w in words)
    again = project.runpytest(*words[1:], "-p", "no:cacheprovider", "-rA")
    again.assert_outcomes(failed=1)
    assert _ran(again) == ["publisher::fuzz_demand_cancel_orders[fuzz]"]
    headline = next(line for line in first.outlines if line.startswith("[rule "))
    assert headline in again.outlines


# -- evidence ---------------------------------------------------------------------------------

FLOOD = '''
class _Subscription:
    """Answers the first request with 60 elements whatever was asked: breaks rule 1.1 early."""

    def __init__(self, subscriber):
        self.subscriber = subscriber
        self.done = False

    def request(self, n):
        if self.done:
            return
        self.done = True
        for i in range(60):
            self.subscriber.on_next(i)
        self.subscriber.on_complete()

    def cancel(self):
        self.done = True


class Flood:
    def __init__(self, n):
        self.n = n

    def subscribe(self, subscriber):
        subscriber.on_subscribe(_Subscription(subscriber))


def flood(n):
    return Flood(n)
'''


def test_a_long_trace_shows_every_cited_record_with_context() -> None:
    from rstck._internal.trace import Trace

    trace = Trace()
    for i in range(100):
        trace.add("probe", "on_next", str(i), 0)
    text = trace.format(cited=[50])
    lines = text.splitlines()
    cited = next(i for i, line in enumerate(lines) if line.startswith("> #50 "))
    assert [line.split()[0] for line in lines[cited - 3:cited]] == ["#47", "#48", "#49"]
    assert [line.split()[0] for line in lines[cited + 1:cited + 4]] == ["#51", "#52", "#53"]
    assert lines[cited - 4] == "  ... 42 records not shown ..."
    assert lines[0].split()[0] == "#0"
    assert lines[-1].split()[0] == "#99"
    assert len(lines) <= 45


def test_cited_records_are_visible_in_the_terminal_and_junit(pytester: pytest.Pytester) -> None:
    import xml.etree.ElementTree as ET

    pytester.makepyfile(flood=FLOOD)
    pytester.syspathinsert()
    result = pytester.runpytest("--rs-publisher=flood:flood", "--rs-rules=1.1", "--rs-skip-stochastic",
                                "--junitxml=j.xml", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1, skipped=1)
    out = result.stdout.str()
    cited = [word.strip(",") for line in result.outlines if "evidence: #" in line
             for word in line.split("evidence: ", 1)[1].split(" (")[0].split()]
    assert len(cited) >= 2
    failure = ET.parse(pytester.path / "j.xml").getroot().find(".//failure")
    assert failure is not None
    junit = failure.text or failure.get("message", "")
    for seq in cited:
        assert f"> {seq} " in out, seq
        assert f"> {seq} " in junit, seq


# -- one bug, many failures -------------------------------------------------------------------


def _result(test: str, rule: str | None, level: str, outcome: str, **kw: object) -> object:
    from rstck.results import TestResult

    return TestResult(test, "publisher", rule, level, outcome, outcome, 0.01, **kw)  # type: ignore[arg-type]


def test_a_failed_sanity_check_is_named_first_with_what_follows(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(subjects=(
        "from tests.broken.publishers import ExtraElement, factory\n"
        "extra = factory(ExtraElement)\n"
    ))
    pytester.syspathinsert()
    result = pytester.runpytest("--rs-publisher=subjects:extra", "--rs-rules=sanity,1.1,3.9", FAST,
                                "-p", "no:cacheprovider")
    failed = result.parseoutcomes()["failed"]
    sanity = sum(1 for line in result.outlines if line.startswith("FAILED ") and "[sanity]" in line)
    lines = result.outlines
    top = lines.index(next(line for line in lines if "rs-tck conformance by rule" in line)) + 1
    assert lines[top].startswith("rs-tck: the sanity check of the publisher factory failed")
    assert sanity >= 1
    assert f"the other {failed - sanity} failure(s) of publisher probably follow from it" in lines[top]


def test_a_race_hunt_that_failed_for_another_reason_prints_no_race_count() -> None:
    from rstck_plugins.reports.verdicts import race_count

    no_race = _result("stochastic_spec103_x", "1.3", "stochastic", "failed", iterations={"ran": 1, "showed": 0})
    race = _result("stochastic_spec103_x", "1.3", "stochastic", "failed", iterations={"ran": 7, "showed": 1})
    passed = _result("stochastic_spec103_x", "1.3", "stochastic", "passed", iterations={"ran": 100, "showed": 0})
    assert race_count([no_race]) == ""  # type: ignore[list-item]
    assert race_count([race]) == "race shown in 1 of 7 iterations"  # type: ignore[list-item]
    assert race_count([passed]) == "race shown in 0 of 100 iterations"  # type: ignore[list-item]


def test_a_deterministic_fuzz_find_is_not_a_race_rate() -> None:
    from rstck_plugins.reports.verdicts import race_count

    fuzz = {"examples": 2, "runs": 9, "race": None, "scenario": [], "replay_option": "--rs-fuzz-replay=x"}
    found = _result("fuzz_demand_cancel_orders", "3.9", "fuzz", "failed", iterations={"ran": 2, "showed": 1},
                    fuzz=fuzz)
    text = race_count([found])  # type: ignore[list-item]
    assert "race" not in text
    assert text == "found after 2 generated scenarios, fails every run"
    raced = _result("fuzz_demand_cancel_orders", "3.9", "fuzz", "failed", iterations={"ran": 5, "showed": 2},
                    fuzz={**fuzz, "race": {"failed": 2, "replays": 5}})
    assert race_count([raced]) == "a race: the scenario failed 2 of 5 replays"  # type: ignore[list-item]


# -- the user's frames in import and factory errors -------------------------------------------


def test_an_import_error_shows_the_users_file_and_line(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(mylib_config='import os\n\nCONFIG = os.environ["MYLIB_CONFIG_XYZ"]\n')
    pytester.syspathinsert()
    result = pytester.runpytest("--rs-publisher=mylib_config:f", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([
        "*importing 'mylib_config' raised KeyError: 'MYLIB_CONFIG_XYZ'",
        '  File "*mylib_config.py", line 3, in <module>',
        '    CONFIG = os.environ["MYLIB_CONFIG_XYZ"]',
    ])
    assert "importlib" not in result.stderr.str()


def test_a_factory_error_shows_the_users_file_and_line(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(mylib_factory='def make(n):\n    raise RuntimeError("cannot build")\n')
    pytester.syspathinsert()
    result = pytester.runpytest("--rs-publisher=mylib_factory:make", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([
        "*calling it with n=1 raised RuntimeError: cannot build",
        '  File "*mylib_factory.py", line 2, in make',
        '    raise RuntimeError("cannot build")',
    ])
    assert "rstck" not in result.stderr.str().split("cannot build", 1)[1]


# -- hints where a newcomer goes wrong --------------------------------------------------------

NEWCOMER = '''
import asyncio


class NeedsLoop:
    """Subscribes on the running loop, as a library built on asyncio does."""

    def subscribe(self, subscriber):
        asyncio.get_running_loop()


def needs_loop(n):
    return NeedsLoop()


def the_class(n):
    return NeedsLoop


def subscriber_class():
    return NeedsLoop
'''


@pytest.fixture
def newcomer(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(newcomer=NEWCOMER)
    pytester.syspathinsert()
    return pytester


def test_an_asyncio_publisher_without_the_loop_option_is_told_once_at_start_up(newcomer: pytest.Pytester) -> None:
    result = newcomer.runpytest("--rs-publisher=newcomer:needs_loop", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert err.count("--rs-loop=asyncio") == 1
    assert "no running event loop" in err
    assert "passed" not in result.stdout.str()


@pytest.mark.parametrize(("option", "attr"), [("--rs-publisher", "the_class"), ("--rs-subscriber", "subscriber_class")])
def test_a_factory_returning_a_class_is_refused_at_start_up(newcomer: pytest.Pytester, option: str, attr: str) -> None:
    result = newcomer.runpytest(f"{option}=newcomer:{attr}", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*returned the class NeedsLoop itself*must return an instance*"])


def test_no_subject_says_so_and_shows_the_options(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    result.stdout.fnmatch_lines([
        "rs-tck: no --rs-* subject was given, so no TCK verification ran*",
        "  --rs-publisher=[[]ID=[]]MODULE:ATTR  (env RS_TCK_PUBLISHER, ini rs_publisher)",
        "  --rs-processor=[[]ID=[]]MODULE:ATTR  (env RS_TCK_PROCESSOR, ini rs_processor)",
    ])


def test_subjects_come_from_the_environment_and_the_ini_file(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makeini("[pytest]\nrs_publisher = rstck.reference:range_publisher\n")
    result = pytester.runpytest("--rs-rules=3.9", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(["rs-tck: publisher rstck.reference:range_publisher"])
    monkeypatch.setenv("RS_TCK_PUBLISHER", "rstck.reference:async_range_publisher")
    result = pytester.runpytest("--rs-rules=3.9", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(["rs-tck: publisher rstck.reference:async_range_publisher"])


def test_a_report_path_in_missing_folders_creates_them(project: pytest.Pytester) -> None:
    result = project.runpytest(REF, "--rs-rules=3.9", "--rs-report-json=out/ci/r.json",
                               "--rs-report-html=out/html/r.html", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.OK
    assert (project.path / "out" / "ci" / "r.json").is_file()
    assert (project.path / "out" / "html" / "r.html").is_file()


# -- docs -------------------------------------------------------------------------------------


def test_the_readme_names_every_dependency_pip_install_brings() -> None:
    import re
    import tomllib
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    deps = tomllib.loads((root / "pyproject.toml").read_text())["project"]["dependencies"]
    names = [re.split(r"[<>=!~ \[]", dep, maxsplit=1)[0] for dep in deps]
    readme = (root / "README.md").read_text()
    sentence = next(line for line in readme.splitlines() if line.startswith("`pip install .`"))
    for name in names:
        assert name.lower() in sentence.lower(), name


def test_every_extra_install_line_says_how_to_install_from_a_clone() -> None:
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    for doc in ("README.md", "docs/campaigns.md"):
        lines = (root / doc).read_text().splitlines()
        for i, line in enumerate(lines):
            if "pip install 'reactive-streams-tck[" in line:
                around = "\n".join(lines[max(0, i - 1):i + 2])
                assert "clone" in around, (doc, line)


# -- true figures -----------------------------------------------------------------------------


def test_junit_times_are_each_tests_own_duration(project: pytest.Pytester) -> None:
    """Also when pytest's setup and teardown take time (its garbage collection under load)."""
    import xml.etree.ElementTree as ET

    project.makeconftest("import time\n\ndef pytest_runtest_teardown(item):\n    time.sleep(0.03)\n")
    result = project.runpytest(BROKEN, FAST, "--rs-rules=3.9,1.1", "--junitxml=j.xml", "--rs-report-json=r.json",
                               "-p", "no:cacheprovider")
    assert result.parseoutcomes()["failed"] >= 3
    durations = {f"{r['verification']}::{r['test']}": r["duration_s"]
                 for r in json.loads((project.path / "r.json").read_text())["results"]}
    cases = ET.parse(project.path / "j.xml").getroot().iter("testcase")
    times = {f"{case.get('classname')}::{str(case.get('name')).split('[')[0]}": float(case.get("time", "0"))
             for case in cases}
    assert times.keys() == durations.keys()
    for name, own in durations.items():
        assert abs(times[name] - own) <= 0.005, (name, times[name], own)
    assert max(durations.values()) >= 0.19  # a test that waited out the 200 ms timeout


def test_a_baseline_gate_failure_is_said_in_the_last_lines(project: pytest.Pytester) -> None:
    path = project.path / "baseline.txt"
    path.write_text("3.9  # fixed since\n")
    result = project.runpytest(REF, "--rs-rules=3.9", f"--rs-baseline={path}", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert result.outlines[-1].startswith("=")
    assert "4 passed" in result.outlines[-1]
    assert result.outlines[-2] == f"FAILED {path}:1: 3.9 (stale baseline entry: it passes now; remove it)"


def test_every_bad_baseline_line_is_reported(project: pytest.Pytester) -> None:
    path = project.path / "baseline.txt"
    path.write_text("3.99\n3.9\npublisher::no_such_test\ntwo words\n")
    result = project.runpytest(REF, f"--rs-baseline={path}", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([
        f"*--rs-baseline: {path}:1: unknown rule id '3.99'*",
        f"--rs-baseline: {path}:3: unknown test 'no_such_test'*",
        f"--rs-baseline: {path}:4: expected one rule id or test name per line*(3 bad lines)",
    ])


def _every_test_of_every_verification() -> list[object]:
    """A result per test of all four verifications, with long cells: failures, races, fuzz."""
    from rstck.results import Failure
    from rstck.verifications import VERIFICATIONS

    verdicts = ["passed", "failed", "not_applicable", "optional_unsupported", "passed", "error"]
    out = []
    for name, verification in VERIFICATIONS.items():
        for i, test in enumerate(verification.tests):
            verdict = verdicts[i % len(verdicts)]
            outcome = {"not_applicable": "skipped", "optional_unsupported": "skipped"}.get(verdict, verdict)
            failures = [Failure("1.3", "x", "y"), Failure("2.13", "x", "y")] if outcome == "failed" else []
            iterations = {"ran": 100, "showed": 3} if test.level == "stochastic" else None
            result = _result(test.name, test.rule_id, test.level, outcome, failures=failures, iterations=iterations)
            result.verification, result.verdict = name, verdict  # type: ignore[attr-defined]
            out.append(result)
    return out


def test_the_terminal_rule_table_fits_100_columns_with_four_verifications() -> None:
    from rstck_plugins.reports.terminal import table

    lines = [line for line, _colour in table(_every_test_of_every_verification())]  # type: ignore[arg-type]
    assert max(len(line) for line in lines) <= 100, max(lines, key=len)
    for name in ("publisher", "subscriber_blackbox", "subscriber_whitebox", "processor"):
        assert any(line.startswith("rule") and name in line for line in lines), name


def test_a_cell_with_passed_tests_and_one_not_applicable_reads_passed() -> None:
    from rstck_plugins.reports.terminal import table

    results = [_result("required_spec104_a", "1.4", "required", "passed"),
               _result("required_spec104_b", "1.4", "required", "passed"),
               _result("required_spec104_c", "1.4", "required", "skipped")]
    results[2].verdict = "not_applicable"  # type: ignore[attr-defined]
    row = next(line for line, _colour in table(results) if line.startswith("1.4"))  # type: ignore[arg-type]
    assert row.split()[:3] == ["1.4", "MUST", "passed"]
    assert "2 passed, 1 not applicable" in row


def test_tests_that_an_interruption_left_unrun_are_not_run_not_unselected(project: pytest.Pytester) -> None:
    result = project.runpytest(BROKEN, FAST, "--rs-rules=sanity,3.9,3.17", "-x", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["not run: interrupted: 3.17", "not selected in this run: *"])
    selected = next(line for line in result.outlines if line.startswith("not selected in this run"))
    assert "3.17" not in selected


def _page(results: list[object], **doc: object) -> object:
    import html5lib
    from rstck.results import RunResults
    from rstck.results import document
    from rstck_plugins.reports.html_report import render

    data = document(results, subjects={"publisher": "s"}, settings={})  # type: ignore[arg-type]
    return html5lib.parse(render(RunResults.from_json({**data, **doc})), namespaceHTMLElements=False)


def _text(root: object, ident: str) -> str:
    element = next(e for e in root.iter() if e.get("id") == ident)  # type: ignore[attr-defined]
    return " ".join(" ".join(element.itertext()).split())


def test_the_html_header_shows_wall_time_and_summed_test_time_apart() -> None:
    results = []
    for i in range(3):  # three 2 s tests overlapping within 2.5 s
        r = _result(f"required_spec309_{i}", "3.9", "required", "passed")
        r.duration_s, r.started_at, r.finished_at = 2.0, 1000.0 + i * 0.25, 1002.0 + i * 0.25  # type: ignore[attr-defined]
        results.append(r)
    root = _page(results)
    assert _text(root, "wall-time") == "2.50 s wall time"
    assert _text(root, "summed-time").startswith("6.00 s summed test time")


def test_html_failures_go_by_rule_simplest_evidence_first() -> None:
    from rstck.results import Failure

    fuzz = _result("fuzz_demand_cancel_orders", "3.9", "fuzz", "failed", failures=[Failure("3.9", "x", "y")],
                   trace_total=400, fuzz={"scenario": [], "replay_option": "--rs-fuzz-replay=x"})
    timeout = _result("required_spec309_request_zero_must_signal_value_error", "3.9", "required", "failed",
                      failures=[Failure("3.9", "x", "y")], trace_total=5)
    early = _result("required_spec101_x", "1.1", "required", "failed", failures=[Failure("1.1", "x", "y")],
                    trace_total=90)
    root = _page([fuzz, timeout, early])
    articles = [a.get("id") for a in root.iter("article")]  # type: ignore[attr-defined]
    assert articles == ["fail-publisher-required_spec101_x",
                        "fail-publisher-required_spec309_request_zero_must_signal_value_error",
                        "fail-publisher-fuzz_demand_cancel_orders"]


def test_the_html_rule_table_fits_a_1280_px_page() -> None:
    """No layout engine here: the stylesheet must let the table shrink to the page, and the page
    be no wider than 1280 px, whatever the test names in its cells."""
    import re
    from importlib import resources

    css = resources.files("rstck_plugins").joinpath("reports/html_report/style.css").read_text()
    main = re.search(r"main \{[^}]*max-width: (\d+)px", css)
    assert main is not None
    assert int(main.group(1)) <= 1280
    rules = re.search(r"table\.rules \{([^}]*)\}", css)
    assert rules is not None
    assert "table-layout: fixed" in rules.group(1)
    assert "width: 100%" in rules.group(1)
    assert re.search(r"table\.rules td \{[^}]*overflow-wrap: anywhere", css)
    fixed = sum(int(px) for px in re.findall(r"table\.rules (?:td|th)[^{]*\{[^}]*?(?:min-)?width: (\d+)px", css))
    assert fixed + 4 * 120 <= 1280 - 64  # four verification columns of a readable width still fit


def test_an_interrupted_html_report_says_not_run_not_unselected() -> None:
    root = _page([_result("required_spec309_x", "3.9", "required", "passed")], interrupted=True,
                 interrupted_reason="interrupted (KeyboardInterrupt)")
    row = next(e for e in root.iter("tr") if e.get("data-rule") == "3.17")  # type: ignore[attr-defined]
    assert "not run: the run was interrupted" in "".join(row.itertext())
    assert "not selected in this run" not in "".join(row.itertext())


# -- one command line -------------------------------------------------------------------------


def test_rs_tck_is_the_one_command_with_every_subcommand(capsys: pytest.CaptureFixture[str]) -> None:
    import tomllib
    from pathlib import Path

    from rstck_plugins import cli

    root = Path(__file__).resolve().parents[2]
    scripts = tomllib.loads((root / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts == {"rs-tck": "rstck_plugins.cli:main"}
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    out = capsys.readouterr().out
    for command in ("report", "rules", "campaign", "ingest", "summary", "replay", "show"):
        assert f"    {command} " in out, command
    assert "``" not in out
    assert cli.main(["rules"]) == 0
    assert capsys.readouterr().out.startswith("| rule | keyword |")
    assert cli.main(["rules", "--edition", "rs"]) == 0
    assert "JVM" in capsys.readouterr().out


def test_campaign_help_is_plain_with_metavars_and_boolean_flags(capsys: pytest.CaptureFixture[str]) -> None:
    from rstck_plugins import cli

    with pytest.raises(SystemExit):
        cli.main(["campaign", "--help"])
    out = capsys.readouterr().out
    assert "``" not in out
    assert "--fuzz-replay TOKEN" in out
    assert "--fuzz-db PATH" in out
    assert "--skip-stochastic " in out
    assert "true|false" not in out
    assert "--out DIR" in out
    from rstck_plugins.campaign import cli as campaign_cli

    args = campaign_cli._parser().parse_args(["campaign", "--skip-stochastic", "--publisher", "m:f"])
    assert args.knob_skip_stochastic is True
    assert args.file is None


def test_report_without_output_never_overwrites_a_file(tmp_path: object, capsys: pytest.CaptureFixture[str]) -> None:
    from pathlib import Path

    from rstck.results import document
    from rstck_plugins import cli

    folder = Path(str(tmp_path))
    results = folder / "x.json"
    results.write_text(json.dumps(document([], subjects={}, settings={})))
    assert cli.main(["report", str(results)]) == 0
    page = folder / "x.html"
    assert page.is_file()
    page.write_text("my notes")
    assert cli.main(["report", str(results)]) == 2
    assert f"{page} exists; give -o {page} to replace it" in capsys.readouterr().err
    assert page.read_text() == "my notes"
    assert cli.main(["report", str(results), "-o", str(page)]) == 0
    assert page.read_text() != "my notes"


def test_replay_reruns_a_results_files_fuzz_failure(project: pytest.Pytester) -> None:
    import subprocess
    import sys

    project.runpytest(BROKEN, FAST, "--rs-rules=fuzz", "--rs-report-json=r.json", "-p", "no:cacheprovider")
    done = subprocess.run([sys.executable, "-m", "rstck_plugins", "replay", "r.json", "--", "-p", "no:cacheprovider"],
                          cwd=project.path, capture_output=True, text=True, check=False,
                          env={**__import__("os").environ, "PYTHONPATH": f"{project.path}:{_root()}"})
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.splitlines()[0].startswith("pytest --rs-publisher=subjects:ignores_zero")
    assert "1 failed" in done.stdout
    token = next(w for w in done.stdout.split() if w.startswith("--rs-fuzz-replay=")).split("=", 1)[1]
    printed = subprocess.run([sys.executable, "-m", "rstck_plugins", "replay", token, "--publisher",
                              "subjects:ignores_zero", "--print"], cwd=project.path, capture_output=True,
                             text=True, check=False)
    assert printed.returncode == 0, printed.stderr
    assert printed.stdout.strip() == ("pytest --rs-publisher=subjects:ignores_zero "
                                      f"'publisher::fuzz_demand_cancel_orders[fuzz]' --rs-fuzz-replay={token}")


def _root() -> str:
    from pathlib import Path

    return str(Path(__file__).resolve().parents[2])


TYPED_REPORTER = '''
import json

from rstck.results import Failure, RunResults, TestResult

SEEN = []


def rstck_result(result):
    SEEN.append(type(result) is TestResult and all(type(f) is Failure for f in result.failures))


def rstck_run_finished(results):
    with open("typed.json", "w") as out:
        json.dump({"run": type(results) is RunResults, "each": SEEN,
                   "failures": [[type(f) is Failure for f in r.failures] for r in results.results],
                   "document": results.to_json()}, out)
'''


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["in-process", "xdist"])
def test_reporters_receive_the_results_objects_and_the_file_is_their_json(
        project: pytest.Pytester, workers: list[str]) -> None:
    """Every reporter gets typed ``TestResult``s and one ``RunResults``, across xdist's hop too;
    the results file is that object's JSON, nothing else."""
    project.makeconftest(TYPED_REPORTER)
    result = project.runpytest(BROKEN, FAST, "--rs-rules=3.9", "-p", "no:cacheprovider", "--rs-report-json=r.json",
                               *workers)
    result.assert_outcomes(failed=3, skipped=1)
    typed = json.loads((project.path / "typed.json").read_text())
    assert typed["run"] is True
    assert typed["each"] == [True] * 4
    assert any(typed["failures"])
    assert all(all(kinds) for kinds in typed["failures"])
    assert typed["document"] == json.loads((project.path / "r.json").read_text())
