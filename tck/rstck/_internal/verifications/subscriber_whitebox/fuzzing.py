"""The whitebox subscriber's fuzz test: generated legal signal orders and puppet calls."""

from __future__ import annotations

from ....contexts import WhiteboxStages
from ....registry import Registry
from ...parity import Parity
from ._common import VERIFICATION

tck_test = Registry(VERIFICATION)
TESTS = tck_test.tests


@tck_test(
    None, "fuzz",
    parity=Parity(
        (), "new",
        "generated legal signal orders (bursts, other threads, inside request(), early "
        "terminals), shrunk to the smallest that breaks a rule; the JVM TCK sends fixed orders "
        "only."),
)
def fuzz_signal_orders(ctx: WhiteboxStages) -> None:
    """Generated legal signal orders and puppet calls, shrunk to the smallest failing scenario.

    As the blackbox fuzz verification, plus puppet.request(k)/puppet.cancel() at any point and
    the probe's check that each signal is processed exactly once (2.11).
    """
    from ....fuzz import deselected

    deselected(ctx.settings)
    from ...fuzz.verify import fuzz_subscriber

    fuzz_subscriber(ctx, whitebox=True)
