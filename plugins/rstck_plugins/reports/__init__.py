"""The kit's reports of a run: the results file, the HTML page, the baseline gate, the rule table.

Each reporter is an ``rstck`` plugin (``rstck_configure``, then ``rstck_result`` and
``rstck_run_finished``), set up by the pytest host in the order ``builtin_reporters`` gives;
what other products use (the HTML page for ``rs-tck report``, the escaping for the campaign's
page, the path checks) is exported here and loaded on first use, so that the campaign's page
does not load pytest.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING
from typing import Any

from .. import hookimpl

if TYPE_CHECKING:
    import pytest

    from ..hookspecs import Reporter
    from ..state import RsTckState
    from .files import check_writable
    from .files import write_atomic
    from .html_report import render as render_html
    from .html_report import write as write_html
    from .html_report.markup import esc

#: Each exported name: (module, its name there).
_LAZY = {
    "check_writable": (".files", "check_writable"),
    "write_atomic": (".files", "write_atomic"),
    "render_html": (".html_report", "render"),
    "write_html": (".html_report", "write"),
    "esc": (".html_report.markup", "esc"),
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, attr = _LAZY[name]
    value = getattr(importlib.import_module(module, __name__), attr)
    globals()[name] = value
    return value


class OnOption:
    """A built-in reporter whose module acts only when one of its options is given: that module
    is imported then, and set up as if registered itself (it implements ``rstck_configure`` only),
    so a run that writes no file and keeps no baseline does not import them."""

    def __init__(self, module: str, dests: tuple[str, ...]) -> None:
        self.module = module
        self.dests = dests

    @hookimpl
    def rstck_configure(self, config: pytest.Config, state: RsTckState) -> None:
        if any(config.getoption(dest, None) for dest in self.dests):
            importlib.import_module(self.module, __name__).rstck_configure(config=config, state=state)


def builtin_reporters() -> tuple[tuple[str, Reporter], ...]:
    """The kit's reporters by plugin name, in the order they are set up: the files, the gate, the table."""
    from . import terminal

    return (
        ("rstck-reporter-json", OnOption(".json_report", ("rs_report_json",))),
        ("rstck-reporter-html", OnOption(".html_report.options", ("rs_report_html",))),
        ("rstck-reporter-baseline", OnOption(".baseline", ("rs_baseline", "rs_baseline_write"))),
        ("rstck-reporter-terminal", terminal),
    )


def add_options(group: pytest.OptionGroup) -> None:
    """The reports' options: ``--rs-report-json``, ``--rs-report-html``, ``--rs-baseline(-write)``."""
    from . import baseline
    from . import json_report
    from .html_report import options as html_options

    json_report.add_options(group)
    html_options.add_options(group)
    baseline.add_options(group)


__all__ = ["add_options", "builtin_reporters", "check_writable", "esc", "render_html", "write_atomic", "write_html"]
