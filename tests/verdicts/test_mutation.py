"""The kit's own mutation run: the mutator's operators, and that a mutant is judged by the kit.

``benchmarks/mutation.py`` runs every mutant of ``rstck/reference/``; these tests pin what the
mutator generates on a small fixed source (so mutant ids stay stable) and run one mutant that
the kit must kill end to end, in a process of its own as the run does.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from tests import mutation

ROOT = Path(__file__).resolve().parents[2]

SOURCE = '''"""A module."""
import threading

LIMIT = 2


def f(a, b=None, *, flag=True):
    """A function."""
    with _lock:
        x = a < b
    if not a and b is None:
        return a + 1
    logger.warning("%s", x * 2)
    _lock.acquire()
    return f"{a + 1}"


class C:
    def __repr__(self) -> str:
        return str(1 + 1)
'''

#: Every mutant of SOURCE: docstrings, imports, logger calls, f-strings and ``__repr__`` are left
#: alone, ``is None`` is only negated, and the acquire() deletion is one mutant, not two.
EXPECTED = [
    "m.py:4:8:constant:2->3",
    "m.py:4:8:constant:2->1",
    "m.py:7:11:constant:None->0",
    "m.py:7:25:constant:True->False",
    "m.py:9:4:lock:_lock->(no lock)",
    "m.py:10:8:statement:x = a < b->pass",
    "m.py:10:12:relational:<-><=",
    "m.py:10:12:relational:<->>=",
    "m.py:11:7:boolean:and->or",
    "m.py:11:7:boolean:not a->a",
    "m.py:11:17:relational:is->is not",
    "m.py:12:8:statement:return a + 1->pass",
    "m.py:12:15:arithmetic:+->-",
    "m.py:12:19:constant:1->2",
    "m.py:12:19:constant:1->0",
    "m.py:14:4:lock:_lock.acquire()->pass",
    "m.py:15:4:statement:return f'{a + 1}'->pass",
]


def test_each_operator_produces_the_expected_mutants() -> None:
    assert [m.id for m in mutation.mutants(SOURCE, "m.py")] == EXPECTED


@pytest.mark.parametrize(("mutant_id", "before", "after"), [
    ("m.py:9:4:lock:_lock->(no lock)", "    with _lock:\n        x = a < b\n", "    x = a < b\n"),
    ("m.py:10:12:relational:<->>=", "x = a < b", "x = a >= b"),
    ("m.py:11:7:boolean:and->or", "if not a and b is None", "if not a or b is None"),
    ("m.py:11:7:boolean:not a->a", "if not a and b is None", "if a and b is None"),
    ("m.py:11:17:relational:is->is not", "b is None", "b is not None"),
    ("m.py:12:8:statement:return a + 1->pass", "        return a + 1\n", "        pass\n"),
    ("m.py:12:15:arithmetic:+->-", "return a + 1", "return a - 1"),
    ("m.py:7:11:constant:None->0", "b=None", "b=0"),
    ("m.py:14:4:lock:_lock.acquire()->pass", "    _lock.acquire()\n", "    pass\n"),
])
def test_a_mutant_changes_exactly_its_own_token(mutant_id: str, before: str, after: str) -> None:
    (mutant,) = [m for m in mutation.mutants(SOURCE, "m.py") if m.id == mutant_id]
    original = ast.unparse(ast.parse(SOURCE))
    mutated = mutation.mutate(SOURCE, mutant)
    assert before in original
    assert mutated == original.replace(before, after, 1)


def test_a_stale_mutant_is_refused_rather_than_applied_elsewhere() -> None:
    mutant = mutation.mutants(SOURCE, "m.py")[0]
    with pytest.raises(ValueError, match="does not match this source"):
        mutation.mutate(SOURCE.replace("LIMIT = 2", "LIMIT = 2.5"), mutant)


def test_a_demand_arithmetic_mutant_of_the_range_publisher_is_killed() -> None:
    """``demand - count`` -> ``+``: the demand never runs out, elements come beyond it; the kit
    says so, on a rule."""
    source = mutation.reference_source("publishers.py")
    line = 1 + source.splitlines().index("            self._demand = demand - count")
    (mutant,) = [m for m in mutation.mutants(source, "publishers.py")
                 if m.line == line and m.operator == "arithmetic"]
    outcome = mutation.evaluate(mutation.Job("publishers.py", source, mutant, fuzz=False), deadline=120)
    assert outcome.status == "killed", outcome
    assert outcome.by is not None
    assert outcome.by["verification"] == "publisher"
    assert outcome.by["rule"], outcome.by


def test_every_survivor_of_the_recorded_run_is_classified() -> None:
    """Each survivor is read by hand: equivalent (with why) or a miss; no stale entries."""
    results = json.loads((ROOT / "benchmarks" / "mutation-results.json").read_text(encoding="utf-8"))
    classes = json.loads((ROOT / "benchmarks" / "mutation-classes.json").read_text(encoding="utf-8"))
    survivors = {m["id"] for m in results["mutants"] if mutation.final_status(m) == "survived"}
    assert sorted(survivors - set(classes)) == []
    assert sorted(set(classes) - survivors) == []
    for key, entry in classes.items():
        assert entry["class"] in ("equivalent", "miss"), key
        assert entry["why"].strip(), key
