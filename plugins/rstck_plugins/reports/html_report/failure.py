"""One failed test, as the report's article: each problem it found, and the trace that shows it.

Everything here is read from the result's structured fields (``TestResult.failures``); the
message is shown whole for reference and never taken apart.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rstck.results import Failure
from rstck.results import Level
from rstck.results import TestResult
from rstck.results import Verdict
from rstck.rules import RULES
from rstck.rules import Rule
from rstck.settings import KNOBS_BY_NAME

from ..verdicts import race_count
from ..verdicts import verdict as _verdict
from .markup import badge
from .markup import esc
from .timeline import LEGEND
from .timeline import record_id
from .timeline import trace_svg

#: What a verdict that rests on a setting means for the reader.
_SETTING_NOTE = "a judgement of time or size: on a slow or busy machine, raise it first"


def reason_line(r: TestResult) -> str:
    """The one line a table cell shows: the first problem's headline, or why the test did not apply."""
    if r.failures:
        head = r.failures[0].headline()
    else:
        head = r.message.split("\n", 1)[0]
        label = r.verdict.replace("_", " ") + ": "
        head = head.removeprefix(label)
    return head if len(head) <= 400 else head[:399] + "…"


def _rule_text(rid: str, rules: Mapping[str, Rule] = RULES) -> str:
    rule = rules[rid]
    return f'<a href="{esc(rule.url)}">{esc(rule.id)}</a> ({esc(rule.strength.value)}) {esc(rule.summary)}'


def _setting_text(name: str, settings: Mapping[str, Any]) -> str:
    knob = KNOBS_BY_NAME.get(name)
    if knob is None:
        return esc(name)
    key = knob.name + ("_ms" if knob.kind == "ms" else "")
    value = settings.get(key)
    shown = "" if value is None else f" = {value:g} ms" if knob.kind == "ms" and isinstance(value, int | float) \
        else f" = {value}"
    return (f"<code>{esc(knob.name)}{esc(shown)}</code> (<code>{esc(knob.option)}</code>): "
            f"{esc(_SETTING_NOTE)}")


def _evidence_text(seqs: tuple[int, ...], r: TestResult, anchor: str) -> str:
    kept = {rec.get("seq"): rec for rec in r.trace if isinstance(rec, Mapping)}
    parts = []
    for seq in seqs:
        rec = kept.get(seq)
        if rec is None:
            parts.append(f'<span class="mono">#{seq}</span> <span class="muted">(not kept in the trace)</span>')
            continue
        what = f"{rec.get('actor', '')} {rec.get('signal', '')}({rec.get('detail', '')}) on {rec.get('thread', '?')}"
        parts.append(f'<a class="mono" href="#{record_id(anchor, seq)}">#{seq}</a> {esc(what)}')
    return "<br>".join(parts)


def _finding(f: Failure, r: TestResult, anchor: str, settings: Mapping[str, Any],
             rules: Mapping[str, Rule] = RULES) -> list[tuple[str, str, str]]:
    """The facts of one problem: (term, class, HTML)."""
    facts: list[tuple[str, str, str]] = []
    if f.rule is not None and f.rule in rules and f.rule != r.rule:
        facts.append(("broke rule", "observed", _rule_text(f.rule, rules) + ", while verifying the rule above"))
    facts.append(("expected", "expected", esc(f.expected)))
    facts.append(("observed", "observed", esc(f.observed)))
    if f.hint:
        facts.append(("check", "", esc(f.hint)))
    if f.setting:
        facts.append(("rests on", "", _setting_text(f.setting, settings)))
    if f.evidence:
        facts.append(("evidence", "", _evidence_text(f.evidence, r, anchor)))
    return facts


def _fuzz_scenario(r: TestResult) -> str:
    """A fuzz failure's shrunk scenario as numbered steps, with the option that replays it."""
    fuzz = r.fuzz if isinstance(r.fuzz, Mapping) else None
    if fuzz is None:
        return ""
    steps = [str(step).split(". ", 1)[-1] for step in fuzz.get("scenario", []) or []]
    race = fuzz.get("race")
    note = ""
    if isinstance(race, Mapping):
        note = (f'<p class="muted">a race: the scenario failed {esc(str(race.get("failed")))} of '
                f'{esc(str(race.get("replays")))} replays</p>')
    items = "".join(f"<li>{esc(step)}</li>" for step in steps)
    return (f'<section class="fuzz"><h4>Shrunk scenario</h4><ol class="mono">{items}</ol>{note}'
            f'<p>replay: <code>{esc(str(fuzz.get("replay_command") or fuzz.get("replay_option", "")))}</code>'
            '</p></section>')


def _dl(facts: list[tuple[str, str, str]]) -> str:
    return '<dl class="facts">' + "".join(f'<dt>{esc(k)}</dt><dd class="{c}">{v}</dd>' for k, c, v in facts) + "</dl>"


def failure_article(r: TestResult, anchor: str, settings: Mapping[str, Any],
                    rules: Mapping[str, Rule] = RULES) -> str:
    known = r.baseline == "known"
    kind = Verdict.ERROR if _verdict(r) == Verdict.ERROR else Verdict.FAILED
    facts = [("rule", "", _rule_text(r.rule, rules) if r.rule is not None and r.rule in rules else "sanity check of the factory")]
    facts.append(("test", "", (f'<code>{esc(r.key)}::{esc(r.test)}</code> ({esc(r.level)}, '
                               f"{r.duration_s * 1000:.1f} ms)")))
    if r.subject:
        facts.append(("subject", "", esc(r.subject)))
    if r.iterations is not None and r.level == Level.FUZZ:
        facts.append(("scenarios", "", esc(race_count([r]))))
    elif r.iterations is not None and r.iterations["showed"]:  # failed for another reason: no race
        ran, showed = r.iterations["ran"], r.iterations["showed"]
        facts.append(("race rounds", "", esc(f"{ran} run, {showed} of them showed the race this test hunts")))
    if known:
        facts.append(("baseline", "", "a known deviation, listed in the baseline: it does not fail the run"))
    findings = []
    for i, f in enumerate(r.failures, 1):
        head = (f'<h4>Problem {i} of {len(r.failures)}</h4>' if len(r.failures) > 1 else "")
        findings.append(f'<section class="finding" id="{anchor}-p{i}">{head}{_dl(_finding(f, r, anchor, settings, rules))}'
                        "</section>")
    if not r.failures:  # a result from before failures were recorded, or an error outside the TCK
        findings.append(_dl([("problem", "observed", esc(r.message.split("\n", 1)[0]))]))
    evidence = {seq for f in r.failures for seq in f.evidence}
    title = f"rule {r.rule}" if r.rule else "sanity"
    total = f"{r.trace_total:,} record{'s' if r.trace_total != 1 else ''}"
    if r.trace_total > len(r.trace):
        total += f", {len(r.trace):,} kept"
    if evidence:
        total += f"; {len(evidence)} cited as evidence, highlighted"
    svg = trace_svg(r.trace, r.trace_total, f"{r.key}::{r.test}", evidence=evidence, anchor=anchor)
    return (
        f'<article class="failure {kind}{" known" if known else ""}" id="{anchor}">'
        f"<header>{badge(_verdict(r), known)}<h3>{esc(title)} · {esc(r.key)} · "
        f'<span class="mono">{esc(r.test)}</span></h3></header>'
        f"{_dl(facts)}{''.join(findings)}{_fuzz_scenario(r)}"
        f"<details><summary>the full message, as the terminal shows it</summary><pre>{esc(r.message)}</pre>"
        "</details>"
        f'<h4>Signal trace <span class="muted">({esc(total)})</span></h4>{LEGEND}'
        f'<div class="tracebox">{svg}</div></article>'
    )
