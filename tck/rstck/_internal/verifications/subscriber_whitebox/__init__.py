"""Whitebox subscriber verification: section 2 with the subscriber's own account of its processing.

The factory ``f(probe)`` builds the subscriber around a ``WhiteboxProbe``: it registers a
puppet (through which the TCK makes it request or cancel) and reports each signal it has
*processed*. The TCK drives a ``ManualPublisher`` upstream, and waits for those reports, so an
asynchronous subscriber is verified on what its worker did, not on its signal methods having
returned. Everything the blackbox verification flags live (2.3, 2.7, 3.9, 2.13) is flagged here
too, and each report is matched against the signals really sent (2.11).

The tests are in rule order, one module per group of rules; ``TESTS`` runs them in that order.
"""

from __future__ import annotations

from ....registry import TckTest
from ....results import Level
from . import fuzzing
from . import rules_201_207
from . import rules_208_213
from . import rules_301_316
from . import sanity
from ._common import VERIFICATION

#: Every whitebox subscriber test, in run order.
TESTS: list[TckTest] = [
    *sanity.TESTS,
    *rules_201_207.TESTS,
    *rules_208_213.TESTS,
    *rules_301_316.TESTS,
    *fuzzing.TESTS,
]

_names = [t.name for t in TESTS]
if len(set(_names)) != len(_names):
    raise ValueError(f"duplicate whitebox test names: {sorted({n for n in _names if _names.count(n) > 1})}")


def via_processor(test: TckTest) -> bool:
    """Whether a processor's subscriber side takes ``test`` too (through a TCK downstream)."""
    return bool(test.level != Level.FUZZ) and test.name not in (
        "stochastic_spec207_a_puppet_pulled_from_any_thread_must_not_overlap_the_subscribers_own_calls",
        # (a processor is not a take(k): the declaration is a subscriber's)
        "required_spec206_must_cancel_once_it_has_all_the_elements_it_declared_it_takes")


__all__ = ["TESTS", "VERIFICATION", "via_processor"]
