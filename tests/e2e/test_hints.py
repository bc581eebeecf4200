"""Hints where a user meets a mistake of their own: the option or setting that fixes it, named."""

from __future__ import annotations

import json

import pytest

UNICAST = '''
from tests.conforming.processors import ActorProcessor

actor = ActorProcessor
'''


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(subjects=UNICAST)
    pytester.syspathinsert()
    return pytester


def test_a_unicast_processor_undeclared_is_told_how_to_declare_it(project: pytest.Pytester) -> None:
    """It refuses a second subscriber with on_error, as a unicast processor may; undeclared, the
    tests that need two fail on 1.4 and 2.1, and each failure says what declares it."""
    result = project.runpytest("--rs-processor=subjects:actor", "--rs-rules=1.4,2.1", "--rs-report-json=r.json")
    failed = result.parseoutcomes()["failed"]
    assert failed >= 2
    out = result.stdout.str()
    assert out.count("declares it with --rs-max-subscribers=1 (or max_subscribers=1 on its") == failed
    results = json.loads((project.path / "r.json").read_text())["results"]
    hints = [r["failures"][0]["hint"] for r in results if r["outcome"] == "failed"]
    assert all("this processor serves one subscriber" in h and "--rs-max-subscribers=1" in h for h in hints)
    declared = project.runpytest("--rs-processor=subjects:actor", "--rs-rules=1.4,2.1", "--rs-max-subscribers=1")
    assert declared.ret == pytest.ExitCode.OK
