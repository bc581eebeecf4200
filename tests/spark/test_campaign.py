"""Campaigns on a real local Spark session: pass rates of a seeded race, hostile units, ingest."""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import html5lib
import pytest
from rstck.results import document
from rstck.run_api import run_verification
from rstck.run_api import select
from rstck.subjects import load_publisher_subject
from rstck.verifications import VERIFICATIONS
from rstck_plugins.campaign import cli
from rstck_plugins.campaign.plan import SubjectSpec
from rstck_plugins.campaign.plan import build

pytest.importorskip("pyspark", reason="the Spark campaign tests need the spark extra")
if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
    pytest.skip("the Spark campaign tests need a Java runtime (17+) on PATH", allow_module_level=True)

#: One worker runs these Spark tests, so that one session (one JVM, warmed up by the first
#: campaign: about 19 s, then 4 s a campaign) serves them all; the standalone cluster, which
#: starts JVMs of its own anyway, runs beside them in a group of its own.
pytestmark = pytest.mark.xdist_group("spark")

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = "rstck.reference:range_publisher"
RACY = "tests.subjects.campaign_subjects:racy_publisher"
HOSTILE = "tests.subjects.campaign_subjects"


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    from rstck_plugins.campaign.spark import session

    s = session("local[2]", app="rs-tck tests")
    yield s
    s.stop()


def _summary(out: Path) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = json.loads((out / "summary.json").read_text())
    return rows


def _rows(spark: Any, out: Path) -> list[dict[str, Any]]:
    from rstck_plugins.campaign.spark import read_results

    df = read_results(spark, out)
    assert df is not None
    return [r.asDict() for r in df.collect()]


def _mixed_seed(repetitions: int) -> int:
    """A base seed under which some, not all, runs of the racy subject get its racy build."""
    for base in range(100):
        campaign = build([SubjectSpec("publisher", RACY)], {"out": "x", "seed": base, "repetitions": repetitions}, "t")
        racy = [_draws_racy(u["seed"]) for u in campaign.units()]
        if 0 < sum(racy) < len(racy):
            return base
    raise AssertionError("no mixed base seed")


def _draws_racy(seed: int) -> bool:
    random.seed(seed)
    return random.random() < 0.5


def test_seeded_race_shows_as_a_pass_rate_between_0_and_1(
        spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "campaign"
    base = _mixed_seed(4)
    argv = ["campaign", "--publisher", REFERENCE, "--publisher", RACY, "--rules", "1.3",
            "--repetitions", "4", "--seed", str(base), "--out", str(out)]
    assert cli.main(argv, spark=spark) == 1
    summary = {(r["subject"], r["test"]): r for r in _summary(out)}
    race = summary[(RACY, "stochastic_spec103_must_signal_on_methods_sequentially")]
    assert race["runs"] == 4
    assert race["flaky"] is True
    assert 0 < race["pass_rate"] < 1
    assert race["first_failure_rule"] == "1.3"
    assert race["repro"].startswith(f"RS_TCK_SEED={race['first_failing_seed']} pytest ")
    assert f"--rs-publisher={RACY}" in race["repro"]
    low, high = race["pass_rate_ci95"]
    assert low < race["pass_rate"] < high
    reference = summary[(REFERENCE, "stochastic_spec103_must_signal_on_methods_sequentially")]
    assert reference["runs"] == 4
    assert reference["pass_rate"] == 1
    assert reference["flaky"] is False
    assert reference["repro"] is None
    for key in ("subject", "verification", "rule", "test", "level", "runs", "passed", "failed", "errors",
                "pass_rate", "flaky", "p50_s", "p95_s", "max_s", "repro"):
        assert key in race
    # Each failing run is one the seed made racy: the seed reproduces the run.
    rows = _rows(spark, out)
    failing = {r["seed"] for r in rows if r["subject"] == RACY and r["outcome"] == "failed"}
    assert failing
    assert all(_draws_racy(seed) for seed in failing)
    per_unit = len(select(VERIFICATIONS["publisher"].tests, rules=["1.3"]))
    assert len({r["row_id"] for r in rows}) == len(rows) == 8 * per_unit
    first = next(r for r in rows if r["outcome"] == "failed")
    assert first["failure_rule"] == "1.3"
    assert "on_next entered on thread" in first["failure_observed"]
    assert json.loads(first["failures"])[0]["rule"] == "1.3"
    # Rerunning the same campaign (same --seed, same --out) adds nothing: rows are keyed by unit.
    assert cli.main(argv, spark=spark) == 1
    assert len(_rows(spark, out)) == 8 * per_unit
    # The report: parses, the matrix shows both subjects, the flaky test comes first with its repro.
    page = (out / "report.html").read_text()
    tree = html5lib.parse(page, namespaceHTMLElements=False)
    assert tree.find(".//{http://www.w3.org/2000/svg}svg") is not None
    cells = [td.get("title", "") for td in tree.iter("td")]
    assert any(RACY in c and "rule 1.3" in c for c in cells)
    assert page.index("stochastic_spec103") < page.index("Durations")
    assert "on_next entered on thread" in page  # why it failed, not only that it did
    # rs-tck show: the failure as pytest prints it, from the files next to the dataset.
    assert cli.main(["show", str(out), "stochastic_spec103", "--subject", RACY]) == 0
    shown = capsys.readouterr().out
    assert "on_next entered on thread" in shown
    assert race["repro"] in shown


def test_hung_and_crashing_units_become_error_rows_and_the_campaign_goes_on(spark: Any, tmp_path: Path) -> None:
    out = tmp_path / "hostile"
    argv = ["campaign", "--publisher", f"{HOSTILE}:stops_its_process", "--publisher", f"{HOSTILE}:exits_its_process",
            "--publisher", f"{HOSTILE}:kills_its_process", "--publisher", REFERENCE, "--rules", "1.1,3.9",
            "--repetitions", "1", "--test-limit-ms", "1500", "--grace-s", "1.5", "--out", str(out)]
    assert cli.main(argv, spark=spark) == 1
    rows = _rows(spark, out)
    by_subject: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_subject.setdefault(r["subject"].rpartition(":")[2], []).append(r)
    messages = {
        "stops_its_process": "did not report within 3.0 s",
        "exits_its_process": "exited with status 3",
        "kills_its_process": "was killed by SIGKILL",
    }
    for name, text in messages.items():
        errors = [r for r in by_subject[name] if r["outcome"] == "error"]
        assert len(errors) == 1, name  # one per unit: the test in flight when the process was lost
        assert all(text in r["message"] and "while running this test" in r["message"] for r in errors)
        assert all(r["outcome"] == "skipped" and r["message"].startswith("not run:")
                   for r in by_subject[name] if r["outcome"] != "error")
    reference = by_subject["range_publisher"]
    assert reference
    assert all(r["outcome"] in ("passed", "skipped") for r in reference)
    assert {r["outcome"] for r in reference} >= {"passed"}


def _results_file(path: Path, rules: tuple[str, ...] = ("1.1",)) -> Path:
    subject = load_publisher_subject(REFERENCE)
    results = run_verification("publisher", subject, rules=rules)
    doc = document(results, subjects={"publisher": REFERENCE}, settings={"timeout_ms": 1000.0})
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def test_ingest_keeps_valid_files_quarantines_the_rest_and_is_idempotent(spark: Any, tmp_path: Path) -> None:
    out = tmp_path / "dataset"
    good = _results_file(tmp_path / "good.json")
    other = _results_file(tmp_path / "other.json", rules=("1.1", "3.9"))
    copy = tmp_path / "copy.json"
    copy.write_bytes(good.read_bytes())
    malformed = tmp_path / "malformed.json"
    malformed.write_text('{"schema": "rs-tck-results/1", "results": [', encoding="utf-8")
    foreign = tmp_path / "junit.json"
    foreign.write_text(json.dumps({"tests": 3, "failures": 0}), encoding="utf-8")
    doc = json.loads(good.read_text())
    off_schema = tmp_path / "subjects-string.json"
    off_schema.write_text(json.dumps({**doc, "subjects": REFERENCE}), encoding="utf-8")
    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps({**doc, "results": []}), encoding="utf-8")
    partial = tmp_path / "partial.json"
    partial.write_text(json.dumps({**doc, "interrupted": True, "interrupted_reason": "KeyboardInterrupt",
                                   "not_run": 22, "python": "3.11.0"}), encoding="utf-8")
    argv = ["ingest", str(good), str(malformed), str(off_schema), str(other), str(foreign), str(empty), str(copy),
            str(partial), "--out", str(out)]
    assert cli.main(argv, spark=spark) == 1  # four files were rejected
    rows = _rows(spark, out)
    expected = len(json.loads(good.read_text())["results"]) * 2 + len(json.loads(other.read_text())["results"])
    assert len(rows) == expected
    assert len({r["row_id"] for r in rows}) == expected
    assert {r["source"] for r in rows} == {str(good), str(other), str(partial)}
    quarantined = [json.loads(line) for line in (out / "quarantine.jsonl").read_text().splitlines()]
    assert [q["path"] for q in quarantined] == [str(malformed), str(off_schema), str(foreign), str(empty)]
    assert "not valid JSON" in quarantined[0]["reason"]
    assert "subjects must be object" in quarantined[1]["reason"]
    assert "schema" in quarantined[2]["reason"]
    assert "no results" in quarantined[3]["reason"]
    manifest = next(json.loads(m.read_text()) for m in (out / "campaigns").glob("ingest-*.json"))
    assert manifest["partial"] == 1
    assert [u["partial"] for u in manifest["units"].values() if u.get("partial")] == [
        {"reason": "KeyboardInterrupt", "not_run": 22}]
    # The same files again add nothing.
    assert cli.main(["ingest", str(good), str(other), "--out", str(out)], spark=spark) == 0
    assert len(_rows(spark, out)) == expected
    summary = _summary(out)
    assert summary
    assert all(r["pass_rate"] == 1 for r in summary if r["runs"])
    assert cli.main(["summary", str(out)], spark=spark) == 0


def test_usage_errors_exit_2_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cases = [
        (["campaign", "--out", str(tmp_path)], "no subject"),
        (["campaign", "--publisher", REFERENCE, "--rules", "9.9", "--out", str(tmp_path)], "unknown rule id(s) 9.9"),
        (["campaign", "--publisher", "nosuchmodule_xyz:f", "--out", str(tmp_path)], "cannot import module"),
        (["campaign", "--publisher", REFERENCE, "--timeout-ms", "-1", "--out", str(tmp_path)], "timeout-ms"),
        (["summary", str(tmp_path / "none")], "no campaign dataset"),
    ]
    for argv, text in cases:
        assert cli.main(argv) == 2, argv
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1, err
        assert text in err[0], err


def test_missing_pyspark_or_java_is_one_line_with_the_fix(tmp_path: Path) -> None:
    args = ["campaign", "--publisher", REFERENCE, "--out", str(tmp_path / "o")]
    code = "import sys; sys.modules['pyspark'] = None; from rstck_plugins.campaign import cli; sys.exit(cli.main(sys.argv[1:]))"
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, check=False)
    assert done.returncode == 2
    assert done.stderr.strip() == ("rs-tck campaign: error: campaigns run on Apache Spark, and PySpark is not "
                                   "installed: pip install 'reactive-streams-tck[spark]'")
    env = {**os.environ, "JAVA_HOME": str(tmp_path / "nojdk")}
    done = subprocess.run([sys.executable, "-m", "rstck_plugins", *args], capture_output=True, text=True,
                          check=False, env=env)
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1
    assert "install a JDK 17+" in done.stderr


def test_campaign_file_runs_with_its_own_settings(spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A TOML campaign file: subjects, rules, repetitions, settings and master come from it.

    Run in-process on the tests' session, which the campaign uses instead of starting the
    file's master (the manifest records the master that ran); the console script itself runs
    in the standalone-cluster test below.
    """
    from rstck_plugins.campaign.plan import from_toml

    out = tmp_path / "toml-out"
    campaign = tmp_path / "campaign.toml"
    campaign.write_text(f"""
out = "{out}"
repetitions = 2
master = "local[1]"
rules = ["1.1", "3.9"]

[settings]
timeout-ms = 1000

[[publisher]]
spec = "{REFERENCE}"
failed = "rstck.reference:failed_publisher"
""", encoding="utf-8")
    assert cli.main(["campaign", str(campaign)], spark=spark) == 0
    assert "2/2 units" in capsys.readouterr().err
    summary = _summary(out)
    assert {r["rule"] for r in summary} == {"1.1", "3.9"}
    assert all(r["runs"] == 2 and r["pass_rate"] == 1 for r in summary if r["level"] == "required")
    manifest = json.loads(next((out / "campaigns").glob("c-*.json")).read_text())
    assert manifest["master"] == spark.sparkContext.master
    assert from_toml(campaign, {}).master == "local[1]"


@pytest.mark.xdist_group("spark-cluster")
def test_standalone_cluster_on_loopback_ships_the_subject(spark: Any, tmp_path: Path) -> None:
    """A master and a worker from the PySpark installation; the subject's package is not on the
    executors' path (they run in the worker's own folder, without PYTHONPATH), so it is shipped."""
    from rstck_plugins.campaign.standalone import LoopbackCluster

    out = tmp_path / "cluster"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYSPARK_PYTHON")}
    with LoopbackCluster(workers=1, cores=2, memory="1g") as cluster:
        done = subprocess.run(
            [str(Path(sys.executable).with_name("rs-tck")), "campaign", "--publisher", RACY,
             "--rules", "1.1,1.3", "--repetitions", "2", "--seed", str(_mixed_seed(2)),
             "--master", cluster.master_url, "--conf", "spark.executor.memory=512m", "--out", str(out)],
            capture_output=True, text=True, check=False, cwd=ROOT, env=env, timeout=900,
        )
    assert not cluster.dir.exists()  # its logs and the workers' copies of the shipped code went with it
    assert done.returncode == 1, done.stderr[-3000:]  # the racy build shows in one of the two runs
    assert "shipped" in done.stderr
    shipped = re.search(r"shipped (\S+tests\.zip) to the executors", done.stderr)
    assert shipped is not None, done.stderr[-3000:]
    assert not Path(shipped.group(1)).parent.exists()  # the archive's folder went when the session stopped
    rows = _rows(spark, out)
    assert len(rows) == 2 * len(select(VERIFICATIONS["publisher"].tests, rules=["1.1", "1.3"]))
    assert all(".zip" in r["subject_origin"] and str(ROOT) not in r["subject_origin"] for r in rows)
    race = next(r for r in _summary(out) if r["test"] == "stochastic_spec103_must_signal_on_methods_sequentially")
    assert race["runs"] == 2
    assert race["pass_rate"] == 0.5


FUZZ = "fuzz_demand_cancel_orders"


def _row(unit: str, attempt: str | None, test: str, outcome: str, rule: str | None, cid: str = "c-f") -> dict[str, Any]:
    from rstck_plugins.campaign.unit import COLUMNS

    row: dict[str, Any] = dict.fromkeys(COLUMNS)
    row.update({"campaign_id": cid, "unit_id": unit, "row_id": f"{unit}/publisher/{test}", "source": "campaign",
                "subject": RACY, "verification": "publisher", "test": test, "rule": rule, "level": "fuzz",
                "outcome": outcome, "verdict": outcome, "duration_s": 0.5, "message": f"{outcome} in {unit}",
                "failures": "[]", "failure_rule": rule if outcome == "failed" else None,
                "failure_observed": "on_next after cancel" if outcome == "failed" else None,
                "repetition": 0, "seed": int(unit.removeprefix("u-")), "started_at": 1.0, "attempt_id": attempt})
    return row


def test_rows_are_read_once_per_unit_and_summarised_by_test(spark: Any, tmp_path: Path) -> None:
    """Whatever was written twice reads once; a fuzz test is one summary row whose failures cite rules."""
    from rstck_plugins.campaign import summary
    from rstck_plugins.campaign.spark import read_results
    from rstck_plugins.campaign.spark import row_schema
    from rstck_plugins.campaign.spark import write_rows

    out = tmp_path / "dataset"
    (out / "campaigns").mkdir(parents=True)
    campaign = build([SubjectSpec("publisher", RACY)], {"out": str(out), "rules": "fuzz"}, "t")
    manifest = {"kind": "campaign", "campaign": campaign.to_json(), "units_total": 60}
    (out / "campaigns" / "c-f.json").write_text(json.dumps(manifest))
    rows = [_row(f"u-{i}", f"a{i}", FUZZ, "failed" if i < 9 else "passed", "3.9" if i < 9 else None)
            for i in range(60)]
    # The same units again: another attempt of unit 0 (passing, this time) and unit 1's rows twice.
    doubled = [_row("u-0", "b0", FUZZ, "passed", None), rows[1], rows[1]]
    write_rows(spark.createDataFrame(rows, row_schema()), out)
    write_rows(spark.createDataFrame(doubled, row_schema()), out)
    df = read_results(spark, out)
    assert df is not None
    got = [r.asDict() for r in df.collect()]
    assert len(got) == 60
    assert next(r for r in got if r["unit_id"] == "u-0")["attempt_id"] == "a0"
    rows_out = summary.summary_rows(df, out)
    assert len(rows_out) == 1  # one test, one row: not "sanity" 51/51 and "3.9" 0/9
    fuzz = rows_out[0]
    assert fuzz["rule"] == "fuzz"
    assert (fuzz["runs"], fuzz["passed"], fuzz["failed"]) == (60, 51, 9)
    assert fuzz["flaky"] is True
    assert fuzz["failure_rules"] == ["3.9"]
    assert "--rs-rules=fuzz" in fuzz["repro"]
    assert f"-k {FUZZ}" in fuzz["repro"]
    low, high = fuzz["pass_rate_ci95"]
    assert 0.73 < low < 0.74
    assert 0.91 < high < 0.92
    points = summary.trend(df)
    assert [(p["rule"], p["runs"]) for p in points] == [("fuzz", 60)]


def test_two_identical_campaigns_at_once_write_each_unit_once(spark: Any, tmp_path: Path) -> None:
    import threading

    from rstck_plugins.campaign.lock import LOCK_NAME

    out = tmp_path / "twice"
    argv = ["campaign", "--publisher", REFERENCE, "--rules", "1.2", "--repetitions", "3", "--seed", "5",
            "--out", str(out)]
    codes: list[int] = []
    first = threading.Thread(target=lambda: codes.append(cli.main(argv, spark=spark)))
    first.start()
    lock_file = out / LOCK_NAME
    while first.is_alive() and not (lock_file.exists() and lock_file.read_text()):
        first.join(0.05)
    second = cli.main(argv, spark=spark)  # the same command, while the first runs
    first.join()
    assert codes == [0]
    assert second == 2
    rows = _rows(spark, out)
    assert len(rows) == 3 == len({r["unit_id"] for r in rows})
    assert all(r["runs"] == 3 for r in _summary(out))


def test_ctrl_c_ends_the_running_spark_job_before_it_is_raised(spark: Any) -> None:
    """The campaign's Ctrl-C cancels the running job, Spark's logging off first, before the
    interrupt reaches the command: a job still running when the command exits is ended by the
    JVM's shutdown, which logs its Java stack to the terminal."""
    import logging
    import signal
    import threading
    import time

    sc = spark.sparkContext
    seen: list[list[int]] = []

    def interrupt_once_running() -> None:
        deadline = time.monotonic() + 120
        while not list(sc.statusTracker().getActiveJobsIds()) and time.monotonic() < deadline:
            time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGINT)

    def a_long_job() -> None:
        with cli._plain_interrupt(spark):
            sc.parallelize([0], 1).map(lambda _: __import__("time").sleep(300)).count()

    before = signal.getsignal(signal.SIGINT)
    ctrl_c = threading.Thread(target=interrupt_once_running, daemon=True)
    started = time.monotonic()
    try:
        ctrl_c.start()
        with pytest.raises(KeyboardInterrupt):
            a_long_job()
        stopped_after = time.monotonic() - started
        seen.append(list(sc.statusTracker().getActiveJobsIds()))
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN  # the saving is not cut short
    finally:
        ctrl_c.join(5)
        signal.signal(signal.SIGINT, before)
        logging.disable(logging.NOTSET)
        sc.setLogLevel("ERROR")
    assert seen == [[]]
    assert stopped_after < 120


def test_ctrl_c_prints_one_line_and_the_same_command_resumes(spark: Any, tmp_path: Path) -> None:
    """A terminal's Ctrl-C (SIGINT to the whole process group) mid-campaign: one line, exit 130,
    the units that finished kept; the same command then runs only the rest, none twice."""
    import signal
    import time

    out = tmp_path / "interrupted"
    argv = ["campaign", "--publisher", REFERENCE, "--rules", "1.2", "--repetitions", "8", "--master", "local[1]",
            "--out", str(out)]
    run = subprocess.Popen([sys.executable, "-m", "rstck_plugins", *argv], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, cwd=ROOT, start_new_session=True)
    try:
        while not list((out / "spool").glob("*.json")) and run.poll() is None:
            time.sleep(0.1)
        os.killpg(run.pid, signal.SIGINT)  # as a terminal does: the whole foreground group
        out_text, err = run.communicate(timeout=300)
    finally:
        if run.poll() is None:
            run.kill()
            run.communicate()
    assert run.returncode == 130, err[-3000:]
    # After the first line of its own, the campaign's lines only: no Java log line, no stack frame
    # (of the cancelled job, from a JVM stopped with it running), no Python traceback.
    lines = err.strip().splitlines()
    header = next(i for i, line in enumerate(lines) if " units (0 already in " in line)
    cid = lines[header].split(":")[0]
    assert out_text == ""
    assert all(line.startswith(cid + ": ") for line in lines[header:]), err[-3000:]
    last = lines[-1]
    assert "interrupted:" in last
    assert "run the same command to resume: rs-tck campaign --publisher" in last
    saved = int(last.split("interrupted: ")[1].split(" of ")[0])
    assert 1 <= saved < 8
    assert cli.main(argv, spark=spark) == 0
    rows = _rows(spark, out)
    assert len(rows) == 8 == len({r["unit_id"] for r in rows})
    assert not list((out / "spool").glob("*.json"))  # folded into the dataset
    assert [r["runs"] for r in _summary(out)] == [8]


def test_the_summary_of_a_small_dataset_runs_a_few_tasks_not_hundreds(spark: Any, tmp_path: Path) -> None:
    """Ingesting two files took minutes on two cores: the cached dataset kept Spark's 200 shuffle
    partitions, a task each, for each of the summary's three aggregations."""
    out = tmp_path / "dataset"
    files = [str(_results_file(tmp_path / "a.json")), str(_results_file(tmp_path / "b.json", rules=("1.1", "3.9")))]
    assert cli.main(["ingest", *files, "--out", str(out)], spark=spark) == 0
    sc = spark.sparkContext
    sc.setJobGroup("rs-tck-summary-tasks", "the summary alone")
    try:
        assert cli.main(["summary", str(out)], spark=spark) == 0
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    tracker = sc.statusTracker()
    stages = [s for j in tracker.getJobIdsForGroup("rs-tck-summary-tasks")
              for s in (tracker.getJobInfo(j).stageIds if tracker.getJobInfo(j) else [])]
    tasks = sum(info.numTasks for s in stages if (info := tracker.getStageInfo(s)) is not None)
    assert 0 < tasks < 100, tasks
