"""Finding the trace records a verdict cites: a failure names the signals that show it."""

from __future__ import annotations

from .trace import Trace


def seqs(trace: Trace, actor: str, signal: str, *, after: int = -1) -> list[int]:
    """Sequence numbers of the kept records of ``actor`` doing ``signal``, after seq ``after``."""
    return [r.seq for r in trace.records() if r.actor == actor and r.signal == signal and r.seq > after]


def first_seq(trace: Trace, actor: str, signal: str, *, after: int = -1) -> int | None:
    found = seqs(trace, actor, signal, after=after)
    return found[0] if found else None


def last_seq(trace: Trace, actor: str, signal: str, *, after: int = -1) -> int | None:
    found = seqs(trace, actor, signal, after=after)
    return found[-1] if found else None


def cite(*seq: int | None) -> tuple[int, ...]:
    """The known sequence numbers among ``seq``, in order, without repeats."""
    return tuple(sorted({s for s in seq if s is not None}))
