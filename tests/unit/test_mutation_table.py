"""The mutation table stays current and every verified rule has a broken case that it catches.

The catalogue tests run the cases; these checks only read their lists, so they stay fast.
"""

from __future__ import annotations

from pathlib import Path

from rstck.verifications import VERIFICATIONS

from tests import mutation_table

ROOT = Path(__file__).resolve().parents[2]


def test_mutation_table_is_current() -> None:
    assert (ROOT / "docs" / "mutation-table.md").read_text(encoding="utf-8") == mutation_table.markdown(), (
        "docs/mutation-table.md is stale: run `python -m tests.mutation_table --update docs/mutation-table.md`"
    )


def test_every_verified_rule_has_a_broken_case() -> None:
    # Across all verifications: the processor inherits publisher and whitebox tests whose
    # rules the publisher and subscriber catalogues already break.
    caught = {row.rule for row in mutation_table.rows() if row.catches}
    verified = mutation_table.verified_rules()
    missing = {rule: names for rule, names in verified.items() if rule not in caught}
    assert not missing, f"rules with executable tests but no broken case: {missing}"


def test_every_case_runs_a_registered_test() -> None:
    for row in mutation_table.rows():
        assert row.test in {t.name for t in VERIFICATIONS[row.verification].tests}, row
