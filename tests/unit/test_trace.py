"""The bounded signal trace."""

from __future__ import annotations

from rstck import MAX_DEMAND
from rstck.environment import Environment
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
    from rstck.trace import Trace

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
    from rstck.trace import NOTES_KEPT
    from rstck.trace import Trace

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
