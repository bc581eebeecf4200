"""The per-rule summary at the end of a TCK run, for readers of a terminal or a CI log.

pytest lists tests; a TCK user asks about rules. The table folds every test of a rule into one
verdict per verification (the worst one), with how many tests of which level gave it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import pytest
from rstck.catalogue import coverage
from rstck.results import TestResult
from rstck.rules import RULES
from rstck.verifications import VERIFICATIONS

from .html_report import LABELS
from .html_report import SEVERITY
from .html_report import cited_rule

if TYPE_CHECKING:
    from .pytest_plugin import RsTckState

_FAILING = ("failed", "error")


def _verdict(r: TestResult) -> str:
    return r.verdict if r.verdict in LABELS else r.outcome


def _worst(results: list[TestResult]) -> str:
    verdicts = {_verdict(r) for r in results}
    return next((v for v in SEVERITY if v in verdicts), "passed")


def _counts(items: Iterable[str], order: Iterable[str]) -> str:
    counts: dict[str, int] = {}
    for item in items:
        counts[item] = counts.get(item, 0) + 1
    ranked = [k for k in order if k in counts] + sorted(k for k in counts if k not in order)
    return ", ".join(f"{counts[k]} {LABELS.get(k, k)}" for k in ranked)


def _cell(results: list[TestResult]) -> tuple[str, str, str]:
    """(verdict, tests, colour) for one rule and one verification."""
    worst = _worst(results)
    known = worst == "failed" and all(r.baseline == "known" for r in results if _verdict(r) == "failed")
    verdict = "FAILED" if worst in _FAILING and not known else LABELS.get(worst, worst)
    if known:
        verdict = "known deviation"
    tests = _counts((r.level for r in results), ("required", "optional", "stochastic", "untested", "fuzz"))
    if len({_verdict(r) for r in results}) > 1:
        tests += ": " + _counts((_verdict(r) for r in results), SEVERITY)
    colour = {"passed": "green", "failed": "red", "error": "red", "optional_unsupported": "yellow"}.get(worst, "")
    return verdict, tests, "yellow" if known else colour


def ranges(ids: list[str]) -> str:
    """``2.1, 2.2, ... 2.13, 4.1, 4.2`` as ``2.1-2.13, 4.1-4.2``: runs within one section."""
    ordered = [rid for rid in RULES if rid in ids]
    out: list[str] = []
    run: list[str] = []
    for rid in ordered:
        if run and RULES[rid].section == RULES[run[-1]].section and list(RULES).index(rid) == list(RULES).index(run[-1]) + 1:
            run.append(rid)
            continue
        if run:
            out.append(run[0] if len(run) == 1 else f"{run[0]}-{run[-1]}")
        run = [rid]
    if run:
        out.append(run[0] if len(run) == 1 else f"{run[0]}-{run[-1]}")
    return ", ".join(out)


def table(results: list[TestResult]) -> list[tuple[str, str]]:
    """The summary as (line, colour) pairs; colour is "", "green", "yellow" or "red"."""
    present = {r.verification for r in results}
    columns = [v for v in VERIFICATIONS if v in present] + sorted(present - set(VERIFICATIONS))
    by_rule: dict[str, dict[str, list[TestResult]]] = {}
    elsewhere: dict[str, set[str]] = {}
    for r in results:
        key = r.rule if r.rule in RULES else "fuzz" if r.level == "fuzz" else "sanity"
        by_rule.setdefault(key, {}).setdefault(r.verification, []).append(r)
        cited = cited_rule(r.message) if r.outcome in _FAILING else None
        if cited in RULES and cited != r.rule:
            elsewhere.setdefault(cited, set()).add(r.rule or "sanity")

    rows: list[tuple[list[str], str]] = []
    for rid in ["sanity", *RULES, "fuzz"]:
        if rid not in by_rule:
            continue
        cells: list[str] = []
        colours: list[str] = []
        for v in columns:
            if v in by_rule[rid]:
                verdict, tests, colour = _cell(by_rule[rid][v])
                cells += [verdict, tests]
                colours.append(colour)
            else:
                cells += ["-", ""]
        note = ""
        if rid in elsewhere:
            note = "also broken in tests of " + ", ".join(sorted(elsewhere[rid], key=_rule_order))
            colours.append("red")
        keyword = RULES[rid].strength.value if rid in RULES else ""
        colour = next((c for c in ("red", "yellow", "green") if c in colours), "")
        rows.append(([rid, keyword, *cells, note], colour))

    header = ["rule", "keyword"]
    for v in columns:
        header += [v, "tests"]
    header.append("")
    widths = [max(len(row[i]) for row in [header, *(r for r, _ in rows)]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()

    out = [(line(header), "")] + [(line(cells), colour) for cells, colour in rows]
    cov = coverage()
    missing = [rid for rid in RULES if rid not in by_rule]
    not_selected = [rid for rid in missing if any(v in cov[rid] for v in columns)]
    no_test = [rid for rid in missing if rid not in not_selected]
    if not_selected:
        out.append((f"not selected in this run: {ranges(not_selected)}", ""))
    if no_test and columns:
        out.append((f"no test in {', '.join(columns)}: {ranges(no_test)}", ""))
    return out


def _rule_order(rid: str) -> tuple[int, int]:
    return RULES[rid].sort_key if rid in RULES else (0, 0)


class TerminalSummary:
    """Prints the per-rule table after pytest's own summary sections."""

    def __init__(self, state: RsTckState) -> None:
        self.state = state

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if not self.state.active or not self.state.results:
            return
        tr = terminalreporter
        tr.write_sep("=", "rs-tck conformance by rule")
        for text, colour in table(self.state.results):
            tr.write_line(text, **({colour: True} if colour else {}))


def configure(config: pytest.Config, state: RsTckState) -> None:
    config.pluginmanager.register(TerminalSummary(state), "rs-tck-terminal-summary")
