"""A failure's evidence, where a user reads it: the terminal, the results file and JUnit.

A long trace keeps its first and last records; the record a verdict rests on (a request(0)
thousands of records in, the cancel() a flood followed) must be there too, cited and marked,
with the records around it.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from typing import Any

import pytest

SUBJECTS = '''
from tests.broken.publishers import DefersACancelFromAnotherThread
from tests.broken.publishers import LosesTheErrorWhenATurnEndsOwingIt
from tests.broken.publishers import factory

loses_the_error = factory(LosesTheErrorWhenATurnEndsOwingIt)
defers_cancel = factory(DefersACancelFromAnotherThread)
'''

FAILED = "--rs-failed-publisher=rstck.reference:failed_publisher"


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(subjects=SUBJECTS)
    pytester.syspathinsert()
    return pytester


def _failed(project: pytest.Pytester, publisher: str, test: str) -> tuple[pytest.RunResult, dict[str, Any], str]:
    result = project.runpytest(f"--rs-publisher=subjects:{publisher}", FAILED, "-k", test,
                               "--rs-report-json=r.json", "--junitxml=j.xml")
    result.assert_outcomes(failed=1)
    (data,) = [r for r in json.loads((project.path / "r.json").read_text())["results"] if r["outcome"] == "failed"]
    (failure,) = ET.parse(project.path / "j.xml").getroot().iter("failure")
    return result, data, failure.text or ""


def _cited(data: dict[str, Any], signal: str, detail: str) -> dict[str, Any]:
    """The record of ``signal(detail)`` the headline cites, which the results file must keep."""
    kept = {r["seq"]: r for r in data["trace"]}
    cited = [kept[seq] for seq in data["failures"][0]["evidence"] if seq in kept]
    assert set(data["failures"][0]["evidence"]) <= set(kept), "a cited record is not in the results file"
    (record,) = [r for r in cited if r["signal"] == signal and r["detail"] == detail]
    # Its context is kept with it: the records just before it.
    assert {record["seq"] - 1, record["seq"] - 2} <= set(kept)
    return record


def test_a_request_zero_thousands_of_records_in_is_cited_and_shown(project: pytest.Pytester) -> None:
    result, data, junit = _failed(project, "loses_the_error", "request_zero_from_inside_on_next")
    assert data["trace_total"] > 1000
    record = _cited(data, "request", "0")
    assert record["actor"] == "zero-at-1000"
    marked = f"> #{record['seq']:<5}"
    line = next(x for x in result.outlines if x.lstrip().startswith(marked))
    assert "zero-at-1000" in line
    assert "request(0)" in line
    assert marked in junit


def test_the_cancel_a_flood_followed_is_cited_and_shown(project: pytest.Pytester) -> None:
    result, data, junit = _failed(project, "defers_cancel",
                                  "required_spec108_cancelled_subscription_must_eventually_stop_being_signalled")
    assert data["trace_total"] > 1000
    record = _cited(data, "cancel", "")
    assert record["seq"] > 100  # past the first records a long trace keeps anyway
    marked = f"> #{record['seq']:<5}"
    assert any(x.lstrip().startswith(marked) and "cancel()" in x for x in result.outlines)
    assert marked in junit
