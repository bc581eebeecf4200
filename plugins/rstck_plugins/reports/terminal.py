"""The per-rule summary at the end of a TCK run, for readers of a terminal or a CI log.

pytest lists tests; a TCK user asks about rules. The table folds every test of a rule into one
verdict per verification (the worst one), with how many tests of which level gave it.
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Mapping
from typing import Any

import pytest
from rstck.editions import DEFAULT as DEFAULT_EDITION
from rstck.editions import display_rules
from rstck.generated_docs import coverage
from rstck.generated_docs import edition_coverage
from rstck.results import FAILING
from rstck.results import LEVELS
from rstck.results import Level
from rstck.results import TestResult
from rstck.results import Verdict
from rstck.rules import RULES
from rstck.verifications import VERIFICATIONS

from .. import hookimpl
from ..state import RsTckState
from .verdicts import LABELS
from .verdicts import SEVERITY
from .verdicts import broken_rules
from .verdicts import counts
from .verdicts import inconclusive
from .verdicts import race_count
from .verdicts import shown
from .verdicts import verdict

#: The widest line the summary prints: a CI log or an 100-column terminal shows it whole.
WIDTH = 100


def _cell(results: list[TestResult]) -> tuple[str, str, str]:
    """(verdict, tests, colour) for one rule and one verification."""
    bad = shown(results)
    known = bad == Verdict.FAILED and all(r.baseline == "known" for r in results if verdict(r) == Verdict.FAILED)
    text = "FAILED" if bad in FAILING and not known else LABELS.get(bad, bad)
    if bad == Verdict.ERROR and all(inconclusive(r) for r in results if verdict(r) == Verdict.ERROR):
        text = "INCONCLUSIVE"  # too slow for the time limit: not a rule's failure (docs/verifications.md)
    if known:
        text = "known deviation"
    tests = counts((r.level for r in results), LEVELS)
    if len({verdict(r) for r in results}) > 1:
        tests += ": " + counts((verdict(r) for r in results), dict.fromkeys((bad, *SEVERITY)))
    races = race_count(results)
    if races:
        tests += f"; {races}"
    colour = {Verdict.PASSED: "green", Verdict.FAILED: "red", Verdict.ERROR: "red",
              Verdict.OPTIONAL_UNSUPPORTED: "yellow"}.get(bad, "")
    return text, tests, "yellow" if known else colour


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


def _key(r: TestResult, rules: Mapping[str, Any]) -> str:
    """The table row of a result: its rule, or "fuzz", or "sanity"."""
    if r.rule is not None and r.rule in rules:
        return r.rule
    return "fuzz" if r.level == Level.FUZZ else "sanity"


def table(results: list[TestResult], not_run: Iterable[tuple[str, str]] = (),
          width: int = WIDTH, edition: str = DEFAULT_EDITION) -> list[tuple[str, str]]:
    """The summary as (line, colour) pairs; colour is "", "green", "yellow" or "red".

    ``not_run``: (verification, row) of the selected tests that never ran (the run was
    interrupted). Lines fit ``width``: when the verifications side by side do not, each gets a
    table of its own, and a cell too long for the line continues on the next one. In an edition
    other than JVM 1.0.1 the rows are its own rules, the JVM id beside each.
    """
    present = list(dict.fromkeys(r.key for r in results))
    columns = [v for v in VERIFICATIONS if v in present] + [k for k in present if k not in VERIFICATIONS]
    blocks = [_table(results, columns, set(not_run), edition)]
    if len(columns) > 1 and max(len(text) for text, _ in blocks[0]) > width:
        blocks = [_table([r for r in results if r.key == v], [v],
                         {(name, row) for name, row in not_run if name == v}, edition) for v in columns]
    out: list[tuple[str, str]] = []
    for block in blocks:
        if out:
            out.append(("", ""))
        tests_at = block[0][0].find("tests")  # the header's: where a long line continues
        indent = tests_at if 0 < tests_at < width // 2 else 4
        out += [(text, colour) for line, colour in block for text in _fit(line, width, indent)]
    if edition != DEFAULT_EDITION:
        out.insert(0, (f"edition {edition}: rule ids are the edition's own, the JVM 1.0.1 id in brackets", ""))
    return out


def _fit(line: str, width: int, indent: int) -> list[str]:
    """``line`` cut at its last ", " or "; " before ``width``, continued indented by ``indent``."""
    out: list[str] = []
    while len(line) > width:
        cut = max(line.rfind(", ", 0, width), line.rfind("; ", 0, width), line.rfind("  ", 0, width))
        if cut <= indent:
            cut = line.rfind(" ", 0, width)
        if cut <= indent:
            cut = width - 1
        out.append(line[:cut + 1].rstrip())
        line = " " * indent + line[cut + 1:].lstrip()
    return [*out, line]


def _table(results: list[TestResult], columns: list[str], not_run: set[tuple[str, str]],
           edition: str = DEFAULT_EDITION) -> list[tuple[str, str]]:
    RULES = display_rules(edition)  # the module's table, for this edition
    by_rule: dict[str, dict[str, list[TestResult]]] = {}
    elsewhere: dict[str, set[str]] = {}
    for r in results:
        key = _key(r, RULES)
        by_rule.setdefault(key, {}).setdefault(r.key, []).append(r)
        for cited in broken_rules(r):
            if cited in RULES and cited != r.rule:
                elsewhere.setdefault(cited, set()).add(r.rule or "sanity")

    rows: list[tuple[list[str], str]] = []
    for rid in ["sanity", *RULES, "fuzz"]:
        if rid not in by_rule and rid not in elsewhere:  # a rule broken in other tests gets its row
            continue
        cells: list[str] = []
        colours: list[str] = []
        for v in columns:
            if v in by_rule.get(rid, {}):
                shown, tests, colour = _cell(by_rule[rid][v])
                cells += [shown, tests]
                colours.append(colour)
            else:
                cells += ["-", ""]
        note = ""
        if rid in elsewhere:
            note = "also broken in tests of " + ", ".join(sorted(elsewhere[rid], key=_rule_order))
            colours.append("red")
        keyword = RULES[rid].strength.value if rid in RULES else ""
        if edition != DEFAULT_EDITION and rid in RULES:
            jvm = getattr(RULES[rid], "jvm_id", None)
            rid = f"{rid} [JVM {jvm}]" if jvm else f"{rid} [{edition} only]"
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
    cov = coverage(columns) if edition == DEFAULT_EDITION else edition_coverage(edition, columns)
    show = ranges if edition == DEFAULT_EDITION else ", ".join
    missing = [rid for rid in RULES if rid not in by_rule and rid not in elsewhere]
    interrupted = [rid for rid in missing if any((v, rid) in not_run for v in columns)]
    not_selected = [rid for rid in missing if any(v in cov[rid] for v in columns) and rid not in interrupted]
    no_test = [rid for rid in missing if rid not in not_selected and rid not in interrupted]
    if interrupted:
        out.append((f"not run: interrupted: {show(interrupted)}", "red"))
    if not_selected:
        out.append((f"not selected in this run: {show(not_selected)}", ""))
    if no_test and columns:
        out.append((f"no test in {', '.join(columns)}: {show(no_test)}", ""))
    return out


#: How each kind is shown on a subject's line.
KIND_WORDS = {"publisher": "publisher", "subscriber_blackbox": "subscriber", "subscriber_whitebox": "whitebox",
              "processor": "processor"}


def subject_lines(results: list[TestResult], not_run: Iterable[tuple[str, str]] = (),
                  width: int = WIDTH) -> list[tuple[str, str]]:
    """One line per subject, for a run of several: its verdict, its counts, the rules it failed.

    ``map  publisher  FAILED  61 passed, 2 failed, 14 skipped; failed 1.9, 3.9``: thirty
    subjects are thirty lines, each within ``width``; the HTML report holds the rule x subject
    matrix, and pytest's own summary each failure.
    """
    keys = list(dict.fromkeys(r.key for r in results))
    missing = {key for key, _row in not_run}
    name_w = min(max((len(k) for k in keys), default=0), 24)
    rows: list[tuple[str, str]] = []
    for key in keys:
        mine = [r for r in results if r.key == key]
        failing = [r for r in mine if r.outcome in FAILING]
        new = [r for r in failing if r.baseline != "known"]
        word = "FAILED" if new else "known" if failing else "passed"
        colour = "red" if new else "yellow" if failing else "green"
        if key in missing:
            word, colour = "PARTIAL", "red"
        tally = counts((r.outcome for r in mine), ("passed", "failed", "error", "skipped"))
        failed_rules = {r.rule or ("fuzz" if r.level == Level.FUZZ else "sanity") for r in failing}
        ids = [rid for rid in failed_rules if rid in RULES]
        shown = ", ".join([rid for rid in ("sanity",) if rid in failed_rules] + ([ranges(ids)] if ids else [])
                          + [rid for rid in ("fuzz",) if rid in failed_rules])
        kind = KIND_WORDS.get(mine[0].verification, mine[0].verification)
        line = f"{key.ljust(name_w)}  {kind:<10}  {word:<7} {tally}"
        if shown:
            line += f"; {'known' if not new else 'failed'}: {shown}"
        rows += [(text, colour) for text in _fit(line, width, name_w + 2)]
    return rows


def _rule_order(rid: str) -> tuple[int, int]:
    return RULES[rid].sort_key if rid in RULES else (0, 0)


class TerminalSummary:
    """Prints the per-rule table after pytest's own summary sections.

    Takes results as every reporter does, from the ``rstck_result`` hook; prints through pytest's.
    """

    def __init__(self, state: RsTckState) -> None:
        self.state = state
        self.results: list[TestResult] = []

    @hookimpl
    def rstck_result(self, result: TestResult) -> None:
        self.results.append(result)

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        tr = terminalreporter
        if self.results and several_subjects(self.results):
            tr.write_sep("=", "rs-tck conformance by subject")
            for text, colour in subject_lines(self.results, self.state.not_run_tests):
                tr.write_line(text, **({colour: True} if colour else {}))
        elif self.results:
            tr.write_sep("=", "rs-tck conformance by rule")
            for text in sanity_first(self.results):
                tr.write_line(text, red=True)
            for text, colour in table(self.results, self.state.not_run_tests,
                                      edition=self.state.settings.edition):
                tr.write_line(text, **({colour: True} if colour else {}))
        for text, colour in files_and_problems(self.state):
            tr.write_line(text, **({colour: True} if colour else {}))


def several_subjects(results: list[TestResult]) -> bool:
    """Whether the run verified several subjects by id: then a line each, not a rule table."""
    return any(r.subject_id for r in results) and len({r.key for r in results}) > 1


def sanity_first(results: list[TestResult]) -> list[str]:
    """For each verification whose sanity check failed: say so first, with what probably follows.

    A factory that does not give what the TCK asks for (one element too many, say) fails many
    rules at once; the reader should fix the one cause, not chase each rule.
    """
    out = []
    for name in dict.fromkeys(r.key for r in results):
        mine = [r for r in results if r.key == name]
        sanity = [r for r in mine if r.rule is None and r.level != Level.FUZZ and r.outcome in FAILING]
        if not sanity:
            continue
        others = sum(1 for r in mine if r.outcome in FAILING and r not in sanity)
        follow = (f"; the other {others} failure(s) of {name} probably follow from it: fix it first"
                  if others else "")
        out.append(f"rs-tck: the sanity check of the {name} factory failed "
                   f"({sanity[0].test}){follow}")
    return out


def files_and_problems(state: RsTckState) -> list[tuple[str, str]]:
    """Whether the run was complete, and where each report file went or why it did not."""
    out: list[tuple[str, str]] = []
    if state.interrupted:
        missing = f", {state.not_run} test(s) not run" if state.not_run else ""
        out.append(((f"rs-tck: INCOMPLETE run: {state.interrupted}{missing}; the results file and the "
                    "HTML report say so"), "red"))
    for report in state.report_files:
        if report.problem == "":
            out.append((f"rs-tck: {report.kind} written to {report.path}", ""))
        elif report.problem is not None:
            out.append((f"rs-tck: {report.kind} not written: {report.path}: {report.problem}", "red"))
    out += [(f"rs-tck: {problem}", "red") for problem in state.finish_problems]
    return out


@hookimpl
def rstck_configure(config: pytest.Config, state: RsTckState) -> None:
    summary = TerminalSummary(state)
    state.hooks.register(summary, "rs-tck-terminal-summary")
    config.pluginmanager.register(summary, "rs-tck-terminal-summary")
