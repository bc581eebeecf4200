"""The pool of worker processes (``rstck.processes``): shares cut by cost, large first, and every wait bounded."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from rstck.processes import Pool
from rstck.processes import Recipe
from rstck.processes import shares
from rstck.reference import range_publisher
from rstck.results import TestResult
from rstck.run_api import Run
from rstck.settings import Settings


def _recipe(key: str, cost: float = 1.0) -> Recipe:
    return Recipe(key, "publisher", "mod", key, False, f"mod:{key}", None, ("t",), cost)


def test_shares_keep_the_order_large_first_single_subjects_last_and_even_out_over_the_workers() -> None:
    twenty = [_recipe(f"s{i}") for i in range(20)]
    cut = shares(twenty, 2, 4)
    assert [r.key for share in cut for r in share] == [r.key for r in twenty]
    assert all(1 <= len(share) <= 4 for share in cut)
    # Large shares first (their windows overlap), single subjects last (the workers end together).
    sizes = [len(share) for share in cut]
    assert sizes == sorted(sizes, reverse=True)
    assert sizes[0] == 4
    assert sizes[-2:] == [1, 1]
    # Dealt as workers free up, the shares of four processors (4 each) and eight publishers end even.
    mixed = [_recipe(f"p{i}", 4.0) for i in range(4)] + [_recipe(f"q{i}") for i in range(8)]
    loads = [0.0, 0.0]
    for share in shares(mixed, 2, 4):
        loads[loads.index(min(loads))] += sum(r.cost for r in share)
    assert loads == [12.0, 12.0]
    loads = [0.0, 0.0]
    for share in cut:
        loads[loads.index(min(loads))] += sum(r.cost for r in share)
    assert loads == [10.0, 10.0]
    # A share never takes more than at once allows.
    assert all(len(share) == 1 for share in shares(twenty, 2, 1))


def test_one_process_per_subject_at_most() -> None:
    assert [len(s) for s in shares([_recipe("a"), _recipe("b")], 8, 4)] == [1, 1]


@pytest.fixture
def module(tmp_path: Path) -> Path:
    (tmp_path / "stuckmod.py").write_text(
        "import os, signal\nfrom rstck.reference import range_publisher\nHOST = None\n\n"
        "def stuck(n):\n    os.kill(os.getpid(), signal.SIGSTOP)\n    return range_publisher(n)\n\n"
        "def fine(n):\n    return range_publisher(n)\n")
    return tmp_path


def _pool(path: Path, recipes: list[Recipe], hang_s: float = 60.0) -> Pool:
    hello = {"sys_path": [str(path), *sys.path], "settings": Settings(no_fuzz=True).to_json()}
    return Pool(recipes, hello, 2, 1, hang_s=hang_s)


def test_a_hung_worker_is_killed_and_its_tests_say_why(module: Path) -> None:
    """A worker that stops (no heartbeat) is ended after ``hang_s``; the other worker's subject stands."""
    test = Run("publisher", range_publisher).tests[1].test_id
    stuck = Recipe("stuck", "publisher", "stuckmod", "stuck", False, "stuckmod:stuck", None, (test,))
    fine = Recipe("fine", "publisher", "stuckmod", "fine", False, "stuckmod:fine", None, (test,))
    pool = _pool(module, [stuck, fine], hang_s=3.0)
    pool.start()
    try:
        answer = pool.result("stuck", test, timeout=60.0)
        assert isinstance(answer, str)
        assert "killed by SIGKILL (hung: nothing heard from it for 3 s)" in answer
        assert "running stuck" in answer
        other = pool.result("fine", test, timeout=60.0)
        assert not isinstance(other, str | None)
        assert other.outcome == "passed"
    finally:
        pool.close()


def test_a_worker_still_starting_is_not_taken_for_hung(module: Path, tmp_path: Path) -> None:
    """Importing is not hanging: a worker that takes longer than ``hang_s`` to start (a cold
    bytecode cache on a loaded machine) still runs its share; only ``START_S`` bounds its start."""
    slow = tmp_path / "slow_start"
    slow.mkdir()
    (slow / "sitecustomize.py").write_text("import time\ntime.sleep(3.0)\n")
    test = Run("publisher", range_publisher).tests[1].test_id
    fine = Recipe("fine", "publisher", "stuckmod", "fine", False, "stuckmod:fine", None, (test,))
    hello = {"sys_path": [str(module), *sys.path], "settings": Settings(no_fuzz=True).to_json()}
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(slow), os.environ.get("PYTHONPATH")]))}
    pool = Pool([fine], hello, 1, 1, hang_s=1.0, env=env)
    pool.start()
    try:
        answer = pool.result("fine", test, timeout=60.0)
        assert not isinstance(answer, str | None), answer
        assert answer.outcome == "passed"
    finally:
        pool.close()


def test_a_subject_a_worker_cannot_import_is_handed_back(module: Path) -> None:
    test = Run("publisher", range_publisher).tests[1].test_id
    gone = Recipe("gone", "publisher", "no_such_module_here", "x", False, "no_such_module_here:x", None, (test,))
    fine = Recipe("fine", "publisher", "stuckmod", "fine", False, "stuckmod:fine", None, (test,))
    pool = _pool(module, [gone, fine])
    pool.start()
    try:
        assert pool.result("gone", test, timeout=60.0) is None
        assert "No module named 'no_such_module_here'" in pool.handed_back["gone"]
        assert pool.keys == {"fine"}
    finally:
        pool.close()


def test_a_result_crosses_the_process_boundary_whole() -> None:
    """What a worker writes is what the host reads: every field, failures included (the end-to-end
    test sees the traces and evidence of a pytest run cross too)."""
    import dataclasses

    from rstck.results import TestResult
    from rstck.run_api import run_verification

    from tests.broken.publishers import IgnoresRequestZero
    from tests.broken.publishers import factory

    results = run_verification("publisher", factory(IgnoresRequestZero), Settings(no_fuzz=True), rules=["3.9"])
    assert [r for r in results if r.outcome == "failed" and r.failures]
    for result in results:
        result = dataclasses.replace(result, subject_id="map")
        read = TestResult.from_json(json.loads(json.dumps(result.to_json())))
        assert read == dataclasses.replace(result, duration_s=round(result.duration_s, 6),
                                           started_at=round(result.started_at, 6),
                                           finished_at=round(result.finished_at, 6))


def test_a_host_that_reads_no_passing_trace_gets_none_and_every_failure_whole(tmp_path: Path) -> None:
    """``passing_traces`` false in the hello: a passing result comes back without its records but
    with their count; a failed one with its trace; a host that says nothing gets every trace."""
    (tmp_path / "tracemod.py").write_text(
        "from tests.broken.publishers import IgnoresRequestZero, factory\nbroken = factory(IgnoresRequestZero)\n")
    tests = tuple(t.test_id for t in Run("publisher", range_publisher, rules=["sanity", "1.9", "3.9"]).tests)
    recipe = Recipe("broken", "publisher", "tracemod", "broken", False, "tracemod:broken", None, tests)
    for says, kept in ((False, False), (None, True)):
        hello = {"sys_path": [str(tmp_path), *sys.path], "settings": Settings(no_fuzz=True).to_json()}
        if says is not None:
            hello["passing_traces"] = says
        pool = Pool([recipe], hello, 1, 1)
        pool.start()
        try:
            results = [pool.result("broken", t, timeout=60.0) for t in tests]
        finally:
            pool.close()
        assert all(isinstance(r, TestResult) for r in results), results
        done = [r for r in results if isinstance(r, TestResult)]
        passed = [r for r in done if r.outcome == "passed"]
        failed = [r for r in done if r.outcome == "failed"]
        assert passed
        assert failed
        assert all(r.trace_total > 0 and bool(r.trace) == kept for r in passed)
        assert all(r.trace and r.trace_total >= len(r.trace) for r in failed)


def test_auto_is_two_workers_per_usable_cpu_and_one_more_never_more_than_the_subjects(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from rstck import processes

    monkeypatch.setattr(processes, "_usable_cpus", lambda: 2)
    assert processes.processes_for(0, 20) == 5
    assert processes.processes_for(0, 3) == 3
    assert processes.processes_for(2, 20) == 2
    assert processes.processes_for(8, 3) == 3
    monkeypatch.setattr(processes, "_usable_cpus", lambda: 1)
    assert processes.processes_for(0, 20) == 3
