"""``--rs-report-json``: the results document (schema ``rs-tck-results/1``), written when the run ends.

The file every other report can be made from later: ``python -m rstck_plugins report`` renders
the HTML page from it, and CI keeps it as an artifact.
"""

from __future__ import annotations

import json

import pytest
from rstck.results import RunResults

from .. import hookimpl
from ..state import RsTckState
from .outputs import configure_writer

REPORT_JSON_OPTION = "--rs-report-json"


def add_options(group: pytest.OptionGroup) -> None:
    group.addoption(REPORT_JSON_OPTION, dest="rs_report_json", metavar="PATH",
                    help="Write the results (schema rs-tck-results/1) to PATH")


def render(results: RunResults) -> str:
    """The file: where the results leave the process, they become JSON."""
    return json.dumps(results.to_json(), indent=2) + "\n"


@hookimpl
def rstck_configure(config: pytest.Config, state: RsTckState) -> None:
    configure_writer(config, state, "rs_report_json", REPORT_JSON_OPTION, render, "results file")
