"""The publisher's fuzz test: generated orders of request and cancel calls."""

from __future__ import annotations

from ....contexts import PublisherContext
from ....registry import Registry
from ...parity import Parity
from ._common import VERIFICATION

tck_test = Registry(VERIFICATION)
TESTS = tck_test.tests


@tck_test(
    None, "fuzz",
    parity=Parity(
        (), "new",
        "generated request/cancel orders from several threads and re-entrantly, shrunk to the "
        "smallest that breaks a rule; the JVM TCK runs fixed scenarios only."),
    left_out_of={"rs": "its scenarios include request(n) with n <= 0, which the edition does not define"},
)
def fuzz_demand_cancel_orders(ctx: PublisherContext) -> None:
    """Generated request/cancel orders, shrunk to the smallest scenario that breaks a rule.

    Scenarios request small, boundary, non-positive and huge amounts (sums crossing 2**63-1),
    cancel, from the test thread, another thread or re-entrantly from on_subscribe/on_next,
    add subscribers, pause, keep calling after terminal signals, and make a subscriber fail
    (its on_next or on_error raises). Every probe check holds, plus: nothing after cancel
    beyond what was in flight (3.6/1.8), nothing after a raising on_next (2.13; request() and
    subscribe() still return normally, 3.16/1.9), demand served (3.8/3.17), on_error after a
    non-positive request (3.9), and on_complete once every element arrived (1.5: "If a
    Publisher terminates successfully (finite stream) it MUST signal an onComplete"), at the
    latest after a further request(1) the kit makes when the demand is spent, as the JVM
    TCK's requestEndOfStream does. Element values and order are not judged (the factory
    promises n elements, not which), unless the subject declares deterministic_sequence:
    then no element may be lost, duplicated or reordered. If this fails, replay the scenario
    it prints (--rs-fuzz-replay) and follow its numbered steps.
    """
    from ....fuzz import deselected

    deselected(ctx.settings)
    from ...fuzz.verify import fuzz_publisher

    fuzz_publisher(ctx)
