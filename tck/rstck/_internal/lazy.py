"""A package's names imported from their modules when first asked for (PEP 562).

A run of one kind of subject then loads no other kind's modules, and ``import rstck`` costs
what its user asks of it.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
from importlib import import_module
from typing import Any


def lazy_names(namespace: dict[str, Any], modules: Mapping[str, str]) -> Callable[[str], Any]:
    """The module's ``__getattr__``: ``modules`` maps each name to its module, relative to the
    package of ``namespace`` (a module's ``globals()``), where the value is kept once imported."""
    name_of = namespace["__name__"]
    package = namespace["__package__"]

    def __getattr__(name: str) -> Any:
        module = modules.get(name)
        if module is None:
            raise AttributeError(f"module {name_of!r} has no attribute {name!r}")
        value = getattr(import_module(module, package), name)
        namespace[name] = value
        return value

    return __getattr__
