"""Report files a run writes at its end: asked for by an option, checked before any test runs.

Every file report (the JSON results, the HTML page) is the same plugin: a path checked at
configure time, and an ``rstck_run_finished`` hook that renders the run's results into it atomically.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from rstck.results import RunResults

from .. import hookimpl
from ..state import RsTckState
from .files import check_writable
from .files import write_atomic


def requested_path(config: pytest.Config, dest: str, option: str) -> Path | None:
    """The path an output option names, or None; an unwritable one is a usage error now."""
    raw = config.getoption(dest, None)
    if not raw:
        return None
    path = Path(raw)
    problem = check_writable(option, path)
    if problem:
        raise pytest.UsageError(problem)
    return path


class DocumentWriter:
    """Renders the run's results into ``path`` when the run ends.

    A failure to write is kept, not raised: the run's verdicts and its terminal summary must
    survive a vanished directory or a full disk, which then cost one "not written" line.
    """

    def __init__(self, path: Path, render: Callable[[RunResults], str], kind: str) -> None:
        self.path = path
        self.render = render
        #: How the terminal names the file: "results file", "HTML report".
        self.kind = kind
        #: None until the run ends; then "" when written, else why it was not.
        self.problem: str | None = None

    @hookimpl
    def rstck_run_finished(self, results: RunResults) -> None:
        try:
            write_atomic(self.path, self.render(results))
        except OSError as exc:
            self.problem = exc.strerror or str(exc)
        except Exception as exc:
            self.problem = f"{type(exc).__name__}: {exc}"
        else:
            self.problem = ""


def configure_writer(config: pytest.Config, state: RsTckState, dest: str, option: str,
                     render: Callable[[RunResults], str], kind: str) -> None:
    """Register a ``DocumentWriter`` for the path ``option`` names, if it names one."""
    path = requested_path(config, dest, option)
    if path is not None:
        writer = DocumentWriter(path, render, kind)
        state.hooks.register(writer, f"rs-tck-report-{dest}")
        state.report_files.append(writer)
