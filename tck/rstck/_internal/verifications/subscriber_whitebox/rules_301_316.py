"""Subscription rules from the whitebox subscriber's side: 3.1, 3.8, 3.10, 3.11, 3.14 to 3.16."""

from __future__ import annotations

from typing import Any

from ....contexts import WhiteboxStages
from ....errors import RuleViolation
from ....registry import Registry
from ...matrix import EVERY_SUBSCRIBER_TEST
from ...matrix import Cover
from ...parity import SAME_UNTESTED
from ...parity import Parity
from ...parity import wb
from .._racing import out_of_time
from .._racing import paced_deadline
from ._common import VERIFICATION
from ._common import _failure

tck_test = Registry(VERIFICATION)
TESTS = tck_test.tests


tck_test.untested(
    "untested_spec301_whitebox_must_not_be_called_outside_subscriber_context",
    "3.1",
    "who holds a subscription when request or cancel is called cannot be seen from outside; "
    "calls from two threads at once are caught (rule 2.7)",
    parity=Parity(
        wb("untested_spec301_mustNotBeCalledOutsideSubscriberContext"), "same",
        SAME_UNTESTED),
)


#: Elements sent back to back after one puppet.request: past any worker's turn or batch size.
_BURST = 300


@tck_test(
    "3.8", "required",
    parity=Parity(
        wb("required_spec308_requestMustRegisterGivenNumberElementsToBeProduced"), "stricter",
        "the JVM test lets 2 elements through and then only pulls the puppet for 3 more; this "
        "one also sends those 3, then 300 back to back after a puppet request of 300, which "
        "leaves a subscriber handing signals to a worker far past its turn or batch size, "
        "where demand it drops or caps shows."),
    covers=(
        Cover("3.8", "test"),
    ),
)
def required_spec308_whitebox_request_must_register_given_number_elements_to_be_produced(
    ctx: WhiteboxStages,
) -> None:
    """puppet.request(2) must let two elements through, and then puppet.request(3) three more;
    then puppet.request(300), and the 300 elements sent back to back must all be processed.

    The subscriber may request in smaller parts (for example one more as each element is
    processed), as long as the demand it signals adds up to what it was asked for. The burst
    leaves a subscriber that hands signals to a worker with a backlog far past its turn or
    batch size. Each element waits a timeout for its demand; a subscriber that asks one at a
    time, each a while after the last (the JVM self-test's one-at-a-time subject), gets as
    many of the burst as fit half the time limit: slow is not broken. If this fails, check
    that requested demand is forwarded in full, not dropped or capped, and that a worker that
    yields after a turn comes back for the rest.
    """
    ctx.needs_demand()
    deadline = paced_deadline(ctx.settings)
    stage = ctx.stage()
    for asked in (2, 3):
        stage.request(asked)
        for _ in range(asked):
            x = stage.send_next(rule="3.8")
            stage.probe.expect_next(x, rule="3.8")
    stage.request(_BURST)
    burst: list[Any] = []
    # Each element waits for demand (a timeout each, not one for all): a subscriber that asks
    # one at a time, each a while after the last, gets as many as fit half the time limit.
    while len(burst) < _BURST and not out_of_time(ctx.env, deadline, len(burst), f"the burst of {_BURST}"):
        burst.append(stage.send_next(rule="3.8"))
    for x in burst:
        stage.probe.expect_next(x, rule="3.8")
    ctx.at_close(stage.upstream.settle)


@tck_test(
    "3.10", "required",
    parity=Parity(
        wb("untested_spec310_requestMaySynchronouslyCallOnNextOnSubscriber"), "new",
        "3.10 lets a publisher call on_next inside request(), even inside on_subscribe; all "
        "five elements delivered there must be processed."),
    covers=(
        Cover("2.13", "on_subscribe", EVERY_SUBSCRIBER_TEST),
        Cover("3.10", "on_subscribe"),
    ),
)
def required_spec310_whitebox_must_be_prepared_for_on_next_delivered_synchronously_inside_request(
    ctx: WhiteboxStages,
) -> None:
    """Five elements delivered inside request(), even inside on_subscribe, all processed.

    Rule 3.10 lets a publisher call on_next before request() returns. If this fails, check
    that the subscriber stores its subscription (and any state on_next needs) before calling
    request, and holds no lock that on_next also takes while it calls request.
    """
    ctx.needs_demand()
    stage = ctx.stage(count=5, inline=True, end=None, signal_rule="3.10")
    # Always through the puppet: a subscriber may have requested upstream by itself and still
    # hold the elements for demand from its own downstream (a prefetching processor does).
    stage.request(5)
    stage.upstream.wait_sent(5)
    for element in list(stage.sent):
        stage.probe.expect_next(element, rule="3.10")
    ctx.at_close(stage.upstream.settle)


@tck_test(
    "3.11", "required",
    parity=Parity(
        wb("untested_spec311_requestMaySynchronouslyCallOnCompleteOrOnError"), "new",
        "3.11 lets a publisher terminate inside request(); on_complete and on_error arriving "
        "there must be processed."),
    covers=(
        Cover("2.10", "on_subscribe"),
        Cover("3.11", "on_subscribe"),
    ),
)
def required_spec311_whitebox_must_be_prepared_for_on_complete_or_on_error_delivered_synchronously_inside_request(
    ctx: WhiteboxStages,
) -> None:
    """One element and on_complete, then (on a second subscriber) on_error, inside request().

    Rule 3.11 lets a publisher terminate before request() returns; each must be processed.
    If this fails, check the handling of an end of stream that arrives while the subscriber
    is still inside its own request call.
    """
    ctx.needs_demand()
    error = _failure("3.11")
    for end, count in (("complete", 1), ("error", 0)):
        stage = ctx.stage(f"inline-{end}", count=count, inline=True, end=end, error=error,
                          signal_rule="3.11")
        stage.request(1)  # as in 3.10: demand for what the subscriber may be holding back
        stage.upstream.wait_sent(count + 1)
        if count:
            if not stage.sent:
                raise RuleViolation("3.11", "the element delivered inside request()", "none was delivered")
            stage.probe.expect_next(stage.sent[0], rule="3.11")
        if end == "complete":
            stage.probe.expect_complete(rule="3.11")
        else:
            stage.probe.expect_error(error, rule="3.11")
        stage.upstream.settle()


tck_test.untested(
    "untested_spec314_whitebox_cancel_may_cause_the_publisher_to_shutdown_if_no_other_subscription_exists",
    "3.14",
    "a permission of publishers; here the TCK plays the publisher",
    parity=Parity(
        wb("untested_spec314_cancelMayCauseThePublisherToShutdownIfNoOtherSubscriptionExists"), "same",
        SAME_UNTESTED),
)


tck_test.untested(
    "untested_spec315_whitebox_cancel_must_not_throw_exception_and_must_signal_on_error",
    "3.15",
    "an obligation of the subscription, which the TCK plays here; the publisher verification "
    "checks it",
    parity=Parity(
        wb("untested_spec315_cancelMustNotThrowExceptionAndMustSignalOnError"), "same",
        SAME_UNTESTED),
)


tck_test.untested(
    "untested_spec316_whitebox_request_must_not_throw_exception_and_must_on_error_the_subscriber",
    "3.16",
    "an obligation of the subscription, which the TCK plays here; the publisher verification "
    "checks it",
    parity=Parity(
        wb("untested_spec316_requestMustNotThrowExceptionAndMustOnErrorTheSubscriber"), "same",
        SAME_UNTESTED),
)
