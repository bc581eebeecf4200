"""The baseline gate: known deviations that do not fail a run, and must not go stale.

A project adopting the TCK rarely passes everything on day one. A baseline file lists the
failures it knows about (a rule id, or a single test); with ``--rs-baseline`` those failures are
reported as known deviations (xfail in the terminal, verdict ``failed`` plus
``"baseline": "known"`` in the results), any other failure fails the run as usual, and so does
an entry whose tests all pass now, so the list can only shrink.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

import pytest
from rstck.results import FAILING
from rstck.results import Level
from rstck.results import Outcome
from rstck.results import TestResult
from rstck.rules import RULES
from rstck.verifications import VERIFICATIONS

from .. import hookimpl
from ..state import RsTckState
from .files import write_atomic
from .outputs import requested_path

BASELINE_OPTION = "--rs-baseline"
BASELINE_WRITE_OPTION = "--rs-baseline-write"

_RULE_ID = re.compile(r"^\d+\.\d+$")
_PYTEST_ID = re.compile(r"\[[^\]]*\]$")

HEADER = """\
# Reactive Streams TCK baseline: known deviations, one per line.
# A line is a rule id (3.9: every test of that rule; 'sanity': the factory checks) or one test,
# as verification::test_name; SUBJECT::3.9 and SUBJECT::test_name hold for one subject of a run
# of several (by its id); '#' starts a comment. With --rs-baseline=THIS_FILE, the failures
# listed here are known deviations and do not fail the run; a failure not listed does, and so
# does an entry whose tests all pass now (remove it).
"""


class BaselineError(ValueError):
    """A baseline file that cannot be read or has a malformed line; names the file and line."""


@dataclass(frozen=True)
class Entry:
    """One line of a baseline: every test of a rule, or one test (of one verification or any)."""

    text: str
    line: int
    rule: str | None = None  # a rule id, or "sanity"
    verification: str | None = None
    test: str | None = None
    #: The id of the one subject the entry holds for (a run of several); None: every subject.
    subject: str | None = None

    def matches(self, result: TestResult) -> bool:
        if self.subject is not None and result.key != self.subject:
            return False
        if self.rule is not None:
            return (result.rule or "sanity") == self.rule
        return result.test == self.test and self.verification in (None, result.verification)


@dataclass
class Baseline:
    path: Path
    entries: list[Entry] = field(default_factory=list)

    def match(self, result: TestResult) -> Entry | None:
        return next((e for e in self.entries if e.matches(result)), None)

    def where(self, entry: Entry) -> str:
        return f"{self.path}:{entry.line}"


def _known_tests() -> dict[str, set[str]]:
    """test name -> the verifications that have a test of that name."""
    known: dict[str, set[str]] = {}
    for name, verification in VERIFICATIONS.items():
        for test in verification.tests:
            known.setdefault(test.name, set()).add(name)
    return known


def parse(text: str, path: Path) -> Baseline:
    """Parse baseline text; malformed lines raise ``BaselineError`` naming each ``path:line``.

    Every bad line is reported at once, so one edit fixes them all.
    """
    baseline = Baseline(path)
    problems: list[str] = []
    known = _known_tests()
    for number, raw in enumerate(text.splitlines(), 1):
        try:
            entry = _parse_line(raw, number, path, known)
        except BaselineError as exc:
            problems.append(str(exc))
            continue
        if entry is not None:
            baseline.entries.append(entry)
    if problems:
        more = f" ({len(problems)} bad lines)" if len(problems) > 1 else ""
        raise BaselineError(("\n".join(problems)) + more)
    return baseline


def _parse_line(raw: str, number: int, path: Path, known: dict[str, set[str]]) -> Entry | None:
    token = raw.split("#", 1)[0].strip()
    if not token:
        return None
    where = f"{path}:{number}"
    if len(token.split()) > 1:
        raise BaselineError(f"{where}: expected one rule id or test name per line, found {token!r}")
    prefix, _, rest = token.rpartition("::")
    subject = prefix if prefix and prefix not in VERIFICATIONS else None
    if subject is not None and not subject.isidentifier():
        raise BaselineError(f"{where}: {prefix!r} in {token!r} is neither a verification ({', '.join(VERIFICATIONS)}) "
                            "nor a subject id")
    rule = rest if subject is not None else token
    if _RULE_ID.match(rule) or rule == "sanity":
        if rule not in RULES and rule != "sanity":
            raise BaselineError(f"{where}: unknown rule id {rule!r}; valid ids are 1.1-1.11, 2.1-2.13, "
                                "3.1-3.17, 4.1-4.2 and 'sanity'")
        return Entry(token, number, rule=rule, subject=subject)
    verification = prefix if subject is None else ""
    name = _PYTEST_ID.sub("", rest)
    if name not in known or (verification and verification not in known[name]):
        of = f" of verification {verification!r}" if verification else ""
        raise BaselineError(f"{where}: unknown test {name!r}{of}: a line is a rule id such as 3.9 or a test "
                            "name such as publisher::required_spec309_request_zero_must_signal_value_error")
    return Entry(token, number, verification=verification or None, test=name, subject=subject)


def read(path: Path) -> Baseline:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise BaselineError(f"{path}: cannot read the baseline: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise BaselineError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    return parse(text, path)


def _passing(baseline: Baseline, results: list[TestResult]) -> list[tuple[Entry, list[TestResult]]]:
    """Entries whose tests ran and none failed, with the ones that passed (at least one)."""
    out = []
    for entry in baseline.entries:
        matched = [r for r in results if entry.matches(r)]
        passed = [r for r in matched if r.outcome == Outcome.PASSED]
        if passed and not any(r.outcome in FAILING for r in matched):
            out.append((entry, passed))
    return out


#: Levels whose tests find a bug by chance (a race hunt, a search): a pass there may be luck.
BY_CHANCE = frozenset({Level.STOCHASTIC, Level.FUZZ})


def stale(baseline: Baseline, results: Iterable[TestResult]) -> list[Entry]:
    """Entries that pass now and can go.

    A stochastic test hunts races and a fuzz test searches, and either may pass by luck (a
    race not shown, a scenario not drawn under a loaded machine's time budget), so an entry
    whose passing tests all find bugs by chance is not stale (see ``lucky``): the gate must not
    flicker with the scheduler.
    """
    return [e for e, passed in _passing(baseline, list(results)) if any(r.level not in BY_CHANCE for r in passed)]


def lucky(baseline: Baseline, results: Iterable[TestResult]) -> list[Entry]:
    """Entries whose only passing tests find bugs by chance: perhaps fixed, perhaps not caught this time."""
    return [e for e, passed in _passing(baseline, list(results)) if all(r.level in BY_CHANCE for r in passed)]


def unmatched(baseline: Baseline, results: Iterable[TestResult]) -> list[Entry]:
    """Entries no test of this run matched (their rules were not selected or not verified)."""
    results = list(results)
    return [e for e in baseline.entries if not any(e.matches(r) for r in results)]


def _sort_key(result: TestResult) -> tuple[tuple[int, int], str, str]:
    rule = RULES.get(result.rule or "")
    return (rule.sort_key if rule else (0, 0)), result.key, result.test


def render(results: Iterable[TestResult], subjects: dict[str, str]) -> str:
    """A baseline listing every failure of ``results``, one test per line, in rule order."""
    failures = sorted((r for r in results if r.outcome in FAILING), key=_sort_key)
    about = ", ".join(f"{role} {label}" for role, label in subjects.items()) or "no subject"
    lines = [HEADER.rstrip("\n"), f"# Written by {BASELINE_WRITE_OPTION} from a run against {about}.", ""]
    width = max((len(r.key) + 2 + len(r.test) for r in failures), default=0)
    for r in failures:
        headline = r.failures[0].headline() if r.failures else r.message.split("\n", 1)[0]
        headline = headline if len(headline) <= 110 else headline[:107] + "..."
        lines.append(f"{r.key}::{r.test}".ljust(width) + f"  # {r.rule or 'sanity'}: {headline}")
    return "\n".join(lines) + "\n"


def add_options(group: pytest.OptionGroup) -> None:
    group.addoption(BASELINE_OPTION, dest="rs_baseline", metavar="PATH",
                    help="Known deviations (rule ids or tests, one per line): listed failures do not fail the "
                         "run; unlisted failures and entries that pass now do")
    group.addoption(BASELINE_WRITE_OPTION, dest="rs_baseline_write", metavar="PATH",
                    help="Write a baseline listing every failure of this run to PATH")


class BaselinePlugin:
    """Turns listed failures into known deviations and fails the run on stale entries."""

    def __init__(self, state: RsTckState, baseline: Baseline | None, write_path: Path | None) -> None:
        self.state = state
        self.baseline = baseline
        self.write_path = write_path
        self.stale: list[Entry] = []
        self.unmatched: list[Entry] = []
        self.lucky: list[Entry] = []
        self.known = 0
        self.written = 0
        self.write_problem = ""
        self.results: list[TestResult] = []

    @hookimpl
    def rstck_result(self, result: TestResult) -> None:
        self.results.append(result)

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
        report: pytest.TestReport = yield
        result = getattr(report, "rs_tck_result", None)
        if self.baseline is None or not isinstance(result, TestResult) or not report.failed:
            return report
        entry = self.baseline.match(result)
        if entry is not None:
            report.rs_tck_result = dataclasses.replace(result, baseline="known")  # type: ignore[attr-defined]
            report.outcome = "skipped"
            report.wasxfail = f"known deviation ({self.baseline.where(entry)}: {entry.text})"
            self.known += 1
        return report

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if hasattr(session.config, "workerinput"):
            return
        results = self.results
        if self.state.interrupted:
            # A partial run proves nothing about the tests it did not run: no gate, no baseline.
            if session.exitstatus == pytest.ExitCode.OK:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED
            return
        if self.baseline is not None:
            self.stale = stale(self.baseline, results)
            self.unmatched = unmatched(self.baseline, results)
            self.lucky = lucky(self.baseline, results)
            if self.stale and session.exitstatus == pytest.ExitCode.OK:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if self.write_path is not None:
            try:
                write_atomic(self.write_path, render(results, self.state.labels()))
            except OSError as exc:
                self.write_problem = exc.strerror or str(exc)
            self.written = sum(1 for r in results if r.outcome in FAILING)

    def gate_lines(self) -> list[str]:
        """One line per reason the baseline gate failed a run whose tests did not."""
        if self.baseline is None or self.state.interrupted:
            return []
        return [f"FAILED {self.baseline.where(e)}: {e.text} (stale baseline entry: it passes now; remove it)"
                for e in self.stale]

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        tr = terminalreporter
        if self.state.interrupted:
            not_run = f"{self.state.not_run} test(s) not run, " if self.state.not_run else ""
            refused = " and ".join(
                what for what, given in (("gated", self.baseline), ("written", self.write_path)) if given
            )
            tr.write_line(f"rs-tck baseline: not {refused}: the run was {self.state.interrupted} ({not_run}"
                          "a partial run proves nothing about the missing tests); rerun it to the end", red=True)
            return
        if self.baseline is not None:
            new = sum(1 for r in self.results if r.outcome in FAILING and r.baseline != "known")
            # Counted from the results, not in makereport: under xdist that runs on the workers.
            self.known = sum(1 for r in self.results if r.baseline == "known")
            tr.write_sep("-", f"rs-tck baseline {self.baseline.path}")
            tr.write_line(f"{self.known} known deviation(s), {new} new failure(s), "
                          f"{len(self.stale)} stale entr{'y' if len(self.stale) == 1 else 'ies'}",
                          red=bool(new or self.stale), yellow=not (new or self.stale) and bool(self.known),
                          green=not (new or self.stale or self.known))
            for entry in self.stale:
                tr.write_line(f"stale: {self.baseline.where(entry)}: {entry.text} passes now; remove it from "
                              "the baseline", red=True)
            for entry in self.lucky:
                tr.write_line(f"passed this time: {self.baseline.where(entry)}: {entry.text} ({_chance(self.results, entry)}: "
                              "not counted as stale; remove it once the bug is fixed)", yellow=True)
            for entry in self.unmatched:
                tr.write_line(f"not run: {self.baseline.where(entry)}: {entry.text} matched no test of this run")
        if self.write_path is not None and self.write_problem:
            tr.write_line(f"rs-tck: baseline not written: {self.write_path}: {self.write_problem}", red=True)
        elif self.write_path is not None:
            tr.write_line(f"rs-tck: wrote baseline {self.write_path} with {self.written} entr"
                          f"{'y' if self.written == 1 else 'ies'}")


def _chance(results: list[TestResult], entry: Entry) -> str:
    """How the entry's tests find their bug: a race hunt, a search, or both."""
    levels = {r.level for r in results if entry.matches(r)} & BY_CHANCE
    words = {Level.STOCHASTIC: "a race hunt", Level.FUZZ: "a fuzz search"}
    return " and ".join(words[level] for level in sorted(levels)) + " finds it by chance"


class GateLines:
    """After pytest's short summary, the last lines before its count: why the gate failed the run.

    A run that exits 1 with "49 passed, 6 skipped" must say why there, as pytest's summary names
    an ``XPASS(strict)``. A wrapper outside the terminal reporter's own runs after it.
    """

    def __init__(self, plugin: BaselinePlugin) -> None:
        self.plugin = plugin

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_terminal_summary(self, terminalreporter: Any) -> Any:
        try:
            return (yield)
        finally:
            for line in self.plugin.gate_lines():
                terminalreporter.write_line(line, red=True)


@hookimpl
def rstck_configure(config: pytest.Config, state: RsTckState) -> None:
    """Read the baseline and register the plugin; a bad file or path is a usage error."""
    raw = config.getoption("rs_baseline", None)
    raw_write = config.getoption("rs_baseline_write", None)
    if not raw and not raw_write:
        return
    baseline = None
    if raw:
        try:
            baseline = read(Path(raw))
        except BaselineError as exc:
            raise pytest.UsageError("\n".join(f"{BASELINE_OPTION}: {line}" for line in str(exc).splitlines())) from None
    write_path = requested_path(config, "rs_baseline_write", BASELINE_WRITE_OPTION)
    plugin = BaselinePlugin(state, baseline, write_path)
    state.hooks.register(plugin, "rs-tck-baseline")
    config.pluginmanager.register(plugin, "rs-tck-baseline")
    config.pluginmanager.register(GateLines(plugin), "rs-tck-baseline-gate")
