"""The HTML report: one self-contained page rendered from a results document.

``render`` reads nothing but the results contract (``rstck.results.document`` or a saved file),
so a report can be made during the run or later from the JSON. Every string that may come from
the subject (element reprs, exception texts, thread names, labels) passes through ``_esc``: a
subject that emits markup must not be able to inject it into the page, its attributes or its
SVG. The page loads nothing from the network and runs no script.
"""

from __future__ import annotations

import html
import math
import os
import re
from collections.abc import Iterable
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

from rstck.catalogue import coverage
from rstck.results import SCHEMA
from rstck.results import TestResult
from rstck.rules import RULES
from rstck.rules import SPEC_URL
from rstck.rules import Rule
from rstck.verifications import VERIFICATIONS

from .hooks import hookimpl

if TYPE_CHECKING:
    import pytest

    from .pytest_plugin import RsTckState

REPORT_HTML_OPTION = "--rs-report-html"

#: Worst first: the verdict a rule's cell shows when several tests verify it.
SEVERITY = ("failed", "error", "optional_unsupported", "not_applicable", "untested", "deselected", "passed")
LABELS = {
    "passed": "passed",
    "failed": "failed",
    "error": "error",
    "optional_unsupported": "optional unsupported",
    "not_applicable": "not applicable",
    "untested": "untested",
    "deselected": "deselected",
}
_REASON_PREFIXES = ("optional, not supported: ", "not applicable: ", "untested: ", "deselected: ",
                    "optional unsupported: ")
_DETAIL_KEY = re.compile(r"\n  (check|rule|spec|subject|raised|also|test|trace) *: ")
_HEADLINE = re.compile(r"^\[(?:rule (?P<rule>\d+\.\d+)|sanity|setup)\] (?:expected (?P<expected>.*?); observed "
                       r"(?P<observed>.*))?", re.DOTALL)
_UNSAFE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")
_MAX_DEMAND = 2**63 - 1


def _esc(value: object) -> str:
    """Text or attribute value, escaped; control characters and lone surrogates replaced."""
    return html.escape(_UNSAFE.sub("\ufffd", str(value)), quote=True)


def _anchor(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "-", text)


def _is_failure(r: TestResult) -> bool:
    return r.verdict in ("failed", "error") or r.outcome in ("failed", "error")


def _verdict(r: TestResult) -> str:
    return r.verdict if r.verdict in LABELS else r.outcome


def _worst(results: Iterable[TestResult]) -> str:
    verdicts = {_verdict(r) for r in results}
    return next((v for v in SEVERITY if v in verdicts), "passed")


def _badge(verdict: str, known: bool = False) -> str:
    label = LABELS.get(verdict, verdict)
    if known:
        return f'<span class="badge v-{_esc(verdict)} known" title="listed in the baseline">{_esc(label)} · known</span>'
    return f'<span class="badge v-{_esc(verdict)}">{_esc(label)}</span>'


@dataclass
class _Failure:
    """A failure message split into the parts the report shows separately."""

    headline: str
    cited_rule: str | None
    expected: str
    observed: str
    hint: str
    details: str  # the message without its trace listing
    trace_text: str


def _parse_message(message: str) -> _Failure:
    match = _DETAIL_KEY.search(message)
    headline = message[: match.start()] if match else message
    parsed = _HEADLINE.match(headline)
    cited = parsed.group("rule") if parsed else None
    expected = (parsed.group("expected") or "") if parsed else ""
    observed = (parsed.group("observed") or "") if parsed else ""
    hint = ""
    hint_match = re.search(r"\n  check   : (.*)", message)
    if hint_match:
        hint = hint_match.group(1)
    trace_at = message.find("\n  trace   : ")
    details = message if trace_at < 0 else message[:trace_at]
    trace_text = "" if trace_at < 0 else message[trace_at + 1:]
    return _Failure(headline, cited, expected, observed, hint, details, trace_text)


def cited_rule(message: str) -> str | None:
    """The rule a failure message says was broken (``[rule 1.1] ...``), or None."""
    return _parse_message(message).cited_rule if message.startswith("[") else None


def _reason(r: TestResult) -> str:
    """The one line a table cell shows: the skip reason or the failure's headline."""
    text = r.message
    for prefix in _REASON_PREFIXES:
        if text.startswith(prefix):
            text = text[len(prefix):]
            break
    head = _parse_message(text).headline if text.startswith("[") else text.split("\n", 1)[0]
    return head if len(head) <= 400 else head[:399] + "…"


# -- the signal trace as an SVG timeline ----------------------------------------------------

_ROW = 20
_HEAD = 48
_GUTTER = 120
_LANE = 150
_DEMAND = 78
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


def _clip(text: str, chars: int) -> str:
    chars = max(chars, 4)
    return text if len(text) <= chars else text[: chars - 1] + "…"


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


def trace_svg(trace: list[Any], trace_total: int, label: str) -> str:
    """The trace as a sequence diagram: one row per record, one lane per thread, demand per probe."""
    records = _records(trace)
    if not records:
        return '<p class="muted">No signals were recorded.</p>'
    lanes: list[str] = []
    actors: list[str] = []
    for rec in records:
        if rec.thread not in lanes:
            lanes.append(rec.thread)
        if rec.demand is not None and rec.actor not in actors:
            actors.append(rec.actor)
    finite = [r.demand for r in records if r.demand is not None and r.demand < _MAX_DEMAND]
    scale = math.log2(1 + max(finite)) if finite and max(finite) > 0 else 1.0
    demand_x = _GUTTER
    lanes_x = demand_x + _DEMAND * len(actors) + 16
    lanes_end = lanes_x + _LANE * len(lanes)
    needed = max(lanes_x + _LANE * lanes.index(r.thread) + 34 + len(_label(r)) * _CHAR for r in records)
    width = int(min(max(needed, lanes_end + 40), lanes_end + _TAIL))
    rows: list[tuple[str, _Record | int]] = []
    previous: int | None = None
    for rec in records:
        if previous is not None and rec.seq > previous + 1:
            rows.append(("gap", rec.seq - previous - 1))
        rows.append(("rec", rec))
        previous = rec.seq
    if trace_total > (previous or 0) + 1 and trace_total > len(records):
        rows.append(("gap", trace_total - (previous or 0) - 1))
    height = _HEAD + _ROW * len(rows) + 10

    out = [
        (f'<svg xmlns="http://www.w3.org/2000/svg" class="trace" role="img" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" aria-label="{_esc("signal trace: " + label)}">'),
        f"<title>{_esc('signal trace: ' + label)}</title>",
        (f'<text class="th" x="8" y="18">record</text><text class="th" x="{_GUTTER - 8}" y="18" '
        f'text-anchor="end">time</text>'),
    ]
    for i, actor in enumerate(actors):
        x = demand_x + _DEMAND * i
        out.append(f'<text class="th" x="{x + 4}" y="18">demand</text>'
                   f'<text class="th actor" x="{x + 4}" y="34">{_esc(_clip(actor, int((_DEMAND - 8) / _CHAR)))}'
                   f"<title>{_esc(actor)}</title></text>")
    bottom = height - 6
    for i, thread in enumerate(lanes):
        x = lanes_x + _LANE * i + 12
        out.append(f'<line class="lifeline" x1="{x}" y1="{_HEAD - 6}" x2="{x}" y2="{bottom}"/>')
        out.append(f'<text class="th lane" x="{x - 8}" y="18">{_esc(_clip(thread, int((_LANE - 12) / _CHAR)))}'
                   f"<title>{_esc('thread ' + thread)}</title></text>")
        out.append(f'<text class="th sub" x="{x - 8}" y="34">thread {i + 1}</text>')

    current: dict[str, int] = {}
    last_point: tuple[float, float] | None = None
    for index, (_kind, item) in enumerate(rows):
        y = _HEAD + _ROW * index + _ROW / 2
        if isinstance(item, int):
            out.append(f'<line class="gap" x1="8" y1="{y}" x2="{width - 8}" y2="{y}"/>'
                       f'<text class="gaptext" x="{lanes_x}" y="{y + 4}">… {item:,} record(s) not kept …</text>')
            last_point = None
            continue
        rec = item
        lane = lanes.index(rec.thread)
        x = lanes_x + _LANE * lane + 12
        violation = rec.signal == "note" and rec.detail.startswith("violation")
        if violation:
            out.append(f'<rect class="band" x="0" y="{y - _ROW / 2}" width="{width}" height="{_ROW}"/>')
        elif index % 2:
            out.append(f'<rect class="stripe" x="0" y="{y - _ROW / 2}" width="{width}" height="{_ROW}"/>')
        if rec.demand is not None:
            current[rec.actor] = rec.demand
        for i, actor in enumerate(actors):
            if actor not in current:
                continue
            d = current[actor]
            cx = demand_x + _DEMAND * i + 4
            full = _DEMAND - 12
            bar = full if d >= _MAX_DEMAND else (full * math.log2(1 + d) / scale if d > 0 else 0.0)
            own = actor == rec.actor and rec.demand is not None
            if bar > 0:
                out.append(f'<rect class="dbar{" own" if own else ""}" x="{cx}" y="{y - 6}" '
                           f'width="{bar:.1f}" height="12"/>')
            if own:
                out.append(f'<text class="dnum" x="{cx + 3}" y="{y + 4}">{_esc(_demand_text(d))}</text>')
        out.append(f'<text class="seq" x="8" y="{y + 4}">#{rec.seq}</text>'
                   f'<text class="seq" x="{_GUTTER - 8}" y="{y + 4}" text-anchor="end">{rec.t_ms:.3f} ms</text>')
        if last_point is not None and last_point[0] != x:
            out.append(f'<line class="handoff" x1="{last_point[0]}" y1="{last_point[1]}" x2="{x}" y2="{y}"/>')
        last_point = (x, y)
        out.append(_marker(rec.signal, x, y))
        text = _label(rec)
        demand = "" if rec.demand is None else f", demand {_demand_text(rec.demand)}"
        full_text = f"#{rec.seq} +{rec.t_ms:.3f} ms, thread {rec.thread}: {text}{demand}"
        room = int((width - x - 22) / _CHAR)
        cls = _SIGNAL_CLASS.get(rec.signal, "s-note")
        out.append(f'<text class="label {cls}{" violation" if violation else ""}" x="{x + 10}" y="{y + 4}">'
                   f"{_esc(_clip(text, room))}<title>{_esc(full_text)}</title></text>")
    out.append("</svg>")
    return "".join(out)


# -- the page -------------------------------------------------------------------------------

_CSS = """
:root { --fg:#1f2328; --muted:#656d76; --line:#d0d7de; --bg:#ffffff; --soft:#f6f8fa;
  --pass:#1a7f37; --fail:#cf222e; --error:#8250df; --opt:#9a6700; --na:#0969da; --unt:#6e7781; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif;
  color: var(--fg); background: var(--bg); }
main { max-width: 1500px; margin: 0 auto; padding: 24px 32px 64px; }
h1 { font-size: 24px; margin: 0 0 4px; } h2 { font-size: 19px; margin: 36px 0 10px;
  padding-bottom: 6px; border-bottom: 1px solid var(--line); }
h3 { font-size: 15px; margin: 0; } a { color: #0969da; text-decoration: none; } a:hover { text-decoration: underline; }
code, pre, .mono { font-family: ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: 12.5px; }
pre { background: var(--soft); border: 1px solid var(--line); border-radius: 6px; padding: 10px 12px;
  overflow-x: auto; white-space: pre-wrap; word-break: break-word; margin: 8px 0; }
.muted { color: var(--muted); } nav { margin: 6px 0 0; color: var(--muted); } nav a { margin-right: 14px; }
.banner { margin: 18px 0 8px; padding: 14px 18px; border-radius: 8px; font-size: 17px; font-weight: 600;
  border: 1px solid; }
.banner.ok { background: #dafbe1; border-color: #4ac26b; color: #116329; }
.banner.bad { background: #ffebe9; border-color: #ff8182; color: #a40e26; }
.banner.known { background: #fff8c5; border-color: #d4a72c; color: #7d4e00; }
.banner small { display: block; font-weight: 400; font-size: 13.5px; margin-top: 2px; }
.cards { display: flex; flex-wrap: wrap; gap: 10px; margin: 14px 0; }
.card { border: 1px solid var(--line); border-radius: 8px; padding: 8px 14px; min-width: 104px; background: var(--soft); }
.card b { display: block; font-size: 22px; } .card span { color: var(--muted); font-size: 12.5px; }
.card.c-failed b { color: var(--fail); } .card.c-passed b { color: var(--pass); }
.card.c-error b { color: var(--error); } .card.c-optional_unsupported b { color: var(--opt); }
.meta { display: grid; grid-template-columns: repeat(auto-fit, minmax(320px, 1fr)); gap: 16px; }
.meta table { width: 100%; }
table { border-collapse: collapse; } th, td { text-align: left; vertical-align: top; padding: 6px 10px;
  border-bottom: 1px solid var(--line); }
th { background: var(--soft); font-weight: 600; font-size: 13px; }
.kv th { background: none; font-weight: 500; color: var(--muted); width: 40%; white-space: nowrap; }
.kv td { word-break: break-all; }
table.rules { width: 100%; } table.rules td.rule { white-space: nowrap; font-weight: 600; }
table.rules td.kw { white-space: nowrap; font-size: 12px; color: var(--muted); }
table.rules td.summary { min-width: 260px; max-width: 420px; }
table.rules td.cell { min-width: 280px; }
tr.section th { background: #eaeef2; font-size: 12.5px; text-transform: uppercase; letter-spacing: .04em; }
.badge { display: inline-block; padding: 1px 8px; border-radius: 999px; font-size: 12px; font-weight: 600;
  border: 1px solid; white-space: nowrap; }
.v-passed { color: var(--pass); border-color: #4ac26b; background: #dafbe1; }
.v-failed { color: #fff; border-color: var(--fail); background: var(--fail); }
.v-failed.known { color: var(--fail); background: #fff8c5; border-color: var(--fail); border-style: dashed; }
.v-error { color: #fff; border-color: var(--error); background: var(--error); }
.v-optional_unsupported { color: var(--opt); border-color: #d4a72c; background: #fff8c5; }
.v-not_applicable { color: var(--na); border-color: #54aeff; background: #ddf4ff; }
.v-untested, .v-deselected { color: var(--unt); border-color: #d0d7de; background: #f6f8fa; }
.v-notrun { color: var(--muted); border-color: #d0d7de; background: #fff; font-weight: 400; font-style: italic; }
.reason { margin-top: 4px; font-size: 12.5px; color: var(--muted); word-break: break-word; }
.reason.fail { color: #a40e26; }
ul.tests { list-style: none; margin: 6px 0 0; padding: 0; font-size: 12.5px; }
ul.tests li { padding: 3px 0; border-top: 1px dashed #e5e8eb; word-break: break-word; }
ul.tests .name { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 11.5px; }
.lvl { display: inline-block; min-width: 64px; color: var(--muted); font-size: 11.5px; }
.none { color: #afb8c1; }
.filter { margin: 8px 0 12px; font-size: 13.5px; color: var(--muted); }
body:has(#only-problems:checked) tr.clean { display: none; }
article.failure { border: 1px solid var(--line); border-left: 4px solid var(--fail); border-radius: 8px;
  padding: 14px 18px; margin: 16px 0; }
article.failure.known { border-left-color: #d4a72c; }
article.failure.error { border-left-color: var(--error); }
article.failure header { display: flex; gap: 10px; align-items: baseline; flex-wrap: wrap; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 4px 14px; margin: 12px 0; }
dl.facts dt { color: var(--muted); } dl.facts dd { margin: 0; word-break: break-word; }
dd.expected { color: #116329; } dd.observed { color: #a40e26; font-weight: 500; }
.legend { display: flex; flex-wrap: wrap; gap: 14px; font-size: 12px; color: var(--muted); margin: 6px 0; }
.legend i { display: inline-block; width: 10px; height: 10px; border-radius: 50%; margin-right: 5px;
  vertical-align: -1px; }
.tracebox { max-height: 620px; overflow: auto; border: 1px solid var(--line); border-radius: 6px; background: #fff; }
svg.trace { display: block; font-family: ui-monospace, "DejaVu Sans Mono", Menlo, monospace; font-size: 11px; }
svg.trace .th { font-weight: 600; fill: var(--fg); font-size: 11.5px; }
svg.trace .th.sub, svg.trace .th.actor { font-weight: 400; fill: var(--muted); }
svg.trace .lifeline { stroke: #d0d7de; stroke-width: 1.5; stroke-dasharray: 4 3; }
svg.trace .handoff { stroke: #8c959f; stroke-width: 1; stroke-dasharray: 2 2; }
svg.trace .stripe { fill: #f6f8fa; } svg.trace .band { fill: #ffebe9; }
svg.trace .gap { stroke: #afb8c1; stroke-dasharray: 6 4; } svg.trace .gaptext { fill: var(--muted); font-style: italic; }
svg.trace .seq { fill: var(--muted); }
svg.trace .label { fill: var(--fg); paint-order: stroke; stroke: #fff; stroke-width: 3px; stroke-linejoin: round; }
svg.trace .label.violation { fill: var(--fail); font-weight: 700; stroke: #ffebe9; }
svg.trace .dbar { fill: #c8e1ff; } svg.trace .dbar.own { fill: #79b8ff; }
svg.trace .dnum { fill: #0a3069; font-weight: 600; }
.s-next { fill: #0969da; } .s-error { fill: var(--fail); } .s-complete { fill: var(--pass); }
.s-subscribe { fill: #8250df; } .s-request { fill: #bc4c00; } .s-cancel { stroke: #57606a; stroke-width: 2; fill: none; }
.s-note { fill: #57606a; }
svg.trace text.s-error { fill: var(--fail); } svg.trace text.s-complete { fill: var(--pass); }
svg.trace text.s-cancel { stroke: #fff; stroke-width: 3px; fill: #57606a; }
svg.trace text.s-note { fill: #57606a; font-style: italic; }
details summary { cursor: pointer; color: #0969da; font-size: 13px; margin: 6px 0; }
footer { margin-top: 40px; color: var(--muted); font-size: 12.5px; }
"""

_LEGEND = (
    '<div class="legend"><span><i style="background:#0969da"></i>on_next</span>'
    '<span><i style="background:#bc4c00"></i>request</span>'
    '<span><i style="background:#57606a"></i>cancel / TCK note</span>'
    '<span><i style="background:#8250df"></i>subscribe / on_subscribe</span>'
    '<span><i style="background:#1a7f37"></i>on_complete</span>'
    '<span><i style="background:#cf222e"></i>on_error / violation</span>'
    '<span><i style="background:#79b8ff;border-radius:2px"></i>outstanding demand of each probe '
    "(log scale; ∞ = unbounded)</span></div>"
)


def _format_setting(key: str, value: object) -> str:
    if isinstance(value, bool) or value is None:
        return str(value).lower()
    if isinstance(value, int) and value > 2**62 and 2**63 - value < 1000:
        return f"2**63-{2**63 - value}"
    if isinstance(value, float) and key.endswith("_ms"):
        return f"{value:g} ms"
    return str(value)


def _kv_table(caption: str, rows: Iterable[tuple[str, str]]) -> str:
    body = "".join(f"<tr><th>{_esc(k)}</th><td>{_esc(v)}</td></tr>" for k, v in rows)
    return f'<section><h3>{_esc(caption)}</h3><table class="kv">{body or "<tr><td>none</td></tr>"}</table></section>'


def _test_item(r: TestResult, anchors: Mapping[int, str], show_reason: bool) -> str:
    verdict = _verdict(r)
    name = f'<span class="name">{_esc(r.test)}</span>'
    if id(r) in anchors:
        name = f'<a href="#{anchors[id(r)]}">{name}</a>'
    reason = ""
    if show_reason and verdict != "passed" and r.message:
        cls = "reason fail" if _is_failure(r) else "reason"
        reason = f'<div class="{cls}">{_esc(_reason(r))}</div>'
    return (f'<li><span class="lvl">{_esc(r.level)}</span>{_badge(verdict, r.baseline == "known")} {name} '
            f'<span class="muted">{r.duration_s * 1000:.0f} ms</span>{reason}</li>')


def _cited_note(elsewhere: list[TestResult], anchors: Mapping[int, str]) -> str:
    """Failures of other rules' tests whose message says they broke this rule."""
    if not elsewhere:
        return ""
    links = ", ".join(
        f'<a href="#{anchors[id(r)]}">{_esc(r.rule or "sanity")}</a>' if id(r) in anchors else _esc(r.rule or "sanity")
        for r in elsewhere
    )
    return f'<div class="reason fail">broken as well while verifying rule {links}</div>'


def _counts_text(results: list[TestResult]) -> str:
    counts: dict[str, int] = {}
    for r in results:
        counts[_verdict(r)] = counts.get(_verdict(r), 0) + 1
    order = sorted(counts.items(), key=lambda kv: SEVERITY.index(kv[0]) if kv[0] in SEVERITY else len(SEVERITY))
    return ", ".join(f"{n} {LABELS.get(v, v)}" for v, n in order)


def _cell(results: list[TestResult], covered: bool, anchors: Mapping[int, str], rid: str,
          elsewhere: list[TestResult]) -> str:
    note = _cited_note(elsewhere, anchors)
    if not results:
        if covered:
            return ('<td class="cell"><span class="badge v-notrun">not run</span>'
                    f'<div class="reason">not selected in this run (--rs-rules / --rs-skip-rules)</div>{note}</td>')
        return (f'<td class="cell"><span class="none" title="no test of this verification checks rule {_esc(rid)}">'
                f"—</span>{note}</td>")
    worst = _worst(results)
    known = worst == "failed" and all(r.baseline == "known" for r in results if _verdict(r) == "failed")
    parts = [_badge(worst, known)]
    if len(results) == 1:
        r = results[0]
        name = _esc(r.test)
        if id(r) in anchors:
            name = f'<a href="#{anchors[id(r)]}">{name}</a>'
        if r.level != worst:
            parts.append(f' <span class="lvl">{_esc(r.level)}</span>')
        if worst != "passed" and r.message:
            cls = "reason fail" if _is_failure(r) else "reason"
            parts.append(f'<div class="{cls}">{_esc(_reason(r))}</div>')
        parts.append(f'<div class="reason mono">{name}</div>')
    else:
        parts.append(f' <span class="muted">{len(results)} tests: {_esc(_counts_text(results))}</span>')
        parts.append('<ul class="tests">' + "".join(_test_item(r, anchors, True) for r in results) + "</ul>")
    parts.append(note)
    return f'<td class="cell">{"".join(parts)}</td>'


def _rule_row(rule: Rule, by_verification: Mapping[str, list[TestResult]], columns: list[str],
              covered: Mapping[str, list[str]], anchors: Mapping[int, str],
              elsewhere: Mapping[str, list[TestResult]]) -> str:
    mine = [r for v in columns for r in by_verification.get(v, [])]
    clean = (not mine or _worst(mine) == "passed") and not any(elsewhere.values())
    cells = "".join(
        _cell(list(by_verification.get(v, [])), v in covered, anchors, rule.id, list(elsewhere.get(v, [])))
        for v in columns
    )
    return (f'<tr id="rule-{_anchor(rule.id)}" class="{"clean" if clean else "problem"}" data-rule="{_esc(rule.id)}">'
            f'<td class="rule"><a href="{_esc(rule.url)}" title="rule {_esc(rule.id)} in the specification">'
            f"{_esc(rule.id)}</a></td>"
            f'<td class="kw">{_esc(rule.strength.value)}</td><td class="summary">{_esc(rule.summary)}</td>'
            f"{cells}</tr>")


def _failure_article(r: TestResult, anchor: str) -> str:
    parsed = _parse_message(r.message)
    rule = RULES.get(r.rule or "")
    known = r.baseline == "known"
    kind = "error" if _verdict(r) == "error" else "failed"
    facts: list[tuple[str, str, str]] = []
    if rule is not None:
        facts.append(("rule", "", (f'<a href="{_esc(rule.url)}">{_esc(rule.id)}</a> '
                                   f"({_esc(rule.strength.value)}) {_esc(rule.summary)}")))
    else:
        facts.append(("rule", "", "sanity check of the factory"))
    cited = RULES.get(parsed.cited_rule or "")
    if cited is not None and (rule is None or cited.id != rule.id):
        facts.append(("broke rule", "observed",
                      (f'<a href="{_esc(cited.url)}">{_esc(cited.id)}</a> ({_esc(cited.strength.value)}) '
                      f"{_esc(cited.summary)}, while verifying the rule above")))
    facts.append(("test", "", (f'<code>{_esc(r.verification)}::{_esc(r.test)}</code> ({_esc(r.level)}, '
                              f"{r.duration_s * 1000:.1f} ms)")))
    if r.subject:
        facts.append(("subject", "", _esc(r.subject)))
    if parsed.expected:
        facts.append(("expected", "expected", _esc(parsed.expected)))
        facts.append(("observed", "observed", _esc(parsed.observed)))
    else:
        facts.append(("problem", "observed", _esc(parsed.headline)))
    if parsed.hint:
        facts.append(("check", "", _esc(parsed.hint)))
    if known:
        facts.append(("baseline", "", "a known deviation, listed in the baseline: it does not fail the run"))
    dl = "".join(f'<dt>{_esc(k)}</dt><dd class="{cls}">{v}</dd>' for k, cls, v in facts)
    title = f"rule {r.rule}" if r.rule else "sanity"
    total = f"{r.trace_total:,} record{'s' if r.trace_total != 1 else ''}"
    if r.trace_total > len(r.trace):
        total += f", {len(r.trace):,} kept"
    raw = (f"<details><summary>the trace as text</summary><pre>{_esc(parsed.trace_text)}</pre></details>"
           if parsed.trace_text else "")
    return (
        f'<article class="failure {kind}{" known" if known else ""}" id="{anchor}">'
        f"<header>{_badge(_verdict(r), known)}<h3>{_esc(title)} · {_esc(r.verification)} · "
        f'<span class="mono">{_esc(r.test)}</span></h3></header>'
        f'<dl class="facts">{dl}</dl>{_fuzz_scenario(r)}'
        f"<details><summary>the full message</summary><pre>{_esc(parsed.details)}</pre></details>"
        f'<h4>Signal trace <span class="muted">({_esc(total)})</span></h4>{_LEGEND}'
        f'<div class="tracebox">{trace_svg(r.trace, r.trace_total, f"{r.verification}::{r.test}")}</div>'
        f"{raw}</article>"
    )


def _fuzz_scenario(r: TestResult) -> str:
    """A fuzz failure's shrunk scenario as numbered steps, with the option that replays it."""
    fuzz = r.fuzz if isinstance(r.fuzz, Mapping) else None
    if fuzz is None:
        return ""
    steps = [str(step).split(". ", 1)[-1] for step in fuzz.get("scenario", []) or []]
    race = fuzz.get("race")
    note = ""
    if isinstance(race, Mapping):
        note = (f'<p class="muted">a race: the scenario failed {_esc(str(race.get("failed")))} of '
                f'{_esc(str(race.get("replays")))} replays</p>')
    items = "".join(f"<li>{_esc(step)}</li>" for step in steps)
    return (f'<section class="fuzz"><h4>Shrunk scenario</h4><ol class="mono">{items}</ol>{note}'
            f'<p>replay: <code>{_esc(str(fuzz.get("replay_option", "")))}</code></p></section>')


def _results(doc: Mapping[str, Any]) -> list[TestResult]:
    out = []
    for item in doc.get("results", []) or []:
        if isinstance(item, Mapping):
            try:
                out.append(TestResult.from_json(dict(item)))
            except (KeyError, TypeError, ValueError):
                continue
    return out


def render(doc: Mapping[str, Any]) -> str:
    """The whole report page for one results document (see ``rstck.results.document``)."""
    results = _results(doc)
    subjects = {str(k): str(v) for k, v in (doc.get("subjects") or {}).items()}
    settings = dict(doc.get("settings") or {})
    present = {r.verification for r in results}
    present |= {role for role in subjects if role in VERIFICATIONS}
    columns = [v for v in VERIFICATIONS if v in present] + sorted(present - set(VERIFICATIONS))

    failures = [r for r in results if _is_failure(r)]
    failures.sort(key=lambda r: (RULES[r.rule].sort_key if r.rule in RULES else (0, 0), r.verification, r.test))
    anchors: dict[int, str] = {}
    used: set[str] = set()
    for r in failures:
        anchor = base = "fail-" + _anchor(f"{r.verification}-{r.test}")
        n = 1
        while anchor in used:
            n += 1
            anchor = f"{base}-{n}"
        used.add(anchor)
        anchors[id(r)] = anchor

    by_rule: dict[str | None, dict[str, list[TestResult]]] = {}
    for r in results:
        by_rule.setdefault(r.rule if r.rule in RULES else None, {}).setdefault(r.verification, []).append(r)
    cov = coverage()
    cited_elsewhere: dict[str, dict[str, list[TestResult]]] = {}
    broken: set[str] = set()
    for r in failures:
        cited = _parse_message(r.message).cited_rule
        if cited in RULES:
            broken.add(cited)
            if cited != r.rule:
                cited_elsewhere.setdefault(cited, {}).setdefault(r.verification, []).append(r)

    counts: dict[str, int] = {v: 0 for v in SEVERITY}
    for r in results:
        counts[_verdict(r)] = counts.get(_verdict(r), 0) + 1
    known = sum(1 for r in failures if r.baseline == "known")
    new = len(failures) - known
    subject_text = ", ".join(subjects.get(v, v) for v in columns if v in subjects) or ", ".join(subjects.values())
    title = "Reactive Streams TCK report" + (f": {subject_text}" if subject_text else "")

    broken_text = ", ".join(sorted(broken, key=lambda rid: RULES[rid].sort_key))
    if not results:
        banner = '<div class="banner known">No test results in this run.</div>'
    elif new:
        also = f" and {known} known deviation(s)" if known else ""
        rules_text = f"Rules broken: {broken_text}. " if broken_text else ""
        banner = (f'<div class="banner bad">{new} failed test(s){also}'
                  f"<small>{_esc(rules_text)}Each failure is described below, with its signal trace.</small></div>")
    elif known:
        banner = (f'<div class="banner known">No new failure: {known} known deviation(s) listed in the baseline'
                  "<small>Every failure of this run is a known deviation.</small></div>")
    else:
        banner = ('<div class="banner ok">No failures<small>Every verification that ran passed, or does not '
                  "apply; the table shows optional behaviour and untested rules.</small></div>")

    duration = sum(r.duration_s for r in results)
    cards = [f'<div class="card"><b>{len(results)}</b><span>tests, {duration:.2f} s</span></div>']
    for verdict in ("passed", "failed", "error", "optional_unsupported", "not_applicable", "untested", "deselected"):
        if counts.get(verdict) or verdict in ("passed", "failed"):
            extra = f" ({known} known)" if verdict == "failed" and known else ""
            cards.append(f'<div class="card c-{verdict}"><b>{counts.get(verdict, 0)}</b>'
                         f"<span>{_esc(LABELS[verdict])}{extra}</span></div>")

    versions = [("TCK", str(doc.get("tck_version", "?"))), ("Python", str(doc.get("python", "?"))),
                ("results schema", str(doc.get("schema", SCHEMA))), ("specification", "Reactive Streams 1.0.1")]
    meta = (
        '<div class="meta">'
        + _kv_table("Subjects", subjects.items())
        + _kv_table("Versions", versions)
        + _kv_table("Settings", ((k, _format_setting(k, v)) for k, v in settings.items()))
        + "</div>"
    )

    head_cells = "".join(f"<th>{_esc(v)}</th>" for v in columns) or "<th>verdict</th>"
    rows = []
    section = 0
    for rule in RULES.values():
        if rule.section != section:
            section = rule.section
            rows.append(f'<tr class="section clean"><th colspan="{3 + max(len(columns), 1)}">'
                        f"{_esc(_SECTIONS.get(section, str(section)))}</th></tr>")
        rows.append(_rule_row(rule, by_rule.get(rule.id, {}), columns, cov.get(rule.id, {}), anchors,
                              cited_elsewhere.get(rule.id, {})))
    table = (f'<table class="rules" id="conformance"><thead><tr><th>rule</th><th>keyword</th><th>what it asks</th>'
             f"{head_cells}</tr></thead><tbody>{''.join(rows)}</tbody></table>")

    sanity = by_rule.get(None, {})
    sanity_html = ""
    if sanity:
        items = "".join(_test_item(r, anchors, True) for v in columns for r in sanity.get(v, []))
        items += "".join(_test_item(r, anchors, True) for v, rs in sanity.items() if v not in columns for r in rs)
        sanity_html = ('<h2 id="sanity">Sanity checks of the factory</h2><p class="muted">Not rules of the '
                       "specification: they check that the factory under test builds the streams the verifications "
                       f'ask for.</p><ul class="tests">{items}</ul>')

    failure_html = "".join(_failure_article(r, anchors[id(r)]) for r in failures)
    failures_section = (f'<h2 id="failures">Failures ({len(failures)})</h2>{failure_html}' if failures
                        else '<h2 id="failures">Failures</h2><p class="muted">None.</p>')
    nav = ('<nav><a href="#conformance-h">Conformance by rule</a>'
           + ('<a href="#sanity">Sanity checks</a>' if sanity_html else "")
           + f'<a href="#failures">Failures ({len(failures)})</a>'
           + f'<a href="{_esc(SPEC_URL)}">The specification</a></nav>')

    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_esc(title)}</title><style>{_CSS}</style></head><body><main>"
        f'<h1>Reactive Streams TCK report</h1><div class="muted">{_esc(subject_text or "no subject")}</div>{nav}'
        f'{banner}<div class="cards">{"".join(cards)}</div>{meta}'
        f'<h2 id="conformance-h">Conformance by rule</h2>'
        '<p class="muted">One row per rule of the specification; a cell shows the worst verdict of the tests '
        "that verify the rule, with the reason, and lists the tests when there are several. "
        '"—": this verification has no test for the rule.</p>'
        '<div class="filter"><label><input type="checkbox" id="only-problems"> show only rules that did not '
        "pass</label></div>"
        f"{table}{sanity_html}{failures_section}"
        f'<footer>rstck {_esc(doc.get("tck_version", "?"))} · results schema {_esc(doc.get("schema", SCHEMA))} · '
        "rendered from the results file; the page loads nothing and runs no script.</footer>"
        "</main></body></html>\n"
    )


_SECTIONS = {1: "1. Publisher", 2: "2. Subscriber", 3: "3. Subscription", 4: "4. Processor"}


def write(path: Path, doc: Mapping[str, Any]) -> None:
    """Write the report atomically, so a reader never sees half a page."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(render(doc), encoding="utf-8")
    tmp.replace(path)


# -- pytest wiring --------------------------------------------------------------------------


def check_writable(option: str, path: Path) -> str | None:
    """Why ``path`` cannot be written (for a usage error before any test runs), or None."""
    parent = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        return f"{option}={path}: is a directory; give a file path"
    if not parent.is_dir():
        return f"{option}={path}: directory {parent} does not exist"
    if not os.access(parent, os.W_OK):
        return f"{option}={path}: directory {parent} is not writable"
    return None


def add_options(group: pytest.OptionGroup) -> None:
    group.addoption(REPORT_HTML_OPTION, dest="rs_report_html", metavar="PATH",
                    help="Write a self-contained HTML report (conformance table, failures, signal traces) to PATH")


class HtmlReportWriter:
    """``--rs-report-html``: renders the results document when the run ends (an ``rstck`` hook)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @hookimpl
    def rstck_run_finished(self, document: dict[str, Any]) -> None:
        write(self.path, document)


def configure(config: pytest.Config, state: RsTckState) -> None:
    """Register the HTML report plugin when asked for; an unwritable path is a usage error."""
    import pytest  # here, not at module level: rendering a saved file needs no pytest

    raw = config.getoption("rs_report_html", None)
    if not raw:
        return
    path = Path(raw)
    problem = check_writable(REPORT_HTML_OPTION, path)
    if problem:
        raise pytest.UsageError(problem)
    state.hooks.register(HtmlReportWriter(path), "rs-tck-html-report")
