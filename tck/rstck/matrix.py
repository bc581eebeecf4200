"""Rule x context: for each rule, the calling contexts in which it can be broken and what covers each.

A rule an implementation keeps when called one way can break when called another: from the
test thread or from inside a signal, on another thread, with one element or many at once,
before or after a terminal signal, for the first subscriber or a later one, in a few calls or
in hundreds. Each row names the tests that create that context; ``fuzz`` marks a context only
the randomised fuzzer reaches, and ``gap`` one nothing can observe, with the reason. Rendered
into ``docs/verifications.md``; a test checks that every test named here exists.
"""

from __future__ import annotations

from dataclasses import dataclass

#: The contexts, in the order the table lists them.
CONTEXTS: dict[str, str] = {
    "test": "a call from the test thread, one at a time",
    "on_subscribe": "a call made re-entrantly from inside on_subscribe",
    "on_next": "a call made re-entrantly from inside on_next",
    "thread": "signals or calls on another thread, or racing one",
    "bulk": "several elements at once, or unbounded demand",
    "terminal": "around a terminal signal (before it, after it, or instead of elements)",
    "later": "a later subscriber or a second subscription",
    "many": "hundreds of calls in a row",
}

P, B, W, X = "publisher", "subscriber_blackbox", "subscriber_whitebox", "processor"

#: Shared phrases for the checks the probes and the TCK's upstream make in every test.
_PROBE = "every publisher test: the probe checks each signal as it arrives, on the thread that delivers it"
_UPSTREAM = "every subscriber test: the TCK's upstream checks each call as it is made, on the caller's thread"


@dataclass(frozen=True)
class Cell:
    """What covers one rule in one context: tests (``verification:name``), or a reason."""

    rule: str
    context: str
    tests: tuple[str, ...] = ()
    fuzz: str = ""
    gap: str = ""
    note: str = ""


def _c(rule: str, context: str, *tests: str, fuzz: str = "", gap: str = "", note: str = "") -> Cell:
    return Cell(rule, context, tests, fuzz, gap, note)


CELLS: tuple[Cell, ...] = (
    # -- 1: Publisher ----------------------------------------------------------------------
    _c("1.1", "test", f"{P}:required_spec101_request_must_result_in_the_correct_number_of_elements"),
    _c("1.1", "on_next", f"{P}:required_spec101_request_must_result_in_the_correct_number_of_elements",
       note="one request(1) per on_next"),
    _c("1.1", "on_subscribe", f"{P}:required_spec308_requests_made_inside_on_subscribe_must_add_up",
       f"{P}:required_spec302_must_allow_synchronous_request_calls_from_on_next_and_on_subscribe"),
    _c("1.1", "thread", f"{P}:stochastic_spec103_must_signal_on_methods_sequentially", note=_PROBE),
    _c("1.1", "bulk", f"{P}:required_spec101_request_must_result_in_the_correct_number_of_elements",
       note="request(1) then request(2)"),
    _c("1.1", "terminal", f"{P}:required_spec107_must_not_emit_further_signals_once_on_complete_has_been_signalled"),
    _c("1.1", "many", f"{P}:required_spec308_hundreds_of_requests_must_add_up"),
    _c("1.2", "bulk", f"{P}:required_spec102_may_signal_fewer_than_requested_and_terminate",
       f"{P}:required_spec317_must_support_a_pending_element_count_up_to_long_max_value"),
    _c("1.2", "terminal", f"{P}:optional_spec105_empty_stream_must_terminate_by_signalling_on_complete"),
    _c("1.3", "on_subscribe", f"{P}:required_spec103_must_not_signal_while_on_subscribe_is_still_running",
       note="on_subscribe stays running for a no-signal window, so a signal from another thread overlaps it every time"),
    _c("1.3", "on_next", f"{P}:stochastic_spec103_must_signal_on_methods_sequentially",
       note="request(1) from every on_next; the probe pauses inside each signal"),
    _c("1.3", "thread", f"{P}:stochastic_spec103_must_signal_on_methods_sequentially", note=_PROBE),
    _c("1.3", "bulk", f"{P}:stochastic_spec103_must_signal_on_methods_sequentially",
       note="every other iteration requests all elements at once"),
    _c("1.3", "terminal", f"{P}:stochastic_spec103_must_signal_on_methods_sequentially",
       fuzz="an on_complete racing the last on_next at a random moment",
       note="each iteration waits for on_complete while the probe pauses inside on_next"),
    _c("1.3", "many", f"{P}:stochastic_spec103_must_signal_on_methods_sequentially",
       note="stochastic_iterations fresh streams"),
    _c("1.4", "test", f"{P}:required_spec104_must_signal_on_error_when_failing"),
    _c("1.4", "later", f"{P}:required_spec104_failed_publisher_must_signal_on_error_to_every_subscriber",
       f"{X}:required_spec104_must_call_on_error_on_all_its_subscribers_if_it_encounters_a_non_recoverable_error"),
    _c("1.4", "terminal", f"{X}:required_spec402_must_immediately_pass_on_on_error_events_received_from_its_upstream_or_recover",
       note="a subscriber without demand"),
    _c("1.5", "test", f"{P}:required_spec105_must_signal_on_complete_when_finite_stream_terminates"),
    _c("1.5", "bulk", f"{P}:required_spec102_may_signal_fewer_than_requested_and_terminate"),
    _c("1.5", "terminal", f"{P}:optional_spec105_empty_stream_must_terminate_by_signalling_on_complete"),
    _c("1.6", "terminal", f"{P}:required_spec106_must_consider_subscription_cancelled_after_on_complete",
       f"{P}:required_spec106_must_consider_subscription_cancelled_after_on_error",
       f"{P}:required_spec107_must_not_emit_further_signals_after_the_on_error_caused_by_request_zero"),
    _c("1.6", "on_next", f"{P}:required_spec309_request_zero_from_inside_on_next_must_signal_value_error",
       f"{P}:required_spec306_requests_after_a_cancel_made_inside_on_next_must_be_nops"),
    _c("1.7", "terminal", f"{P}:required_spec107_must_not_emit_further_signals_once_on_complete_has_been_signalled",
       f"{P}:required_spec107_must_not_emit_further_signals_once_on_error_has_been_signalled",
       f"{P}:required_spec107_must_not_emit_further_signals_after_the_on_error_caused_by_request_zero"),
    _c("1.7", "thread", note=_PROBE),
    _c("1.8", "on_next", f"{P}:required_spec108_cancelled_subscription_must_eventually_stop_being_signalled",
       f"{P}:required_spec317_must_not_signal_on_error_when_pending_above_long_max_value",
       note="unbounded demand; bounded by the timeout and after_cancel_limit settings"),
    _c("1.8", "test", f"{P}:required_spec312_cancel_must_make_the_publisher_eventually_stop_signalling"),
    _c("1.8", "bulk", f"{P}:required_spec108_cancelled_subscription_must_eventually_stop_being_signalled",
       gap="a finite stream shorter than after_cancel_limit that ignores cancel() ends with "
       "on_complete in time, like a conforming batch in flight; with bounded demand rule 3.12's "
       "test still catches it"),
    _c("1.9", "test", f"{P}:required_spec109_must_issue_on_subscribe_for_non_null_subscriber",
       f"{P}:required_spec109_subscribe_must_return_normally",
       f"{P}:required_spec109_subscribe_none_must_raise_type_error"),
    _c("1.9", "terminal", f"{P}:required_spec109_may_reject_subscribe_with_on_error_after_on_subscribe",
       note=_PROBE + " (no signal before on_subscribe)"),
    _c("1.9", "later", f"{P}:required_spec109_must_issue_on_subscribe_to_a_later_subscriber_too"),
    _c("1.10", "later", gap="an obligation of whoever calls subscribe(); the TCK never subscribes a subscriber twice"),
    _c("1.11", "later", f"{P}:optional_spec111_may_support_multi_subscribe",
       f"{P}:optional_spec111_multicast_must_produce_the_same_elements_in_the_same_sequence_when_requesting_one_by_one"),
    # -- 2: Subscriber ---------------------------------------------------------------------
    _c("2.1", "test", f"{B}:required_spec201_blackbox_must_signal_demand_via_subscription_request",
       f"{W}:required_spec201_must_signal_demand_via_subscription_request"),
    _c("2.1", "later", f"{X}:required_spec201_processor_must_request_from_upstream_for_elements_that_have_been_requested_long_ago"),
    _c("2.2", "thread", gap="a recommendation judged by the subscriber itself; a signal method that blocks "
       "is failed in every test by the watchdog"),
    _c("2.3", "terminal", f"{B}:required_spec203_blackbox_must_not_call_methods_on_subscription_or_publisher_in_on_complete",
       f"{B}:required_spec203_blackbox_must_not_call_methods_on_subscription_or_publisher_in_on_error",
       f"{W}:required_spec203_must_not_call_methods_on_subscription_or_publisher_in_on_complete",
       f"{W}:required_spec203_must_not_call_methods_on_subscription_or_publisher_in_on_error"),
    _c("2.3", "thread", note=_UPSTREAM + "; the flag is per thread, so a worker's call is not mistaken for one inside the signal"),
    _c("2.4", "terminal", f"{B}:required_spec204_blackbox_must_consider_the_subscription_cancelled_after_on_complete",
       f"{W}:required_spec204_must_consider_the_subscription_cancelled_after_on_error"),
    _c("2.4", "thread", f"{B}:required_spec204_blackbox_must_consider_the_subscription_cancelled_after_on_error",
       f"{W}:required_spec204_must_not_request_once_it_processed_on_complete_after_a_backlog",
       note="a worker's late request is judged by the backlog it still had (in calls and in elements its "
       "demand had not covered) and by whether it is still at work, not by a window; in the whitebox, "
       "by its own report of the end: a refill or top-up after it is a breach"),
    _c("2.5", "later", f"{B}:required_spec205_blackbox_must_call_subscription_cancel_if_it_already_has_an_subscription_and_receives_another_on_subscribe_signal",
       f"{W}:required_spec205_must_call_subscription_cancel_if_it_already_has_an_subscription_and_receives_another_on_subscribe_signal",
       note="a third from another thread too; cancelling the first as well is legal, keeping or using a new one is not"),
    _c("2.6", "test", f"{B}:required_spec206_blackbox_must_cancel_once_it_has_all_the_elements_it_declared_it_takes",
       note="only for a subscriber declared to take at most k elements (takes_at_most): otherwise only "
       "it knows whether it still needs its subscription, and one that stops requesting may still need it"),
    _c("2.6", "later", f"{X}:required_spec206_single_subscriber_processor_must_cancel_its_upstream_once_its_subscriber_cancelled",
       note="a processor that declared max_subscribers=1, once its only subscriber cancelled; one that "
       "can take new subscribers may keep its upstream"),
    _c("2.7", "thread", f"{B}:stochastic_spec207_blackbox_must_ensure_all_calls_on_its_subscription_take_place_from_the_same_thread_or_take_care_of_synchronization",
       f"{W}:stochastic_spec207_must_ensure_all_calls_on_its_subscription_take_place_from_the_same_thread_or_take_care_of_synchronization",
       note=_UPSTREAM),
    _c("2.7", "on_next", f"{B}:required_spec310_blackbox_must_be_prepared_for_on_next_delivered_synchronously_inside_request",
       note="same-thread nesting is serial and allowed"),
    _c("2.8", "test", f"{W}:required_spec208_must_be_prepared_to_receive_on_next_signals_after_having_called_subscription_cancel"),
    _c("2.9", "terminal", f"{B}:required_spec209_blackbox_must_be_prepared_to_receive_an_on_complete_signal_without_preceding_request_call",
       f"{W}:required_spec209_must_be_prepared_to_receive_an_on_complete_signal_with_preceding_request_call"),
    _c("2.9", "on_subscribe", f"{B}:required_spec311_blackbox_must_be_prepared_for_on_complete_or_on_error_delivered_synchronously_inside_request"),
    _c("2.10", "terminal", f"{B}:required_spec210_blackbox_must_be_prepared_to_receive_an_on_error_signal_without_preceding_request_call",
       f"{W}:required_spec210_must_be_prepared_to_receive_an_on_error_signal_with_preceding_request_call"),
    _c("2.10", "on_subscribe", f"{W}:required_spec311_whitebox_must_be_prepared_for_on_complete_or_on_error_delivered_synchronously_inside_request"),
    _c("2.11", "thread", f"{W}:required_spec211_must_make_sure_that_all_calls_on_its_methods_happen_before_the_processing_of_the_respective_events",
       note="alternating sender threads"),
    _c("2.12", "later", f"{B}:required_spec212_blackbox_subscribed_twice_must_keep_the_first_subscription_and_cancel_the_second",
       f"{W}:required_spec212_subscribed_twice_must_keep_the_first_subscription_and_cancel_the_second"),
    _c("2.13", "test", f"{B}:required_spec213_blackbox_on_subscribe_must_raise_type_error_when_parameters_are_none",
       f"{B}:required_spec213_blackbox_signal_methods_must_return_normally",
       f"{W}:required_spec213_signal_methods_must_return_normally"),
    _c("2.13", "on_subscribe", f"{W}:required_spec310_whitebox_must_be_prepared_for_on_next_delivered_synchronously_inside_request",
       note=_UPSTREAM),
    _c("2.13", "on_next", f"{P}:required_spec213_publisher_must_consider_the_subscription_cancelled_when_on_next_raises",
       note="from the publisher's side: the subscriber raises from on_next, no element may follow"),
    _c("2.13", "terminal", f"{P}:required_spec213_publisher_must_consider_the_subscription_cancelled_when_a_terminal_or_on_subscribe_raises",
       note="from the publisher's side: on_subscribe, on_complete and on_error raise"),
    # -- 3: Subscription -------------------------------------------------------------------
    _c("3.1", "thread", gap="who holds a subscription cannot be seen from outside; overlapping calls are rule 2.7's"),
    _c("3.2", "on_subscribe", f"{P}:required_spec302_must_allow_synchronous_request_calls_from_on_next_and_on_subscribe"),
    _c("3.2", "on_next", f"{P}:required_spec302_must_allow_synchronous_request_calls_from_on_next_and_on_subscribe"),
    _c("3.3", "on_next", f"{P}:required_spec303_must_not_allow_unbounded_recursion",
       note="request(1)"),
    _c("3.3", "bulk", f"{P}:required_spec303_must_not_allow_unbounded_recursion_when_requesting_several_from_on_next",
       note="request(3)"),
    _c("3.4", "test", gap="timeliness cannot be told apart from the synchronous delivery rule 3.10 allows; "
       "a request() that blocks is failed by the watchdog"),
    _c("3.5", "thread", f"{P}:required_spec305_cancel_must_be_idempotent_and_thread_safe",
       note="eight threads at once"),
    _c("3.5", "on_next", f"{P}:required_spec108_cancelled_subscription_must_eventually_stop_being_signalled"),
    _c("3.6", "test", f"{P}:required_spec306_after_subscription_is_cancelled_request_must_be_nops"),
    _c("3.6", "on_next", f"{P}:required_spec306_requests_after_a_cancel_made_inside_on_next_must_be_nops"),
    _c("3.7", "test", f"{P}:required_spec307_after_subscription_is_cancelled_additional_cancels_must_be_nops"),
    _c("3.7", "thread", f"{P}:required_spec305_cancel_must_be_idempotent_and_thread_safe"),
    _c("3.8", "test", f"{P}:required_spec308_request_must_register_given_number_elements_to_be_produced",
       f"{W}:required_spec308_whitebox_request_must_register_given_number_elements_to_be_produced"),
    _c("3.8", "on_subscribe", f"{P}:required_spec308_requests_made_inside_on_subscribe_must_add_up"),
    _c("3.8", "on_next", f"{P}:required_spec302_must_allow_synchronous_request_calls_from_on_next_and_on_subscribe"),
    _c("3.8", "later", f"{X}:required_spec308_processor_must_honour_demand_signalled_before_its_upstream_subscription",
       note="downstream demand before the processor's upstream subscription"),
    _c("3.8", "thread", f"{P}:stochastic_spec308_a_request_made_as_the_emission_loop_exits_must_not_be_lost",
       note="the delivering thread paused a swept number of lines after on_next returns while the TCK "
       "requests (a lost wake-up: wip = 0 for wip -= missed)"),
    _c("3.8", "many", f"{P}:required_spec308_hundreds_of_requests_must_add_up"),
    _c("3.9", "test", f"{P}:required_spec309_request_zero_must_signal_value_error",
       f"{P}:required_spec309_request_negative_number_must_signal_value_error"),
    _c("3.9", "terminal", f"{P}:required_spec107_must_not_emit_further_signals_after_the_on_error_caused_by_request_zero",
       note="request(-1) after two elements"),
    _c("3.9", "on_next", f"{P}:required_spec309_request_zero_from_inside_on_next_must_signal_value_error"),
    _c("3.9", "thread", note=_UPSTREAM + " (a subscriber's non-positive request)"),
    _c("3.10", "on_subscribe", f"{B}:required_spec310_blackbox_must_be_prepared_for_on_next_delivered_synchronously_inside_request",
       f"{W}:required_spec310_whitebox_must_be_prepared_for_on_next_delivered_synchronously_inside_request",
       note="a processor is given downstream demand through the puppet"),
    _c("3.11", "on_subscribe", f"{B}:required_spec311_blackbox_must_be_prepared_for_on_complete_or_on_error_delivered_synchronously_inside_request",
       f"{W}:required_spec311_whitebox_must_be_prepared_for_on_complete_or_on_error_delivered_synchronously_inside_request"),
    _c("3.12", "test", f"{P}:required_spec312_cancel_must_make_the_publisher_eventually_stop_signalling"),
    _c("3.13", "test", f"{P}:required_spec313_cancel_must_make_the_publisher_eventually_drop_all_references_to_the_subscriber"),
    _c("3.13", "on_next", f"{P}:required_spec313_cancel_from_inside_on_next_must_make_the_publisher_drop_all_references"),
    _c("3.14", "test", gap="a permission: whether a publisher shuts down is its own choice"),
    _c("3.15", "test", f"{P}:required_spec315_cancel_must_return_normally"),
    _c("3.15", "thread", f"{P}:required_spec305_cancel_must_be_idempotent_and_thread_safe"),
    _c("3.15", "terminal", f"{P}:required_spec315_cancel_must_return_normally", note="after on_complete"),
    _c("3.16", "test", f"{P}:required_spec316_request_must_return_normally"),
    _c("3.16", "on_next", f"{P}:required_spec213_publisher_must_consider_the_subscription_cancelled_when_on_next_raises", f"{P}:required_spec213_publisher_must_consider_the_subscription_cancelled_when_a_terminal_or_on_subscribe_raises",
       note=_PROBE + " (a request() that raises, from wherever the probe calls it); and request() "
       "after the subscriber's own signal method raised"),
    _c("3.16", "terminal", f"{P}:required_spec316_request_must_return_normally", note="after cancel and on_complete"),
    _c("3.17", "bulk", f"{P}:required_spec317_must_support_a_pending_element_count_up_to_long_max_value"),
    _c("3.17", "on_subscribe", f"{P}:required_spec317_must_support_a_cumulative_pending_element_count_up_to_long_max_value"),
    _c("3.17", "on_next", f"{P}:required_spec317_must_not_signal_on_error_when_pending_above_long_max_value"),
    _c("3.17", "many", f"{P}:required_spec317_must_support_an_unbounded_number_of_request_calls",
       f"{P}:required_spec308_tens_of_thousands_of_requests_must_add_up",
       note="131,073 request(1) calls from inside one on_next, after 64 from another (65,537 through a processor): past 16-bit "
       "counts and pending-request logs of 2**16 or 100,000 slots; a 32-bit count is out of reach"),
    # -- 4: Processor ----------------------------------------------------------------------
    _c("4.1", "test", f"{X}:required_spec401_must_obey_the_publisher_and_subscriber_contracts_while_relaying_a_stream"),
    _c("4.2", "terminal", f"{X}:required_spec402_must_immediately_pass_on_on_error_events_received_from_its_upstream_or_recover"),
    _c("4.2", "later", f"{X}:required_spec104_must_call_on_error_on_all_its_subscribers_if_it_encounters_a_non_recoverable_error"),
)


def _cover(cell: Cell) -> str:
    parts = [f"`{t.split(':', 1)[1]}` ({t.split(':', 1)[0]})" for t in cell.tests]
    if cell.note:
        parts.append(cell.note)
    if cell.fuzz:
        parts.append(f"**fuzz**: {cell.fuzz}")
    if cell.gap:
        parts.append(f"**gap**: {cell.gap}")
    return "; ".join(parts)


def markdown() -> str:
    """The rule x context table, and the gaps with their reasons."""
    from .rules import RULES

    out = [
        "## Rule x context",
        "",
        "Where each rule can be broken, and what creates that context. Contexts: "
        + "; ".join(f"*{k}*: {v}" for k, v in CONTEXTS.items()) + ".",
        "**fuzz** marks a context only the randomised fuzzer reaches; **gap** one no test can",
        "observe, with the reason. Generated from `rstck.matrix`.",
        "",
        "| rule | context | covered by |",
        "|---|---|---|",
    ]
    order = list(CONTEXTS)
    for rule in RULES:
        for cell in sorted((c for c in CELLS if c.rule == rule), key=lambda c: order.index(c.context)):
            out.append(f"| {rule} | {cell.context} | {_cover(cell)} |")
    gaps = [c for c in CELLS if c.gap or (c.fuzz and not c.tests)]
    out += ["", "### Gaps", ""]
    for cell in gaps:
        reason = cell.gap or f"reached only by the fuzzer: {cell.fuzz}"
        out.append(f"- {cell.rule}, {cell.context}: {reason}")
    return "\n".join(out)
