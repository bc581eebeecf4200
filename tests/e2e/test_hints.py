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


def test_a_pasted_test_id_without_its_subject_names_the_option(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("publisher::required_spec309_request_zero_must_signal_value_error[3.9]")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([("*publisher::required_spec309_request_zero_must_signal_value_error[[]3.9[]]: a test "
                                 "of the TCK's publisher verification, but no --rs-publisher subject was given; "
                                 "add --rs-publisher=MODULE:ATTR*")])
    assert "file or directory not found" not in result.stderr.str()


def test_the_entry_points_subject_options_are_the_verifications_own() -> None:
    from rstck.verifications import VERIFICATIONS
    from rstck_plugins.host.pytest_entry import SUBJECT_OPTIONS

    assert {name: v.option for name, v in VERIFICATIONS.items()} == SUBJECT_OPTIONS


def test_a_misspelled_option_is_refused_with_the_one_meant(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--rs-publsher=rstck.reference:range_publisher")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*unknown option --rs-publsher; did you mean --rs-publisher?*"])


def test_an_import_error_inside_the_subjects_module_names_its_file_and_line(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(broken_subject="import os\n\nimport no_such_dependency_anywhere\n\ndef pub(n):\n    pass\n")
    pytester.syspathinsert()
    result = pytester.runpytest("--rs-publisher=broken_subject:pub")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "importing 'broken_subject' raised ModuleNotFoundError: No module named 'no_such_dependency_anywhere'" in err
    result.stderr.fnmatch_lines(['*File "*broken_subject.py", line 3, in <module>*'])


def test_a_processor_subject_declares_its_loop_as_the_others_do() -> None:
    from rstck import ProcessorSubject
    from rstck import PublisherSubject
    from rstck.settings import Settings

    assert ProcessorSubject(object, loop="asyncio").apply(Settings()).loop == "asyncio"
    assert PublisherSubject(object, loop="asyncio").apply(Settings()).loop == "asyncio"
