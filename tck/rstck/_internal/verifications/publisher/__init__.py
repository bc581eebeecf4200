"""Publisher verification: every rule of sections 1 and 3 that a publisher can be seen to break.

Each test subscribes ``ProbeSubscriber``s to fresh publishers from the user's factory. The
probes flag order, demand, termination and serial-delivery violations (1.1, 1.3, 1.7, 1.9) in
*every* test as they happen; the bodies add what is specific to their rule. A test's docstring
is the diagnosis shown to users: what it does, and what to check when it fails.

The tests are in rule order, one module per group of rules, and every test of a rule is in its
group's module, next to the others: a rule a publisher keeps when called one way can break
when called another (from inside a signal rather than from the test thread, with several
elements at once rather than one, after a terminal signal, for a later subscriber), so a rule
often has a test per such context. ``TESTS`` runs them in that order: the sanity checks of the
factory first, the fuzz test last.
"""

from __future__ import annotations

from ....registry import TckTest
from . import fuzzing
from . import rules_101_105
from . import rules_106_111
from . import rules_213
from . import rules_301_308
from . import rules_309_317
from . import sanity
from ._common import VERIFICATION

#: Every publisher test, in run order.
TESTS: list[TckTest] = [
    *sanity.TESTS,
    *rules_101_105.TESTS,
    *rules_106_111.TESTS,
    *rules_213.TESTS,
    *rules_301_308.TESTS,
    *rules_309_317.TESTS,
    *fuzzing.TESTS,
]

_names = [t.name for t in TESTS]
if len(set(_names)) != len(_names):
    raise ValueError(f"duplicate publisher test names: {sorted({n for n in _names if _names.count(n) > 1})}")

__all__ = ["TESTS", "VERIFICATION"]
