"""The plugin manager of the ``rstck`` namespace, and the built-in implementations.

One manager per pytest run: entry points of the ``rstck`` group are loaded into it, and so
is every ``conftest.py`` that defines an ``rstck_*`` function.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pluggy
from rstck.subjects import default_resolve

from . import hookspecs

hookimpl = pluggy.HookimplMarker("rstck")
ENTRY_POINT_GROUP = "rstck"


class Builtins:
    """What the TCK does when no plugin says otherwise."""

    @hookimpl(trylast=True)
    def rstck_resolve_subject(self, spec: str, role: str) -> Any:
        return default_resolve(spec, role)


class ReportFile:
    """A file written from the results document when the run ends, atomically.

    A failure to write is kept, not raised: the run's verdicts and its terminal summary must
    survive a full disk or a vanished directory, which then cost one "not written" line.
    """

    #: How the terminal names the file ("results file", "HTML report").
    kind = "report"

    def __init__(self, path: Path) -> None:
        self.path = path
        #: None until the run ends; then "" when written, else why it was not.
        self.problem: str | None = None

    def render(self, document: dict[str, Any]) -> str:
        raise NotImplementedError

    @hookimpl
    def rstck_run_finished(self, document: dict[str, Any]) -> None:
        tmp = self.path.with_name(self.path.name + ".tmp")
        try:
            tmp.write_text(self.render(document), encoding="utf-8")
            tmp.replace(self.path)
        except OSError as exc:
            self.problem = exc.strerror or str(exc)
        except Exception as exc:
            self.problem = f"{type(exc).__name__}: {exc}"
        else:
            self.problem = ""


class JsonReportWriter(ReportFile):
    """``--rs-report-json``: the results document (schema ``rs-tck-results/1``)."""

    kind = "results file"

    def render(self, document: dict[str, Any]) -> str:
        return json.dumps(document, indent=2) + "\n"


class RstckPluginManager(pluggy.PluginManager):
    """Accepts plain ``rstck_*`` functions as implementations, as pytest does for ``pytest_*``.

    So a ``conftest.py`` can implement a hook without importing anything of ours.
    """

    def parse_hookimpl_opts(self, plugin: object, name: str) -> pluggy.HookimplOpts | None:
        opts = super().parse_hookimpl_opts(plugin, name)
        if opts is None and name.startswith("rstck_") and callable(getattr(plugin, name, None)):
            return {"wrapper": False, "hookwrapper": False, "optionalhook": False,
                    "tryfirst": False, "trylast": False, "specname": None}
        return opts


def make_manager(*, entry_points: bool = True) -> pluggy.PluginManager:
    """A manager with our hookspecs, the built-ins, the first-party adapters and entry points."""
    from .adapters import camelcase
    from .adapters import rsocket

    pm = RstckPluginManager("rstck")
    pm.add_hookspecs(hookspecs)
    pm.register(Builtins(), "rstck-builtins")
    pm.register(camelcase, "rstck-adapter-camelcase")
    pm.register(rsocket, "rstck-adapter-rsocket")
    if entry_points:
        pm.load_setuptools_entrypoints(ENTRY_POINT_GROUP)
    pm.check_pending()
    return pm


def defines_hooks(plugin: object) -> bool:
    """Whether a module (a conftest, say) implements any hook of our namespace."""
    return any(name.startswith("rstck_") and callable(getattr(plugin, name)) for name in dir(plugin))
