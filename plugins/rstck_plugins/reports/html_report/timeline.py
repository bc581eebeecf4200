"""The signal trace as an SVG sequence diagram: one row per record, one lane per thread.

Each probe's outstanding demand is drawn as a bar beside the rows, so a reader sees which
signal arrived against which demand, on which thread, in which order.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .markup import clip
from .markup import esc

_MAX_DEMAND = 2**63 - 1

_ROW = 20
_HEAD = 48
_GUTTER = 120
_LANE = 150
_DEMAND = 78
#: The demand columns share at most this many full columns' width: a trace of 40 probes gave
#: each its 78 px and pushed the thread lanes a screen and more to the right.
_DEMAND_COLUMNS = 4
_DEMAND_MIN = 8
_CHAR = 6.6  # width of one character of the 11px monospace face, near enough
_TAIL = 900  # at most this much room right of the last lane for labels; longer ones are clipped
_SIGNAL_CLASS = {
    "on_next": "s-next", "on_error": "s-error", "on_complete": "s-complete", "on_subscribe": "s-subscribe",
    "request": "s-request", "cancel": "s-cancel", "subscribe": "s-subscribe", "note": "s-note",
}


@dataclass
class _Record:
    seq: int
    t_ms: float
    thread: str
    actor: str
    signal: str
    detail: str
    demand: int | None


def _records(trace: list[Any]) -> list[_Record]:
    out: list[_Record] = []
    for i, item in enumerate(trace):
        if not isinstance(item, Mapping):
            continue
        seq, t_ms, demand = item.get("seq", i), item.get("t_ms", 0.0), item.get("demand")
        out.append(_Record(
            seq=seq if isinstance(seq, int) else i,
            t_ms=float(t_ms) if isinstance(t_ms, int | float) else 0.0,
            thread=str(item.get("thread", "?")),
            actor=str(item.get("actor", "")),
            signal=str(item.get("signal", "")),
            detail=str(item.get("detail", "")),
            demand=demand if isinstance(demand, int) and not isinstance(demand, bool) else None,
        ))
    return out


def _demand_text(demand: int) -> str:
    return "∞" if demand >= _MAX_DEMAND else f"{demand:,}"


def _marker(signal: str, x: float, y: float) -> str:
    cls = _SIGNAL_CLASS.get(signal, "s-note")
    if signal == "request":
        return f'<path class="{cls}" d="M{x - 5:.1f},{y + 4:.1f} L{x:.1f},{y - 5:.1f} L{x + 5:.1f},{y + 4:.1f} Z"/>'
    if signal == "cancel":
        return (f'<path class="{cls} x" d="M{x - 4:.1f},{y - 4:.1f} L{x + 4:.1f},{y + 4:.1f} '
                f'M{x + 4:.1f},{y - 4:.1f} L{x - 4:.1f},{y + 4:.1f}"/>')
    if signal in ("on_complete", "on_error"):
        return f'<rect class="{cls}" x="{x - 5:.1f}" y="{y - 5:.1f}" width="10" height="10"/>'
    if signal == "note":
        return f'<path class="{cls}" d="M{x:.1f},{y - 4:.1f} L{x + 4:.1f},{y:.1f} L{x:.1f},{y + 4:.1f} L{x - 4:.1f},{y:.1f} Z"/>'
    return f'<circle class="{cls}" cx="{x:.1f}" cy="{y:.1f}" r="4.5"/>'


def _label(rec: _Record) -> str:
    if rec.signal == "note":
        return f"{rec.actor}: {rec.detail}" if rec.actor != "tck" else rec.detail
    return f"{rec.actor} {rec.signal}({rec.detail})"


def _demand_column(actors: int) -> float:
    """Width of one probe's demand column: full for a few probes, shared beyond."""
    if actors <= _DEMAND_COLUMNS:
        return float(_DEMAND)
    return max(_DEMAND_MIN, _DEMAND * _DEMAND_COLUMNS / actors)


def record_id(anchor: str, seq: int) -> str:
    """The page id of a trace record of the failure at ``anchor``, for links to the evidence."""
    return f"{anchor}-rec-{seq}"


@dataclass
class _Layout:
    """Where everything of one trace's diagram goes: lanes by thread, a demand column per probe."""

    lanes: list[str]
    actors: list[str]
    #: log2 of the largest finite demand: the full width of a demand bar.
    scale: float
    column: float
    demand_x: int
    lanes_x: int
    width: int
    #: A record, or the number of records not kept between two kept ones.
    rows: list[_Record | int]

    @property
    def height(self) -> int:
        return _HEAD + _ROW * len(self.rows) + 10

    def lane_x(self, thread: str) -> int:
        return self.lanes_x + _LANE * self.lanes.index(thread) + 12


def _layout(records: list[_Record], trace_total: int) -> _Layout:
    lanes: list[str] = []
    actors: list[str] = []
    for rec in records:
        if rec.thread not in lanes:
            lanes.append(rec.thread)
        if rec.demand is not None and rec.actor not in actors:
            actors.append(rec.actor)
    finite = [r.demand for r in records if r.demand is not None and r.demand < _MAX_DEMAND]
    scale = math.log2(1 + max(finite)) if finite and max(finite) > 0 else 1.0
    column = _demand_column(len(actors))
    lanes_x = _GUTTER + int(column * len(actors)) + 16
    lanes_end = lanes_x + _LANE * len(lanes)
    needed = max(lanes_x + _LANE * lanes.index(r.thread) + 34 + (len(_label(r)) + 20) * _CHAR for r in records)
    rows: list[_Record | int] = []
    previous: int | None = None
    for rec in records:
        if previous is not None and rec.seq > previous + 1:
            rows.append(rec.seq - previous - 1)
        rows.append(rec)
        previous = rec.seq
    if trace_total > (previous or 0) + 1 and trace_total > len(records):
        rows.append(trace_total - (previous or 0) - 1)
    return _Layout(lanes, actors, scale, column, _GUTTER, lanes_x,
                   int(min(max(needed, lanes_end + 40), lanes_end + _TAIL)), rows)


def _head(lay: _Layout, label: str) -> list[str]:
    """The svg element, the column heads (record, time, each probe's demand, each thread) and the lifelines."""
    width, height, column = lay.width, lay.height, lay.column
    out = [
        (f'<svg xmlns="http://www.w3.org/2000/svg" class="trace" role="img" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" aria-label="{esc("signal trace: " + label)}">'),
        f"<title>{esc('signal trace: ' + label)}</title>",
        (f'<text class="th" x="8" y="18">record</text><text class="th" x="{_GUTTER - 8}" y="18" '
        f'text-anchor="end">time</text>'),
    ]
    if column < _DEMAND and lay.actors:
        out.append(f'<text class="th" x="{lay.demand_x + 4}" y="18">demand of {len(lay.actors)} probes</text>')
    for i, actor in enumerate(lay.actors):
        x = lay.demand_x + column * i
        if column >= _DEMAND:
            out.append(f'<text class="th" x="{x + 4}" y="18">demand</text>')
        out.append(f'<text class="th actor" x="{x + 4:.1f}" y="34">{esc(clip(actor, int((column - 8) / _CHAR)))}'
                   f"<title>{esc(actor)}</title></text>")
    for i, thread in enumerate(lay.lanes):
        x = lay.lanes_x + _LANE * i + 12
        out.append(f'<line class="lifeline" x1="{x}" y1="{_HEAD - 6}" x2="{x}" y2="{height - 6}"/>')
        out.append(f'<text class="th lane" x="{x - 8}" y="18">{esc(clip(thread, int((_LANE - 12) / _CHAR)))}'
                   f"<title>{esc('thread ' + thread)}</title></text>")
        out.append(f'<text class="th sub" x="{x - 8}" y="34">thread {i + 1}</text>')
    return out


def _demand_bars(lay: _Layout, current: Mapping[str, int], rec: _Record, y: float) -> list[str]:
    """Each probe's outstanding demand at this record, as a bar (log scale); the changed one numbered."""
    out = []
    column = lay.column
    for i, actor in enumerate(lay.actors):
        if actor not in current:
            continue
        d = current[actor]
        cx = lay.demand_x + column * i + (4 if column >= _DEMAND else 1)
        full = column - (12 if column >= _DEMAND else 2)
        bar = full if d >= _MAX_DEMAND else (full * math.log2(1 + d) / lay.scale if d > 0 else 0.0)
        own = actor == rec.actor and rec.demand is not None
        if bar > 0:
            out.append(f'<rect class="dbar{" own" if own else ""}" x="{cx:.1f}" y="{y - 6}" '
                       f'width="{bar:.1f}" height="12"><title>{esc(actor)}: demand {esc(_demand_text(d))}'
                       "</title></rect>")
        if own and column >= _DEMAND:
            out.append(f'<text class="dnum" x="{cx + 3}" y="{y + 4}">{esc(_demand_text(d))}</text>')
    return out


def _record_label(lay: _Layout, rec: _Record, x: int, y: float, cited: bool) -> str:
    """The record's signal beside its lane, clipped to the room left; whole in its tooltip."""
    text = _label(rec)
    demand = "" if rec.demand is None else f", demand {_demand_text(rec.demand)}"
    if demand and lay.column < _DEMAND:  # too narrow a column for its number: said in the label
        text += f"  demand={_demand_text(rec.demand or 0)}"
    full_text = f"#{rec.seq} +{rec.t_ms:.3f} ms, thread {rec.thread}: {text}{demand}"
    if cited:
        full_text += " (cited as evidence)"
    room = int((lay.width - x - 22) / _CHAR)
    cls = _SIGNAL_CLASS.get(rec.signal, "s-note")
    return (f'<text class="label {cls}{" evidence" if cited else ""}" x="{x + 10}" y="{y + 4}">'
            f"{esc(clip(text, room))}<title>{esc(full_text)}</title></text>")


def trace_svg(trace: list[Any], trace_total: int, label: str, *, evidence: Collection[int] = (),
              anchor: str = "") -> str:
    """The trace as a sequence diagram: one row per record, one lane per thread, demand per probe.

    The records a failure cites as ``evidence`` are banded, and carry ``record_id(anchor, seq)``
    as their id so the failure's facts can link to them.
    """
    records = _records(trace)
    if not records:
        return '<p class="muted">No signals were recorded.</p>'
    lay = _layout(records, trace_total)
    width = lay.width
    out = _head(lay, label)
    current: dict[str, int] = {}
    last_point: tuple[float, float] | None = None
    for index, item in enumerate(lay.rows):
        y = _HEAD + _ROW * index + _ROW / 2
        if isinstance(item, int):
            out.append(f'<line class="gap" x1="8" y1="{y}" x2="{width - 8}" y2="{y}"/>'
                       f'<text class="gaptext" x="{lay.lanes_x}" y="{y + 4}">… {item:,} record(s) not kept …</text>')
            last_point = None
            continue
        rec = item
        x = lay.lane_x(rec.thread)
        cited = rec.seq in evidence
        if cited:
            out.append(f'<rect class="band" id="{record_id(anchor, rec.seq)}" x="0" y="{y - _ROW / 2}" '
                       f'width="{width}" height="{_ROW}"/><rect class="evmark" x="0" y="{y - _ROW / 2}" '
                       f'width="4" height="{_ROW}"/>')
        elif index % 2:
            out.append(f'<rect class="stripe" x="0" y="{y - _ROW / 2}" width="{width}" height="{_ROW}"/>')
        if rec.demand is not None:
            current[rec.actor] = rec.demand
        out += _demand_bars(lay, current, rec, y)
        out.append(f'<text class="seq{" evidence" if cited else ""}" x="8" y="{y + 4}">#{rec.seq}</text>'
                   f'<text class="seq" x="{_GUTTER - 8}" y="{y + 4}" text-anchor="end">{rec.t_ms:.3f} ms</text>')
        if last_point is not None and last_point[0] != x:
            out.append(f'<line class="handoff" x1="{last_point[0]}" y1="{last_point[1]}" x2="{x}" y2="{y}"/>')
        last_point = (x, y)
        out.append(_marker(rec.signal, x, y))
        out.append(_record_label(lay, rec, x, y, cited))
    out.append("</svg>")
    return "".join(out)


LEGEND = (
    '<div class="legend"><span><i style="background:#0969da"></i>on_next</span>'
    '<span><i style="background:#bc4c00"></i>request</span>'
    '<span><i style="background:#57606a"></i>cancel / TCK note</span>'
    '<span><i style="background:#8250df"></i>subscribe / on_subscribe</span>'
    '<span><i style="background:#1a7f37"></i>on_complete</span>'
    '<span><i style="background:#cf222e"></i>on_error</span>'
    '<span><i style="background:#ffebe9;border:2px solid #cf222e;border-radius:2px"></i>a record the failure '
    "cites as evidence</span>"
    '<span><i style="background:#79b8ff;border-radius:2px"></i>outstanding demand of each probe '
    "(log scale; ∞ = unbounded)</span></div>"
)
