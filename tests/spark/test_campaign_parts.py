"""The parts of a campaign that need no Spark: the directory lock, identity by content, input
checks, the results schema, Wilson intervals, repro commands, a unit's process limits, the
report's layout and ``rs-tck show``."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import html5lib
import jsonschema
import pytest
from rstck.results import RunResults
from rstck.results import document
from rstck.run_api import run_verification
from rstck.run_api import select
from rstck.subjects import load_publisher_subject
from rstck.verifications import VERIFICATIONS
from rstck_plugins.campaign import cli
from rstck_plugins.campaign import ingest
from rstck_plugins.campaign import lock
from rstck_plugins.campaign import report
from rstck_plugins.campaign import schema
from rstck_plugins.campaign import stats
from rstck_plugins.campaign.plan import SubjectSpec
from rstck_plugins.campaign.plan import UsageError
from rstck_plugins.campaign.plan import build
from rstck_plugins.campaign.plan import from_toml
from rstck_plugins.campaign.summary import repro
from rstck_plugins.campaign.summary import rule_label
from rstck_plugins.campaign.unit import run_unit

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = "rstck.reference:range_publisher"
RACY = "tests.subjects.campaign_subjects:racy_publisher"
HOSTILE = "tests.subjects.campaign_subjects"
FUZZ = "fuzz_demand_cancel_orders"


# -- 1. one writer per campaign directory ------------------------------------------------------


def _hold_lock(out: Path) -> subprocess.Popen[str]:
    code = ("import sys, time; from pathlib import Path; from rstck_plugins.campaign import lock; "
            "c = lock.claim(Path(sys.argv[1]), 'rs-tck command'); print('held', flush=True); time.sleep(60)")
    holder = subprocess.Popen([sys.executable, "-c", code, str(out)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None
    assert holder.stdout.readline().strip() == "held"
    return holder


def _kill(holder: subprocess.Popen[str]) -> None:
    holder.send_signal(signal.SIGKILL)  # as kill -9 would: the lock file stays behind
    holder.wait()
    assert holder.stdout is not None
    holder.stdout.close()


def test_a_live_claim_is_refused_with_its_owner_and_a_dead_one_is_taken_over(tmp_path: Path) -> None:
    holder = _hold_lock(tmp_path)
    try:
        with pytest.raises(UsageError) as refused:
            lock.claim(tmp_path, "rs-tck command")
        text = str(refused.value)
        assert "\n" not in text
        assert f"pid {holder.pid} on {socket.gethostname()}" in text
        assert "in use" in text
    finally:
        _kill(holder)
    assert (tmp_path / lock.LOCK_NAME).read_text()
    with lock.claim(tmp_path, "rs-tck command") as claim:
        assert claim.previous is not None
        assert claim.previous["pid"] == holder.pid
        with pytest.raises(UsageError):
            lock.claim(tmp_path, "rs-tck command")  # held by this process now
    with lock.claim(tmp_path, "rs-tck command") as again:
        assert again.previous is None  # released cleanly: nothing stale


def test_a_campaign_on_a_directory_in_use_exits_2_with_one_line_before_spark(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    out.mkdir()
    holder = _hold_lock(out)
    try:
        code = cli.main(["campaign", "--publisher", REFERENCE, "--rules", "1.1", "--out", str(out)])
    finally:
        _kill(holder)
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert f"pid {holder.pid}" in err[0]
    assert not (out / "results").exists()


def test_ctrl_c_while_spark_starts_is_one_line_and_exit_130(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from rstck_plugins.campaign import spark as rs_spark

    def interrupted(*args: Any, **kwargs: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(rs_spark, "session", interrupted)
    out = tmp_path / "out"
    code = cli.main(["campaign", "--publisher", REFERENCE, "--rules", "1.1", "--out", str(out)])
    assert code == 130
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert "interrupted while Spark was starting: no unit run; run the same command" in err[0]
    with lock.claim(out, "the same command again") as again:  # the directory was let go
        assert again.previous is None


# -- 2. identity by content --------------------------------------------------------------------


def test_the_same_command_is_the_same_campaign_with_the_same_units() -> None:
    subjects = [SubjectSpec("publisher", REFERENCE)]
    values: dict[str, Any] = {"out": "x", "repetitions": 3, "rules": "1.1"}
    one, two = build(subjects, values, "t"), build(subjects, dict(values), "t")
    assert one.campaign_id == two.campaign_id
    assert one.units() == two.units()
    # Where it runs is not what it is.
    elsewhere = build(subjects, {**values, "master": "local[1]", "conf": {"spark.x": "1"}, "ship": True}, "t")
    assert elsewhere.campaign_id == one.campaign_id
    # What it runs is.
    for change in ({"repetitions": 4}, {"rules": "1.3"}, {"settings": {"timeout-ms": 900}}, {"seed": 7},
                   {"grace_s": 3.0}, {"memory_mb": 512}):
        assert build(subjects, {**values, **change}, "t").campaign_id != one.campaign_id, change
    assert build(subjects, {**values, "seed": 7}, "t").units() != one.units()


# -- 5. bad input ------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "named"), [
    ('master = 7', "master"),
    ('rules = 3.9', "rules"),
    ('grace_s = "abc"', "--grace-s"),
    ('seeds = [1, "a"]', "seeds"),
    ('ship = "no"', "ship"),
    ('spark_ui = 1', "spark_ui"),
    ('repetitions = "5"', "--repetitions"),
    ('conf = "spark.x=1"', "conf"),
    ('settings = ["timeout-ms"]', "settings"),
    ('memory_mb = -1', "--memory-mb"),
    ('master = "locl[2]"', "not a Spark master URL"),
])
def test_wrong_types_in_a_campaign_file_are_one_line_usage_errors(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, named: str) -> None:
    path = tmp_path / "c.toml"
    path.write_text(f'out = "{tmp_path / "o"}"\n{text}\n[[publisher]]\nspec = "{REFERENCE}"\n', encoding="utf-8")
    assert cli.main(["campaign", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert named in err[0], err
    assert not (tmp_path / "o").exists()


def test_a_typo_inside_a_subject_table_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text(f'out = "o"\n[[publisher]]\nspec = "{REFERENCE}"\nfailedd = "{REFERENCE}"\n', encoding="utf-8")
    with pytest.raises(UsageError, match=r"unknown key.*failedd"):
        from_toml(path, {})


@pytest.mark.parametrize("key", ["processes", "subjects-at-once"])
def test_a_setting_only_a_pytest_run_of_several_subjects_has_is_refused_in_a_campaign(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], key: str) -> None:
    """A unit verifies one subject in a process of its own: dealing to workers and sharing a
    schedule mean nothing there, so the file's setting is refused and the option does not exist."""
    path = tmp_path / "c.toml"
    path.write_text(f'out = "o"\npublisher = ["{REFERENCE}"]\n[settings]\n{key} = 2\n', encoding="utf-8")
    with pytest.raises(UsageError, match=rf"'{key}' is not a campaign setting: a unit runs one subject"):
        from_toml(path, {})
    with pytest.raises(SystemExit):
        cli.main(["campaign", "--publisher", REFERENCE, f"--{key}", "2", "--out", str(tmp_path / "o")])
    assert f"unrecognized arguments: --{key}" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_bad_master_and_unusable_out_fail_in_one_line_before_any_unit(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens once closed
    results_file = tmp_path / "file-out"
    results_file.mkdir()
    (results_file / "results").write_text("not a directory")
    cases = [
        (["--master", "local[two]"], "not a Spark master URL"),
        (["--master", f"spark://127.0.0.1:{port}"], "no Spark master answers"),
        (["--out", str(results_file)], "must be a directory"),
    ]
    for extra, text in cases:
        argv = ["campaign", "--publisher", REFERENCE, "--rules", "1.1", "--out", str(tmp_path / "o"), *extra]
        started = time.monotonic()
        assert cli.main(argv) == 2, extra
        assert time.monotonic() - started < 15, extra
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1, err
        assert text in err[0], err


# -- 4. ingest against the results schema ------------------------------------------------------


def _document(rules: tuple[str, ...] = ("1.1",)) -> dict[str, Any]:
    subject = load_publisher_subject(REFERENCE)
    results = run_verification("publisher", subject, rules=rules)
    return document(results, subjects={"publisher": REFERENCE}, settings={"timeout_ms": 1000.0})


def test_the_schema_check_agrees_with_jsonschema(tmp_path: Path) -> None:
    good = _document()
    bad_subjects = {**good, "subjects": "mylib:pub"}
    bad_settings = {**good, "settings": [1, 2]}
    bad_result = {**good, "results": [{**good["results"][0], "outcome": "maybe"}]}
    bad_level = {**good, "results": [{**good["results"][0], "duration_s": -1}]}
    validator = jsonschema.Draft202012Validator(schema.results_schema())
    assert schema.errors(good) == []
    assert validator.is_valid(good)
    for doc, where in [(bad_subjects, "subjects"), (bad_settings, "settings"), (bad_result, "results[0].outcome"),
                       (bad_level, "results[0].duration_s")]:
        found = schema.errors(doc)
        assert found
        assert found[0].startswith(where), found
        assert not validator.is_valid(doc)


def test_ingest_rejects_off_schema_and_empty_files_and_marks_partial_runs(tmp_path: Path) -> None:
    good = _document()
    files = {}
    for name, doc in [("subjects", {**good, "subjects": "mylib:pub"}), ("settings", {**good, "settings": []}),
                      ("empty", {**good, "results": []})]:
        files[name] = tmp_path / f"{name}.json"
        files[name].write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(Exception, match="subjects must be object"):
        ingest.read_file(files["subjects"])
    with pytest.raises(Exception, match="settings must be object"):
        ingest.read_file(files["settings"])
    with pytest.raises(Exception, match="no results"):
        ingest.read_file(files["empty"])
    cut = {**good, "interrupted": True, "interrupted_reason": "KeyboardInterrupt", "not_run": 22}
    path = tmp_path / "cut.json"
    path.write_text(json.dumps(cut), encoding="utf-8")
    _, run = ingest.read_file(path)
    assert run.results
    assert ingest.partial(run) == {"reason": "KeyboardInterrupt", "not_run": 22}
    assert ingest.partial(RunResults.from_json(good)) is None


# -- 9. how sure a pass rate is ----------------------------------------------------------------


def test_wilson_intervals_and_runs_needed_to_see_a_race() -> None:
    low, high = stats.wilson(51, 60) or (0.0, 0.0)
    assert round(low, 3) == 0.739
    assert round(high, 3) == 0.919
    low, high = stats.wilson(50, 50) or (0.0, 0.0)
    assert high == 1.0
    assert 0.92 < low < 0.93  # 50 of 50 still allows a failure rate of about 7 %
    assert stats.wilson(0, 0) is None
    assert stats.runs_to_see(0.02) == 149  # "about 150 runs" for a 2 % race
    assert stats.runs_to_see(0.1) == 29


# -- 3 and 8. summaries by test, repro as a plain pytest command -------------------------------


def test_a_fuzz_test_is_labelled_by_what_it_is_not_by_what_its_failure_cites() -> None:
    assert rule_label("publisher", FUZZ, "3.9") == "fuzz"
    assert rule_label("publisher", FUZZ, None) == "fuzz"
    assert rule_label("publisher", "stochastic_spec103_must_signal_on_methods_sequentially", None) == "1.3"
    assert rule_label("publisher", "required_validate_sanity_x", None) == "sanity"


def _racy_seed() -> int:
    import random

    for seed in range(1000):
        random.seed(seed)
        if random.random() < 0.5:
            return seed
    raise AssertionError("no racy seed")


def test_the_repro_is_a_pytest_command_that_reruns_that_test_and_seed(tmp_path: Path) -> None:
    campaign = build([SubjectSpec("publisher", RACY)], {"out": "x", "rules": "1.3,3.9",
                                                       "settings": {"timeout-ms": 400}}, "t")
    manifest = {"kind": "campaign", "campaign": campaign.to_json()}
    seed = _racy_seed()
    test = "stochastic_spec103_must_signal_on_methods_sequentially"
    row = {"subject": RACY, "verification": "publisher", "test": test, "rule": "1.3"}
    command = repro({"unit_id": "u-1", "seed": seed, "campaign_id": campaign.campaign_id}, row, manifest)
    assert command is not None
    assert command.startswith(f"RS_TCK_SEED={seed} pytest ")
    assert f"--rs-publisher={RACY}" in command
    assert "--rs-rules=1.3" in command
    assert "--rs-timeout-ms=400" in command
    assert "rs-tck campaign" not in command
    env_part, _, line = command.partition(" ")
    env = {**os.environ, env_part.split("=")[0]: env_part.split("=")[1]}
    import shlex

    done = subprocess.run([sys.executable, "-m", *shlex.split(line), "-q"], cwd=ROOT, env=env,
                          capture_output=True, text=True, check=False, timeout=300)
    assert done.returncode == 1, done.stdout[-2000:]
    assert "1 failed" in done.stdout, done.stdout[-2000:]
    assert "1.3" in done.stdout
    # That seed drew the racy build; another seed's rerun passes.
    env["RS_TCK_SEED"] = str(next(s for s in range(1000) if s != seed and not _draws_racy(s)))
    done = subprocess.run([sys.executable, "-m", *shlex.split(line), "-q"], cwd=ROOT, env=env,
                          capture_output=True, text=True, check=False, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:]
    assert "1 passed" in done.stdout


def _draws_racy(seed: int) -> bool:
    import random

    random.seed(seed)
    return random.random() < 0.5


def test_the_repro_selects_exactly_one_test_when_names_contain_others() -> None:
    from rstck_plugins.campaign.summary import _selector

    names = [t.name for t in VERIFICATIONS["publisher"].tests]
    for name in names:
        expr = _selector("publisher", name)
        chosen = [n for n in names if name in n and not any(f"not {n}" == part for part in expr.split(" and "))]
        assert chosen == [name], (name, expr)


# -- 6 and 7. a unit's process: memory limit, stacks of a wedged one ---------------------------


def _unit(subject: str, memory_mb: int = 1024, limit_ms: int = 20000) -> tuple[dict[str, Any], dict[str, Any]]:
    campaign = build([SubjectSpec("publisher", subject)],
                     {"out": "x", "rules": "1.1", "memory_mb": memory_mb, "grace_s": 1.0,
                      "settings": {"test-limit-ms": limit_ms}}, "t")
    return campaign.units()[0], campaign.task()


def test_a_leaking_unit_is_killed_at_its_memory_limit_and_becomes_an_error_row() -> None:
    unit, task = _unit(f"{HOSTILE}:leaks_memory", memory_mb=150)
    rows = run_unit(unit, task)
    errors = [r for r in rows if r["outcome"] == "error"]
    assert len(errors) == 1, [r["message"][:200] for r in rows]
    assert "over the unit memory limit of 150 MiB (--memory-mb)" in errors[0]["message"]
    assert errors[0]["test"] == "required_spec101_request_must_result_in_the_correct_number_of_elements"


def test_a_wedged_unit_row_quotes_its_threads_stacks() -> None:
    unit, task = _unit(f"{HOSTILE}:wedges_its_interpreter", limit_ms=1500)
    rows = run_unit(unit, task)
    errors = [r for r in rows if r["outcome"] == "error"]
    assert len(errors) == 1
    message = errors[0]["message"]
    assert "did not report within" in message
    assert "most recent call first" in message
    assert "wedges_its_interpreter" in message


def test_a_slow_start_is_not_a_hang() -> None:
    """The test limit counts from the first test: a process that takes longer than the limit to
    import its subject (a loaded machine) is not killed for it."""
    unit, task = _unit("tests.subjects.slow_start_subjects:range_publisher", limit_ms=1500)
    rows = run_unit(unit, task)
    assert rows
    assert all(r["outcome"] in ("passed", "skipped") for r in rows), [r["message"][:300] for r in rows]


def test_the_default_memory_limit_leaves_a_conforming_unit_alone() -> None:
    unit, task = _unit(REFERENCE)
    assert task["memory_mb"] == 1024
    rows = run_unit(unit, task)
    assert rows
    assert all(r["outcome"] in ("passed", "skipped") for r in rows), [r["message"] for r in rows]


# -- 8. the report and rs-tck show -------------------------------------------------------------


def _summary_row(test: str, rule: str, runs: int, passed: int, max_s: float, **kw: Any) -> dict[str, Any]:
    row = {"subject": RACY, "verification": "publisher", "rule": rule, "test": test, "level": "required",
           "runs": runs, "passed": passed, "failed": runs - passed, "errors": 0, "skipped": 0,
           "pass_rate": passed / runs, "flaky": 0 < passed < runs, "p05_s": max_s / 10, "p25_s": max_s / 5,
           "p50_s": max_s / 3, "p75_s": max_s / 2, "p95_s": max_s * 0.9, "max_s": max_s, "min_s": 0.0,
           "first_failing_seed": 7 if passed < runs else None, "first_failure_rule": "3.9" if passed < runs else None,
           "failure_rules": ["3.9"] if passed < runs else [], "first_failure_observed": "it broke",
           "pass_rate_ci95": [round(x, 4) for x in stats.wilson(passed, runs) or (0, 0)],
           "repro": None}
    row.update(kw)
    return row


def _report_rows() -> list[dict[str, Any]]:
    rows = [_summary_row(FUZZ, "fuzz", 60, 51, 40.0, repro="RS_TCK_SEED=7 pytest -p no:cacheprovider "
                         f"--rs-publisher={RACY} --rs-rules=fuzz -k {FUZZ} --rs-timeout-ms=400")]
    rows += [_summary_row(t.name, t.rule_id or "sanity", 4, 4, 0.05) for t in VERIFICATIONS["processor"].tests
             if t.level != "fuzz"]
    return rows


def _details() -> list[dict[str, Any]]:
    message = "rule 3.9: expected on_error(ValueError)\n" + "\n".join(f"  #{i} on_next({i})" for i in range(60))
    return [{"subject": RACY, "verification": "publisher", "test": FUZZ, "failing": 9, "started_at": 1.0,
             "campaign_id": "c-1", "unit_id": "u-1", "seed": 7, "repetition": 0, "outcome": "failed",
             "message": message, "failure_rule": "3.9", "host": "h", "process_pid": 1, "duration_s": 1.0,
             "failures": []}]


def test_the_report_shows_why_fits_the_page_and_scales_each_duration_plot() -> None:
    rows = _report_rows()
    points = [{"rule": "fuzz", "run": "c-1", "at": 1.0, "runs": 60, "passed": 51, "pass_rate": 0.85},
              {"rule": "1.1", "run": "c-1", "at": 1.0, "runs": 4, "passed": 4, "pass_rate": 1.0}]
    page = report.render(rows, points, {"c-1": {"kind": "campaign", "units_total": 4}}, _details())
    tree = html5lib.parse(page, namespaceHTMLElements=False)
    # The why: the first failure's message and trace, and the repro as a command wrapped between options.
    traces = [p.text or "" for p in tree.iter("pre") if p.get("class") == "trace"]
    assert any("expected on_error(ValueError)" in t and "#30 on_next(30)" in t for t in traces)
    commands = [p.text or "" for p in tree.iter("pre") if p.get("class") == "cmd"]
    assert commands
    assert all(line.strip().startswith(("RS_TCK_SEED", "--", "-k", "-p")) for line in commands[0].splitlines())
    assert "break-all" not in page
    assert "95% interval" in page
    # The matrix: every rule column of a processor's tests within a 1280-1400 px page.
    matrix = next(t for t in tree.iter("table") if t.get("class") == "matrix")
    width = int(matrix.get("style", "").removeprefix("width:").removesuffix("px"))
    header = next(iter(matrix.iter("tr")))
    assert len(header.findall("th")) > 40
    assert width <= 1280
    # Durations: a 40 s fuzz test does not squash the 0.05 s tests' boxes.
    svg = "{http://www.w3.org/2000/svg}"
    boxes = [g for g in tree.iter(f"{svg}g") if g.find(f"{svg}rect") is not None]
    widths = [float(g.find(f"{svg}rect").get("width")) for g in boxes]  # type: ignore[union-attr]
    assert len(widths) == len(rows)
    assert min(widths) > 100
    # The trend counts test executions, not campaigns.
    trend = [t for t in tree.iter("table") if "test executions" in "".join(t.itertext())]
    assert trend
    assert any("".join(td.itertext()) == "60" for td in trend[0].iter("td"))


def test_show_prints_the_failure_with_its_trace_and_the_repro(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = _report_rows()
    (tmp_path / "summary.json").write_text(json.dumps(rows), encoding="utf-8")
    (tmp_path / "failures.json").write_text(json.dumps(_details()), encoding="utf-8")
    assert cli.main(["show", str(tmp_path), FUZZ]) == 0
    out = capsys.readouterr().out
    assert f"{RACY} publisher::{FUZZ} (rule fuzz): 9 of 60 runs failed" in out
    assert "95% interval" in out
    assert "#59 on_next(59)" in out  # the whole trace, not an excerpt
    assert "RS_TCK_SEED=7 pytest" in out
    assert cli.main(["show", str(tmp_path), "no_such_test"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "no test matching" in err[0]
    assert cli.main(["show", str(tmp_path), "spec1"]) == 2  # names many tests
    assert "names" in capsys.readouterr().err


def test_select_keeps_the_campaign_rule_ids_of_the_pytest_side() -> None:
    campaign = build([SubjectSpec("publisher", REFERENCE)], {"out": "x", "rules": "fuzz"}, "t")
    chosen = select(VERIFICATIONS["publisher"].tests, rules=campaign.rules)
    assert [t.name for t in chosen] == [FUZZ]


def test_show_picks_the_subject_that_failed_a_test_every_subject_ran(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two subjects ran the same test and one failed it: that one is shown, without --subject."""
    rows = [*_report_rows(), _summary_row(FUZZ, "fuzz", 60, 60, 1.0, subject=REFERENCE)]
    (tmp_path / "summary.json").write_text(json.dumps(rows), encoding="utf-8")
    (tmp_path / "failures.json").write_text(json.dumps(_details()), encoding="utf-8")
    assert cli.main(["show", str(tmp_path), FUZZ]) == 0
    assert f"{RACY} publisher::{FUZZ} (rule fuzz): 9 of 60 runs failed" in capsys.readouterr().out
    # Both failed: each is listed with the --subject that picks it.
    rows[-1] = _summary_row(FUZZ, "fuzz", 60, 58, 1.0, subject=REFERENCE)
    (tmp_path / "summary.json").write_text(json.dumps(rows), encoding="utf-8")
    assert cli.main(["show", str(tmp_path), FUZZ]) == 2
    err = capsys.readouterr().err
    assert f"(--subject {RACY})" in err
    assert f"(--subject {REFERENCE})" in err
    assert cli.main(["show", str(tmp_path), FUZZ, "--subject", REFERENCE]) == 0


def test_the_spooled_rows_of_committed_units_go_without_a_query(tmp_path: Path) -> None:
    """After a complete run every unit's wave was written: its spooled rows are dropped at once."""
    from rstck_plugins.campaign.spark import fold_spool
    from rstck_plugins.campaign.spark import spool_path

    spool = spool_path(tmp_path)
    spool.mkdir()
    for unit in ("u-1", "u-2"):
        (spool / f"{unit}.a.json").write_text("[]", encoding="utf-8")
    assert fold_spool(None, tmp_path, ["u-1", "u-2"]) == 0  # type: ignore[arg-type]  # no Spark asked
    assert not list(spool.iterdir())


def test_campaign_help_says_when_a_campaign_is_worth_it() -> None:
    out = subprocess.run([sys.executable, "-m", "rstck_plugins", "campaign", "--help"], capture_output=True,
                         text=True, check=True).stdout
    assert "A campaign is worth it for many runs" in out
    assert "for a handful of runs on one machine, loop instead" in out.replace("\n", " ").lower()
