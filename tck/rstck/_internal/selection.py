"""Which tests of a verification run for a subject: by rule, and with the reasons of skipped ones.

Its own module so that every front end (pytest, campaigns, the worker processes of a run of many
subjects) selects the same tests from the same words: rule ids, ``"sanity"`` and ``"fuzz"``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

from ..errors import NotVerified
from ..registry import TckTest
from ..results import Level
from ..results import Verdict


def select(
    tests: Iterable[TckTest], *, rules: Iterable[str] = (), skip_rules: Iterable[str] = ()
) -> list[TckTest]:
    """Tests whose rule is in ``rules`` (all if empty) and not in ``skip_rules``.

    ``"sanity"`` names the tests that check the factory itself rather than a rule, ``"fuzz"``
    the fuzz tests (they check every rule they can observe).
    """
    wanted, unwanted = set(rules), set(skip_rules)
    return [t for t in tests if (not wanted or _key(t) in wanted) and _key(t) not in unwanted]


def _key(test: TckTest) -> str:
    """What selects a test: its rule id, "sanity" or "fuzz"."""
    return "fuzz" if test.level == Level.FUZZ else test.rule_id or "sanity"


def _not_verified(test: TckTest, reason: str) -> TckTest:
    """``test`` reporting, in place of its body, that its rule is not verified for this subject."""

    def body(_context: Any) -> None:
        raise NotVerified(f"not verified for this subject: {reason}", kind=Verdict.DESELECTED)

    return dataclasses.replace(test, func=body, busy=False)

