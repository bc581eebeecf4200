"""Spark for a campaign: the session, shipping the subject's code, the job and the dataset.

Only this module imports PySpark, and only inside functions, so ``rstck_plugins`` imports
without it. The job is DataFrame API only (a Python UDF over a units table), so it runs
unchanged under ``spark-submit`` on a cluster.
"""

from __future__ import annotations

import atexit
import importlib
import json
import os
import shutil
import sys
import tempfile
import threading
import time
import uuid
import warnings
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

from rstck.results import FAILING

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
        # The dataset is cached for the summary's three aggregations; a cached plan keeps its
        # 200 shuffle partitions unless adaptive execution may coalesce it, and on two cores
        # 200 tasks per pass cost 10 to 45 s for a few hundred rows (1.3 s coalesced).
        "spark.sql.optimizer.canChangeCachedPlanOutputPartitioning": "true",
    }
    if is_local(master) and not under_submit:
        # Rows number in the thousands: a task per core is plenty on one machine.
        settings["spark.sql.shuffle.partitions"] = str(max(2, os.cpu_count() or 2))
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
    """The dataset, each unit's rows exactly once whatever was written twice.

    A unit can be in the dataset twice: written by its wave and folded in from the spool, run
    again after a lost acknowledgement, or appended by two writers that shared a directory
    before it was locked. Each unit keeps the rows of one attempt (the least ``attempt_id``),
    each row once.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    path = results_path(out)
    if not path.is_dir() or not any(path.glob("campaign_id=*")):
        return None
    df = spark.read.schema(row_schema()).parquet(str(path))
    attempt = F.coalesce(F.col("attempt_id"), F.lit(""))
    first = F.min(attempt).over(Window.partitionBy("unit_id"))
    return (df.withColumn("_attempt", attempt).withColumn("_first", first)
            .filter(F.col("_attempt") == F.col("_first")).drop("_attempt", "_first")
            .dropDuplicates(["row_id"]))


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


def spool_path(out: Path) -> Path:
    """Where each unit's rows are written the moment it finishes, before its wave is committed."""
    return out / "spool"


def spooled(out: Path) -> dict[str, list[Path]]:
    """Spooled files by unit id (``<unit_id>.<attempt>.json``)."""
    found: dict[str, list[Path]] = {}
    spool = spool_path(out)
    if spool.is_dir():
        for path in sorted(spool.glob("*.json")):
            found.setdefault(path.name.partition(".")[0], []).append(path)
    return found


def fold_spool(spark: SparkSession, out: Path, committed: list[str] | None = None) -> int:
    """Add the spooled rows of units not in the dataset (an interrupted or killed run's last
    units), then drop every spooled file whose unit is there. Returns the units added.

    ``committed``: units whose wave this process wrote; their files go without asking Spark
    (a query over the dataset costs seconds, and after a complete run there is nothing else).
    """
    files = spooled(out)
    for unit_id in set(committed or ()) & set(files):
        for path in files.pop(unit_id):
            path.unlink(missing_ok=True)
    if not files:
        return 0
    done = done_units(spark, out, list(files))
    rows: list[dict[str, Any]] = []
    added = 0
    for unit_id, paths in files.items():
        if unit_id in done:
            continue
        try:
            unit_rows = json.loads(paths[0].read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            continue  # never completed: the unit runs again
        rows += [{c: r.get(c) for c in COLUMNS} for r in unit_rows]
        added += 1
    if rows:
        write_rows(spark.createDataFrame(rows, row_schema()), out)
    for paths in files.values():
        for path in paths:
            path.unlink(missing_ok=True)
    return added


def check_reachable(master: str | None, timeout: float = 3.0) -> None:
    """A ``spark://`` master that nothing answers at fails in seconds, not after Spark's retries."""
    import socket

    if not master or not master.startswith("spark://"):
        return
    errors = []
    for address in master.removeprefix("spark://").split(","):
        host, _, port = address.rpartition(":")
        try:
            with socket.create_connection((host, int(port)), timeout=timeout):
                return
        except OSError as exc:
            errors.append(f"{address}: {exc.strerror or exc}")
    raise SparkUnavailable(f"no Spark master answers at {master} ({'; '.join(errors)}): "
                           "start it, or check the host and port")


def run_units(
    spark: SparkSession,
    units: list[dict[str, Any]],
    task: dict[str, Any],
    out: Path,
    progress: Callable[[int, int, float], None] | None = None,
    committed: list[str] | None = None,
) -> None:
    """Run ``units`` on the executors (one Spark task per unit) and append their rows to the dataset.

    Each unit's rows are also spooled the moment it finishes (``fold_spool`` adds them if its
    wave never commits); ``committed`` receives the ids of units whose wave was written.
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType

    if not units:
        return
    sc = spark.sparkContext
    done = sc.accumulator(0)
    failing = sc.accumulator(0)
    task_json = json.dumps(task)

    columns = COLUMNS
    spool = str(spool_path(out.resolve()))

    def run(unit_json: str) -> list[tuple[Any, ...]]:
        # Never raise: a raising task would abort the whole job under local[N]. An interrupt
        # (the job cancelled) is the exception: that unit saves nothing and runs again.
        try:
            from rstck_plugins.campaign.unit import run_unit

            rows = run_unit(json.loads(unit_json), json.loads(task_json))
        except KeyboardInterrupt:
            raise
        except BaseException as exc:
            rows = [_executor_error(json.loads(unit_json), exc)]
        _spool(spool, rows)
        done.add(1)
        failing.add(sum(1 for r in rows if r["outcome"] in FAILING))
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
            if committed is not None:
                committed += [u["unit_id"] for u in batch]
    finally:
        stop.set()
        watcher.join()
    if progress is not None:
        progress(done.value, failing.value, time.monotonic() - started)


def _spool(spool: str, rows: list[dict[str, Any]]) -> None:
    """The unit's rows, written whole (temporary file, then rename) the moment it finishes."""
    if not rows:
        return
    name = f"{rows[0]['unit_id']}.{rows[0].get('attempt_id') or 'x'}.json"
    try:
        os.makedirs(spool, exist_ok=True)
        tmp = os.path.join(spool, f".{name}.{os.getpid()}.tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(rows, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, os.path.join(spool, name))
    except OSError:
        pass  # the wave's own write still records the unit


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
        "started_at": now, "finished_at": now, "attempt_id": uuid.uuid4().hex[:16],
    }


def scratch() -> Path:
    """A folder for the shipped archives. Spark serves an added file from its path for as long
    as the session lives (an executor that starts later fetches it then), so the folder goes when
    the campaign's own session has stopped (``discard``), or at exit for a session the caller
    owns."""
    path = Path(tempfile.mkdtemp(prefix="rs-tck-ship-"))
    atexit.register(discard, path)
    return path


def discard(path: Path | None) -> None:
    if path is not None:
        shutil.rmtree(path, ignore_errors=True)
