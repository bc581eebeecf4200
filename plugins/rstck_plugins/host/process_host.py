"""The pytest host's side of worker processes: a run's subjects dealt to them (``rstck.processes``).

When a plain ``pytest`` run (no xdist) selects several subjects, they go to ``--rs-processes``
worker processes as the test loop starts; each pytest item then takes its test's result from
its worker and reports it as it reports a result of this process (terminal, JUnit, results
file, baseline, ``--lf``, the ``rstck_result`` hooks: all read the item's report).

What a worker cannot make the same way runs here, as without processes: a subject on an event
loop (``--rs-loop=asyncio``), a subject the ``rstck_resolve_subject`` hooks of a plugin or
conftest resolve, or an adapter wraps (``--rs-adapter``), a declaration pytest imported under a
name a worker cannot import, and any subject a worker fails to rebuild (it says so, and the
subject's tests run here). A run whose ``rstck_modify_tests`` hooks change the tests runs every
subject here: those hooks, and what they add, belong to this process.

A passing result's trace (nearly all of what a worker sends: some 16 MB for twenty publishers)
comes back only when something in this process may read it (``reads_passing_traces``): a results
file or HTML report, or an ``rstck_result`` / ``rstck_run_finished`` hook other than the kit's
terminal table and baseline gate, which never read one. Otherwise its encoding, its transfer and
its decoding would cost CPU for no reader; its ``trace_total`` always comes back, and a result
that did not pass always comes whole.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import TYPE_CHECKING
from typing import Any

import pytest
from rstck.results import TestResult
from rstck.run_api import joinable

from ..state import RsTckState
from ..state import SubjectEntry
from ..state import state_key

if TYPE_CHECKING:
    from rstck.processes import Pool
    from rstck.processes import Recipe

#: The run's worker processes, once the test loop started them. ``rstck.processes`` is imported
#: only by a run of two subjects or more: a run of one never deals any.
pool_key: pytest.StashKey[Pool] = pytest.StashKey()
#: The resolution that a worker repeats by importing ``module:attr`` itself.
BUILTIN_RESOLVER = "rstck-builtins"


class ProcessHost:
    """Starts the pool when the test loop starts, and ends it with the session."""

    def __init__(self, state: RsTckState, config: pytest.Config) -> None:
        self.state = state
        self.config = config
        #: The subjects this process runs although several were selected, and why.
        self.here: dict[str, str] = {}
        #: Workers started while collecting, once a second subject was collected (``spare``).
        self.spares: list[subprocess.Popen[bytes]] = []
        self.spared = False

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        """Once a second subject a worker may run is collected, start the workers: they import
        the kit while collection goes on. A run that ends up selecting one subject ends them."""
        state = self.state
        if self.spared or sum(joinable(run) for run in state.runs.values()) < 2:
            return
        self.spared = True
        if self.config.option.collectonly or not _may_deal(self.config, state):
            return
        from rstck.processes import processes_for
        from rstck.processes import spare

        count = processes_for(state.settings.processes, len(state.runs))
        self.spares = [spare() for _ in range(count)] if count >= 2 else []

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> None:
        config = session.config
        if config.option.collectonly or pool_key in config.stash or (len(self.state.runs) < 2 and not self.spares):
            return
        from rstck.processes import Pool
        from rstck.processes import end_spare
        from rstck.processes import processes_for

        recipes = recipes_of(session, self.state, self.here)
        workers = processes_for(self.state.settings.processes, len(recipes))
        spares, self.spares = self.spares, []
        if len(recipes) < 2 or workers < 2:
            for proc in spares:
                end_spare(proc)
            return
        s = self.state.settings
        hello = {"sys_path": list(sys.path), "settings": s.to_json(), "explicit": sorted(s.explicit),
                 "rules": self.state.rules, "skip_rules": self.state.skip_rules,
                 "seed": os.environ.get("RS_TCK_SEED") or None,
                 "passing_traces": reads_passing_traces(config, self.state),
                 "passing_output": reads_passing_output(config)}
        limit = max(s.test_limit for s in (self.state.runs[r.key].settings for r in recipes))
        pool = Pool(recipes, hello, workers, s.subjects_at_once, result_s=max(120.0, 4 * limit))
        config.stash[pool_key] = pool
        pool.start(spares)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        pool = session.config.stash.get(pool_key, None)
        if pool is not None:
            pool.close()
        if self.spares:  # collection failed, or the run collected only
            from rstck.processes import end_spare

            for proc in self.spares:
                end_spare(proc)
        self.spares = []

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        """Where the subjects ran: a run that dealt them says to how many processes, and which ran here."""
        pool = terminalreporter.config.stash.get(pool_key, None)
        if pool is None:
            return
        here = {**self.here, **{k: f"a worker could not rebuild it: {why.splitlines()[-1] if why else '?'}"
                                for k, why in pool.handed_back.items()}}
        line = f"rs-tck: {len(pool.keys)} subjects in {pool.workers} worker processes"
        if pool.spawned > pool.workers:
            line += f" ({pool.spawned - pool.workers} started again after one ended)"
        terminalreporter.write_line(line)
        for key, why in here.items():
            terminalreporter.write_line(f"rs-tck: {key} ran in the pytest process: {why}")


def in_workers(config: pytest.Config) -> set[str]:
    """The subjects the worker processes run (not those they handed back)."""
    pool = config.stash.get(pool_key, None)
    return pool.keys if pool is not None else set()


def result_of(item: Any) -> TestResult | None:
    """The item's result from its worker process; None when this process is to run its test."""
    config = item.config
    pool = config.stash.get(pool_key, None)
    if pool is None or not pool.runs(item.key):
        return None
    state: RsTckState = config.stash[state_key]
    run = state.runs[item.key]
    answer = pool.result(item.key, item.test.test_id, timeout=pool.result_s * (pool.subjects + 2))
    if answer is None:
        return None
    from rstck.processes import lost

    result: TestResult = run.present(lost(item.test, run.label, answer)) if isinstance(answer, str) else answer
    return result


def add_captured(item: Any) -> None:
    """Give the item what its subject printed and logged in the worker, as the sections pytest's
    capture adds (``Captured stdout call``, ``Captured log call``)."""
    pool = item.config.stash.get(pool_key, None)
    if pool is None:
        return
    for name, text in pool.captured(item.key, item.test.test_id).items():
        item.add_report_section("call", name, text)


def reads_passing_output(config: pytest.Config) -> bool:
    """Whether a passing test's captured output is shown anywhere: ``-rP``/``-rA``, JUnit's
    ``junit_logging`` with passing tests logged, or pytest-reportlog's log."""
    chars = getattr(config.option, "reportchars", "") or ""
    if "P" in chars or "A" in chars or getattr(config.option, "report_log", None):
        return True
    if getattr(config.option, "xmlpath", None):
        return bool(config.getini("junit_logging") != "no" and config.getini("junit_log_passing_tests"))
    return False


#: The kit's own result hooks that never read a trace, by the names the reports register them
#: under: the terminal table, the baseline gate.
TRACE_BLIND = frozenset({"rs-tck-terminal-summary", "rs-tck-baseline"})


def reads_passing_traces(config: pytest.Config, state: RsTckState) -> bool:
    """Whether anything in this process may read the trace of a passing result: a file the run
    writes (results, HTML, pytest-reportlog's log), or any result hook but the kit's trace-blind ones."""
    if state.report_files or getattr(config.option, "report_log", None):
        return True
    hooks = state.hooks.hook
    impls = hooks.rstck_result.get_hookimpls() + hooks.rstck_run_finished.get_hookimpls()
    return any(impl.plugin_name not in TRACE_BLIND for impl in impls)


def _may_deal(config: pytest.Config, state: RsTckState) -> bool:
    """Whether this run may deal subjects to worker processes at all."""
    if state.settings.processes == 1:
        return False
    if hasattr(config, "workerinput") or config.getoption("numprocesses", None):
        return False  # under pytest-xdist: its workers are the processes
    return not state.hooks.hook.rstck_modify_tests.get_hookimpls()  # what they change was made here


def recipes_of(session: pytest.Session, state: RsTckState, here: dict[str, str] | None = None) -> list[Recipe]:
    """A recipe for each selected subject a worker can rebuild, in session order; ``here`` gets
    the others, with why they run in this process."""
    here = {} if here is None else here
    config = session.config
    if not _may_deal(config, state):
        return []
    from rstck.processes import Recipe
    from rstck.processes import cost_of

    by_key: dict[str, list[Any]] = {}
    for item in session.items:
        key = getattr(item, "key", None)
        if key is not None and key in state.runs and hasattr(item, "test"):
            by_key.setdefault(key, []).append(item)
    pure = _pure_resolution(config, state)
    out = []
    for key, items in by_key.items():
        entry, run = state.entries.get(key), state.runs[key]
        if entry is None:
            continue
        if not joinable(run):
            here[key] = "on an event loop (--rs-loop=asyncio)"
            continue
        where = _where(entry, items[0], pure)
        if isinstance(where, str):
            here[key] = where
            continue
        module, attr, failed = where
        tests = tuple(i.test.test_id for i in items)
        out.append(Recipe(key, entry.kind, module, attr, entry.source == "declared", entry.spec, failed, tests,
                          cost_of(entry.kind, len(tests), len(run.verification.tests))))
    return out


def _pure_resolution(config: pytest.Config, state: RsTckState) -> bool:
    """Whether a ``module:attr`` resolves here as a worker resolves it: no plugin's resolver, no adapter."""
    adapter = config.getoption("rs_adapter", None) or os.environ.get("RS_TCK_ADAPTER") or config.getini("rs_adapter")
    impls = state.hooks.hook.rstck_resolve_subject.get_hookimpls()
    return not adapter and all(i.plugin_name == BUILTIN_RESOLVER for i in impls)


def _where(entry: SubjectEntry, item: Any, pure: bool) -> tuple[str, str, str | None] | str:
    """``(module, attribute, failed module:attr)`` a worker imports the subject from, or why it cannot."""
    plugged = "resolved by a plugin's or conftest's rstck_resolve_subject, or adapted (--rs-adapter)"
    declaration = entry.declaration
    if entry.source != "declared":
        module, colon, attr = entry.spec.partition(":")
        if not pure:
            return plugged
        if not (colon and module and attr) or (entry.failed_spec and ":" not in entry.failed_spec):
            return f"{entry.spec} is not MODULE:ATTR"
        return module, attr, entry.failed_spec
    if declaration is None:
        return "no declaration to rebuild it from"
    if not pure and (isinstance(declaration.subject, str) or isinstance(declaration.failed, str)):
        return plugged
    collector = item.parent
    names = [collector.name]
    node = collector.parent
    while isinstance(node, pytest.Class):
        names.insert(0, node.name)
        node = node.parent
    if not isinstance(node, pytest.Module):
        return "not declared in a test module"
    module = node.obj
    name = getattr(module, "__name__", "")
    if sys.modules.get(name) is not module or getattr(module, "__spec__", None) is None:
        return f"pytest imported {name or 'its module'} under a name a worker cannot import (--import-mode)"
    obj: Any = module
    for part in names:
        obj = getattr(obj, part, None)
    if obj is not declaration and not isinstance(obj, type):
        return f"{name}.{'.'.join(names)} is not its declaration"
    return name, ".".join(names), None
