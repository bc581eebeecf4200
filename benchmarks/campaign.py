"""Campaign throughput: a plain loop, local[1], local[2] and a two-worker standalone cluster,
and the checks that every unit's rows land exactly once.

Every configuration runs the same units (full publisher verifications of the reference
publisher, each in its own child process as a campaign runs them) at two sizes, so the time
of a run is read as fixed overhead + per-unit cost:

    python benchmarks/campaign.py [--small 2] [--large 8] [--skip-cluster] [--only-checks]

Prints a markdown table: units/s, the fixed overhead (session start, job set-up, the summary),
the per-unit cost, and the number of units from which each Spark configuration beats the loop.
Then the exactly-once checks, each a real ``rs-tck campaign`` process on ``local[2]`` (and on
the loopback cluster): the same campaign run again, and run twice at once; Ctrl-C then the same
command; ``kill -9`` of the driver then the same command; a worker killed mid-campaign. Each
prints the units saved, the rows in the dataset and the duplicates (always 0) as a table.
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


# -- exactly once ---------------------------------------------------------------------------

CHECK_ARGS = ["--publisher", "rstck.reference:range_publisher", "--rules", "1.1,1.3,3.9", "--no-ship"]


def _command(out: Path, n: int, master: str, extra: list[str] | None = None) -> list[str]:
    return [sys.executable, "-m", "rstck_plugins", "campaign", *CHECK_ARGS, "--repetitions", str(n),
            "--master", master, "--out", str(out), *(extra or [])]


def _datasets(found: list[dict[str, Any]]) -> None:
    """Read every check's dataset in one session: rows, units, rows with the same id after
    reading (always 0), the rows physically written (a unit spooled and committed is written
    twice, read once) and whether every unit is there."""
    from rstck_plugins.campaign.spark import read_results
    from rstck_plugins.campaign.spark import session

    spark = session("local[1]", app="rs-tck benchmark check")
    try:
        for r in found:
            out = Path(r.pop("out"))
            df = read_results(spark, out)
            rows = [x.asDict() for x in df.collect()] if df is not None else []
            ids = [x["row_id"] for x in rows]
            r.update({"rows": len(rows), "units_in_dataset": len({x["unit_id"] for x in rows}),
                      "duplicates": len(ids) - len(set(ids)),
                      "raw_rows": spark.read.parquet(str(out / "results")).count() if df is not None else 0,
                      "complete": len({x["unit_id"] for x in rows}) == r["units"]})
            shutil.rmtree(out, ignore_errors=True)
    finally:
        spark.stop()


def _start(cmd: list[str]) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if k != "RS_TCK_BENCH_CHILD"}
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            env=env)


def _wait_spooled(out: Path, run: subprocess.Popen[str], count: int) -> None:
    while run.poll() is None and len(list((out / "spool").glob("*.json"))) + _committed(out) < count:
        time.sleep(0.2)


def _committed(out: Path) -> int:
    return len(list((out / "results").glob("campaign_id=*/*.parquet")))


def check_interrupt(master: str, n: int, how: str) -> dict[str, Any]:
    """Ctrl-C (SIGINT to the process group, as a terminal sends it) or kill -9 of the driver at
    about a third of the units; then the same command; then every unit must be there once."""
    import signal

    out = Path(tempfile.mkdtemp(prefix=f"rs-tck-check-{how}-"))
    cmd = _command(out, n, master)
    t0 = time.monotonic()
    run = _start(cmd)
    _wait_spooled(out, run, max(1, n // 3))
    if how == "ctrl-c":
        os.killpg(run.pid, signal.SIGINT)
    else:
        run.send_signal(signal.SIGKILL)  # the driver only: its JVM and workers go with it
    _, err = run.communicate(timeout=600)
    line = err.strip().splitlines()[-1] if err.strip() else ""
    saved = len({p.name.partition(".")[0] for p in (out / "spool").glob("*.json")})
    again = _start(cmd)
    _, err2 = again.communicate(timeout=1800)
    result = {"check": f"{how}, then the same command", "master": master, "units": n,
              "first_exit": run.returncode, "one_line": line if how == "ctrl-c" else "",
              "saved_at_stop": saved, "second_exit": again.returncode, "wall_s": round(time.monotonic() - t0, 1),
              "took_over_lock": "taking it over" in err2, "out": str(out)}
    return result


def check_twice(master: str, n: int) -> dict[str, Any]:
    """The same campaign started twice at once, then once more after both ended."""
    out = Path(tempfile.mkdtemp(prefix="rs-tck-check-twice-"))
    cmd = _command(out, n, master)
    t0 = time.monotonic()
    first, second = _start(cmd), _start(cmd)
    _, err1 = first.communicate(timeout=1800)
    _, err2 = second.communicate(timeout=1800)
    third = _start(cmd)
    _, err3 = third.communicate(timeout=1800)
    result = {"check": "two identical campaigns at once, then again", "master": master, "units": n,
              "exits": [first.returncode, second.returncode, third.returncode],
              "refused": next((e.strip().splitlines()[-1] for e in (err1, err2) if "in use" in e), ""),
              "rerun_skipped_all": f"({n} already in" in err3, "wall_s": round(time.monotonic() - t0, 1),
              "out": str(out)}
    return result


def check_worker_killed(n: int) -> dict[str, Any]:
    """A loopback cluster of two workers; one is killed (SIGKILL) when a third of the units are done."""
    import signal

    from rstck_plugins.campaign.standalone import LoopbackCluster

    out = Path(tempfile.mkdtemp(prefix="rs-tck-check-worker-"))
    with LoopbackCluster(workers=2, cores=1, memory="1g") as cluster:
        cmd = _command(out, n, cluster.master_url, ["--conf", "spark.executor.memory=512m"])
        t0 = time.monotonic()
        run = _start(cmd)
        _wait_spooled(out, run, max(1, n // 3))
        cluster.processes[-1].send_signal(signal.SIGKILL)
        _, err = run.communicate(timeout=1800)
    result = {"check": "a worker killed mid-campaign", "master": "standalone, 2 workers x 1 core", "units": n,
              "exit": run.returncode, "wall_s": round(time.monotonic() - t0, 1), "out": str(out)}
    if run.returncode not in (0, 1):
        result["stderr"] = err[-1500:]
    return result


def checks(n: int, cluster: bool) -> list[dict[str, Any]]:
    found = [check_twice("local[2]", n), check_interrupt("local[2]", n, "ctrl-c"),
             check_interrupt("local[2]", n, "kill -9")]
    if cluster:
        found.append(check_worker_killed(n))
    _datasets(found)
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--small", type=int, default=2)
    parser.add_argument("--large", type=int, default=8)
    parser.add_argument("--skip-cluster", action="store_true")
    parser.add_argument("--check-units", type=int, default=12, help="units of each exactly-once check")
    parser.add_argument("--only-checks", action="store_true", help="run the exactly-once checks only")
    parser.add_argument("--skip-checks", action="store_true")
    parser.add_argument("--skip-local1", action="store_true", help="leave local[1] out of the timings")
    args = parser.parse_args()
    small, large = args.small, args.large
    os.environ.pop("PYTHONPATH", None)
    if not args.skip_checks:
        found = checks(args.check_units, not args.skip_cluster)
        for result in found:
            print(json.dumps(result), file=sys.stderr)
        print("| check | master | units | rows | units in dataset | duplicates | complete | notes |")
        print("|---|---|---|---|---|---|---|---|")
        for r in found:
            notes = {k: v for k, v in r.items() if k not in ("check", "master", "units", "rows", "units_in_dataset",
                                                             "duplicates", "complete")}
            print(f"| {r['check']} | {r['master']} | {r['units']} | {r['rows']} | {r['units_in_dataset']} "
                  f"| {r['duplicates']} "
                  f"| {r['complete']} | {json.dumps(notes)} |")
        if args.only_checks:
            return 0 if all(r["complete"] and not r["duplicates"] for r in found) else 1
    rows: list[tuple[str, float, float, float, float]] = []  # name, t_small, t_large, fixed, per_unit

    t_small, t_large = loop(small), loop(large)
    per = (t_large - t_small) / (large - small)
    rows.append(("plain loop (one process per unit)", t_small, t_large, t_small - per * small, per))
    print(f"loop: {t_small:.1f} s / {t_large:.1f} s", file=sys.stderr)
    configs: list[tuple[str, str, dict[str, str] | None]] = [("local[1]", "local[1]", None),
                                                             ("local[2]", "local[2]", None)]
    if args.skip_local1:
        configs = configs[1:]
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
