"""The campaign report: one self-contained HTML page, every value escaped.

A matrix of subjects x rules coloured by pass rate (sized to fit a 1280-1400 px page), the
flaky tests first with their failure rate, its 95 % interval, why they failed (the first
failure's message and signal trace) and the pytest command that reproduces it, then every
test's duration distribution as an SVG box plot on its own scale, and each rule's pass rate
over the runs in the dataset.
"""

from __future__ import annotations

import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from rstck.rules import RULES

from ..reports import esc as _esc

#: Matrix geometry: a subject column and one narrow column per rule; 47 rule columns (every
#: rule, sanity and fuzz) fit a 1280 px page.
SUBJECT_PX = 170
CELL_PX = 23
#: Lines of a failure's message shown in the report (``rs-tck show`` prints all of it).
EXCERPT_LINES = 40

_STYLE = f"""
body{{font:14px/1.45 system-ui,sans-serif;margin:2em;color:#222;max-width:1340px}}
h1{{font-size:1.5em}}h2{{font-size:1.2em;margin-top:2em}}
table{{border-collapse:collapse;margin:.5em 0}}td,th{{border:1px solid #ccc;padding:3px 6px;text-align:left;vertical-align:top}}
th{{background:#f4f4f4}}
table.matrix{{table-layout:fixed}}table.matrix td,table.matrix th{{padding:2px 1px;font-size:10px;overflow:hidden}}
table.matrix th.subject{{width:{SUBJECT_PX}px;overflow-wrap:anywhere;font-size:11px}}
table.matrix th.rule{{width:{CELL_PX}px;writing-mode:vertical-rl;transform:rotate(180deg);text-align:left;height:3.2em}}
td.rate{{text-align:center}}
.r100{{background:#b9e4b9}}.rmid{{background:#ffd68a}}.r0{{background:#f2a3a3}}.rna{{background:#eee;color:#999}}
code{{font-size:12px}}.muted{{color:#777}}
pre{{font-size:12px;margin:.3em 0;white-space:pre-wrap;overflow-wrap:break-word;word-break:normal}}
pre.cmd{{background:#f6f8fa;padding:4px 6px}}pre.trace{{max-height:32em;overflow:auto;background:#fbfbfb;padding:4px 6px}}
td.detail{{border-top:none;padding-left:1.5em}}
svg text{{font:11px system-ui,sans-serif}}
"""


def _rate_class(rate: float | None) -> str:
    if rate is None:
        return "rna"
    return "r100" if rate >= 1 else "r0" if rate <= 0 else "rmid"


def _pct(rate: float | None) -> str:
    return "n/a" if rate is None else f"{rate * 100:.0f}%" if rate in (0, 1) else f"{rate * 100:.1f}%"


def _rule_key(rule: str) -> tuple[int, ...]:
    return tuple(int(p) for p in rule.split(".")) if rule in RULES else (99,)


def matrix(rows: list[dict[str, Any]]) -> str:
    cells: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for r in rows:
        cell = cells[(r["subject"], r["rule"])]
        cell[0] += r["runs"]
        cell[1] += r["passed"]
    subjects = sorted({r["subject"] for r in rows})
    rules = sorted({r["rule"] for r in rows}, key=_rule_key)
    about = {"sanity": "checks of the factory itself", "fuzz": "fuzz tests (every rule they can observe)"}
    head = "".join(f"<th class=\"rule\" title=\"{_esc(RULES[x].summary if x in RULES else about.get(x, x))}\">"
                   f"{_esc(x)}</th>" for x in rules)
    body = []
    for subject in subjects:
        tds = []
        for rule in rules:
            runs, passed = cells.get((subject, rule), [0, 0])
            rate = passed / runs if runs else None
            title = f"{subject} rule {rule}: {passed} of {runs} runs passed"
            shown = "" if rate is None else f"{rate * 100:.0f}" if rate in (0, 1) else f"{min(99.0, rate * 100):.0f}"
            tds.append(f"<td class=\"rate {_rate_class(rate)}\" title=\"{_esc(title)}\">{_esc(shown)}</td>")
        body.append(f"<tr><th class=\"subject\">{_esc(subject)}</th>{''.join(tds)}</tr>")
    width = SUBJECT_PX + CELL_PX * len(rules)
    return (f"<p class=\"muted\">Percent of runs passed; hover a cell for its counts.</p>"
            f"<table class=\"matrix\" style=\"width:{width}px\"><tr><th class=\"subject\">subject \\ rule</th>"
            f"{head}</tr>{''.join(body)}</table>")


def _interval(r: dict[str, Any]) -> str:
    ci = r.get("pass_rate_ci95")
    return f"pass rate {_pct(r['pass_rate'])}, 95% interval {_pct(ci[0])}-{_pct(ci[1])}" if ci else ""


def _command_lines(command: str) -> str:
    """A long command, one option a line (shell continuations): wraps between words, pastes whole."""
    import shlex

    try:
        words = shlex.split(command)
    except ValueError:
        return command
    lines: list[str] = []
    for i, word in enumerate(words):
        quoted = word if "=" in word and i == 0 and word.split("=")[0].isupper() else shlex.quote(word)
        if lines and word.startswith("-") and words[i - 1] not in ("-k", "-p"):
            lines.append(quoted)
        elif lines:
            lines[-1] += " " + quoted
        else:
            lines.append(quoted)
    return " \\\n    ".join(lines)


def failing_table(rows: list[dict[str, Any]], details: list[dict[str, Any]] | None = None) -> str:
    shown = [r for r in rows if r["failed"] or r["errors"]]
    if not shown:
        return "<p>No test failed in any run.</p>"
    why = {(d["subject"], d["verification"], d["test"]): d for d in details or []}
    out = [("<table><tr><th>subject</th><th>test</th><th>failure rate</th><th>runs</th>"
            "<th>first failure</th></tr>")]
    for r in shown:
        fail = (r["failed"] + r["errors"]) / r["runs"] if r["runs"] else 0.0
        kind = "flaky" if r["flaky"] else "always"
        cited = ", ".join(r.get("failure_rules") or ([r["first_failure_rule"]] if r.get("first_failure_rule") else []))
        first = (f"seed {r['first_failing_seed']}" if r.get("first_failing_seed") is not None else "") + (
            f"; failures cite rule {cited}" if cited else "")
        out.append(
            f"<tr><td>{_esc(r['subject'])}</td><td>{_esc(r['test'])}<br><span class=\"muted\">rule "
            f"{_esc(r['rule'])}, {_esc(r['verification'])}; {_esc(kind)}</span></td>"
            f"<td class=\"rate {_rate_class(1 - fail)}\">{_esc(_pct(fail))}<br><span class=\"muted\">"
            f"{_esc(_interval(r))}</span></td>"
            f"<td>{r['runs']} ({r['failed']} failed, {r['errors']} errors)</td><td>{_esc(first)}</td></tr>"
        )
        detail = why.get((r["subject"], r["verification"], r["test"]))
        message = (detail or {}).get("message") or r.get("first_failure_observed") or ""
        lines = message.splitlines()
        excerpt = "\n".join(lines[:EXCERPT_LINES]) + (
            f"\n... {len(lines) - EXCERPT_LINES} more lines: rs-tck show DIR {r['test']}" if len(lines) > EXCERPT_LINES else "")
        headline = lines[0] if lines else ""
        repro = r.get("repro")
        out.append(
            f"<tr><td class=\"detail\" colspan=\"5\"><details><summary>why: {_esc(headline[:200])}</summary>"
            f"<pre class=\"trace\">{_esc(excerpt)}</pre></details>"
            + (f"repro:<pre class=\"cmd\">{_esc(_command_lines(repro))}</pre>" if repro else "")
            + "</td></tr>"
        )
    out.append("</table>")
    return "".join(out)


def box_plots(rows: list[dict[str, Any]]) -> str:
    """Per subject, one horizontal box (p25-p75, p50 line, p05-p95 whiskers, max dot) per test."""
    out = []
    for subject in sorted({r["subject"] for r in rows}):
        mine = sorted((r for r in rows if r["subject"] == subject and r["max_s"] is not None),
                      key=lambda r: (_rule_key(r["rule"]), r["test"]))
        if not mine:
            continue
        width, label_w, row_h, right_w = 1000, 360, 14, 90
        span = width - label_w - right_w

        parts = [(f"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{row_h * len(mine) + 24}\" "
                  f"role=\"img\" aria-label=\"{_esc('durations of ' + subject)}\">")]
        for i, r in enumerate(mine):
            # Each test on its own scale (0 to its max): one long test must not squash the others.
            scale = span / (r["max_s"] or 1.0)

            def x(v: float | None, scale: float = scale, left: int = label_w) -> float:
                return left + float(v or 0) * scale

            y = 4 + i * row_h
            title = (f"{r['test']}: p05 {r['p05_s']} s, p50 {r['p50_s']} s, p95 {r['p95_s']} s, "
                     f"max {r['max_s']} s over {r['runs']} runs")
            parts.append(
                f"<g><title>{_esc(title)}</title>"
                f"<text x=\"{label_w - 6}\" y=\"{y + 10}\" text-anchor=\"end\">{_esc(r['rule'])} "
                f"{_esc(r['test'][:48])}</text>"
                f"<line x1=\"{x(r['p05_s']):.1f}\" x2=\"{x(r['p95_s']):.1f}\" y1=\"{y + 6}\" y2=\"{y + 6}\" stroke=\"#888\"/>"
                f"<rect x=\"{x(r['p25_s']):.1f}\" y=\"{y + 1}\" width=\"{max(1.0, x(r['p75_s']) - x(r['p25_s'])):.1f}\" "
                f"height=\"10\" fill=\"#9ec5e8\" stroke=\"#4a7fb0\"/>"
                f"<line x1=\"{x(r['p50_s']):.1f}\" x2=\"{x(r['p50_s']):.1f}\" y1=\"{y}\" y2=\"{y + 12}\" stroke=\"#123\"/>"
                f"<circle cx=\"{x(r['max_s']):.1f}\" cy=\"{y + 6}\" r=\"2\" fill=\"#c33\"/>"
                f"<text x=\"{label_w + span + 6}\" y=\"{y + 10}\">{float(r['max_s']):.3g} s</text></g>"
            )
        axis_y = 4 + len(mine) * row_h + 12
        parts.append(f"<text x=\"{label_w}\" y=\"{axis_y}\">each row from 0 s to its own max (right)</text></svg>")
        out.append(f"<h3>{_esc(subject)}</h3>{''.join(parts)}")
    return "".join(out) or "<p>No durations.</p>"


def trend_lines(points: list[dict[str, Any]]) -> str:
    by_rule: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for p in points:
        by_rule[p["rule"]].append(p)
    rows = []
    for rule in sorted(by_rule, key=_rule_key):
        series = by_rule[rule]
        w, h = 160, 24
        step = w / max(1, len(series) - 1)
        coords = " ".join(f"{i * step:.1f},{h - 2 - (p['pass_rate'] or 0) * (h - 4):.1f}" for i, p in enumerate(series))
        title = "; ".join(f"{p['run']}: {_pct(p['pass_rate'])} of {p['runs']}" for p in series)
        svg = (f"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w + 4}\" height=\"{h}\"><title>{_esc(title)}</title>"
               f"<polyline points=\"{coords}\" fill=\"none\" stroke=\"#4a7fb0\" stroke-width=\"1.5\"/></svg>")
        executions = sum(p["runs"] for p in series)
        rows.append(f"<tr><td>{_esc(rule)}</td><td>{len(series)}</td><td>{executions}</td>"
                    f"<td>{_esc(_pct(series[-1]['pass_rate']))}</td><td>{svg}</td></tr>")
    return ("<table><tr><th>rule</th><th>campaigns and ingests</th><th>test executions</th>"
            "<th>latest pass rate</th><th>pass rate over time</th></tr>" + "".join(rows) + "</table>")


def _partial(manifest: dict[str, Any]) -> str:
    count = manifest.get("partial")
    return f", {count} of them partial (interrupted runs)" if count else ""


def render(rows: list[dict[str, Any]], points: list[dict[str, Any]], campaigns: dict[str, dict[str, Any]],
           details: list[dict[str, Any]] | None = None) -> str:
    runs = sum(r["runs"] for r in rows)
    failing = sum(r["failed"] + r["errors"] for r in rows)
    flaky = sum(1 for r in rows if r["flaky"])
    listed = "".join(
        f"<li><code>{_esc(cid)}</code>: {_esc(m.get('kind', 'campaign'))}, {_esc(m.get('units_total', ''))} units"
        f"{_partial(m)}"
        f"{', ' + _esc(m['command']) if m.get('command') else ''}</li>"
        for cid, m in sorted(campaigns.items())
    )
    return (
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<title>Reactive Streams TCK campaign report</title>"
        f"<style>{_STYLE}</style></head><body>"
        "<h1>Reactive Streams TCK: campaign report</h1>"
        f"<p>{runs} test executions, {failing} failed or errored; {flaky} flaky test(s) "
        f"(passed in some runs, failed in others). Generated {_esc(time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime()))}.</p>"
        f"<h2>Pass rate by subject and rule</h2>{matrix(rows)}"
        f"<h2>Failing tests (flaky first)</h2>{failing_table(rows, details)}"
        f"<h2>Durations (box: p25-p75, line: p50, whiskers: p05-p95, dot: max)</h2>{box_plots(rows)}"
        f"<h2>Pass rate per rule over runs</h2>{trend_lines(points)}"
        f"<h2>Runs in this dataset</h2><ul>{listed}</ul>"
        "</body></html>\n"
    )


def write(path: Path, rows: list[dict[str, Any]], points: list[dict[str, Any]], campaigns: dict[str, dict[str, Any]],
          details: list[dict[str, Any]] | None = None) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(render(rows, points, campaigns, details), encoding="utf-8")
    tmp.replace(path)
