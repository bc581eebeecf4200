"""``--rs-report-html``: the option, and the writer that renders the page when the run ends.

The page's modules are imported only by a run that writes one (``render``).
"""

from __future__ import annotations

import pytest
from rstck.results import RunResults

from ... import hookimpl
from ...state import RsTckState
from ..outputs import configure_writer

REPORT_HTML_OPTION = "--rs-report-html"


def add_options(group: pytest.OptionGroup) -> None:
    group.addoption(REPORT_HTML_OPTION, dest="rs_report_html", metavar="PATH",
                    help="Write a self-contained HTML report (conformance table, failures, signal traces) to PATH")


def render(results: RunResults) -> str:
    """The page of ``results``."""
    from .page import render as render_page

    return render_page(results)


@hookimpl
def rstck_configure(config: pytest.Config, state: RsTckState) -> None:
    configure_writer(config, state, "rs_report_html", REPORT_HTML_OPTION, render, "HTML report")
