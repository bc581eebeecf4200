"""Report files a run writes at its end: asked for by an option, checked before any test runs.

Every file report (the JSON results, the HTML page) is the same plugin: a path checked at
configure time, and an ``rstck_run_finished`` hook that renders the document into it atomically.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from .files import check_writable
from .files import write_atomic
from .hooks import hookimpl
from .state import RsTckState


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
    """Renders the results document into ``path`` when the run ends."""

    def __init__(self, path: Path, render: Callable[[dict[str, Any]], str]) -> None:
        self.path = path
        self.render = render

    @hookimpl
    def rstck_run_finished(self, document: dict[str, Any]) -> None:
        write_atomic(self.path, self.render(document))


def configure_writer(config: pytest.Config, state: RsTckState, dest: str, option: str,
                     render: Callable[[dict[str, Any]], str]) -> None:
    """Register a ``DocumentWriter`` for the path ``option`` names, if it names one."""
    path = requested_path(config, dest, option)
    if path is not None:
        state.hooks.register(DocumentWriter(path, render), f"rs-tck-report-{dest}")
