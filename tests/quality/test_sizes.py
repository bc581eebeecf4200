"""Room sizes: no module of the kit over 1,000 lines, no function over 80.

A reader finds a job by its file and reads a function whole; past these sizes a module holds
several jobs and a function several steps, and the next change makes it worse. Each failure
names every offender with its length, so that the cut can be planned from the message.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: The source folders held to the limits: the installed packages, not their tests.
SOURCES = ("tck", "plugins")
MAX_MODULE_LINES = 1000
MAX_FUNCTION_LINES = 80


def _modules() -> list[Path]:
    return sorted(p for top in SOURCES for p in (ROOT / top).rglob("*.py") if ".venv" not in p.parts)


def _functions(tree: ast.AST, prefix: str = "") -> Iterator[tuple[str, int, int]]:
    """``(qualified name, first line, length)`` of every function, nested ones too; a function's
    length runs from its ``def`` to its last line, decorators left out."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            name = f"{prefix}{node.name}"
            yield name, node.lineno, (node.end_lineno or node.lineno) - node.lineno + 1
            yield from _functions(node, f"{name}.")
        elif isinstance(node, ast.ClassDef):
            yield from _functions(node, f"{prefix}{node.name}.")
        else:
            yield from _functions(node, prefix)


def long_modules() -> list[str]:
    """``path: N lines`` of every module over the limit."""
    out = []
    for path in _modules():
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > MAX_MODULE_LINES:
            out.append(f"{path.relative_to(ROOT)}: {lines} lines")
    return out


def long_functions() -> list[str]:
    """``path:line name: N lines`` of every function over the limit."""
    out = []
    for path in _modules():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for name, line, length in _functions(tree):
            if length > MAX_FUNCTION_LINES:
                out.append(f"{path.relative_to(ROOT)}:{line} {name}: {length} lines")
    return out


def test_no_module_is_over_1000_lines() -> None:
    offenders = long_modules()
    assert not offenders, f"modules over {MAX_MODULE_LINES} lines (cut them by job):\n" + "\n".join(offenders)


def test_no_function_is_over_80_lines() -> None:
    offenders = long_functions()
    assert not offenders, f"functions over {MAX_FUNCTION_LINES} lines (cut them by step):\n" + "\n".join(offenders)


def test_the_measures_see_a_long_module_and_a_long_function() -> None:
    """The walk finds a method nested in a class and a function nested in a function."""
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    source = f"class C:\n    def m(self):\n        def inner():\n{body.replace('    ', '            ')}\n"
    found = {name: length for name, _line, length in _functions(ast.parse(source))}
    assert found == {"C.m": MAX_FUNCTION_LINES + 2, "C.m.inner": MAX_FUNCTION_LINES + 1}
