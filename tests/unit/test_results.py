"""The results contract: records, the document, the file, the words of outcomes and levels."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rstck.results import ResultsFileError
from rstck.results import TestResult
from rstck.results import document
from rstck.results import load


def test_results_round_trip(tmp_path: Path) -> None:
    result = TestResult("required_spec309_x", "publisher", "3.9", "required", "failed", "failed", 0.5, "m",
                        [{"seq": 0}], 1, "s")
    path = tmp_path / "r.json"
    path.write_text(json.dumps(document([result], subjects={"publisher": "s"}, settings={})))
    run = load(path)
    assert run.results == [result]
    assert run.summary["failed"] == 1
    assert json.dumps(run.to_json()) == path.read_text()  # byte for byte: the file reads back to itself


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "cannot read results file"),
        ("{not json", "not valid JSON (line 1, column 2)"),
        ('{"schema": "other/1"}', "expected a results file with schema 'rs-tck-results/1', found 'other/1'"),
        ('{"schema": "rs-tck-results/1", "results": [{"test": "t"}]}', "results[0] is malformed"),
        (
            ('{"schema": "rs-tck-results/1", "results": [{"test": "t", "verification": "publisher", "rule": null,'
            ' "level": "required", "outcome": "exploded", "duration_s": 1}]}'),
            "outcome 'exploded' is not one of",
        ),
        (
            ('{"schema": "rs-tck-results/1", "results": [{"test": "t", "verification": "publisher", "rule": null,'
            ' "level": "required", "outcome": "passed", "verdict": "great", "duration_s": 1}]}'),
            "results[0].verdict 'great' is not one of ('passed', 'failed', 'error', 'optional_unsupported',",
        ),
        ('{"schema": "rs-tck-results/1", "results": [7]}', "results[0] is int, not an object"),
        ('{"schema": "rs-tck-results/1", "results": {}}', "results is dict, not list"),
        ('{"schema": "rs-tck-results/1", "results": [], "subjects": []}', "subjects is list, not dict"),
    ],
)
def test_malformed_results_file_is_named(tmp_path: Path, content: str | None, message: str) -> None:
    path = tmp_path / "r.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(ResultsFileError, match=r"r\.json: ") as info:
        load(path)
    assert message in str(info.value)


def test_results_round_trip_the_failures() -> None:
    from rstck.results import Failure

    failure = Failure("3.9", "on_error(ValueError)", "on_complete()", "validate n", (3, 4), "timeout")
    result = TestResult("required_spec309_x", "publisher", "3.9", "required", "failed", "failed", 0.5, "m",
                        failures=[failure], started_at=10.0, finished_at=10.5, iterations={"ran": 2, "showed": 1})
    data = result.to_json()
    assert data["failures"] == [{"rule": "3.9", "expected": "on_error(ValueError)", "observed": "on_complete()",
                                 "hint": "validate n", "evidence": [3, 4], "setting": "timeout"}]
    assert TestResult.from_json(json.loads(json.dumps(data))) == result


def test_results_written_before_the_failure_fields_still_load() -> None:
    old = {"test": "required_spec309_x", "verification": "publisher", "rule": "3.9", "level": "required",
           "outcome": "failed", "duration_s": 0.5, "message": "[rule 3.9] expected a; observed b", "trace": []}
    result = TestResult.from_json(old)
    assert result.failures == []
    assert result.iterations is None
    assert (result.started_at, result.finished_at) == (0.0, 0.0)


# -- the results contract's types ----------------------------------------------------------------


def test_outcomes_verdicts_and_levels_are_one_enum_each_equal_to_their_words() -> None:
    import rstck.results
    from rstck.results import Level
    from rstck.results import Outcome
    from rstck.results import Verdict
    from rstck_plugins.reports import verdicts

    assert tuple(Verdict) == rstck.results.VERDICTS
    assert tuple(Level) == rstck.results.LEVELS
    assert set(verdicts.LABELS) == set(Verdict) == set(verdicts.SEVERITY)
    assert verdicts.FAILING is rstck.results.FAILING
    result = TestResult("required_spec309_x", "publisher", "3.9", "required", "skipped", "not_applicable", 0.5)
    assert (type(result.level), type(result.outcome), type(result.verdict)) == (Level, Outcome, Verdict)
    assert result.outcome == "skipped"
    assert f"{result.verdict}" == "not_applicable"
    # A file written without verdicts reads its outcome in their place, as before.
    data = result.to_json()
    # Builtin str in the record: xdist (execnet) refuses to carry a subclass from its workers.
    assert {type(data[key]) for key in ("level", "outcome", "verdict")} == {str}
    del data["verdict"]
    assert TestResult.from_json(data).verdict is Outcome.SKIPPED
    with pytest.raises(ValueError, match=r"^level 'mandatory' is not one of \('required', "):
        TestResult("t", "publisher", None, "mandatory", "passed", "passed", 0.0)


def test_the_results_document_is_built_whole_and_reads_as_before(tmp_path: Path) -> None:
    from importlib import resources

    import jsonschema

    failed = TestResult("required_spec309_x", "publisher", "3.9", "required", "failed", "failed", 0.5, "m")
    skipped = TestResult("optional_spec111_y", "publisher", "1.11", "optional", "skipped",
                         "optional_unsupported", 0.25)
    data = document([failed, skipped], subjects={"publisher": "s"}, settings={},
                    interrupted="stopping after 1 failures", not_run=3)
    # Keys in the order the file always had them, the partial-run marks last.
    assert list(data) == ["schema", "edition", "tck_version", "python", "subjects", "settings", "summary",
                          "results", "interrupted", "interrupted_reason", "not_run"]
    assert (data["interrupted"], data["interrupted_reason"], data["not_run"]) == (True, "stopping after 1 failures", 3)
    text = json.dumps(data, indent=2)
    assert '"summary": {\n    "total": 2,\n    "passed": 0,\n    "failed": 1,\n    "skipped": 1,\n    "error": 0,' in text
    assert '"verdicts": {\n      "passed": 0,\n      "failed": 1,\n      "error": 0,\n      "optional_unsupported": 1,' in text
    assert '"level": "optional",\n      "outcome": "skipped",\n      "verdict": "optional_unsupported",' in text
    schema = json.loads(resources.files("rstck").joinpath("schemas/rs-tck-results-1.schema.json").read_text())
    jsonschema.validate(json.loads(text), schema)
    complete = document([failed], subjects={}, settings={})
    assert "interrupted" not in complete
    assert "not_run" not in complete
    assert "not_run" not in document([failed], subjects={}, settings={}, interrupted="stopped early")
