"""A bounded record of every signal exchanged during one verification.

Each record carries the thread and the demand outstanding at that moment, so a failure can
show *who* signalled *what* and *when*. Memory is bounded: the first and the last records are
kept, the middle is counted, so draining 10**6 elements keeps a few hundred records. The TCK's
own notes (what a test concluded along the way) are kept wherever they fall, up to a bound, and
so are the records a verdict may rest on, each with the records around it: the rare calls and
signals a failure cites (a cancel(), a request(0), on_subscribe, a terminal signal) as they
are made, and any record a check cites when it flags it (``keep``). A failure's evidence is
then in the report however long the stream ran.
"""

from __future__ import annotations

import collections
import itertools
import threading
import time
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

_REPR_LIMIT = 80
#: Notes kept from the middle of a long trace (beyond the head, whether or not still in the tail).
NOTES_KEPT = 200
#: Records kept from the middle of a long trace as evidence (``keep`` and the rare signals,
#: their context included), and how many records either side of each are kept with it.
PINNED_KEPT = 1000
PINNED_CONTEXT = 3
#: Signals always kept from the middle of a long trace: rare, and what a verdict cites.
_RARE = frozenset({"cancel", "subscribe", "on_subscribe", "on_error", "on_complete", "puppet.cancel"})


def short_repr(value: object, limit: int = _REPR_LIMIT) -> str:
    """``repr`` that never raises and never floods a report."""
    try:
        text = repr(value)
    except Exception as exc:  # a subject's __repr__ may be broken; that is not our failure
        text = f"<repr failed: {type(exc).__name__}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclass(slots=True)  # not frozen: frozen __init__ costs a third of a probe's on_next
class Record:
    """One signal or call: ``on_next(3)`` by thread ``pool-1`` with demand 2 outstanding."""

    seq: int
    t: float  # seconds since the trace started
    thread: str
    actor: str  # which probe or party: "probe", "sub2", "tck"
    signal: str  # on_subscribe | on_next | on_error | on_complete | request | cancel | subscribe | note
    detail: str
    demand: int | None

    def to_json(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "t_ms": round(self.t * 1000, 3),
            "thread": self.thread,
            "actor": self.actor,
            "signal": self.signal,
            "detail": self.detail,
            "demand": self.demand,
        }

    def format(self) -> str:
        demand = "" if self.demand is None else f"  demand={_demand_text(self.demand)}"
        call = f"{self.signal}({self.detail})" if self.signal != "note" else f"-- {self.detail}"
        return f"#{self.seq:<5} +{self.t * 1000:9.3f} ms  {self.thread:<22} {self.actor:<6} {call}{demand}"


def _demand_text(demand: int) -> str:
    return "unbounded" if demand >= 2**63 - 1 else str(demand)


class Trace:
    """Thread-safe, bounded list of records shared by every probe of one verification.

    Adding takes no lock: the sequence number comes from an ``itertools.count`` and the row goes
    to a list or a bounded deque, each a single atomic step under the interpreter lock. Rows
    added by two threads at once may land out of order; reading sorts them by ``seq``.
    """

    def __init__(self, keep: int = 100) -> None:
        self._keep = keep
        # Plain tuples (seq, monotonic time, thread, actor, signal, detail, demand), or from a
        # ``tail_sink`` writer (seq, monotonic time, (thread, actor, signal), detail, demand),
        # made into Records when read: adding is on every signal's path. A detail that is an
        # int is the element itself, shown with ``short_repr`` when read (ints are immutable:
        # the same text as when it was added).
        self._head: list[tuple[Any, ...]] = []
        self._tail: collections.deque[tuple[Any, ...]] = collections.deque(maxlen=keep)
        self._notes: list[tuple[Any, ...]] = []
        #: Rows of the middle kept as evidence, by seq; ``_after``: rows still to keep after one.
        self._pinned: dict[int, tuple[Any, ...]] = {}
        self._after = 0
        self._seqs = itertools.count()
        self._t0 = time.monotonic()

    def add(self, actor: str, signal: str, detail: str = "", demand: int | None = None) -> Record:
        return self._record(self._append(actor, signal, detail, demand))

    def log(self, actor: str, signal: str, detail: Any = "", demand: int | None = None) -> int:
        """``add`` for the per-signal path: returns only the record's ``seq``. ``_append``
        written out (one call less a signal); a ``detail`` that is an int is an element."""
        seq: int = next(self._seqs)
        row = (seq, _monotonic(), _current_thread()._name, actor, signal, detail, demand)  # type: ignore[attr-defined]
        if seq < self._keep:
            self._head.append(row)
        elif self._after or signal in _RARE or (signal == "request" and detail[:1] in ("0", "-")):
            self._to_tail(row)
        else:
            self._tail.append(row)
        return seq

    def _append(self, actor: str, signal: str, detail: Any, demand: int | None) -> tuple[Any, ...]:
        # The name now: a pooled thread takes the name of each job it runs (``_name``: the
        # property's value without its call, on every signal's path).
        seq = next(self._seqs)
        row = (seq, _monotonic(), _current_thread()._name, actor, signal, detail, demand)  # type: ignore[attr-defined]
        if seq < self._keep:
            self._head.append(row)
        else:
            self._to_tail(row)
        return row

    def _to_tail(self, row: tuple[Any, ...]) -> None:
        """Add a row past the head: to the tail, and kept as evidence if rare or just after one."""
        signal, detail = row[4], row[5]
        if signal in _RARE or (signal == "request" and detail[:1] in ("0", "-")):
            self._pin_around(row)
        elif self._after:
            self._after -= 1
            self._pin(row)
        self._tail.append(row)

    def _pin(self, row: tuple[Any, ...]) -> None:
        if len(self._pinned) < PINNED_KEPT:
            self._pinned.setdefault(row[0], row)

    def _pin_around(self, row: tuple[Any, ...], earlier: list[tuple[Any, ...]] | None = None) -> None:
        """Keep ``row``, the records before it (still in the tail), and the next ones added."""
        if len(self._pinned) >= PINNED_KEPT:
            return
        before = self._tail.copy() if earlier is None else earlier
        for kept in list(before)[-PINNED_CONTEXT:]:
            self._pin(kept)
        self._pin(row)
        self._after = PINNED_CONTEXT

    def keep(self, seqs: Iterable[int]) -> None:
        """Keep the records ``seqs`` (a check's evidence, just flagged) with their context, for
        as long as they are still among the last records; earlier ones are already kept or gone."""
        wanted = {seq for seq in seqs if seq >= self._keep}
        if not wanted:
            return
        rows = list(self._tail.copy())
        for i, row in enumerate(rows):
            if row[0] in wanted:
                self._pin_around(row, rows[:i])
                for later in rows[i + 1:i + 1 + PINNED_CONTEXT]:
                    self._pin(later)

    def tail_sink(self) -> tuple[Iterator[int], Callable[[tuple[Any, ...]], None]] | None:
        """For a writer that builds its own rows: (the seqs, add a row), once the head is full.

        Every later seq belongs in the tail then, so a row is two C calls and no branch. The
        row is ``(seq, time.monotonic(), (thread, actor, signal), detail, demand)``: the middle
        part is the same tuple for every signal of one writer.
        """
        if len(self._head) < self._keep:
            return None
        return self._seqs, self._tail.append

    def _record(self, row: tuple[Any, ...]) -> Record:
        if len(row) == 5:
            seq, t, (thread, actor, signal), detail, demand = row
        else:
            seq, t, thread, actor, signal, detail, demand = row
        return Record(seq, t - self._t0, thread, actor, signal,
                      detail if type(detail) is str else short_repr(detail), demand)

    def _rows(self) -> list[tuple[Any, ...]]:
        # list() and deque.copy() run in C without a thread switch: a consistent snapshot.
        rows = [*list(self._head), *self._tail.copy()]
        if self._notes or self._pinned:
            kept = {_seq_of(row) for row in rows}
            for row in [*list(self._notes), *list(self._pinned.values())]:
                if row[0] not in kept:
                    kept.add(row[0])
                    rows.append(row)
        rows.sort(key=_seq_of)
        return rows

    def note(self, text: str) -> Record:
        """A conclusion of the TCK's: kept even when the records around it are not."""
        row = self._append("tck", "note", text, None)
        if self._keep and row[0] >= self._keep and len(self._notes) < NOTES_KEPT:
            self._notes.append(row)
        return self._record(row)

    @property
    def total(self) -> int:
        """How many records were added: the next ``seq`` the count would give."""
        return int(repr(self._seqs)[len("count("):-1])  # read without taking a number

    def records(self) -> list[Record]:
        return [self._record(row) for row in self._rows()]

    @property
    def dropped(self) -> int:
        rows = self._rows()
        return self.total - len(rows)

    def format(self, limit: int = 40, cited: Iterable[int] = ()) -> str:
        """The records for a failure message: all of them, or, past ``limit``, the first few,
        every ``cited`` record with a few around it, and the last ones, eliding between.

        A cited record is the evidence of a failure: it is shown (marked ``>``) wherever it is
        in a long trace, not only when it falls among the first or the last records.
        """
        records = self.records()
        if not records:
            return "  (no signals recorded)"
        marked = set(cited)
        shown = list(range(len(records)))
        if len(records) > limit:
            index = {r.seq: i for i, r in enumerate(records)}
            windows = sorted(index[seq] for seq in marked if seq in index)[:CITED_SHOWN]
            keep = set(range(HEAD_SHOWN))
            for i in windows:
                keep.update(range(max(0, i - CITED_CONTEXT), min(len(records), i + CITED_CONTEXT + 1)))
            tail = max(TAIL_MIN, limit - HEAD_SHOWN - (2 * CITED_CONTEXT + 1) * len(windows))
            keep.update(range(max(0, len(records) - tail), len(records)))
            shown = sorted(keep)
        lines: list[str] = []
        previous = -1
        for i in shown:
            r = records[i]
            if previous >= 0 and r.seq != records[previous].seq + 1:
                gap = r.seq - records[previous].seq - 1
                lines.append(f"  ... {gap} records not {'kept' if previous + 1 == i else 'shown'} ...")
            lines.append(("> " if r.seq in marked else "  ") + r.format())
            previous = i
        present = {r.seq for r in records}
        missing = sorted(seq for seq in marked if seq not in present)
        if missing:
            lines.append(f"  (cited record(s) {', '.join(f'#{seq}' for seq in missing)} not kept: past "
                         f"{PINNED_KEPT} records kept as evidence, the trace keeps its first and last records)")
        return "\n".join(lines)


#: Records a long trace shows at its start, around each cited record (either side), at least at
#: its end, and how many cited records get their context.
HEAD_SHOWN = 5
CITED_CONTEXT = 3
TAIL_MIN = 10
CITED_SHOWN = 12


_monotonic = time.monotonic
_current_thread = threading.current_thread


def _seq_of(row: tuple[Any, ...]) -> int:
    return int(row[0])
