"""The verification modules read in rule order: a reader finds every test of a rule in one place.

Each kind's own tests run and are listed in rule order (the factory's sanity checks first, the
fuzz test last), so every test of a rule sits in one module, next to the others; no module of
them grows past 1,000 lines, nor a function past 80.
"""

from __future__ import annotations

import ast
import itertools
from pathlib import Path

import pytest
from rstck.registry import TckTest
from rstck.verifications import VERIFICATIONS

ROOT = Path(__file__).resolve().parents[2]
MODULES = sorted((ROOT / "tck" / "rstck" / "_internal" / "verifications").rglob("*.py"))


def _rank(test: TckTest) -> tuple[int, int]:
    if test.rule is None:
        return (99, 0) if test.level == "fuzz" else (0, 0)
    return test.rule.sort_key


@pytest.mark.parametrize("name", list(VERIFICATIONS))
def test_a_kinds_own_tests_are_in_rule_order(name: str) -> None:
    module = f"rstck._internal.verifications.{name}"
    own = [t for t in VERIFICATIONS[name].tests
           if t.func.__module__ == module or t.func.__module__.startswith(module + ".")]
    assert own, f"no test of {name} is defined in {module}"
    out_of_order = [f"{b.test_id} after {a.test_id}" for a, b in itertools.pairwise(own)
                    if _rank(b) < _rank(a)]
    assert out_of_order == []


def test_each_rule_of_a_kind_is_in_one_module() -> None:
    problems = []
    for name, verification in VERIFICATIONS.items():
        where: dict[str, set[str]] = {}
        for test in verification.tests:
            if test.rule_id is not None and test.func.__module__.startswith("rstck._internal.verifications."):
                where.setdefault(test.rule_id, set()).add(test.func.__module__)
        problems += [f"{name} {rule}: {sorted(modules)}" for rule, modules in where.items() if len(modules) > 1]
    assert problems == []


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_verification_module_or_function_is_too_long(path: Path) -> None:
    source = path.read_text(encoding="utf-8")
    assert len(source.splitlines()) <= 1000, f"{path.name}: cut it by rule group"
    long = [f"{node.name}: {node.end_lineno - node.lineno + 1} lines"
            for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno
            and node.end_lineno - node.lineno + 1 > 80]
    assert long == []
