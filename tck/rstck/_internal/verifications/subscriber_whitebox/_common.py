"""What the whitebox subscriber tests share: their verification's name and helpers."""

from __future__ import annotations

from ....contexts import TckFailure

VERIFICATION = "subscriber_whitebox"


def _failure(rule: str) -> TckFailure:
    return TckFailure(f"failure signalled by the TCK (rule {rule} test)")
