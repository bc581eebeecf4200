"""The core's one run API, ``rstck.Run``: what every front end (pytest, the campaign's work
units, ``run_verification``) gets from it, so that they cannot differ on what runs or how."""

from __future__ import annotations

import pytest
from rstck import Run
from rstck import run_verification
from rstck.errors import SetupError
from rstck.reference import IdentityProcessor
from rstck.reference import range_publisher
from rstck.settings import Settings
from rstck.subjects import ProcessorSubject
from rstck.subjects import PublisherSubject

FAST = Settings(timeout=0.5, no_signal_window=0.05, gc_window=1.0, stochastic_iterations=10, no_fuzz=True)


def test_a_run_applies_what_the_subject_declares_unless_the_user_set_it() -> None:
    subject = PublisherSubject(range_publisher, max_elements=5)
    assert Run("publisher", subject, FAST).settings.max_elements == 5
    chosen = FAST.replace(max_elements=7, explicit=frozenset({"max_elements"}))
    run = Run("publisher", subject, chosen)
    assert run.settings.max_elements == 7
    assert run.requested is chosen


def test_a_run_selects_by_rule_and_in_the_editions_own_ids() -> None:
    subject = PublisherSubject(range_publisher)
    assert {t.rule_id for t in Run("publisher", subject, FAST, rules=["3.9", "1.1"]).tests} == {"3.9", "1.1"}
    assert "3.9" not in {t.rule_id for t in Run("publisher", subject, FAST, skip_rules=["3.9"]).tests}
    rs = Run("publisher", subject, FAST.replace(edition="rs"), rules=["1.11"])
    assert [t.rule_id for t in rs.tests] == ["rs:1.11"]
    with pytest.raises(SetupError, match="publisher subjects only"):
        Run("processor", subject, FAST.replace(edition="rs"))


def test_a_run_yields_its_results_and_their_document() -> None:
    subject = PublisherSubject(range_publisher, label="range")
    run = Run("publisher", subject, FAST, rules=["3.9"])
    seen = []
    results = list(run.results(on_result=seen.append))
    assert results == seen
    assert [r.test for r in results] == [t.name for t in run.tests]
    assert {r.verdict for r in results} == {"passed"}
    doc = run.document(results)
    assert doc["subjects"] == {"publisher": "range"}
    assert doc["settings"] == FAST.to_json()
    assert doc["summary"]["total"] == len(results)
    assert [r.verdict for r in run_verification("publisher", subject, FAST, rules=["3.9"])] == ["passed"] * len(results)


def test_a_bare_factory_is_its_kinds_record_and_anything_else_is_refused_by_name() -> None:
    # A plain ``factory(n)`` is what the binding calls a publisher: the run wraps it, so that no
    # test fails on a rule for want of the record's ``label``.
    results = run_verification("publisher", range_publisher, FAST, rules=["3.9"])
    assert results
    assert all(r.outcome.value in ("passed", "skipped") for r in results), [r.message for r in results]
    assert Run("publisher", range_publisher, FAST).label == "range_publisher"
    # A processor class is its own factory (``factory() -> Processor``), as the loaders take it.
    assert isinstance(Run("processor", IdentityProcessor, FAST).subject, ProcessorSubject)
    with pytest.raises(SetupError, match="got type"):
        Run("publisher", PublisherSubject, FAST)
    with pytest.raises(SetupError, match=r"expected a PublisherSubject or its factory .* got int"):
        Run("publisher", 42, FAST)
    with pytest.raises(SetupError, match="expected a ProcessorSubject"):
        Run("processor", PublisherSubject(range_publisher), FAST)
