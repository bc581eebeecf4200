"""What a new user meets on a first day: report paths, interrupted runs, finding things, habits.

Each test runs real pytest sessions (pytester) the way a user would type them.
"""

from __future__ import annotations

import json
from pathlib import Path

import html5lib
import jsonschema
import pytest
from rstck.results import load

REF = "--rs-publisher=rstck.reference:range_publisher"
FAILED = "--rs-failed-publisher=rstck.reference:failed_publisher"

SUBJECTS = '''
from tests.broken.publishers import IgnoresRequestZero
from tests.broken.publishers import factory

ignores_zero = factory(IgnoresRequestZero)
'''

#: Stops the run with Ctrl-C's exception while the second TCK test runs.
CTRL_C_AT_SECOND_TEST = '''
import pytest

calls = []

@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item):
    calls.append(item.nodeid)
    if len(calls) == 2:
        raise KeyboardInterrupt
'''


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(subjects=SUBJECTS)
    pytester.syspathinsert()
    return pytester


def _collected(pytester: pytest.Pytester, *args: str) -> int:
    """How many tests these options select: the catalogue grows, the tests must not hard-code it."""
    result = pytester.runpytest(*args, "--co", "-q")
    return sum(1 for line in result.outlines if "::" in line)


def _schema() -> dict[str, object]:
    from importlib import resources

    text = resources.files("rstck").joinpath("schemas/rs-tck-results-1.schema.json").read_text()
    return dict(json.loads(text))


# -- 1. report paths ---------------------------------------------------------------------------


def test_a_directory_that_refuses_writes_is_a_usage_error_before_any_test(project: pytest.Pytester) -> None:
    """``/sys`` passes ``os.access(W_OK)`` for root, yet refuses to create a file: only trying tells."""
    unwritable = Path("/sys/rs-tck-report.html")
    assert not unwritable.exists()
    result = project.runpytest(REF, FAILED, f"--rs-report-html={unwritable}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--rs-report-html=/sys/rs-tck-report.html: directory /sys is not writable*"])
    assert "passed" not in result.stdout.str()


def test_a_report_that_cannot_be_written_at_the_end_costs_one_line(project: pytest.Pytester) -> None:
    """The folder disappears during the run: the verdicts, the table and the exit code survive."""
    out = project.mkdir("out")
    project.makeconftest(
        "import shutil\n"
        "def pytest_runtest_teardown(item):\n"
        f"    shutil.rmtree({str(out)!r}, ignore_errors=True)\n"
    )
    result = project.runpytest(REF, FAILED, "--rs-rules=3.9", f"--rs-report-html={out}/r.html",
                               f"--rs-report-json={out}/r.json")
    text = result.stdout.str()
    assert result.ret == pytest.ExitCode.OK, text
    assert "Traceback" not in text
    assert "INTERNALERROR" not in text
    result.stdout.fnmatch_lines([
        "*rs-tck conformance by rule*",
        "3.9 *passed*",
        f"rs-tck: results file not written: {out}/r.json: No such file or directory",
        f"rs-tck: HTML report not written: {out}/r.html: No such file or directory",
    ])


def test_each_report_says_where_it_was_written(project: pytest.Pytester) -> None:
    result = project.runpytest(REF, FAILED, "--rs-rules=3.9", "--rs-report-html=r.html", "--rs-report-json=r.json")
    result.stdout.fnmatch_lines(["rs-tck: results file written to r.json", "rs-tck: HTML report written to r.html"])
    assert (project.path / "r.html").is_file()
    assert (project.path / "r.json").is_file()


# -- 3. interrupted runs ------------------------------------------------------------------------


def test_an_interrupted_run_marks_its_results_file_and_report(project: pytest.Pytester) -> None:
    selected = _collected(project, REF, FAILED, "--rs-rules=3.9")
    project.makeconftest(CTRL_C_AT_SECOND_TEST)
    result = project.runpytest(REF, FAILED, "--rs-rules=3.9", "--rs-report-json=r.json", "--rs-report-html=r.html",
                               no_reraise_ctrlc=True)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines([
        f"rs-tck: INCOMPLETE run: interrupted (KeyboardInterrupt), {selected - 1} test(s) not run*",
    ])
    data = json.loads((project.path / "r.json").read_text())
    jsonschema.validate(data, _schema())
    assert data["interrupted"] is True
    assert data["not_run"] == selected - 1
    assert data["summary"]["total"] == 1
    page = html5lib.parse((project.path / "r.html").read_text(), namespaceHTMLElements=False)
    banner = page.find(".//div[@id='interrupted']")
    assert banner is not None
    assert "Incomplete run: interrupted (KeyboardInterrupt)" in "".join(banner.itertext())
    assert f"{selected - 1} selected test(s) did not run" in "".join(banner.itertext())


def test_a_complete_run_has_no_interrupted_mark(project: pytest.Pytester) -> None:
    result = project.runpytest(REF, FAILED, "--rs-rules=3.9", "--rs-report-json=r.json", "--rs-report-html=r.html")
    assert result.ret == pytest.ExitCode.OK
    run = load(project.path / "r.json")
    data = run.to_json()
    assert "interrupted" not in data
    assert "not_run" not in data
    assert "INCOMPLETE" not in result.stdout.str()
    assert 'id="interrupted"' not in (project.path / "r.html").read_text()


def test_a_run_stopped_by_maxfail_is_marked_too(project: pytest.Pytester) -> None:
    result = project.runpytest("--rs-publisher=subjects:ignores_zero", FAILED, "--rs-rules=3.9", "-k",
                               "request_zero or request_negative", "-x", "--rs-report-json=r.json")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    data = json.loads((project.path / "r.json").read_text())
    assert data["interrupted"] is True
    assert data["interrupted_reason"].startswith("stopping after 1 failure")
    assert data["not_run"] >= 1


def test_the_baseline_gate_refuses_an_interrupted_run(project: pytest.Pytester) -> None:
    project.makeconftest(CTRL_C_AT_SECOND_TEST)
    project.path.joinpath("baseline.txt").write_text("3.9\n")
    result = project.runpytest("--rs-publisher=subjects:ignores_zero", FAILED, "--rs-rules=3.9",
                               "--rs-baseline=baseline.txt", "--rs-baseline-write=new.txt", no_reraise_ctrlc=True)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines([("rs-tck baseline: not gated and written: the run was interrupted "
                                 "(KeyboardInterrupt) (* test(s) not run, *")])
    assert "stale" not in result.stdout.str()
    assert not (project.path / "new.txt").exists()


# -- 8. leaked non-daemon threads on every supported interpreter ---------------------------------

THREADS_PY = Path(__file__).resolve().parents[2] / "plugins" / "rstck_plugins" / "host" / "threads.py"

#: 148 non-daemon threads sleeping 20 s, started after the snapshot, as a leaky thread pool would.
LEAKER = '''
import importlib.util, sys, threading, time
spec = importlib.util.spec_from_file_location("rs_threads", sys.argv[1])
threads = importlib.util.module_from_spec(spec)
spec.loader.exec_module(threads)
def finish():
    time.sleep(1)
    print("finishes: done", flush=True)
threading.Thread(target=finish, name="finishes", daemon=False).start()
before = threads.snapshot()
for i in range(148):
    threading.Thread(target=time.sleep, args=(20,), name="rs-worker", daemon=False).start()
threading.Thread(target=time.sleep, args=(20,), name="leaked-by-subscribe", daemon=False).start()
threads.release_leaked(before, print)
'''


def _interpreters() -> list[pytest.param]:  # type: ignore[valid-type]
    import shutil
    import subprocess
    import sys

    out = [pytest.param(sys.executable, id=f"{sys.version_info.major}.{sys.version_info.minor}")]
    for version in ("3.11", "3.12", "3.13"):
        if f"{sys.version_info.major}.{sys.version_info.minor}" == version:
            continue
        candidates = [shutil.which(f"python{version}") or ""]
        candidates += sorted(str(p) for p in Path.home().glob(f".pyenv/versions/{version}*/bin/python{version}"))
        found = next((c for c in candidates if c and subprocess.run(
            [c, "-c", ""], capture_output=True, check=False).returncode == 0), None)
        marks = [] if found else [pytest.mark.skip(reason=f"no python{version} on this machine")]
        out.append(pytest.param(found or f"python{version}", id=version, marks=marks))
    return out


@pytest.mark.parametrize("python", _interpreters())
def test_leaked_non_daemon_threads_never_hold_the_exit(python: str, tmp_path: Path) -> None:
    """CPython 3.13 waits for non-daemon threads in C; released ones must not delay exit there either.

    A non-daemon thread that was running before the snapshot is not the subject's: exit waits for it.
    """
    import subprocess
    import time

    script = tmp_path / "leaker.py"
    script.write_text(LEAKER)
    start = time.monotonic()
    proc = subprocess.run([python, str(script), str(THREADS_PY)], capture_output=True, text=True, timeout=60,
                          check=False)
    elapsed = time.monotonic() - start
    assert proc.returncode == 0, proc.stderr
    assert elapsed < 10, f"exit waited {elapsed:.1f} s for the leaked threads"
    assert ("rs-tck: WARNING 149 non-daemon thread(s) started during the run are still alive: rs-worker x148, "
            "leaked-by-subscribe; the process exits without waiting for them") in proc.stdout
    assert "finishes: done" in proc.stdout, "a thread that was not released must still be waited for"


# -- 2. stochastic rules: how much was tried, and what overlapped -------------------------------

POOLED = '''
import threading
from concurrent.futures import ThreadPoolExecutor

def pooled(n):
    """Emits on a one-thread pool as soon as demand arrives, even from inside on_subscribe."""
    class Publisher:
        def subscribe(self, subscriber):
            if subscriber is None:
                raise TypeError("subscriber is None")
            pool = ThreadPoolExecutor(1, thread_name_prefix="pool")
            lock = threading.Lock()
            state = {"sent": 0, "demand": 0, "done": False}
            started = threading.Event()

            def emit():
                while True:
                    with lock:
                        if state["done"] or state["demand"] == 0 or state["sent"] >= n:
                            return
                        state["demand"] -= 1
                        state["sent"] += 1
                        i = state["sent"]
                    started.set()
                    subscriber.on_next(i)
                    if i == n:
                        with lock:
                            state["done"] = True
                        subscriber.on_complete()

            class Subscription:
                def request(self, k):
                    with lock:
                        state["demand"] += k
                    pool.submit(emit)
                    started.wait(0.05)

                def cancel(self):
                    with lock:
                        state["done"] = True

            subscriber.on_subscribe(Subscription())
    return Publisher()
'''


def test_the_1_3_failure_names_both_overlapping_methods_and_the_race_count(project: pytest.Pytester) -> None:
    project.makepyfile(pooled=POOLED)
    result = project.runpytest("--rs-publisher=pooled:pooled", "--rs-rules=1.3", "-k", "stochastic",
                               "--rs-report-json=r.json", "--rs-report-html=r.html")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "*on_next entered on thread pool_0 while on_subscribe was running on thread *, in the same subscriber*",
    ])
    result.stdout.re_match_lines([r"1\.3 +MUST +FAILED +1 stochastic; race shown in 1 of \d+ iterations?$"])
    run = load(project.path / "r.json")
    results = run.results
    (race,) = (r for r in results if r.rule == "1.3")
    assert race.iterations is not None
    assert race.iterations["showed"] == 1
    text = (project.path / "r.html").read_text()
    assert f"race shown in 1 of {race.iterations['ran']} iteration" in text


def test_a_passing_race_hunt_says_how_many_iterations_it_tried(project: pytest.Pytester) -> None:
    result = project.runpytest(REF, "--rs-rules=1.3", "-k", "stochastic", "--rs-stochastic-iterations=7")
    result.assert_outcomes(passed=1)
    result.stdout.re_match_lines([r"1\.3 +MUST +passed +1 stochastic; race shown in 0 of 7 iterations$"])


# -- 7. habits from other pytest plugins ---------------------------------------------------------


def test_pytest_repeat_count_is_refused_with_the_kits_own_ways(project: pytest.Pytester) -> None:
    pytest.importorskip("pytest_repeat")
    result = project.runpytest(REF, FAILED, "--count=50", "-p", "repeat")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([
        ("*--count=50 (pytest-repeat) does not repeat the TCK's verifications: hunt a race with "
        "--rs-stochastic-iterations=N, or rerun the command in a loop*"),
    ])
    assert "passed" not in result.stdout.str()


def test_pytest_repeat_without_a_count_changes_nothing(project: pytest.Pytester) -> None:
    pytest.importorskip("pytest_repeat")
    result = project.runpytest(REF, FAILED, "--rs-rules=3.9", "-p", "repeat")
    assert result.ret == pytest.ExitCode.OK
    assert result.parseoutcomes()["passed"] == _collected(project, REF, FAILED, "--rs-rules=3.9")


def test_xdist_runs_and_reports_like_a_single_process(project: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    selected = _collected(project, REF, FAILED)
    result = project.runpytest(REF, FAILED, "-n", "2", "-p", "xdist", "--rs-report-json=r.json",
                               "--rs-report-html=r.html")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) + outcomes.get("skipped", 0) == selected
    result.stdout.fnmatch_lines(["*rs-tck conformance by rule*", "1.1 *MUST *passed*",
                                 "rs-tck: results file written to r.json", "rs-tck: HTML report written to r.html"])
    run = load(project.path / "r.json")
    data, results = run.to_json(), run.results
    assert len(results) == selected
    assert len({(r.verification, r.test) for r in results}) == selected
    assert "interrupted" not in data
    assert data["summary"]["passed"] == outcomes["passed"]


# -- 5. finding things ---------------------------------------------------------------------------


def test_skip_reasons_are_shown_without_minus_r_and_point_at_the_rule(project: pytest.Pytester) -> None:
    """Outside the repository there is no ``-ra`` in an ini file: the plugin lists the reasons itself."""
    result = project.runpytest(REF, FAILED, "--rs-rules=1.10,3.4")
    result.assert_outcomes(skipped=2)
    result.stdout.fnmatch_lines([
        "SKIPPED [[]1[]] publisher::untested_spec110_*[[]1.10[]]: untested: *",
        "SKIPPED [[]1[]] publisher::untested_spec304_*[[]3.4[]]: untested: *",
    ])
    assert "pytest_plugin.py" not in result.stdout.str()


def test_minus_r_n_still_silences_the_skip_reasons(project: pytest.Pytester) -> None:
    result = project.runpytest(REF, FAILED, "--rs-rules=1.10", "-rN")
    result.assert_outcomes(skipped=1)
    assert "SKIPPED [1]" not in result.stdout.str()


def test_the_header_names_each_subject_once(project: pytest.Pytester) -> None:
    result = project.runpytest(REF, FAILED, "--rs-rules=3.9", "--rs-report-json=r.json")
    result.stdout.fnmatch_lines([
        "rs-tck: publisher rstck.reference:range_publisher, failed publisher rstck.reference:failed_publisher",
    ])
    assert "failed_publisher failed_publisher" not in result.stdout.str()
    run = load(project.path / "r.json")
    data = run.to_json()
    assert data["subjects"]["failed_publisher"] == "rstck.reference:failed_publisher"


SINKS = '''
def _process(element):
    raise RuntimeError(f"cannot process {element!r}")


class Raising:
    def on_subscribe(self, subscription):
        if subscription is None:
            raise TypeError("subscription is None")
        subscription.request(1)

    def on_next(self, element):
        if element is None:
            raise TypeError("element is None")
        _process(element)

    def on_error(self, exc):
        if exc is None:
            raise TypeError("exc is None")

    def on_complete(self):
        pass


def raising():
    return Raising()
'''


def test_a_subscriber_failure_shows_the_frames_of_the_users_module(project: pytest.Pytester) -> None:
    project.makepyfile(sinks=SINKS)
    result = project.runpytest("--rs-subscriber=sinks:raising", "--rs-rules=2.1")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "*observed it raised RuntimeError*",
        "  raised at (most recent call last):",
        '    File "*sinks.py", line 14, in on_next',
        "      _process(element)",
        '    File "*sinks.py", line 2, in _process',
        '      raise RuntimeError(f"cannot process {element!r}")',
    ])
    out = result.stdout.str()
    assert "manual.py" not in out
    assert "environment.py" not in out


def test_the_readme_shows_how_to_render_a_report_later() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    assert "rs-tck report rs-tck-results.json" in readme


# -- 4. and 6. installing: lean for users, complete for the project's own tests ------------------

ROOT = Path(__file__).resolve().parents[2]


def _sh_blocks(text: str) -> list[str]:
    import re

    return [block.strip() for block in re.findall(r"```sh\n(.*?)```", text, flags=re.DOTALL)]


def test_the_quick_start_installs_the_tck_without_the_projects_tooling() -> None:
    first, second = _sh_blocks((ROOT / "README.md").read_text())[:2]
    assert "pip install -e . &&" in first
    assert "pytest --rs-publisher=rstck.reference:range_publisher" in first
    assert second == ".venv/bin/pip install -e '.[dev]' && .venv/bin/python -m pytest -q -n 4 --dist loadgroup"


def test_ci_runs_exactly_the_readmes_two_commands() -> None:
    first, second = _sh_blocks((ROOT / "README.md").read_text())[:2]
    lines = (ROOT / ".ci" / "run").read_text().splitlines()
    assert first in lines
    assert second in lines
    assert lines.index(first) < lines.index(second)


def test_ci_runs_the_soak_the_suite_deselects() -> None:
    import tomllib

    soak = next(b for b in _sh_blocks((ROOT / "README.md").read_text()) if "-m slow" in b)
    lines = (ROOT / ".ci" / "run").read_text().splitlines()
    assert soak in lines
    addopts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["addopts"]
    assert "not slow" in addopts


def test_the_dev_extra_has_every_tool_the_tests_use_and_the_tck_none() -> None:
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    required = " ".join(project["dependencies"])
    for tool in ("ruff", "mypy", "jsonschema", "html5lib", "rsocket", "pyspark", "xdist"):
        assert tool not in required
    extras = project["optional-dependencies"]

    def closure(name: str) -> str:
        out = []
        for dep in extras[name]:
            if dep.startswith("reactive-streams-tck["):
                out += [closure(e) for e in dep[dep.index("[") + 1:dep.index("]")].split(",")]
            else:
                out.append(dep)
        return " ".join(out)

    dev = closure("dev")
    for tool in ("ruff", "mypy", "jsonschema", "html5lib", "rsocket", "reactivex", "pyspark", "pytest-xdist",
                 "pytest-repeat"):
        assert tool in dev, tool


def test_the_documented_wheel_builds_and_carries_the_plugin(tmp_path: Path) -> None:
    """``docs/ci.md``'s install from a wheel: the file it names is what ``pip wheel`` builds."""
    import shutil
    import subprocess
    import sys
    import zipfile

    source = tmp_path / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    for package in ("tck", "plugins"):
        shutil.copytree(ROOT / package, source / package, ignore=shutil.ignore_patterns("__pycache__"))
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path / "dist"),
                           str(source)], capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    (wheel,) = (tmp_path / "dist").iterdir()
    assert f"dist/{wheel.name}" in (ROOT / "docs" / "ci.md").read_text()
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        meta = zf.read(next(n for n in names if n.endswith("METADATA"))).decode()
        entry_points = zf.read(next(n for n in names if n.endswith("entry_points.txt"))).decode()
    assert "rstck/schemas/rs-tck-results-1.schema.json" in names
    assert "rstck_plugins/host/options.json" in names  # the entry point's option table
    assert not [n for n in names if "mutation" in n or "mutants" in n]  # tools that measure the kit stay home
    assert "rstck = rstck_plugins.host.pytest_entry" in entry_points
    plain = [line for line in meta.splitlines() if line.startswith("Requires-Dist:") and "extra ==" not in line]
    assert sorted(line.split()[1].split(">")[0].split("<")[0] for line in plain) == [
        "hypothesis", "pluggy", "pytest", "pytest-timeout"]


def test_a_missing_rsocket_says_which_extra_installs_it(project: pytest.Pytester) -> None:
    project.makeconftest("import sys\nsys.modules['rsocket'] = None  # as if rsocket-py were not installed\n")
    project.makepyfile(streams="import rsocket\n\ndef stream(n):\n    return None\n")
    result = project.runpytest("--rs-adapter=rsocket", "--rs-publisher=streams:stream")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([
        ("*--rs-publisher=streams:stream: importing 'streams' raised ModuleNotFoundError: *rsocket*; "
        "install it with: pip install 'reactive-streams-tck[[]rsocket[]]'"),
        '*File "*streams.py", line 1, in <module>',
    ])


def test_maxfail_on_the_last_test_leaves_a_complete_run(project: pytest.Pytester) -> None:
    result = project.runpytest("--rs-publisher=subjects:ignores_zero", FAILED, "--rs-rules=3.9",
                               "-k", "required_spec309_request_zero_must_signal", "-x", "--rs-report-json=r.json")
    result.assert_outcomes(failed=1)
    run = load(project.path / "r.json")
    data = run.to_json()
    assert "interrupted" not in data, {k: data.get(k) for k in ("interrupted_reason", "not_run")}


def test_a_real_ctrl_c_leaves_marked_partial_reports(project: pytest.Pytester) -> None:
    """SIGINT, as a terminal's Ctrl-C sends it, while the second test runs."""
    selected = _collected(project, REF, FAILED)
    project.makeconftest(
        "import os, signal, time\n"
        "calls = []\n"
        "def pytest_runtest_call(item):\n"
        "    calls.append(item.nodeid)\n"
        "    if len(calls) == 2:\n"
        "        os.kill(os.getpid(), signal.SIGINT)\n"
        "        time.sleep(30)\n"
    )
    result = project.runpytest_subprocess(REF, FAILED, "--rs-report-json=r.json", "--rs-report-html=r.html",
                                          "-p", "no:cacheprovider", timeout=120)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    run = load(project.path / "r.json")
    data, results = run.to_json(), run.results
    assert data["interrupted"] is True
    assert data["not_run"] == selected - 1
    assert len(results) == 1
    assert 'id="interrupted"' in (project.path / "r.html").read_text()
