"""The whitebox subscriber's sanity check: the happy path, each signal processed and reported."""

from __future__ import annotations

from ....contexts import WhiteboxStages
from ....registry import Registry
from ...parity import Parity
from ...parity import wb
from ._common import VERIFICATION

tck_test = Registry(VERIFICATION)
TESTS = tck_test.tests


@tck_test(
    None, "required",
    parity=Parity(wb("required_exerciseWhiteboxHappyPath"), "same"),
)
def required_sanity_exercise_whitebox_happy_path(ctx: WhiteboxStages) -> None:
    """Request, receive and process two elements through the puppet and probe, then cancel.

    If this fails, check the test wrapper first: the puppet must make the subscriber request
    and cancel, and every processed element must be reported with ``with probe.next(x):``.
    """
    ctx.needs_demand()
    stage = ctx.stage()
    stage.request(1)
    stage.expect_demand()
    x = stage.send_next()
    stage.probe.expect_next(x)
    stage.request(1)
    stage.expect_demand()
    y = stage.send_next()
    stage.probe.expect_next(y)
    stage.cancel()
    stage.expect_upstream_cancel(needed=False)
    ctx.at_close(stage.upstream.settle)
