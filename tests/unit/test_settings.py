"""The knobs: values parsed from every source, errors that name source and form."""

from __future__ import annotations

import pytest
from rstck import MAX_DEMAND
from rstck.settings import KNOBS_BY_NAME
from rstck.settings import parse_value


@pytest.mark.parametrize(
    ("knob", "raw", "value"),
    [("max_elements", "2**63-1", MAX_DEMAND), ("max_elements", "1_000", 1000), ("timeout", "250", 0.25),
     ("skip_stochastic", "yes", True), ("skip_stochastic", "0", False)],
)
def test_parse_value(knob: str, raw: str, value: object) -> None:
    assert parse_value(KNOBS_BY_NAME[knob], raw, "here") == value


@pytest.mark.parametrize(("knob", "raw"), [("timeout", "0"), ("timeout", "fast"), ("max_elements", "many"),
                                           ("skip_stochastic", "maybe")])
def test_parse_value_names_source_and_form(knob: str, raw: str) -> None:
    with pytest.raises(ValueError, match=f"^ini setting x: .* must be .*got '{raw}'"):
        parse_value(KNOBS_BY_NAME[knob], raw, "ini setting x")
