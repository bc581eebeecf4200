"""Soundness: conforming implementations the TCK was not written around must pass every test.

Each subject of ``tests/conforming`` runs its whole verification through the engine; a failed
required or stochastic test is a false accusation, a TCK defect. The shapes were chosen where
verdicts used to be unsound: a batch that completes after cancel (1.8), a ``first()`` that
cancels its own subscription (2.5), a processor that prefetches upstream and emits only on
downstream demand (3.10, 3.11).
"""

from __future__ import annotations

import pytest
from rstck.engine import run_verification
from rstck.settings import Settings

from ..conforming import subjects

SUBJECTS = subjects()


@pytest.mark.parametrize("label", list(SUBJECTS))
def test_conforming_subject_passes_every_test(label: str) -> None:
    verification, subject = SUBJECTS[label]
    results = run_verification(verification, subject, Settings(no_signal_window=0.05))
    accused = [f"{r.test}: {r.message.splitlines()[0]}" for r in results
               if r.outcome in ("failed", "error") and r.level in ("required", "stochastic")]
    assert not accused, "\n".join(accused)
    ran = [r for r in results if r.outcome == "passed"]
    executable = [r for r in results if r.verdict != "untested"]
    assert len(ran) >= len(executable) // 2, f"only {len(ran)} of {len(executable)} tests ran"


@pytest.mark.parametrize(("label", "rule", "needs"), [
    ("publisher:async_iterable", "1.8", "1023 element(s) followed cancel()"),
    ("processor:actor", "1.8", "followed cancel(), then the signals stopped"),
])
def test_elements_after_cancel_are_legal_when_they_stop(label: str, rule: str, needs: str) -> None:
    """The shapes that deliver a batch after cancel() really do so, and pass 1.8."""
    verification, subject = SUBJECTS[label]
    (result,) = run_verification(verification, subject, rules=[rule])
    assert result.outcome == "passed", result.message
    notes = [record["detail"] for record in result.trace if record["signal"] == "note"]
    assert any(needs in note for note in notes), notes


def test_the_rule_context_matrix_names_only_tests_that_exist_and_every_rule() -> None:
    from rstck.matrix import CELLS
    from rstck.matrix import CONTEXTS
    from rstck.rules import RULES
    from rstck.verifications import VERIFICATIONS

    names = {f"{v}:{t.name}" for v, verification in VERIFICATIONS.items() for t in verification.tests
             if t.level != "untested"}
    missing = [t for cell in CELLS for t in cell.tests if t not in names]
    assert missing == []
    assert all(cell.context in CONTEXTS and cell.rule in RULES for cell in CELLS)
    assert all(cell.tests or cell.fuzz or cell.gap or cell.note for cell in CELLS)
    assert sorted(set(RULES) - {cell.rule for cell in CELLS}) == []


def test_verdicts_cite_the_records_that_show_them_and_the_setting_they_rest_on() -> None:
    """A 1.8 failure names its bound; a 2.5 failure cites the second on_subscribe, then the cancel."""
    from rstck.subjects import PublisherSubject
    from rstck.subjects import SubscriberSubject

    from ..broken import publishers as bp
    from ..broken import subscribers as bs

    (flood,) = run_verification("publisher", PublisherSubject(bp.factory(bp.IgnoresCancel)), rules=["1.8"])
    bp.halt_all()
    assert flood.outcome == "failed"
    failure = flood.failures[0]
    assert failure.rule == "1.8"
    assert failure.setting in ("after_cancel_limit", "timeout")
    assert len(failure.evidence) == 2  # the cancel, and the element that showed the flood
    cancels = [r["seq"] for r in flood.trace if r["signal"] == "cancel"]
    assert failure.evidence[0] == cancels[0]

    subject = SubscriberSubject(lambda: bs.SwapsToSecondSubscription(), label="swaps")
    results = run_verification("subscriber_blackbox", subject, rules=["2.5"])
    (accused,) = [r for r in results if r.outcome == "failed" and r.test.startswith("required_")]
    second_on_subscribe, first_cancel = accused.failures[0].evidence
    assert second_on_subscribe < first_cancel
    by_seq = {r["seq"]: r for r in accused.trace}
    assert by_seq[second_on_subscribe]["signal"] == "on_subscribe"
    assert by_seq[first_cancel]["signal"] == "cancel"
    assert by_seq[first_cancel]["actor"] == "upstream"


def test_a_synchronous_publisher_passing_a_subscribers_failure_on_is_not_accused() -> None:
    """Rule 2.13 asks the caller of a raising signal method to report it "in a fashion adequate
    for the runtime": a synchronous publisher letting it out of request()/subscribe() does."""
    verification, subject = SUBJECTS["publisher:jvm_range"]
    results = run_verification(verification, subject, Settings(no_signal_window=0.05), rules=["2.13"])
    assert [r.outcome for r in results] == ["passed", "passed"], [r.message for r in results]
    notes = [record["detail"] for r in results for record in r.trace if record["signal"] == "note"]
    assert any("passed on the subscriber's failure" in note for note in notes), notes
