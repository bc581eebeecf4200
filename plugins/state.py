"""The plugin's state for one pytest run, and the collector that turns reports into results.

Its own module so that the reporters can name these types without importing the pytest plugin,
which imports them: dependencies inside ``rstck_plugins`` point one way, towards this module.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pluggy
import pytest
from rstck.results import TestResult
from rstck.results import document
from rstck.settings import Settings


class RsTckState:
    """Everything the plugin resolved at configure time, for one config.

    Kept in ``config.stash[state_key]``, so each run (pytester's in-process runs included) has
    its own and nothing lives in module globals.
    """

    def __init__(self, subjects: dict[str, Any], settings: Settings, rules: list[str],
                 skip_rules: list[str], hooks: pluggy.PluginManager) -> None:
        self.hooks = hooks
        self.subjects = subjects
        self.settings = settings
        self.rules = rules
        self.skip_rules = skip_rules

    @property
    def active(self) -> bool:
        return bool(self.subjects)

    def settings_for(self, verification: str) -> Settings:
        """Settings with the subject's declared capabilities applied."""
        apply = getattr(self.subjects[verification], "apply", None)
        return apply(self.settings) if callable(apply) else self.settings

    def labels(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for verification, subject in self.subjects.items():
            out[verification] = str(getattr(subject, "label", subject))
            failed = getattr(subject, "failed_factory", None)
            if failed is not None:
                out["failed_" + verification] = getattr(failed, "__qualname__", repr(failed))
        return out


state_key = pytest.StashKey[RsTckState]()
#: The subject lookup (``rstck_resolve_subject``, then the adapter) of a config.
resolver_key = pytest.StashKey[Callable[[str, str], Any]]()
#: The threads alive at configure time, to tell the ones a subject leaked.
threads_key = pytest.StashKey[set[threading.Thread]]()
#: A TCK item's result, from ``runtest`` to the report.
result_key = pytest.StashKey[TestResult]()


def state_of(config: pytest.Config) -> RsTckState | None:
    return config.stash.get(state_key, None)


class ResultCollector:
    """The one place results enter the ``rstck`` hooks: ``rstck_result`` per test as its report
    arrives (from this process or an xdist worker), ``rstck_run_finished`` with the document."""

    def __init__(self, state: RsTckState) -> None:
        self.state = state
        self.results: list[TestResult] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        data = getattr(report, "rs_tck_result", None)
        if data is not None:
            result = TestResult.from_json(data)
            self.results.append(result)
            self.state.hooks.hook.rstck_result(result=result)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        state = self.state
        if hasattr(session.config, "workerinput") or not state.active:
            return
        data = document(self.results, subjects=state.labels(), settings=state.settings.to_json())
        state.hooks.hook.rstck_run_finished(document=data)
