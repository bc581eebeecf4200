"""``python -m tests.mutation_spark FILES --out DIR``: the kit's mutation run, each mutant a Spark task.

The same run as ``benchmarks/mutation.py`` (see ``tests/mutation.py``), spread over a
cluster: every mutant of the named reference modules first with fuzzing off, then the survivors
in the default mode. Each task runs its mutant in a fresh interpreter with a deadline (a mutant
may hang or crash; a Spark worker is no place to fork from), so a task never raises. The
verdicts go to ``OUT/mutation-results.json``, in the results format of the benchmark.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from rstck_plugins.campaign.plan import UsageError

from . import mutation

#: Seconds one mutant may run before its process is killed and the mutant counted as a timeout.
DEADLINE_S = 180.0


def parse_files(value: str) -> list[str]:
    """``all`` or comma-separated reference file names; a one-line error for anything else."""
    files = list(mutation.REFERENCE_FILES) if value.strip() == "all" else [f.strip() for f in value.split(",") if f.strip()]
    unknown = [f for f in files if f not in mutation.REFERENCE_FILES]
    if unknown or not files:
        raise UsageError(f"FILES {value!r}: expected 'all' or some of {', '.join(mutation.REFERENCE_FILES)}")
    return files


def _run_wave(spark: Any, units: list[dict[str, Any]], deadline: float) -> list[dict[str, Any]]:
    """One Spark task per unit; each returns its unit with the outcome added."""
    from pyspark.sql import functions as F

    def run(unit_json: str) -> str:
        unit = json.loads(unit_json)
        try:
            import mutation as m  # shipped to the executors by its file (see ``run``)

            source = m.reference_source(unit["file"])
            mutant = m.Mutant(unit["file"], unit["index"], unit["line"], unit["col"], unit["operator"],
                              unit["original"], unit["replacement"])
            outcome = m.outcome_json(m.evaluate(m.Job(unit["file"], source, mutant, unit["fuzz"]), deadline=deadline))
        except BaseException as exc:  # never raise: a raising task aborts the whole job under local[N]
            outcome = {"status": "error", "seconds": 0.0, "by": {"message": f"{type(exc).__name__}: {exc}"}}
        return json.dumps({"id": unit["id"], "outcome": outcome})

    run_udf = F.udf(run, "string", useArrow=False).asNondeterministic()
    table = spark.createDataFrame([(i, json.dumps(u)) for i, u in enumerate(units)], "slot bigint, unit string")
    slots = spark.range(0, len(units), 1, numPartitions=len(units))  # one task per mutant
    rows = slots.join(F.broadcast(table), slots.id == table.slot).select(run_udf(F.col("unit")).alias("r"))
    return [json.loads(r.r) for r in rows.collect()]


def run(spark: Any, files: list[str], out: Path, *, limit: int | None = None,
        deadline: float = DEADLINE_S) -> dict[str, Any]:
    """Both passes of the mutation run of ``files`` on ``spark``; the results document, also written to ``out``."""
    started = time.monotonic()
    spark.sparkContext.addPyFile(str(Path(mutation.__file__).resolve()))  # imported as ``mutation`` there
    records: dict[str, dict[str, Any]] = {}
    for file in files:
        for m in mutation.mutants(mutation.reference_source(file), file)[:limit]:
            records[m.id] = {"id": m.id, "file": file, "index": m.index, "line": m.line, "col": m.col,
                             "operator": m.operator, "original": m.original, "replacement": m.replacement,
                             "fuzz_off": None, "fuzz_on": None}
    data: dict[str, Any] = {"run": {"master": spark.sparkContext.master, "deadline_s": deadline, "files": files},
                            "mutants": list(records.values())}
    for mode, fuzz in (("fuzz_off", False), ("fuzz_on", True)):
        todo = [dict(r, fuzz=fuzz, fuzz_off=None, fuzz_on=None) for r in records.values()
                if not fuzz or (r["fuzz_off"] or {}).get("status") == "survived"]
        phase = time.monotonic()
        if todo:
            for done in _run_wave(spark, todo, deadline):
                records[done["id"]][mode] = done["outcome"]
        data["run"][f"{mode}_mutants"] = len(todo)
        data["run"][f"{mode}_s"] = round(time.monotonic() - phase, 1)
    data["run"]["seconds"] = round(time.monotonic() - started, 1)
    out.mkdir(parents=True, exist_ok=True)
    (out / "mutation-results.json").write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    return data


def main(argv: list[str] | None = None, *, spark: Any = None) -> int:
    """0 when every mutant was killed, 1 otherwise, 2 on a usage error; ``spark``: a session to use (left running)."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m tests.mutation_spark", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", metavar="FILES",
                        help="rstck/reference files: 'all' or e.g. publishers.py,processors.py")
    parser.add_argument("--out", metavar="DIR", help="the directory for mutation-results.json")
    parser.add_argument("--limit", type=int, metavar="N", help="the first N mutants of each file")
    parser.add_argument("--master", metavar="URL", help="Spark master URL (default local[*])")
    args = parser.parse_args(argv)
    try:
        return _main(args.files, args.limit, args.out, args.master, spark)
    except UsageError as exc:
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return 2


def _main(value: str, limit: int | None, out: str | None, master: str | None, given: Any) -> int:
    from rstck_plugins.campaign import spark as rs_spark

    files = parse_files(value)
    if not out:
        raise UsageError("needs --out (the directory for mutation-results.json)")
    if limit is not None and limit < 1:
        raise UsageError(f"--limit must be >= 1, got {limit}")
    spark = given if given is not None else rs_spark.session(master, app="rs-tck mutation campaign")
    try:
        data = run(spark, files, Path(out), limit=limit)
    finally:
        if given is None:
            spark.stop()
    alive = 0
    for file in files:
        mine = [r for r in data["mutants"] if r["file"] == file]
        survived = sum(1 for r in mine if mutation.final_status(r) == "survived")
        alive += survived
        print(f"{file}: {len(mine)} mutants, {len(mine) - survived} killed, {survived} survived")
    print(f"{data['run']['seconds']} s; wrote {Path(out) / 'mutation-results.json'}", file=sys.stderr)
    return 1 if alive else 0


if __name__ == "__main__":
    sys.exit(main())
