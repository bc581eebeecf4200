"""The results file against its shipped schema: what the kit writes, and what every reader accepts.

``rs-tck ingest`` checks a file against ``rstck/schemas`` before it reads it, so a file the kit
writes that the schema does not allow is a file no campaign can use. The root ``conftest.py``
checks every file the suite's in-process runs write; the tests here pin the default run (the
quick start's) and the files earlier versions of the schema allowed, which every reader must
keep reading.
"""

from __future__ import annotations

import copy
import json
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from rstck.results import load
from rstck_plugins.campaign import ingest
from rstck_plugins.campaign import schema
from rstck_plugins.cli import replay_commands
from rstck_plugins.cli import report_main

REF = "--rs-publisher=rstck.reference:range_publisher"
FAILED = "--rs-failed-publisher=rstck.reference:failed_publisher"


def _shipped() -> dict[str, Any]:
    return dict(json.loads(resources.files("rstck").joinpath("schemas", schema.SCHEMA_FILE).read_text()))


def test_the_quick_starts_results_file_is_one_ingest_accepts(pytester: pytest.Pytester) -> None:
    """The default mode, fuzz tests included: the file every new user writes first."""
    result = pytester.runpytest(REF, FAILED, "--rs-report-json=r.json")
    assert result.ret == pytest.ExitCode.OK
    path = pytester.path / "r.json"
    data = json.loads(path.read_text())
    assert any(r["level"] == "fuzz" and r["test"] == "fuzz_demand_cancel_orders" for r in data["results"])
    jsonschema.validate(data, _shipped())
    assert schema.errors(data) == []
    _unit, run = ingest.read_file(path)
    assert len(run.results) == len(data["results"])


def _record(seq: int) -> dict[str, Any]:
    return {"seq": seq, "t_ms": 0.5 * seq, "thread": "rs-tck-body", "actor": "probe", "signal": "request",
            "detail": "1", "demand": 1}


#: A file of the schema's first version: no edition, no verdicts, no failures, no times.
FIRST: dict[str, Any] = {
    "schema": "rs-tck-results/1", "tck_version": "0.0.1", "python": "3.11.4",
    "subjects": {"publisher": "mylib:pub"}, "settings": {"timeout_ms": 1000, "loop": None},
    "summary": {"total": 2, "passed": 1, "failed": 1, "skipped": 0, "error": 0},
    "results": [
        {"test": "required_spec309_request_zero_must_signal_value_error", "verification": "publisher",
         "rule": "3.9", "level": "required", "outcome": "failed", "duration_s": 1.0, "message": "m",
         "trace": [_record(0), _record(5)]},
        {"test": "required_sanity_factory_returns_a_publisher", "verification": "publisher", "rule": None,
         "level": "required", "outcome": "passed", "duration_s": 0.1, "message": "", "trace": []},
    ],
}


def _earlier_files() -> dict[str, dict[str, Any]]:
    """One file per shape an earlier schema allowed, each with what that version added."""
    baseline = copy.deepcopy(FIRST)
    baseline["results"][0]["baseline"] = "known"
    baseline["results"][0]["subject"] = "mylib:pub"
    failures = copy.deepcopy(FIRST)
    failures["results"][0].update(
        verdict="failed", trace_total=9, started_at=1.0, finished_at=2.0, iterations=None,
        failures=[{"rule": "3.9", "expected": "e", "observed": "o", "hint": "", "evidence": [5, 7],
                   "setting": "timeout"}])
    failures["results"].append(
        {"test": "fuzz_spec309_orders", "verification": "publisher", "rule": "3.9", "level": "fuzz",
         "outcome": "passed", "verdict": "passed", "duration_s": 0.2, "message": "", "trace": [],
         "iterations": {"ran": 3, "showed": 0}})
    failures["summary"].update(total=3, passed=2, verdicts={"passed": 2, "failed": 1}, duration_s=1.3)
    interrupted = copy.deepcopy(failures)
    interrupted.update(interrupted=True, interrupted_reason="interrupted (KeyboardInterrupt)", not_run=4)
    edition = copy.deepcopy(failures)
    edition["edition"] = "rs"
    edition["results"][0]["jvm_rule"] = "3.9"
    edition["results"][0]["failures"][0]["jvm_rule"] = None
    fuzz = copy.deepcopy(edition)
    fuzz["edition"] = "jvm-1.0.1"
    fuzz["results"].append(
        {"test": "fuzz_demand_cancel_orders", "verification": "publisher", "rule": None, "level": "fuzz",
         "outcome": "failed", "verdict": "failed", "duration_s": 0.2, "message": "m", "trace": [],
         "failures": [], "iterations": None,
         "fuzz": {"replay_option": "--rs-fuzz-replay=rsfz1-x", "replay_command": ""}})
    return {"first": FIRST, "baseline": baseline, "failures": failures, "interrupted": interrupted,
            "edition": edition, "fuzz names": fuzz}


@pytest.mark.parametrize("shape", list(_earlier_files()))
def test_every_reader_accepts_every_file_an_earlier_schema_allowed(shape: str, tmp_path: Path) -> None:
    """ingest's check, the loader, ``rs-tck report`` and ``rs-tck replay`` read each shape."""
    data = _earlier_files()[shape]
    jsonschema.validate(data, _shipped())
    assert schema.errors(data) == []
    path = tmp_path / "r.json"
    path.write_text(json.dumps(data))
    assert len(load(path).results) == len(data["results"])
    _unit, run = ingest.read_file(path)
    assert len(run.results) == len(data["results"])
    assert report_main(path, tmp_path / "r.html") == 0
    assert "mylib:pub" in (tmp_path / "r.html").read_text()
    if shape == "fuzz names":
        class Args:
            source = str(path)

        assert replay_commands(Args())[0][-1] == "--rs-fuzz-replay=rsfz1-x"
