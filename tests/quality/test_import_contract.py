"""The import contract: which module may import which, read from the source.

Each package is a tower of layers, bottom first; a module imports its own layer and those below,
never one above (loading the runner must not load the verifications, nor settings the fuzzer).
Every module is placed in a layer, so a new one has to be placed before the suite passes. The
core imports no test framework and nothing of the plugins, and nothing outside the core imports
one of its private modules: those under ``rstck._internal`` (any module with an underscore
part is private); every other module is public and named in ``rstck``'s docstring.

``tests/`` and ``benchmarks/`` are exempt from the last rule: they test and time the private
modules themselves (a catalogue runs one rule test through ``rstck._internal.one_rule`` to pin its verdict,
a benchmark times the probe), which is what a user of the kit never does.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: Source folder -> the package it installs as.
PACKAGES = {"tck/rstck": "rstck", "plugins/rstck_plugins": "rstck_plugins"}

#: The layers of ``rstck``, bottom first. A name covers the module and, with ``.*``, a package's
#: modules. docs/architecture.md walks the same tower.
RSTCK_LAYERS: list[tuple[str, list[str]]] = [
    ("vocabulary", ["rstck._internal", "rstck._internal.lazy", "rstck.api", "rstck.results", "rstck._internal.rule_text",
                    "rstck.rules", "rstck._internal.trace", "rstck._internal.worker",
                    "rstck._internal.reach", "rstck._internal.clock"]),
    ("tables", ["rstck.editions", "rstck._internal.matrix", "rstck._internal.parity", "rstck.settings",
                "rstck.errors", "rstck._internal.evidence"]),
    ("one test", ["rstck._internal.environment", "rstck.registry"]),
    ("instruments", ["rstck._internal.watching", "rstck._internal.probe_signals", "rstck.probe",
                     "rstck._internal.ledger", "rstck.manual", "rstck._internal.feeder", "rstck.whitebox",
                     "rstck._internal.loop"]),
    ("subjects", ["rstck.subjects", "rstck.reference", "rstck.reference.*", "rstck.pytest"]),
    ("contexts", ["rstck.contexts", "rstck._internal.contexts", "rstck._internal.contexts.*"]),
    ("runner", ["rstck._internal.one_rule"]),
    ("fuzz", ["rstck.fuzz", "rstck._internal.fuzz", "rstck._internal.fuzz.*"]),
    ("verifications", ["rstck.verifications", "rstck._internal.verifications",
                       "rstck._internal.verifications.*"]),
    ("engine", ["rstck._internal.selection", "rstck._internal.schedule", "rstck.run_api",
                "rstck.generated_docs", "rstck.processes", "rstck._internal.process_worker"]),
    ("front doors", ["rstck", "rstck.__main__"]),
]


#: The layers of ``rstck_plugins``, bottom first: the namespace every product plugs into, then
#: one sub-package per product, the pytest host on top, so that no reporter or campaign module
#: can import the pytest plugin (it imports them), only its entry point.
PLUGIN_LAYERS: list[tuple[str, list[str]]] = [
    ("namespace", ["rstck_plugins", "rstck_plugins.state", "rstck_plugins.hookspecs", "rstck_plugins.hooks"]),
    ("adapters", ["rstck_plugins.adapters", "rstck_plugins.adapters.*"]),
    ("reports", ["rstck_plugins.reports", "rstck_plugins.reports.*"]),
    ("campaign", ["rstck_plugins.campaign", "rstck_plugins.campaign.*"]),
    ("command line", ["rstck_plugins.cli", "rstck_plugins.__main__"]),
    ("pytest host", ["rstck_plugins.host", "rstck_plugins.host.*"]),
]
#: The products of ``rstck_plugins``: each entered by its front door (its ``__init__``) from outside.
PLUGIN_PRODUCTS = ("rstck_plugins.adapters", "rstck_plugins.reports", "rstck_plugins.campaign", "rstck_plugins.host")

#: What the core never imports: a test framework, the cluster, or the plugins built on it.
CORE_NEVER_IMPORTS = ("pytest", "_pytest", "pluggy", "pyspark", "rstck_plugins")

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


def _is_in(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def foreign_violations(graph: Mapping[str, set[str]], package: str, never: Iterable[str]) -> list[str]:
    """One line per import of ``package`` of something it must never import."""
    return [f"{module} imports {target}, which {package} never imports"
            for module in sorted(graph) if _is_in(module, package)
            for target in sorted(graph[module]) if any(_is_in(target, n) for n in never)]


def is_private(module: str) -> bool:
    """Private by its path: a part of the name starts with an underscore (``rstck._internal``,
    ``rstck.__main__``)."""
    return any(part.startswith("_") for part in module.split("."))


def private_violations(graph: Mapping[str, set[str]], package: str) -> list[str]:
    """One line per import of a private module of ``package`` from outside it."""
    return [f"{module} imports {target}, a private module of {package}"
            for module in sorted(graph) if not _is_in(module, package)
            for target in sorted(graph[module]) if _is_in(target, package) and is_private(target)]


def circles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """Every set of modules that import each other round a circle (Tarjan's strongly connected parts)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(graph.get(node, ())):
            if target not in graph or target == node:
                continue
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            part = [stack.pop()]
            while part[-1] != node:
                part.append(stack.pop())
            if len(part) > 1:
                found.append(sorted(part))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def by_product(graph: Mapping[str, set[str]], products: Iterable[str]) -> dict[str, set[str]]:
    """The graph with each product's modules folded into the product: the arrows between products."""
    products = tuple(products)

    def fold(module: str) -> str:
        return next((p for p in products if _is_in(module, p)), module)

    folded: dict[str, set[str]] = {}
    for module, targets in graph.items():
        folded.setdefault(fold(module), set()).update(fold(t) for t in targets if t in graph)
    return folded


def back_doors(graph: Mapping[str, set[str]], products: Iterable[str]) -> list[str]:
    """One line per import of a product's inner module from outside the product."""
    return [f"{module} imports {target}: enter {product} by its front door"
            for module in sorted(graph) for target in sorted(graph[module])
            for product in products if target.startswith(product + ".") and not _is_in(module, product)]


def test_no_module_of_rstck_imports_a_layer_above_its_own() -> None:
    problems = layer_violations(import_graph(), "rstck", RSTCK_LAYERS)
    assert not problems, "\n".join(problems)


def test_no_module_of_rstck_plugins_imports_a_layer_above_its_own() -> None:
    problems = layer_violations(import_graph(), "rstck_plugins", PLUGIN_LAYERS)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("package", sorted(PACKAGES.values()))
def test_no_modules_of_a_package_import_each_other_round_a_circle(package: str) -> None:
    graph = {m: t for m, t in import_graph().items() if _is_in(m, package)}
    assert not circles(graph)


def test_the_products_of_rstck_plugins_import_each_other_in_one_direction_and_by_their_front_doors() -> None:
    graph = {m: t for m, t in import_graph().items() if _is_in(m, "rstck_plugins")}
    assert not circles(by_product(graph, PLUGIN_PRODUCTS))
    problems = back_doors(graph, PLUGIN_PRODUCTS)
    assert not problems, "\n".join(problems)


def test_a_circle_and_a_back_door_are_caught() -> None:
    graph = {"p.a": {"p.b"}, "p.b": {"p.c"}, "p.c": {"p.a"}, "p.d": {"p.d", "p.a"},
             "p.x": {"p.y"}, "p.x.i": set(), "p.y": {"p.x.i"}}
    assert circles(graph) == [["p.a", "p.b", "p.c"]]
    assert circles(by_product(graph, ["p.x"])) == [["p.a", "p.b", "p.c"], ["p.x", "p.y"]]
    assert back_doors(graph, ["p.x"]) == ["p.y imports p.x.i: enter p.x by its front door"]


def test_the_core_imports_no_test_framework_nor_the_plugins() -> None:
    problems = foreign_violations(import_graph(), "rstck", CORE_NEVER_IMPORTS)
    assert not problems, "\n".join(problems)


def test_nothing_outside_the_core_imports_a_private_module_of_it() -> None:
    problems = private_violations(import_graph(), "rstck")
    assert not problems, "\n".join(problems)


def test_every_public_module_is_named_in_the_package_docstring() -> None:
    """A module outside ``_internal`` is public: the docstring names it, or its package."""
    import rstck

    assert rstck.__doc__ is not None
    for name in _modules():
        if not _is_in(name, "rstck") or is_private(name):
            continue
        named = [".".join(name.split(".")[:i]) for i in range(2, len(name.split(".")) + 1)] or [name]
        assert any(f"``{n}``" in rstck.__doc__ for n in named), (
            f"{name} is public (outside rstck._internal): name it in the rstck docstring, or move it")


def test_no_module_of_the_kit_is_named_as_pytest_names_test_files() -> None:
    """pytest assertion-rewrites a module whose file is named as a test file (its default
    ``python_files``, ``test_*.py`` and ``*_test.py``) wherever it is imported from: parsed and
    compiled from source, not read from the installer's bytecode, in every run where pytest
    cannot cache its own (``PYTHONDONTWRITEBYTECODE``, a read-only site-packages)."""
    import fnmatch

    named = [name for name, path in _modules().items()
             if any(fnmatch.fnmatch(path.name, pattern) for pattern in ("test_*.py", "*_test.py"))]
    assert named == []


def test_loading_the_core_loads_no_test_framework() -> None:
    """What the source shows, checked once at run time too: a library the core loads loads none."""
    code = (
        "import sys, rstck, rstck.run_api, rstck._internal.one_rule, rstck.reference, rstck.generated_docs\n"
        f"bad = [m for m in {CORE_NEVER_IMPORTS!r} if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_forbidden_and_a_private_import_are_caught() -> None:
    known = ["core", "core.public", "core._internal.private", "outside"]
    graph = {
        "core": imports_of("core", "import pytest\nfrom . import public\n", known, is_package=True),
        "core.public": set(),
        "core._internal.private": set(),
        "outside": imports_of("outside", "from core import public\nfrom core._internal.private import x\n",
                              known),
        "other": imports_of("other", "from core.__main__ import main\n", [*known, "core.__main__"]),
    }
    assert foreign_violations(graph, "core", ["pytest"]) == ["core imports pytest, which core never imports"]
    assert private_violations(graph, "core") == [
        "other imports core.__main__, a private module of core",
        "outside imports core._internal.private, a private module of core",
    ]


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
    ("rstck._internal.one_rule", "rstck.verifications"),
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
    twin = unwanted.replace("rstck.", "rstck._internal.", 1)
    assert not {m for m in seen for u in (unwanted, twin) if m == u or m.startswith(u + ".")}


def architecture_map(text: str) -> dict[str, dict[str, str]]:
    """Per package, each module the map in docs/architecture.md lists and the layer it is under.

    A map block opens with ``<package> (<folder>/)``; a layer heading is indented two spaces and
    ends in a colon; an entry is indented four, its first word the module's path in the folder
    (``name/`` for a package's ``__init__.py``). Deeper lines continue the one above.
    """
    found: dict[str, dict[str, str]] = {}
    entries: dict[str, str] | None = None
    layer = ""
    folder = ""
    for line in text.splitlines():
        head = line.split(" (", 1)
        if line and not line[0].isspace() and len(head) == 2 and head[0] in PACKAGES.values():
            entries = found.setdefault(head[0], {})
            folder = head[1].split(")", 1)[0].rstrip("/")
            continue
        if entries is None:
            continue
        if line.startswith("```"):
            entries = None
        elif line.startswith("  ") and not line.startswith("   ") and line.rstrip().endswith(":"):
            layer = line.strip()[:-1]
        elif line.startswith("    ") and not line.startswith("     "):
            path = line.split()[0]
            path = path + "__init__.py" if path.endswith("/") else path
            entries[f"{folder}/{path}"] = layer
    return found


def map_problems(listed: Mapping[str, Mapping[str, str]], files: Mapping[str, str],
                 layers: Mapping[str, Sequence[tuple[str, list[str]]]]) -> list[str]:
    """One line per difference between the map and the code: ``files`` is path -> module name."""
    problems = []
    for package, tower in layers.items():
        entries = listed.get(package, {})
        for file, name in sorted(files.items()):
            if name.split(".")[0] == package and file not in entries:
                problems.append(f"{file} ({name}) is missing from the map in docs/architecture.md")
        for file, layer in sorted(entries.items()):
            if file not in files:
                problems.append(f"docs/architecture.md lists {file}, which is no module")
                continue
            index = layer_of(files[file], tower)
            actual = tower[index][0] if index is not None else None
            if layer != actual:
                problems.append(f"docs/architecture.md lists {file} under {layer!r}; its layer is {actual!r}")
    return problems


def test_the_architecture_map_lists_every_module_under_its_layer() -> None:
    listed = architecture_map((ROOT / "docs" / "architecture.md").read_text())
    files = {str(path.relative_to(ROOT)): name for name, path in _modules().items()}
    problems = map_problems(listed, files, {"rstck": RSTCK_LAYERS, "rstck_plugins": PLUGIN_LAYERS})
    assert not problems, "\n".join(problems)


def test_the_map_check_catches_a_missing_module_a_stale_entry_and_a_wrong_layer() -> None:
    text = ("```\nrstck (tck/), bottom layer first\n  vocabulary:\n    api.py   the binding\n"
            "    gone.py  removed long ago\n      (a continuation line.py)\n  fuzz:\n    fuzz/    the package\n"
            "    trace.py  misplaced\n```\n")
    listed = architecture_map(text)
    assert listed == {"rstck": {"tck/api.py": "vocabulary", "tck/gone.py": "vocabulary",
                                "tck/fuzz/__init__.py": "fuzz", "tck/trace.py": "fuzz"}}
    files = {"tck/api.py": "rstck.api", "tck/trace.py": "rstck._internal.trace", "tck/fuzz/__init__.py": "rstck.fuzz",
             "tck/new.py": "rstck.new"}
    layers = [("vocabulary", ["rstck.api", "rstck._internal.trace", "rstck.new"]), ("fuzz", ["rstck.fuzz"])]
    assert map_problems(listed, files, {"rstck": layers}) == [
        "tck/new.py (rstck.new) is missing from the map in docs/architecture.md",
        "docs/architecture.md lists tck/gone.py, which is no module",
        "docs/architecture.md lists tck/trace.py under 'fuzz'; its layer is 'vocabulary'",
    ]


def test_loading_one_module_of_the_core_does_not_load_the_verifications() -> None:
    """The package's public names load on first use: the runner alone stays below the verifications."""
    code = ("import sys, rstck._internal.one_rule\n"
            "print(sorted(m for m in sys.modules if m.startswith(('rstck.verifications', 'rstck._internal.verifications', 'rstck.run_api', "
            "'rstck.fuzz', 'rstck._internal.fuzz'))))\n"
            "import rstck\nassert rstck.Run.__module__ == 'rstck.run_api'\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_the_reference_subjects_load_asyncio_only_for_the_ones_on_a_loop() -> None:
    """A run naming a threaded reference subject does not pay for asyncio (about 10 ms)."""
    code = ("import sys\nfrom rstck.reference import range_publisher, identity_processor\n"
            "assert 'asyncio' not in sys.modules\n"
            "from rstck.reference import asyncio_range_publisher\n"
            "import inspect\nassert inspect.iscoroutinefunction(asyncio_range_publisher)\n"
            "from rstck.subjects import load_publisher_subject\n"
            "print(load_publisher_subject('rstck.reference:loop_range_publisher').label)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert "loop_range_publisher" in result.stdout


def test_a_run_imports_only_the_reports_and_reference_subjects_it_uses(tmp_path: Path) -> None:
    """A run naming one reference subject and no report file loads that subject's module, and
    none of the report files', the baseline's or ``rstck.pytest``; naming a results file loads its
    writer (and the file is written)."""
    code = ("import sys, pytest\n"
            "code = pytest.main(['-q', '-p', 'no:cacheprovider', '--co', *sys.argv[1:]])\n"
            "assert code == 0, code\n"
            "print(sorted(m for m in sys.modules if m.startswith(('rstck.reference.', 'rstck.pytest', "
            "'rstck_plugins.reports.'))))\n")

    def run(*args: str) -> str:
        result = subprocess.run([sys.executable, "-c", code, "--rs-subscriber=rstck.reference:sync_subscriber", *args],
                                cwd=tmp_path, capture_output=True, text=True, check=False)
        assert result.returncode == 0, result.stderr
        return result.stdout.strip().splitlines()[-1]

    assert run() == "['rstck.reference.subscribers', 'rstck_plugins.reports.terminal', 'rstck_plugins.reports.verdicts']"
    report = tmp_path / "results.json"
    loaded = run(f"--rs-report-json={report}")
    assert "'rstck_plugins.reports.json_report'" in loaded
    assert "'rstck_plugins.reports.baseline'" not in loaded
    assert report.exists()
