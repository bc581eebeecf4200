"""``python -m tests.mutation_spark``: the kit's mutation run with each mutant a task on real local Spark."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import mutation
from tests import mutation_spark


def test_an_unknown_reference_file_is_a_one_line_usage_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert mutation_spark.main(["publisher.py", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "FILES 'publisher.py'" in err
    assert "publishers.py" in err


def test_mutants_need_an_output_directory(capsys: pytest.CaptureFixture[str]) -> None:
    assert mutation_spark.main(["all"]) == 2
    assert "needs --out" in capsys.readouterr().err


def _java() -> bool:
    return shutil.which("java") is not None or bool(os.environ.get("JAVA_HOME"))


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    pytest.importorskip("pyspark", reason="the Spark campaign tests need the spark extra")
    if not _java():
        pytest.skip("the Spark campaign tests need a Java runtime (17+) on PATH")
    from rstck_plugins.campaign.spark import session

    s = session("local[2]", app="rs-tck tests")
    yield s
    s.stop()


@pytest.mark.xdist_group("spark")
def test_a_handful_of_mutants_run_as_spark_tasks(spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Three mutants of the range publisher: the kit kills the one that breaks 3.9, the others
    (the actor's batch size, 64 -> 65 and 63) survive both passes and say so in the exit status."""
    code = mutation_spark.main(["publishers.py", "--limit", "3", "--out", str(tmp_path)], spark=spark)
    data = json.loads((tmp_path / "mutation-results.json").read_text(encoding="utf-8"))
    by_id = {r["id"]: r for r in data["mutants"]}
    assert list(by_id) == [m.id for m in mutation.mutants(mutation.reference_source("publishers.py"),
                                                          "publishers.py")[:3]]
    killed = [r for r in by_id.values() if mutation.final_status(r) == "killed"]
    assert len(killed) == 1, by_id
    assert killed[0]["operator"] == "statement"
    assert killed[0]["fuzz_off"]["by"]["rule"] == "3.9"
    assert killed[0]["fuzz_on"] is None  # killed with fuzzing off: not run again
    survivors = [r for r in by_id.values() if mutation.final_status(r) == "survived"]
    assert {r["replacement"] for r in survivors} == {"65", "63"}
    assert all(r["fuzz_off"]["status"] == "survived" and r["fuzz_on"] is not None for r in survivors)
    assert data["run"]["fuzz_off_mutants"] == 3
    assert data["run"]["fuzz_on_mutants"] == 2
    assert code == 1
    assert "publishers.py: 3 mutants, 1 killed, 2 survived" in capsys.readouterr().out
