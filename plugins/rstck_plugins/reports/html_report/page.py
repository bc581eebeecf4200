"""The report page: the banner, the conformance table by rule, the sanity checks, the failures.

``render`` reads nothing but the results contract (``rstck.results.RunResults``: of the run,
or read back from its file), so a report can be made during the run or later from the JSON. The page loads nothing from the
network and runs no script; its stylesheet, ``style.css``, is inlined.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from rstck.editions import DEFAULT as DEFAULT_EDITION
from rstck.editions import EDITIONS
from rstck.editions import display_rules
from rstck.generated_docs import coverage
from rstck.generated_docs import edition_coverage
from rstck.results import SCHEMA
from rstck.results import Level
from rstck.results import RunResults
from rstck.results import TestResult
from rstck.results import Verdict
from rstck.rules import SPEC_URL
from rstck.rules import Rule
from rstck.verifications import VERIFICATIONS

from ..files import write_atomic
from ..verdicts import LABELS
from ..verdicts import SEVERITY
from ..verdicts import broken_rules
from ..verdicts import counts
from ..verdicts import is_failure as _is_failure
from ..verdicts import race_count
from ..verdicts import shown as _shown
from ..verdicts import verdict as _verdict
from .failure import failure_article
from .failure import reason_line
from .markup import anchor
from .markup import badge
from .markup import esc


@functools.cache
def stylesheet() -> str:
    return resources.files(__package__).joinpath("style.css").read_text(encoding="utf-8")


def _format_setting(key: str, value: object) -> str:
    if isinstance(value, bool) or value is None:
        return str(value).lower()
    if isinstance(value, int) and value > 2**62 and 2**63 - value < 1000:
        return f"2**63-{2**63 - value}"
    if isinstance(value, float) and key.endswith("_ms"):
        return f"{value:g} ms"
    return str(value)


def _kv_table(caption: str, rows: Iterable[tuple[str, str]]) -> str:
    body = "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in rows)
    return f'<section><h3>{esc(caption)}</h3><table class="kv">{body or "<tr><td>none</td></tr>"}</table></section>'


def _run_details(tables: str) -> str:
    """Subjects, versions and settings: after the failures and the table, folded (a reader
    comes for the failures; the 22 settings filled the first screen)."""
    return ('<h2 id="run">Subjects, versions and settings</h2><details class="run"><summary>show the '
            f"run's subjects, versions and resolved settings</summary>{tables}</details>")


def _race_note(results: Iterable[TestResult]) -> str:
    text = race_count(results)
    return f'<div class="reason iterations">{esc(text)}</div>' if text else ""


def _test_item(r: TestResult, anchors: Mapping[int, str], show_reason: bool) -> str:
    verdict = _verdict(r)
    name = f'<span class="name">{esc(r.test)}</span>'
    if id(r) in anchors:
        name = f'<a href="#{anchors[id(r)]}">{name}</a>'
    reason = ""
    if show_reason and verdict != Verdict.PASSED and r.message:
        cls = "reason fail" if _is_failure(r) else "reason"
        reason = f'<div class="{cls}">{esc(reason_line(r))}</div>'
    return (f'<li><span class="lvl">{esc(r.level)}</span>{badge(verdict, r.baseline == "known")} {name} '
            f'<span class="muted">{r.duration_s * 1000:.0f} ms</span>{reason}{_race_note([r])}</li>')


def _cited_note(elsewhere: list[TestResult], anchors: Mapping[int, str]) -> str:
    """Failures of other rules' tests that cite this rule as broken."""
    if not elsewhere:
        return ""
    links = ", ".join(
        f'<a href="#{anchors[id(r)]}">{esc(r.rule or "sanity")}</a>' if id(r) in anchors else esc(r.rule or "sanity")
        for r in elsewhere
    )
    return f'<div class="reason fail">broken as well while verifying rule {links}</div>'


def _counts_text(results: list[TestResult]) -> str:
    return counts(_verdict(r) for r in results)


def _cell(results: list[TestResult], covered: bool, anchors: Mapping[int, str], rid: str,
          elsewhere: list[TestResult], interrupted: bool = False) -> str:
    note = _cited_note(elsewhere, anchors)
    if not results:
        if covered:
            why = ("not run: the run was interrupted (or the rule was not selected)" if interrupted
                   else "not selected in this run (--rs-rules / --rs-skip-rules)")
            return ('<td class="cell"><span class="badge v-notrun">not run</span>'
                    f'<div class="reason">{why}</div>{note}</td>')
        return (f'<td class="cell"><span class="none" title="no test of this verification checks rule {esc(rid)}">'
                f"—</span>{note}</td>")
    worst = _shown(results)
    known = worst == Verdict.FAILED and all(r.baseline == "known" for r in results if _verdict(r) == Verdict.FAILED)
    parts = [badge(worst, known)]
    if len(results) == 1:
        r = results[0]
        name = esc(r.test)
        if id(r) in anchors:
            name = f'<a href="#{anchors[id(r)]}">{name}</a>'
        if str(r.level) != worst:  # one word, said once: an untested test's verdict
            parts.append(f' <span class="lvl">{esc(r.level)}</span>')
        if worst != Verdict.PASSED and r.message:
            cls = "reason fail" if _is_failure(r) else "reason"
            parts.append(f'<div class="{cls}">{esc(reason_line(r))}</div>')
        parts.append(f'<div class="reason mono">{name}</div>')
        parts.append(_race_note(results))
    else:
        parts.append(f' <span class="muted">{len(results)} tests: {esc(_counts_text(results))}</span>')
        parts.append('<ul class="tests">' + "".join(_test_item(r, anchors, True) for r in results) + "</ul>")
    parts.append(note)
    return f'<td class="cell">{"".join(parts)}</td>'


def _rule_row(rule: Rule, by_verification: Mapping[str, list[TestResult]], columns: list[str],
              covered: Mapping[str, list[str]], anchors: Mapping[int, str],
              elsewhere: Mapping[str, list[TestResult]], interrupted: bool = False,
              kinds: Mapping[str, str] | None = None) -> str:
    """One rule's row: a cell per column, a column per subject (its key; ``kinds`` maps it to its kind)."""
    kinds = kinds or {}
    mine = [r for v in columns for r in by_verification.get(v, [])]
    # Clean: every verification's cell shows passed (its other tests not applicable or untested).
    shown = [_shown(by_verification[v]) for v in columns if by_verification.get(v)]
    clean = (not mine or all(s == Verdict.PASSED for s in shown)) and not any(elsewhere.values())
    cells = "".join(
        _cell(list(by_verification.get(v, [])), kinds.get(v, v) in covered, anchors, rule.id,
              list(elsewhere.get(v, [])), interrupted)
        for v in columns
    )
    return (f'<tr id="rule-{anchor(rule.id)}" class="{"clean" if clean else "problem"}" data-rule="{esc(rule.id)}">'
            f'<td class="rule"><a href="{esc(rule.url)}" title="rule {esc(rule.id)} in the specification">'
            f"{esc(rule.id)}</a></td>"
            f'<td class="kw">{esc(rule.strength.value)}</td><td class="summary">{esc(rule.summary)}</td>'
            f"{cells}</tr>")


def wall_time(results: Iterable[TestResult]) -> float:
    """Seconds from the first test's start to the last one's verdict: what the run took.

    Tests overlap, so the sum of their durations is not it. Results without times (files
    written before they were recorded) fall back to that sum.
    """
    timed = [r for r in results if r.started_at > 0 and r.finished_at >= r.started_at]
    if not timed:
        return sum(r.duration_s for r in results)
    return max(r.finished_at for r in timed) - min(r.started_at for r in timed)


def failure_order(r: TestResult, rules: Mapping[str, Rule]) -> tuple[Any, ...]:
    """By rule; within a rule the simplest evidence first: one problem, a short trace, no fuzz."""
    rule = rules[r.rule].sort_key if r.rule is not None and r.rule in rules else (0, 0)
    return (rule, r.level == Level.FUZZ, len(r.failures), r.trace_total, r.verification, r.test)


def _anchors(failures: list[TestResult]) -> dict[int, str]:
    """Each failure's anchor in the page (by object id): its subject and test, made unique."""
    anchors: dict[int, str] = {}
    used: set[str] = set()
    for r in failures:
        name = base = "fail-" + anchor(f"{r.key}-{r.test}")
        n = 1
        while name in used:
            n += 1
            name = f"{base}-{n}"
        used.add(name)
        anchors[id(r)] = name
    return anchors


def _banner(run: RunResults, failures: list[TestResult], broken_text: str) -> str:
    """The verdict of the run in one line: failures, known deviations, none; incomplete first."""
    known = sum(1 for r in failures if r.baseline == "known")
    new = len(failures) - known
    if not run.results:
        banner = '<div class="banner known">No test results in this run.</div>'
    elif new:
        also = f" and {known} known deviation(s)" if known else ""
        rules_text = f"Rules broken: {broken_text}. " if broken_text else ""
        banner = (f'<div class="banner bad">{new} failed test(s){also}'
                  f"<small>{esc(rules_text)}Each failure is described below, with its signal trace.</small></div>")
    elif known:
        banner = (f'<div class="banner known">No new failure: {known} known deviation(s) listed in the baseline'
                  "<small>Every failure of this run is a known deviation.</small></div>")
    else:
        banner = ('<div class="banner ok">No failures<small>Every verification that ran passed, or does not '
                  "apply; the table shows optional behaviour and untested rules.</small></div>")
    if run.interrupted:
        missing = f"{run.not_run} selected test(s) did not run. " if isinstance(run.not_run, int) else ""
        banner = (f'<div class="banner bad" id="interrupted">Incomplete run: '
                  f"{esc(run.interrupted)}<small>{missing}This report shows only "
                  "the tests that ran; a rule without a verdict here was not verified.</small></div>" + banner)
    return banner


def _cards(results: list[TestResult], known: int) -> str:
    """The numbers at the top: tests, wall and summed time, one card per verdict that occurred."""
    tally: dict[str, int] = {v: 0 for v in SEVERITY}
    for r in results:
        tally[_verdict(r)] = tally.get(_verdict(r), 0) + 1
    summed = sum(r.duration_s for r in results)
    cards = [f'<div class="card" id="tests"><b>{len(results)}</b><span>tests</span></div>',
             f'<div class="card" id="wall-time"><b>{wall_time(results):.2f} s</b><span>wall time</span></div>',
             (f'<div class="card" id="summed-time"><b>{summed:.2f} s</b><span>summed test time (tests '
             "overlap)</span></div>")]
    for verdict in Verdict:
        if tally.get(verdict) or verdict in (Verdict.PASSED, Verdict.FAILED):
            extra = f" ({known} known)" if verdict == Verdict.FAILED and known else ""
            cards.append(f'<div class="card c-{verdict}"><b>{tally.get(verdict, 0)}</b>'
                         f"<span>{esc(LABELS[verdict])}{extra}</span></div>")
    return "".join(cards)


def _meta(run: RunResults, edition: str) -> str:
    """The run's subjects, versions and settings, folded away at the end of the page."""
    versions = [("TCK", run.tck_version), ("Python", run.python), ("results schema", SCHEMA),
                ("specification", "Reactive Streams 1.0.1" if edition == DEFAULT_EDITION
                 else f"edition {edition}: {EDITIONS[edition].title}; rule ids are its own, the JVM 1.0.1 id "
                 "in brackets")]
    return _run_details(
        '<div class="meta">'
        + _kv_table("Subjects", run.subjects.items())
        + _kv_table("Versions", versions)
        + _kv_table("Settings", ((k, _format_setting(k, v)) for k, v in run.settings.items()))
        + "</div>"
    )


def _broken(failures: list[TestResult], rules: Mapping[str, Rule]) -> tuple[set[str], dict[str, dict[str, list[TestResult]]]]:
    """The rules the failures break, and per rule the failures of other rules' tests that cite it."""
    cited_elsewhere: dict[str, dict[str, list[TestResult]]] = {}
    broken: set[str] = set()
    for r in failures:
        for cited in broken_rules(r):
            if cited not in rules:
                continue
            broken.add(cited)
            if cited != r.rule:
                cited_elsewhere.setdefault(cited, {}).setdefault(r.key, []).append(r)
    return broken, cited_elsewhere


def _sanity(sanity: Mapping[str, list[TestResult]], columns: list[str], anchors: Mapping[int, str]) -> str:
    if not sanity:
        return ""
    items = "".join(_test_item(r, anchors, True) for v in columns for r in sanity.get(v, []))
    items += "".join(_test_item(r, anchors, True) for v, rs in sanity.items() if v not in columns for r in rs)
    return ('<h2 id="sanity">Sanity checks of the factory</h2><p class="muted">Not rules of the '
            "specification: they check that the factory under test builds the streams the verifications "
            f'ask for.</p><ul class="tests">{items}</ul>')


def _nav(failures: int, subjects_html: str, sanity_html: str) -> str:
    return (f'<nav><a href="#failures">Failures ({failures})</a><a href="#conformance-h">Conformance by rule</a>'
            + ('<a href="#subjects">Subjects</a>' if subjects_html else "")
            + ('<a href="#sanity">Sanity checks</a>' if sanity_html else "")
            + '<a href="#run">Subjects, versions, settings</a>'
            + f'<a href="{esc(SPEC_URL)}">The specification</a></nav>')


def render(run: RunResults) -> str:
    """The whole report page of one run's results (during the run, or read back from its file).

    It is made from what the results file holds (times to the microsecond), so that a page
    written during a run and one rendered from its file later (``rs-tck report``) are the same:
    302.14999 ms shown from memory and 302.15 from the file differ in their last digit.
    """
    run = RunResults.from_json(run.to_json())
    results = run.results
    edition = run.edition if run.edition in EDITIONS else DEFAULT_EDITION
    RULES = display_rules(edition)  # the edition's rules, by its own ids
    subjects = run.subjects
    # A column per subject: its id in a run of several, else its kind (``TestResult.key``).
    present = list(dict.fromkeys(r.key for r in results))
    present += [role for role in subjects if role in VERIFICATIONS and role not in present]
    columns = [v for v in VERIFICATIONS if v in present] + [k for k in present if k not in VERIFICATIONS]
    kinds = {v: v for v in VERIFICATIONS} | {r.key: r.verification for r in results}

    failures = sorted((r for r in results if _is_failure(r)), key=lambda r: failure_order(r, RULES))
    anchors = _anchors(failures)
    by_rule: dict[str | None, dict[str, list[TestResult]]] = {}
    for r in results:
        by_rule.setdefault(r.rule if r.rule in RULES else None, {}).setdefault(r.key, []).append(r)
    shown = {kinds.get(v, v) for v in columns}  # the kinds whose tests the cells look up
    cov = coverage(shown) if edition == DEFAULT_EDITION else edition_coverage(edition, shown)
    broken, cited_elsewhere = _broken(failures, RULES)
    known = sum(1 for r in failures if r.baseline == "known")
    subject_text = ", ".join(subjects.get(v, v) for v in columns if v in subjects) or ", ".join(subjects.values())
    title = "Reactive Streams TCK report" + (f": {subject_text}" if subject_text else "")
    banner = _banner(run, failures, ", ".join(sorted(broken, key=lambda rid: RULES[rid].sort_key)))

    several = any(r.subject_id for r in results) and len(columns) > 1
    head_cells = "".join(
        f'<th><a href="#subject-{anchor(v)}">{esc(v)}</a><br><small>{esc(kinds.get(v, v))}</small></th>'
        if several else f"<th>{esc(v)}</th>" for v in columns) or "<th>verdict</th>"
    rows = []
    section = 0
    for rule in RULES.values():
        if rule.section != section:
            section = rule.section
            rows.append(f'<tr class="section clean"><th colspan="{3 + max(len(columns), 1)}">'
                        f"{esc(_SECTIONS.get(section, str(section)))}</th></tr>")
        rows.append(_rule_row(rule, by_rule.get(rule.id, {}), columns, cov.get(rule.id, {}), anchors,
                              cited_elsewhere.get(rule.id, {}), bool(run.interrupted), kinds))
    table = (f'<table class="rules" id="conformance"><thead><tr><th>rule</th><th>keyword</th><th>what it asks</th>'
             f"{head_cells}</tr></thead><tbody>{''.join(rows)}</tbody></table>")

    sanity_html = _sanity(by_rule.get(None, {}), columns, anchors)
    subjects_html = _subject_sections(results, columns, kinds, subjects, anchors) if several else ""
    failure_html = "".join(failure_article(r, anchors[id(r)], run.settings, RULES) for r in failures)
    failures_section = (f'<h2 id="failures">Failures ({len(failures)})</h2>{failure_html}' if failures
                        else '<h2 id="failures">Failures</h2><p class="muted">None.</p>')
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{stylesheet()}</style></head><body><main>"
        f'<h1>Reactive Streams TCK report</h1><div class="muted">{esc(subject_text or "no subject")}</div>'
        f'{_nav(len(failures), subjects_html, sanity_html)}'
        f'{banner}<div class="cards">{_cards(results, known)}</div>{failures_section}'
        f'<h2 id="conformance-h">Conformance by rule</h2>'
        '<p class="muted">One row per rule of the specification; a cell shows failed if a test of the rule '
        "failed, else passed if one passed, else the verdict of its tests, with the reason, and lists the "
        "tests when there are several. "
        '"—": this verification has no test for the rule.</p>'
        '<div class="filter"><label><input type="checkbox" id="only-problems"> show only rules that did not '
        "pass</label></div>"
        f"{table}{subjects_html}{sanity_html}{_meta(run, edition)}"
        f"<footer>rstck {esc(run.tck_version)} · results schema {esc(SCHEMA)} · "
        "rendered from the results file; the page loads nothing and runs no script.</footer>"
        "</main></body></html>\n"
    )


def _subject_sections(results: list[TestResult], columns: list[str], kinds: Mapping[str, str],
                      subjects: Mapping[str, str], anchors: Mapping[int, str]) -> str:
    """A section per subject of a run of several: what it is, its verdicts, the tests that failed."""
    out = ['<h2 id="subjects">Subjects</h2>']
    for key in columns:
        mine = [r for r in results if r.key == key]
        failing = [r for r in mine if _is_failure(r)]
        items = "".join(_test_item(r, anchors, True) for r in failing)
        out.append(
            f'<section class="subject" id="subject-{anchor(key)}"><h3>{esc(key)} '
            f'<small class="muted">{esc(kinds.get(key, key))} · {esc(subjects.get(key, ""))}</small></h3>'
            f'<p>{badge(_shown(mine) if mine else Verdict.DESELECTED, bool(failing) and all(r.baseline == "known" for r in failing))} '
            f'{len(mine)} tests: {esc(_counts_text(mine))}</p>'
            + (f'<ul class="tests">{items}</ul>' if items else "") + "</section>")
    return "".join(out)


_SECTIONS = {1: "1. Publisher", 2: "2. Subscriber", 3: "3. Subscription", 4: "4. Processor"}


def write(path: Path, run: RunResults) -> None:
    """Write the report atomically, so a reader never sees half a page."""
    write_atomic(path, render(run))
