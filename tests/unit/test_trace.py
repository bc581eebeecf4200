"""The bounded signal trace."""

from __future__ import annotations

from rstck import MAX_DEMAND
from rstck._internal.environment import Environment
from rstck.probe import ProbeSubscriber

from .support import NullSubscription


def test_trace_memory_is_bounded_for_a_million_elements(env: Environment) -> None:
    probe = ProbeSubscriber(env, keep_elements=False, yield_s=None)
    probe.on_subscribe(NullSubscription())
    probe.request(MAX_DEMAND)
    for i in range(1_000_000):
        probe.on_next(i)
    records = env.trace.records()
    assert len(records) == 2 * env.settings.trace_keep
    assert env.trace.total == 1_000_002
    assert records[-1].detail == "999999"
    assert not probe.elements
    assert "records not kept" in env.trace.format(limit=1000)


def test_the_trace_counts_every_record_even_when_it_keeps_none() -> None:
    from rstck._internal.trace import Trace

    trace = Trace(0)
    for _ in range(3):
        trace.note("x")
    assert (trace.total, trace.records(), trace.dropped) == (3, [], 3)
    kept = Trace(2)
    for i in range(5):
        kept.log("probe", "on_next", str(i), 5 - i)
    assert [(r.seq, r.detail, r.demand) for r in kept.records()] == [
        (0, "0", 5), (1, "1", 4), (3, "3", 2), (4, "4", 1)]
    assert (kept.total, kept.dropped) == (5, 1)


def test_a_note_in_the_middle_of_a_long_trace_is_kept() -> None:
    """What a test concluded halfway (say, that a batch followed a cancel) survives the records
    after it; the elements around it are still only counted."""
    from rstck._internal.trace import NOTES_KEPT
    from rstck._internal.trace import Trace

    trace = Trace(2)
    for i in range(10):
        trace.log("probe", "on_next", str(i))
    trace.note("halfway")
    for i in range(10, 20):
        trace.log("probe", "on_next", str(i))
    details = [r.detail for r in trace.records()]
    assert details == ["0", "1", "halfway", "18", "19"]
    assert (trace.total, trace.dropped) == (21, 16)
    for i in range(NOTES_KEPT + 10):
        trace.note(f"n{i}")
    assert len(trace.records()) == 2 + NOTES_KEPT + 2  # bounded: the head, the notes kept, the tail


def test_a_cancel_or_a_request_zero_in_the_middle_is_kept_with_its_context() -> None:
    """A verdict cites the cancel() a flood followed, or a request(0) thousands of records in:
    they are kept as they are made, with the records either side, whatever comes after."""
    from rstck._internal.trace import PINNED_CONTEXT
    from rstck._internal.trace import Trace

    trace = Trace(5)
    for i in range(10):
        trace.log("probe", "on_next", str(i))
    cancel = trace.log("probe", "cancel", "")
    for i in range(10, 15):
        trace.log("probe", "on_next", str(i))
    zero = trace.log("probe", "request", "0")
    for i in range(15, 20):
        trace.log("probe", "on_next", str(i))
    trace.log("probe", "request", "5")  # a positive request is not kept for itself
    for i in range(20, 1000):
        trace.log("probe", "on_next", str(i))
    kept = {r.seq for r in trace.records()}
    assert {cancel, zero} <= kept
    assert set(range(cancel - PINNED_CONTEXT, cancel + PINNED_CONTEXT + 1)) <= kept
    assert set(range(zero - PINNED_CONTEXT, zero + PINNED_CONTEXT + 1)) <= kept
    assert len(kept) <= 5 + 2 * (2 * PINNED_CONTEXT + 1) + 5


def test_a_record_a_check_cites_as_it_flags_it_is_kept() -> None:
    from rstck._internal.trace import Trace

    trace = Trace(10)
    for i in range(30):
        trace.log("probe", "on_next", str(i))
    flagged = trace.log("probe", "on_next", "beyond demand")
    trace.keep([flagged])  # as the probe flags it: the record is among the last ones
    for i in range(31, 500):
        trace.log("probe", "on_next", str(i))
    kept = {r.seq for r in trace.records()}
    assert set(range(flagged - 3, flagged + 1)) <= kept
    text = trace.format(limit=10, cited=[flagged])
    assert "cited record" not in text
    assert f"> #{flagged:<5}" in text
