"""Campaign throughput: a plain loop, local[1], local[2] and a two-worker standalone cluster.

Every configuration runs the same units (full publisher verifications of the reference
publisher, each in its own child process as a campaign runs them) at two sizes, so the time
of a run is read as fixed overhead + per-unit cost:

    python benchmarks/campaign.py [--small 2] [--large 8] [--skip-cluster]

Prints a markdown table: units/s, the fixed overhead (session start, job set-up, the summary),
the per-unit cost, and the number of units from which each Spark configuration beats the loop.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from rstck_plugins.campaign.plan import SubjectSpec
from rstck_plugins.campaign.plan import build
from rstck_plugins.campaign.unit import run_unit

SUBJECT = SubjectSpec("publisher", "rstck.reference:range_publisher", "rstck.reference:failed_publisher")


def units(n: int, tag: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    campaign = build([SUBJECT], {"out": "x", "repetitions": n, "seed": hash(tag) % 2**31}, "benchmark")
    return campaign.units(), campaign.task()


def loop(n: int) -> float:
    todo, task = units(n, f"loop{n}")
    start = time.monotonic()
    for unit in todo:
        rows = run_unit(unit, task)
        assert all(r["outcome"] in ("passed", "skipped") for r in rows), [r["message"] for r in rows]
    return time.monotonic() - start


def spark_run(master: str, sizes: tuple[int, int], conf: dict[str, str] | None = None) -> dict[str, float]:
    """In a fresh process (a new JVM): session start, a warm-up job that brings the executors
    and their Python workers up, then one campaign per size (job + summary) in that session."""
    if os.environ.get("RS_TCK_BENCH_CHILD") != "1":
        code = ("import json, sys; sys.path.insert(0, 'benchmarks'); import campaign as c; "
                "print(json.dumps(c.spark_run(sys.argv[1], (int(sys.argv[2]), int(sys.argv[3])), "
                "json.loads(sys.argv[4]))))")
        done = subprocess.run([sys.executable, "-c", code, master, str(sizes[0]), str(sizes[1]), json.dumps(conf)],
                              capture_output=True, text=True, check=True, env={**os.environ, "RS_TCK_BENCH_CHILD": "1"})
        timings: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
        return timings
    from pyspark.sql import functions as F
    from rstck_plugins.campaign import cli
    from rstck_plugins.campaign.spark import session

    t0 = time.monotonic()
    spark = session(master, app="rs-tck benchmark", conf=conf)
    timings = {"session_s": time.monotonic() - t0}
    t0 = time.monotonic()
    cores = spark.sparkContext.defaultParallelism
    spark.range(0, cores, 1, cores).select(F.udf(lambda x: x, "bigint")("id")).collect()
    timings["warmup_s"] = time.monotonic() - t0
    try:
        for n in sizes:
            out = Path(tempfile.mkdtemp(prefix="rs-tck-bench-"))
            argv = ["campaign", "--publisher", SUBJECT.spec, "--failed-publisher", str(SUBJECT.failed),
                    "--repetitions", str(n), "--out", str(out), "--no-ship"]
            start = time.monotonic()
            code = cli.main(argv, spark=spark)
            timings[f"run{n}_s"] = time.monotonic() - start
            print(f"{master}: {n} units in {timings[f'run{n}_s']:.1f} s", file=sys.stderr)
            assert code == 0, f"{master}: a conforming subject failed (exit {code}); see {out}/report.html"
            shutil.rmtree(out, ignore_errors=True)
    finally:
        spark.stop()
    return timings


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--small", type=int, default=2)
    parser.add_argument("--large", type=int, default=8)
    parser.add_argument("--skip-cluster", action="store_true")
    args = parser.parse_args()
    small, large = args.small, args.large
    os.environ.pop("PYTHONPATH", None)
    rows: list[tuple[str, float, float, float, float]] = []  # name, t_small, t_large, fixed, per_unit

    t_small, t_large = loop(small), loop(large)
    per = (t_large - t_small) / (large - small)
    rows.append(("plain loop (one process per unit)", t_small, t_large, t_small - per * small, per))
    print(f"loop: {t_small:.1f} s / {t_large:.1f} s", file=sys.stderr)
    configs: list[tuple[str, str, dict[str, str] | None]] = [("local[1]", "local[1]", None),
                                                             ("local[2]", "local[2]", None)]
    cluster = None
    if not args.skip_cluster:
        from rstck_plugins.campaign.standalone import LoopbackCluster

        t0 = time.monotonic()
        cluster = LoopbackCluster(workers=2, cores=1, memory="1g").start()
        print(f"cluster: master and 2 workers up in {time.monotonic() - t0:.1f} s", file=sys.stderr)
        configs.append(("standalone, 2 workers x 1 core", cluster.master_url, {"spark.executor.memory": "512m"}))
    try:
        for name, master, conf in configs:
            t = spark_run(master, (small, large), conf)
            per = (t[f"run{large}_s"] - t[f"run{small}_s"]) / (large - small)
            start = t["session_s"] + t["warmup_s"]
            fixed = start + t[f"run{small}_s"] - per * small
            rows.append((name, start + t[f"run{small}_s"], start + t[f"run{large}_s"], fixed, per))
            print(f"{name}: {t}", file=sys.stderr)
    finally:
        if cluster is not None:
            cluster.stop()
    loop_per = rows[0][4]
    print(f"| configuration | {small} units, s | {large} units, s | units/s (marginal) | fixed overhead, s "
          "| per unit, s | pays off from (units) |")
    print("|---|---|---|---|---|---|---|")
    for name, ts, tl, fixed, per in rows:
        pays = "-" if name.startswith("plain") else (
            f"{max(0.0, fixed - rows[0][3]) / (loop_per - per):.0f}" if per < loop_per else "never")
        print(f"| {name} | {ts:.1f} | {tl:.1f} | {1 / per:.2f} | {fixed:.1f} | {per:.2f} | {pays} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
