"""The plugin's state for one pytest run, and the collector that turns reports into results.

Its own module so that the reporters can name these types without importing the pytest plugin,
which imports them: dependencies inside ``rstck_plugins`` point one way, towards this module.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from typing import Protocol

import pluggy
import pytest
from rstck.results import Level
from rstck.results import RunResults
from rstck.results import TestResult
from rstck.run_api import Run
from rstck.settings import Settings


class ReportFile(Protocol):
    """A file a reporter writes at the end of the run, as the terminal names it (``reports.outputs``)."""

    path: Path
    #: How the terminal names the file: "results file", "HTML report".
    kind: str
    #: None until the run ends; then "" when written, else why it was not.
    problem: str | None


@dataclass
class SubjectEntry:
    """One subject of the run: what verifies it, and where it was named.

    ``key`` names it in node ids, reports and the baseline: its id (``map``), or the kind's name
    (``publisher``) for the one unnamed subject of a kind given by an option.
    """

    key: str
    kind: str
    subject: Any
    #: "command line", "environment", "ini" or "declared".
    source: str
    #: What names it: the MODULE:ATTR given, or where it is declared.
    spec: str
    failed_spec: str | None = None
    #: A ``rstck.pytest.Declaration`` when declared: its own settings, rules and skipped rules.
    declaration: Any = None

    @property
    def named(self) -> bool:
        """Whether results carry its id (``subject_id``): every subject but an option's unnamed one."""
        return self.source == "declared" or self.key != self.kind


class RsTckState:
    """Everything the plugin resolved at configure time, for one config.

    Kept in ``config.stash[state_key]``, so each run (pytester's in-process runs included) has
    its own and nothing lives in module globals.
    """

    def __init__(self, subjects: dict[str, Any], settings: Settings, rules: list[str],
                 skip_rules: list[str], hooks: pluggy.PluginManager,
                 failed_specs: dict[str, str] | None = None) -> None:
        self.hooks = hooks
        #: Every subject of the run by key (options' at configure time, declared ones as collected).
        self.entries: dict[str, SubjectEntry] = {}
        #: The subjects by key; an option's unnamed subject is keyed by its kind.
        self.subjects = subjects
        self.settings = settings
        self.rules = rules
        self.skip_rules = skip_rules
        #: The MODULE:ATTR given for each verification's failed publisher: its label.
        self.failed_specs = failed_specs or {}
        #: The report files asked for, in the order the terminal names them.
        self.report_files: list[ReportFile] = []
        #: Why the run stopped before every selected test ran (Ctrl-C, ``-x``); None if complete.
        self.interrupted: str | None = None
        #: How many selected tests did not run, when the run was interrupted and it is known.
        self.not_run: int | None = None
        #: (verification, rule id or "sanity"/"fuzz") of each selected test that did not run.
        self.not_run_tests: list[tuple[str, str]] = []
        #: The command line's TCK node ids (``publisher::name[3.9]``); empty: every selected test.
        self.selectors: list[str] = []
        #: Problems of the end-of-run hooks, other than the report files', one line each.
        self.finish_problems: list[str] = []
        #: Each collected verification's run: its selected tests, its settings with the subject's
        #: declarations applied, its schedules.
        self.runs: dict[str, Run] = {}

        #: Bad declarations met in collection, one line each (file:line: what): they stop the run.
        self.problems: list[str] = []
        #: Results arrived (under xdist the controller collects no subject of its own).
        self.saw_results = False

    @property
    def active(self) -> bool:
        return bool(self.subjects) or self.saw_results

    def add(self, entry: SubjectEntry) -> None:
        self.entries[entry.key] = entry
        self.subjects[entry.key] = entry.subject
        if entry.failed_spec:
            self.failed_specs[entry.key] = entry.failed_spec

    def labels(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for key, subject in self.subjects.items():
            out[key] = str(getattr(subject, "label", subject))
            failed = getattr(subject, "failed_factory", None)
            if failed is not None:
                out["failed_" + key] = self.failed_specs.get(key) or _qualified(failed)
        return out


def _qualified(obj: object) -> str:
    """``module:qualname`` of a factory, as a user would name it on the command line."""
    name = getattr(obj, "__qualname__", None)
    module = getattr(obj, "__module__", None)
    if not name:
        return repr(obj)
    return f"{module}:{name}" if module else str(name)


state_key = pytest.StashKey[RsTckState]()
#: The subject lookup (``rstck_resolve_subject``, then the adapter) of a config.
resolver_key = pytest.StashKey[Callable[[str, str], Any]]()
#: The threads alive at configure time, to tell the ones a subject leaked.
threads_key = pytest.StashKey[set[threading.Thread]]()
#: A TCK item's result, from ``runtest`` to the report.
result_key = pytest.StashKey[TestResult]()


def _row_of(item: pytest.Item) -> tuple[str, str]:
    """(subject key, rule id or "sanity"/"fuzz") of a TCK item, as the rule table keys it."""
    test = getattr(item, "test")  # noqa: B009 - a TCK item; the plugin module is not imported here
    return getattr(item, "key", test.verification), test.rule_id or ("fuzz" if test.level == Level.FUZZ else "sanity")


def state_of(config: pytest.Config) -> RsTckState | None:
    return config.stash.get(state_key, None)


def run_finished(hooks: pluggy.PluginManager, results: RunResults) -> None:
    """Call ``rstck_run_finished`` with the results; the JSON document only for an implementation
    that takes the ``document`` argument of earlier releases (built once, for those alone)."""
    hook = hooks.hook.rstck_run_finished
    wants_document = any("document" in impl.argnames for impl in hook.get_hookimpls())
    hook(results=results, document=results.to_json() if wants_document else None)


class ResultCollector:
    """The one place results enter the ``rstck`` hooks: ``rstck_result`` per test as its report
    arrives (from this process or an xdist worker), ``rstck_run_finished`` with the ``RunResults``."""

    def __init__(self, state: RsTckState, is_tck_item: Callable[[pytest.Item], bool]) -> None:
        self.state = state
        self.is_tck_item = is_tck_item
        self.results: list[TestResult] = []
        #: Node ids of the tests that reached a verdict, to count those that never ran.
        self.reported: set[str] = set()

    def not_run(self, session: pytest.Session) -> int | None:
        """How many selected TCK tests never reached a verdict; None when unknown (xdist's controller)."""
        items = {i.nodeid for i in session.items if self.is_tck_item(i)}
        return len(items - self.reported) if items else None

    def interruption(self, session: pytest.Session) -> str | None:
        """Why the run stopped before every selected test ran (Ctrl-C, ``-x``), or None."""
        if session.exitstatus == pytest.ExitCode.INTERRUPTED:
            return "interrupted (KeyboardInterrupt)"
        reason = session.shouldstop or session.shouldfail
        if not reason or self.not_run(session) == 0:  # -x on the last test stopped nothing
            return None
        return reason if isinstance(reason, str) else "stopped early"

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "call" or (report.when == "setup" and not report.passed):
            self.reported.add(report.nodeid)
        result = getattr(report, "rs_tck_result", None)
        if isinstance(result, TestResult):
            self.state.saw_results = True
            self.results.append(result)
            self.state.hooks.hook.rstck_result(result=result)

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        state = self.state
        if hasattr(session.config, "workerinput") or not state.active:
            return
        state.interrupted = self.interruption(session)
        if state.interrupted:
            # A partial run must not read like a complete one, in the file or in a gate.
            state.not_run = self.not_run(session)
            state.not_run_tests = [_row_of(item) for item in session.items
                                   if self.is_tck_item(item) and item.nodeid not in self.reported]
        labels = state.labels()
        for result in self.results:  # under xdist the controller collected no subject: the results name them
            labels.setdefault(result.key, result.subject)
        results = RunResults(self.results, subjects=labels, settings=state.settings.to_json(),
                             edition=state.settings.edition, interrupted=state.interrupted, not_run=state.not_run)
        try:
            run_finished(state.hooks, results)
        except Exception as exc:
            state.finish_problems.append(f"an rstck_run_finished hook raised {type(exc).__name__}: {exc}")
