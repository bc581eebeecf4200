"""Whitebox subscriber rules 2.8 to 2.13: signals after cancel, terminal signals with or without
a request, happens-before, a repeated subscription, returning normally."""

from __future__ import annotations

from typing import Any

from ....contexts import WhiteboxStages
from ....errors import RuleViolation
from ....registry import Registry
from ....whitebox import WhiteboxProbe
from ...clock import starved_wait
from ...matrix import Cover
from ...parity import Parity
from ...parity import wb
from ...worker import Worker
from ._common import VERIFICATION
from ._common import _failure

tck_test = Registry(VERIFICATION)
TESTS = tck_test.tests


@tck_test(
    "2.8", "required",
    parity=Parity(wb("required_spec208_mustBePreparedToReceiveOnNextSignalsAfterHavingCalledSubscriptionCancel"), "same"),
    covers=(
        Cover("2.8", "test"),
    ),
)
def required_spec208_must_be_prepared_to_receive_on_next_signals_after_having_called_subscription_cancel(
    ctx: WhiteboxStages,
) -> None:
    """An element still in flight after cancel() must be taken without error.

    The TCK waits for demand, makes the subscriber cancel, then sends one element within
    that demand (as rule 3.12 allows), and pulls the puppet twice more. If this fails,
    check that on_next after cancel() is ignored (or processed), never raises.
    """
    ctx.needs_demand()
    stage = ctx.stage()
    stage.request(1)
    stage.expect_demand(rule="2.8")
    stage.cancel()
    stage.expect_upstream_cancel(rule="2.8")
    stage.send_next(rule="2.8")
    stage.request(1)
    stage.request(1)
    ctx.at_close(stage.upstream.settle)


def _terminal_prepared(ctx: WhiteboxStages, signal: str, rule: str, preceding_request: bool) -> None:
    if preceding_request:
        ctx.needs_demand()
    stage = ctx.stage()
    if preceding_request:
        stage.request(1)
        stage.expect_demand(rule=rule)
    if signal == "on_complete":
        stage.send_complete(rule=rule)
        stage.probe.expect_complete(rule=rule)
    else:
        error = _failure(rule)
        stage.send_error(error, rule=rule)
        stage.probe.expect_error(error, rule=rule)
    ctx.at_close(stage.upstream.settle)


@tck_test(
    "2.9", "required",
    parity=Parity(wb("required_spec209_mustBePreparedToReceiveAnOnCompleteSignalWithPrecedingRequestCall"), "same"),
    covers=(
        Cover("2.9", "terminal"),
    ),
)
def required_spec209_must_be_prepared_to_receive_an_on_complete_signal_with_preceding_request_call(
    ctx: WhiteboxStages,
) -> None:
    """on_complete while demand is outstanding must be processed (reported with probe.complete).

    If this fails, check the handling of completion while requested elements are still due.
    """
    _terminal_prepared(ctx, "on_complete", "2.9", True)


@tck_test(
    "2.9", "required",
    parity=Parity(wb("required_spec209_mustBePreparedToReceiveAnOnCompleteSignalWithoutPrecedingRequestCall"), "same"),
)
def required_spec209_must_be_prepared_to_receive_an_on_complete_signal_without_preceding_request_call(
    ctx: WhiteboxStages,
) -> None:
    """on_complete before any request must be processed.

    If this fails, check for handling that assumes an element or a request came first.
    """
    _terminal_prepared(ctx, "on_complete", "2.9", False)


@tck_test(
    "2.10", "required",
    parity=Parity(wb("required_spec210_mustBePreparedToReceiveAnOnErrorSignalWithPrecedingRequestCall"), "same"),
    covers=(
        Cover("2.10", "terminal"),
    ),
)
def required_spec210_must_be_prepared_to_receive_an_on_error_signal_with_preceding_request_call(
    ctx: WhiteboxStages,
) -> None:
    """on_error while demand is outstanding must be processed, carrying the error signalled."""
    _terminal_prepared(ctx, "on_error", "2.10", True)


@tck_test(
    "2.10", "required",
    parity=Parity(wb("required_spec210_mustBePreparedToReceiveAnOnErrorSignalWithoutPrecedingRequestCall"), "same"),
)
def required_spec210_must_be_prepared_to_receive_an_on_error_signal_without_preceding_request_call(
    ctx: WhiteboxStages,
) -> None:
    """on_error before any request must be processed, carrying the error signalled."""
    _terminal_prepared(ctx, "on_error", "2.10", False)


def _on_other_thread(ctx: WhiteboxStages, fn: Any) -> Any:
    """Run ``fn`` on a fresh TCK thread and wait for it: signals still serial, threads differ."""
    sender = Worker(fn, "rs-tck:sender")
    if not starved_wait(sender.wait, 2 * ctx.settings.timeout + 1.0):
        raise RuleViolation(None, "a signal to return promptly", "on_next did not return (sender thread)",
                            setting="timeout")
    return sender.result()


@tck_test(
    "2.11", "required",
    parity=Parity(
        wb("untested_spec211_mustMakeSureThatAllCallsOnItsMethodsHappenBeforeTheProcessingOfTheRespectiveEvents"), "new",
        "20 elements from two alternating threads, then on_complete, must each be processed "
        "once and the completion after them: a field the next signal overwrites loses or "
        "repeats one."),
    covers=(
        Cover("2.11", "thread", "alternating sender threads"),
    ),
)
def required_spec211_must_make_sure_that_all_calls_on_its_methods_happen_before_the_processing_of_the_respective_events(
    ctx: WhiteboxStages,
) -> None:
    """20 elements sent back to back from two alternating threads, then on_complete: each processed once.

    The processing must see every signal as it was made: no element lost, none seen twice,
    the completion after being signalled. If this fails, check how signals reach the
    processing logic: a queue per subscriber is safe, a field that the next signal
    overwrites is not.
    """
    ctx.needs_demand()
    stage = ctx.stage()
    stage.request(20)
    sent: list[Any] = []
    for i in range(20):
        if i % 2:
            sent.append(_on_other_thread(ctx, lambda: stage.upstream.send_next(rule="2.11")))
        else:
            sent.append(stage.upstream.send_next(rule="2.11"))
        ctx.env.check()
    stage.send_complete(rule="2.11")
    for element in sent:
        stage.probe.expect_next(element, rule="2.11")
    stage.probe.expect_complete(rule="2.11")
    ctx.at_close(stage.upstream.settle)


@tck_test(
    "2.12", "required",
    parity=Parity(
        wb("untested_spec212_mustNotCallOnSubscribeMoreThanOnceBasedOnObjectEquality_specViolation"), "new",
        "when a caller breaks 2.12 by subscribing the same subscriber again, the subscriber "
        "must still cancel the repeat (2.5) and keep its first working."),
    covers=(
        Cover("2.12", "later"),
    ),
)
def required_spec212_subscribed_twice_must_keep_the_first_subscription_and_cancel_the_second(
    ctx: WhiteboxStages,
) -> None:
    """The same subscriber subscribed to the same publisher again must reject the repeat.

    Rule 2.12 makes subscribing once the caller's duty and lets a subscriber assume it; when
    it is broken, the subscriber must still cancel the new subscription (2.5), never request
    on it, and not trade its first for it: if it goes on with its first, puppet.request must
    still reach that one and its element be processed. Cancelling its first as well (giving
    up) is its right, and ends the test. If this fails, check that on_subscribe does not
    reset the subscriber (adopting the new subscription).
    """
    ctx.needs_demand()
    stage = ctx.stage()
    if not ctx.second_subscription(stage.subscriber, stage.upstream, stage.upstream, "2.12"):
        ctx.at_close(stage.upstream.settle)
        return
    stage.request(1)
    stage.expect_demand(rule="2.12")
    x = stage.send_next(rule="2.12")
    stage.probe.expect_next(x, rule="2.12")
    ctx.at_close(stage.upstream.settle)


@tck_test(
    "2.13", "required",
    parity=Parity(
        wb("untested_spec213_failingOnSignalInvocation"), "new",
        "every signal method called with valid arguments must return normally (2.13)."),
    covers=(
        Cover("2.13", "test"),
    ),
)
def required_spec213_signal_methods_must_return_normally(ctx: WhiteboxStages) -> None:
    """on_subscribe, on_next, on_complete and on_error with valid arguments return normally.

    If this fails, check what the subscriber raises: failures in its processing must be
    handled inside it (and end with cancel()), never raised to the publisher.
    """
    stage = ctx.stage()
    if not ctx.settings.never_requests:
        stage.request(1)
        stage.expect_demand()
        x = stage.send_next()
        stage.probe.expect_next(x)
    stage.send_complete()
    stage.probe.expect_complete()
    failing = ctx.stage("failing")
    error = _failure("2.13")
    failing.send_error(error)
    failing.probe.expect_error(error)
    ctx.at_close(failing.upstream.settle)


@tck_test(
    "2.13", "required",
    parity=Parity(wb("required_spec213_onSubscribe_mustThrowNullPointerExceptionWhenParametersAreNull"), "same"),
)
def required_spec213_on_subscribe_must_raise_type_error_when_parameters_are_none(
    ctx: WhiteboxStages,
) -> None:
    """on_subscribe(None) on a fresh subscriber must raise TypeError (Java's NullPointerException)."""
    subscriber = ctx.whitebox_subscriber(WhiteboxProbe(ctx.env))
    ctx.expect_type_error("on_subscribe(None)", subscriber.on_subscribe, None)


@tck_test(
    "2.13", "required",
    parity=Parity(wb("required_spec213_onNext_mustThrowNullPointerExceptionWhenParametersAreNull"), "same"),
)
def required_spec213_on_next_must_raise_type_error_when_parameters_are_none(ctx: WhiteboxStages) -> None:
    """on_next(None) on a subscribed subscriber must raise TypeError."""
    stage = ctx.stage()
    ctx.expect_type_error("on_next(None)", stage.subscriber.on_next, None)


@tck_test(
    "2.13", "required",
    parity=Parity(wb("required_spec213_onError_mustThrowNullPointerExceptionWhenParametersAreNull"), "same"),
)
def required_spec213_on_error_must_raise_type_error_when_parameters_are_none(ctx: WhiteboxStages) -> None:
    """on_error(None) on a subscribed subscriber must raise TypeError."""
    stage = ctx.stage()
    ctx.expect_type_error("on_error(None)", stage.subscriber.on_error, None)
