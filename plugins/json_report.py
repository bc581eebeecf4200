"""``--rs-report-json``: the results document (schema ``rs-tck-results/1``), written when the run ends.

The file every other report can be made from later: ``python -m rstck_plugins report`` renders
the HTML page from it, and CI keeps it as an artifact.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from .files import check_writable
from .files import write_atomic
from .hooks import hookimpl
from .state import RsTckState

REPORT_JSON_OPTION = "--rs-report-json"


def add_options(group: pytest.OptionGroup) -> None:
    group.addoption(REPORT_JSON_OPTION, dest="rs_report_json", metavar="PATH",
                    help="Write the results (schema rs-tck-results/1) to PATH")


class JsonReportWriter:
    """Writes the results document, atomically, from the ``rstck_run_finished`` hook."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @hookimpl
    def rstck_run_finished(self, document: dict[str, Any]) -> None:
        write_atomic(self.path, json.dumps(document, indent=2) + "\n")


def configure(config: pytest.Config, state: RsTckState) -> None:
    """Register the writer when asked for; an unwritable path is a usage error."""
    raw = config.getoption("rs_report_json", None)
    if not raw:
        return
    path = Path(raw)
    problem = check_writable(REPORT_JSON_OPTION, path)
    if problem:
        raise pytest.UsageError(problem)
    state.hooks.register(JsonReportWriter(path), "rs-tck-json-report")
