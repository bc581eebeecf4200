"""Spark for a campaign: the session, shipping the subject's code, the job and the dataset.

Only this module imports PySpark, and only inside functions, so ``rstck_plugins`` imports
without it. The job is DataFrame API only (a Python UDF over a units table), so it runs
unchanged under ``spark-submit`` on a cluster.
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import sys
import tempfile
import threading
import time
import warnings
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

from .plan import UsageError
from .unit import COLUMNS
from .unit import ROW_FIELDS

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql import SparkSession

INSTALL_HINT = "pip install 'reactive-streams-tck[spark]'"
#: Packages every executor already has when the TCK is installed there: never shipped.
_NOT_SHIPPED = {"rstck", "rstck_plugins", "tck", "plugins"}


class SparkUnavailable(RuntimeError):
    """PySpark or Java is missing or Spark failed to start; the message is one line with the fix."""


def is_local(master: str | None) -> bool:
    return master is None or master.startswith("local")


def _loopback(master: str | None) -> bool:
    return is_local(master) or any(h in (master or "") for h in ("//127.0.0.1:", "//localhost:"))


def session(master: str | None, *, app: str, conf: dict[str, str] | None = None, ui: bool = False) -> SparkSession:
    """A SparkSession for this machine: loopback, UI off, workers on this interpreter, quiet."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)  # pyspark on pandas 3
            from pyspark.sql import SparkSession
    except ImportError:
        raise SparkUnavailable(f"campaigns run on Apache Spark, and PySpark is not installed: {INSTALL_HINT}") from None
    java_home = os.environ.get("JAVA_HOME")
    java = Path(java_home, "bin", "java") if java_home else shutil.which("java")
    if not java or not Path(java).exists():
        where = f"JAVA_HOME={java_home} has no bin/java" if java_home else "no java on PATH"
        raise SparkUnavailable(f"Spark needs a Java runtime (17 or newer) and found none ({where}): "
                               "install a JDK 17+ and put it on PATH or set JAVA_HOME")
    under_submit = "PYSPARK_GATEWAY_PORT" in os.environ  # launched by spark-submit: keep its conf
    log4j = Path(__file__).with_name("log4j2.properties")
    builder = SparkSession.builder.appName(app)
    if master is not None or not under_submit:
        builder = builder.master(master or "local[*]")
    settings = {
        "spark.ui.enabled": str(ui).lower(),
        "spark.ui.showConsoleProgress": "false",
        "spark.python.worker.faulthandler.enabled": "true",
        "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile=file:{log4j}",
    }
    if not under_submit:
        # The Python side reads PYSPARK_PYTHON (else "python3" from PATH) when the context starts;
        # the setting alone leaves executors on whatever interpreter PATH finds first.
        os.environ["PYSPARK_PYTHON"] = sys.executable
        settings["spark.pyspark.python"] = sys.executable
    if _loopback(master) and not under_submit:
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        settings["spark.driver.host"] = "127.0.0.1"
        settings["spark.driver.bindAddress"] = "127.0.0.1"
    settings.update(conf or {})
    for key, value in settings.items():
        builder = builder.config(key, value)
    try:
        spark = builder.getOrCreate()
    except Exception as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise SparkUnavailable(f"Spark did not start ({master or 'local[*]'}): {first}") from None
    spark.sparkContext.setLogLevel("ERROR")
    return spark


# -- shipping the subject's code -----------------------------------------------------------------


def ship(spark: SparkSession, specs: list[str], workdir: Path) -> list[str]:
    """Zip the top-level package of each subject module and add it to every executor's path.

    Returns what was shipped; raises UsageError, naming the module, when it cannot be shipped.
    """
    shipped: list[str] = []
    for top in sorted({spec.partition(":")[0].split(".")[0] for spec in specs} - _NOT_SHIPPED):
        try:
            module = importlib.import_module(top)
        except ImportError as exc:
            raise UsageError(f"cannot ship {top!r} to the executors: it does not import here: {exc}") from None
        paths = list(getattr(module, "__path__", []))
        file = getattr(module, "__file__", None)
        if not paths and not file:
            raise UsageError(f"cannot ship {top!r} to the executors: it has no source files "
                             "(a built-in or frozen module); install it on every executor instead")
        if not paths:
            assert file is not None
            if not file.endswith(".py"):
                raise UsageError(f"cannot ship {top!r} to the executors: {file} is a compiled extension, "
                                 "which cannot be imported from a zip; install it on every executor or "
                                 "ship a packed environment (venv-pack, --archives)")
            spark.sparkContext.addPyFile(file)
            shipped.append(file)
            continue
        archive = workdir / f"{top}.zip"
        compiled: list[str] = []
        with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
            for root in paths:
                for path in sorted(Path(root).rglob("*")):
                    if "__pycache__" in path.parts or not path.is_file():
                        continue
                    if path.suffix in (".so", ".pyd"):
                        compiled.append(str(path))
                    zf.write(path, Path(top, path.relative_to(root)).as_posix())
        if compiled:
            raise UsageError(f"cannot ship {top!r} to the executors: it contains compiled extensions "
                             f"({compiled[0]}), which cannot be imported from a zip; install it on every "
                             "executor or ship a packed environment (venv-pack, --archives)")
        spark.sparkContext.addPyFile(str(archive))
        shipped.append(str(archive))
    return shipped


# -- the job ---------------------------------------------------------------------------------


def row_schema() -> Any:
    from pyspark.sql.types import StructType

    return StructType.fromDDL(", ".join(f"{name} {kind}" for name, kind in ROW_FIELDS))


def results_path(out: Path) -> Path:
    return out / "results"


def read_results(spark: SparkSession, out: Path) -> DataFrame | None:
    path = results_path(out)
    if not path.is_dir() or not any(path.glob("campaign_id=*")):
        return None
    return spark.read.schema(row_schema()).parquet(str(path))


def done_units(spark: SparkSession, out: Path, unit_ids: list[str]) -> set[str]:
    """Units already in the dataset: a rerun of the same campaign skips them (idempotent)."""
    from pyspark.sql import functions as F

    existing = read_results(spark, out)
    if existing is None or not unit_ids:
        return set()
    found = existing.filter(F.col("unit_id").isin(unit_ids)).select("unit_id").distinct().collect()
    return {r.unit_id for r in found}


def write_rows(df: DataFrame, out: Path) -> None:
    df.select(*COLUMNS).write.mode("append").partitionBy("campaign_id").parquet(str(results_path(out)))


def run_units(
    spark: SparkSession,
    units: list[dict[str, Any]],
    task: dict[str, Any],
    out: Path,
    progress: Callable[[int, int, float], None] | None = None,
) -> None:
    """Run ``units`` on the executors (one Spark task per unit) and append their rows to the dataset."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType

    if not units:
        return
    sc = spark.sparkContext
    done = sc.accumulator(0)
    failing = sc.accumulator(0)
    task_json = json.dumps(task)

    columns = COLUMNS

    def run(unit_json: str) -> list[tuple[Any, ...]]:
        # Never raise: a raising task would abort the whole job under local[N].
        try:
            from rstck_plugins.campaign.unit import run_unit

            rows = run_unit(json.loads(unit_json), json.loads(task_json))
        except BaseException as exc:
            rows = [_executor_error(json.loads(unit_json), exc)]
        done.add(1)
        failing.add(sum(1 for r in rows if r["outcome"] in ("failed", "error")))
        return [tuple(r.get(c) for c in columns) for r in rows]

    run_udf = F.udf(run, ArrayType(row_schema()), useArrow=False).asNondeterministic()
    stop = threading.Event()
    started = time.monotonic()

    def report() -> None:
        while not stop.wait(1.0):
            if progress is not None:
                progress(done.value, failing.value, time.monotonic() - started)

    watcher = threading.Thread(target=report, name="rs-tck-campaign-progress", daemon=True)
    watcher.start()
    # Waves of units, each written when it ends: an interrupted campaign keeps what it ran and
    # resumes from there; a wave is large enough to keep every executor core busy.
    wave = max(32, 8 * sc.defaultParallelism)
    try:
        for first in range(0, len(units), wave):
            batch = units[first:first + wave]
            table = spark.createDataFrame(
                [(i, u["unit_id"], json.dumps(u)) for i, u in enumerate(batch)],
                "slot bigint, unit_id string, unit string",
            )
            slots = spark.range(0, len(batch), 1, numPartitions=len(batch))  # one task per unit
            rows = (
                slots.join(F.broadcast(table), slots.id == table.slot)
                .select(F.explode(run_udf(F.col("unit"))).alias("row"))
                .select("row.*")
            )
            write_rows(rows, out)
    finally:
        stop.set()
        watcher.join()
    if progress is not None:
        progress(done.value, failing.value, time.monotonic() - started)


def _executor_error(unit: dict[str, Any], exc: BaseException) -> dict[str, Any]:
    """The row of a unit the executor could not even start (the TCK not importable there, say)."""
    import platform
    import socket

    message = (f"[executor] the unit could not run on {socket.gethostname()}: {type(exc).__name__}: {exc} "
               f"(is the TCK installed for {sys.executable} on the executors?)")
    now = time.time()
    return {
        "campaign_id": unit["campaign_id"], "unit_id": unit["unit_id"], "row_id": unit["unit_id"] + "/(setup)",
        "source": "campaign", "subject": unit["subject"], "verification": unit["verification"],
        "test": "(setup)", "level": "required", "outcome": "error", "verdict": "error", "duration_s": 0.0,
        "message": message, "failures": json.dumps([{"rule": None, "expected": "the unit to start",
                                                      "observed": message}]),
        "failure_observed": message, "repetition": unit["repetition"], "seed": unit["seed"],
        "host": socket.gethostname(), "worker_pid": os.getpid(), "python": platform.python_version(),
        "started_at": now, "finished_at": now,
    }


def scratch() -> Path:
    return Path(tempfile.mkdtemp(prefix="rs-tck-ship-"))
