"""The import contract: which module may import which, read from the source.

Each package is a tower of layers, bottom first; a module imports its own layer and those below,
never one above (loading the runner must not load the rule catalogue, nor settings the fuzzer).
Every module is placed in a layer, so a new one has to be placed before the suite passes.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: Source folder -> the package it installs as.
PACKAGES = {"tck": "rstck", "plugins": "rstck_plugins"}

#: The layers of ``rstck``, bottom first. A name covers the module and, with ``.*``, a package's
#: modules. docs/architecture.md walks the same tower.
RSTCK_LAYERS: list[tuple[str, list[str]]] = [
    ("vocabulary", ["rstck.api", "rstck.results", "rstck.rules", "rstck.trace", "rstck.worker"]),
    ("tables", ["rstck.editions", "rstck.matrix", "rstck.settings", "rstck.errors", "rstck.evidence"]),
    ("one test", ["rstck.environment", "rstck.registry"]),
    ("instruments", ["rstck.probe", "rstck.manual", "rstck.whitebox", "rstck.loop"]),
    ("subjects", ["rstck.subjects", "rstck.reference", "rstck.reference.*"]),
    ("contexts", ["rstck.contexts", "rstck.contexts.*"]),
    ("runner", ["rstck.runner"]),
    ("fuzz", ["rstck.fuzz", "rstck.fuzz.*"]),
    ("verifications", ["rstck.verifications", "rstck.verifications.*"]),
    ("engine", ["rstck.engine", "rstck.catalogue"]),
    ("front doors", ["rstck", "rstck.__main__"]),
]


def _modules() -> dict[str, Path]:
    """Every module of the two packages by import name."""
    out: dict[str, Path] = {}
    for folder, package in PACKAGES.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = list(path.relative_to(ROOT / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join([package, *parts])] = path
    return out


def imports_of(module: str, source: str, known: Iterable[str], *, is_package: bool = False) -> set[str]:
    """The modules ``source`` imports, anywhere in it (a function's lazy import counts too).

    ``from a import b`` names ``a.b`` when that is a module of ``known``, else ``a``; relative
    imports are resolved against ``module``.
    """
    known = set(known)
    here = module.split(".") if is_package else module.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[: len(here) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                found.add(sub if sub in known else target)
    return found


def import_graph() -> dict[str, set[str]]:
    modules = _modules()
    return {
        name: imports_of(name, path.read_text(), modules, is_package=path.name == "__init__.py")
        for name, path in modules.items()
    }


def layer_of(module: str, layers: Sequence[tuple[str, list[str]]]) -> int | None:
    for index, (_name, patterns) in enumerate(layers):
        for pattern in patterns:
            if module == pattern or (pattern.endswith(".*") and module.startswith(pattern[:-1])):
                return index
    return None


def layer_violations(graph: Mapping[str, set[str]], package: str,
                     layers: Sequence[tuple[str, list[str]]]) -> list[str]:
    """One line per broken rule of ``package``'s tower: an unplaced module, an arrow upwards."""
    problems = []
    for module in sorted(graph):
        if module != package and not module.startswith(package + "."):
            continue
        own = layer_of(module, layers)
        if own is None:
            problems.append(f"{module} is in no layer: place it in the tower")
            continue
        for target in sorted(graph[module]):
            if target != package and not target.startswith(package + "."):
                continue
            theirs = layer_of(target, layers)
            if theirs is not None and theirs > own:
                problems.append(f"{module} ({layers[own][0]}) imports {target} ({layers[theirs][0]}), "
                                "a layer above it")
    return problems


def test_no_module_of_rstck_imports_a_layer_above_its_own() -> None:
    assert layer_violations(import_graph(), "rstck", RSTCK_LAYERS) == []


def test_an_upward_import_and_an_unplaced_module_are_caught() -> None:
    layers = [("low", ["pkg.low"]), ("high", ["pkg.high", "pkg.sub.*"])]
    known = ["pkg.low", "pkg.high", "pkg.sub.a"]
    lazy = "def f():\n    from .high import thing\n"
    graph = {
        "pkg.low": imports_of("pkg.low", lazy, known),
        "pkg.high": imports_of("pkg.high", "from . import low\n", known),
        "pkg.sub.a": imports_of("pkg.sub.a", "from ..low import x\n", known),
        "pkg.stray": set(),
    }
    assert layer_violations(graph, "pkg", layers) == [
        "pkg.low (low) imports pkg.high (high), a layer above it",
        "pkg.stray is in no layer: place it in the tower",
    ]


@pytest.mark.parametrize(("module", "unwanted"), [
    ("rstck.runner", "rstck.verifications"),
    ("rstck.settings", "rstck.fuzz"),
    ("rstck.rules", "rstck.editions"),
])
def test_a_kernel_module_does_not_reach_up(module: str, unwanted: str) -> None:
    """What a module needs, followed import by import, stops below the tower's upper floors."""
    graph = import_graph()
    seen, todo = set(), [module]
    while todo:
        name = todo.pop()
        if name in seen or name not in graph:
            continue
        seen.add(name)
        todo += graph[name]
    assert not {m for m in seen if m == unwanted or m.startswith(unwanted + ".")}
