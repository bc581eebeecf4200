"""``--rs-report-html``: the option, its check, and the ``rstck`` hook that writes the page."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ..files import check_writable
from ..hooks import hookimpl
from ..state import RsTckState
from .page import write

REPORT_HTML_OPTION = "--rs-report-html"


def add_options(group: pytest.OptionGroup) -> None:
    group.addoption(REPORT_HTML_OPTION, dest="rs_report_html", metavar="PATH",
                    help="Write a self-contained HTML report (conformance table, failures, signal traces) to PATH")


class HtmlReportWriter:
    """``--rs-report-html``: renders the results document when the run ends (an ``rstck`` hook)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @hookimpl
    def rstck_run_finished(self, document: dict[str, Any]) -> None:
        write(self.path, document)


def configure(config: pytest.Config, state: RsTckState) -> None:
    """Register the HTML report plugin when asked for; an unwritable path is a usage error."""
    raw = config.getoption("rs_report_html", None)
    if not raw:
        return
    path = Path(raw)
    problem = check_writable(REPORT_HTML_OPTION, path)
    if problem:
        raise pytest.UsageError(problem)
    state.hooks.register(HtmlReportWriter(path), "rs-tck-html-report")
