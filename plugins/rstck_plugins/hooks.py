"""The plugin manager of the ``rstck`` namespace, and the built-in implementations.

One manager per pytest run: entry points of the ``rstck`` group are loaded into it, and so
is every ``conftest.py`` that defines an ``rstck_*`` function.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pluggy
from rstck.errors import SetupError
from rstck.subjects import default_resolve
from rstck.subjects import subject_option

from . import hookimpl as _hookimpl
from . import hookspecs

hookimpl = _hookimpl  # one marker: the package exports the same object
ENTRY_POINT_GROUP = "rstck"


class Builtins:
    """What the TCK does when no plugin says otherwise."""

    @hookimpl(trylast=True)
    def rstck_resolve_subject(self, spec: str, role: str) -> Any:
        return default_resolve(spec, role)


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
    """A manager with our hookspecs, the built-ins and the ``rstck`` entry points.

    The TCK's own adapters come in through the entry points, as everyone else's do.
    """
    pm = RstckPluginManager("rstck")
    pm.add_hookspecs(hookspecs)
    pm.register(Builtins(), "rstck-builtins")
    if entry_points:
        pm.load_setuptools_entrypoints(ENTRY_POINT_GROUP)
    pm.check_pending()
    return pm


def make_resolver(hooks: pluggy.PluginManager, adapter: str | None) -> Callable[[str, str], Any]:
    """Subject lookup through the ``rstck`` hooks, then the chosen adapter, if any.

    One resolution for every front end: the pytest plugin and campaign units load subjects alike.
    """

    def resolve(spec: str, role: str) -> Any:
        option = subject_option(role)
        obj = hooks.hook.rstck_resolve_subject(spec=spec, role=role)
        if obj is None:
            raise SetupError(f"{option}={spec}: no plugin could resolve it")
        if not adapter:
            return obj
        adapted = hooks.hook.rstck_adapt_subject(subject=obj, role=role, adapter=adapter)
        if adapted is None:
            names = sorted({n for names in hooks.hook.rstck_adapter_names() for n in names})
            raise SetupError(
                f"--rs-adapter={adapter}: no adapter of that name handles a {role}; "
                f"available: {', '.join(names) or 'none'}"
            )
        return adapted

    return resolve


def defines_hooks(plugin: object) -> bool:
    """Whether a module (a conftest, say) implements any hook of our namespace."""
    return any(name.startswith("rstck_") and callable(getattr(plugin, name)) for name in dir(plugin))
