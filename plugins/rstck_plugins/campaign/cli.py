"""``rs-tck``: conformance campaigns on Spark, ingest of CI results, and their summary.

    rs-tck campaign --publisher mylib:range_publisher --repetitions 50 --out runs/
    rs-tck campaign campaign.toml
    rs-tck ingest ci-results/*.json --out runs/
    rs-tck summary runs/

Exit status: 0 when every test passed in every run, 1 when any failed or errored (ingest: when
a file was rejected), 2 on a usage error or when Spark cannot start.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import logging
import os
import shlex
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rstck.errors import SetupError
from rstck.results import FAILING
from rstck.settings import KNOBS
from rstck.settings import metavar

from .plan import NOT_CAMPAIGN_SETTINGS
from .plan import ROLES
from .plan import Campaign
from .plan import SubjectSpec
from .plan import UsageError
from .plan import build
from .plan import from_toml
from .plan import knob_option

PROG = "rs-tck"

#: When a campaign pays, in ``rs-tck campaign --help`` (measured on two busy cores).
WORTH_IT = """\
Spark adds a fixed cost to the runs themselves: starting its JVM (10-35 s on two busy cores) and
summarising the dataset (about 7 s). Two subjects x 3 repetitions took 80 s this way where a
shell loop of the same pytest runs takes about 25 s. A campaign is worth it for many runs (tens
of repetitions, several subjects or seeds), on a cluster, or for what a loop does not give: pass
rates with intervals, flaky tests, failures kept with their repro, resuming, `rs-tck show`. For
a handful of runs on one machine, loop instead:

  for i in 1 2 3; do pytest -p no:cacheprovider --rs-publisher=MODULE:ATTR || break; done
"""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROG, description=(__doc__ or "").replace("``", ""),
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("campaign", help="run verifications many times on Spark and summarise them",
                       description="Run verifications many times on Spark and summarise them.\n\n" + WORTH_IT,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    c.add_argument("file", nargs="?", type=Path, help="campaign file (TOML), or a test module whose declared subjects "
                   "(rstck.pytest) to run; options given here override it")
    for role in ROLES:
        c.add_argument(f"--{role.replace('_', '-')}", dest=role, action="append", default=[], metavar="MODULE:ATTR",
                       help=f"{role.replace('_', ' ')} subject to verify (repeatable)")
    c.add_argument("--failed-publisher", action="append", default=[], metavar="MODULE:ATTR",
                   help="failed-publisher factory: once for every publisher, or once per --publisher in order")
    c.add_argument("--rules", metavar="IDS", help="comma-separated rule ids to verify ('sanity' for the factory checks)")
    c.add_argument("--skip-rules", metavar="IDS", help="comma-separated rule ids not to verify")
    c.add_argument("--repetitions", type=int, metavar="N", help="runs of each subject (default 1)")
    c.add_argument("--fuzz-seeds", type=int, metavar="N", help="seeds per repetition (default 1); each seed is a unit")
    c.add_argument("--seeds", metavar="SEEDS", help="explicit comma-separated seeds (replaces --fuzz-seeds; for repros)")
    c.add_argument("--seed", type=int, metavar="N", help="base seed the unit seeds derive from (default: random; the "
                   "same campaign with the same --seed and --out resumes instead of rerunning)")
    for knob in KNOBS:
        if knob.name in NOT_CAMPAIGN_SETTINGS:
            continue
        if knob.kind == "bool":  # a flag, as in pytest: --skip-stochastic
            c.add_argument(knob_option(knob.name), dest="knob_" + knob.name, action="store_true", default=None,
                           help=knob.help)
        else:
            c.add_argument(knob_option(knob.name), dest="knob_" + knob.name, metavar=metavar(knob), help=knob.help)
    c.add_argument("--grace-s", type=float, metavar="SECONDS", help="seconds a unit's process may run past the test limit "
                   "before it is killed and the test recorded as an error (default 10)")
    c.add_argument("--memory-mb", type=int, metavar="MIB", help="resident memory a unit's process may use "
                   "before it is killed and its test recorded as an error (default 1024; 0: no limit)")
    c.add_argument("--adapter", metavar="NAME", help="adapter applied to every subject (camelcase, rsocket, a plugin's)")
    c.add_argument("--master", metavar="URL", help="Spark master URL (default local[*]; spark://HOST:PORT for a cluster)")
    c.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="extra Spark setting")
    ship = c.add_mutually_exclusive_group()
    ship.add_argument("--ship", dest="ship", action="store_true", default=None,
                      help="zip the subjects' top-level packages to the executors (default: when not local)")
    ship.add_argument("--no-ship", dest="ship", action="store_false")
    c.add_argument("--spark-ui", action="store_true", default=None, help="keep Spark's web UI on")
    c.add_argument("--out", metavar="DIR", help="dataset directory: results/ (Parquet), summary.json, report.html")
    i = sub.add_parser("ingest", help="add results files of pytest --rs-report-json runs to a dataset")
    i.add_argument("files", nargs="+", type=Path, metavar="RESULTS_JSON", help="results files (--rs-report-json)")
    i.add_argument("--out", required=True, type=Path, metavar="DIR", help="the dataset directory")
    i.add_argument("--master", metavar="URL", help="Spark master URL (default local[*])")
    s = sub.add_parser("summary", help="recompute summary.json, trend.json and report.html of a dataset")
    s.add_argument("out", type=Path, metavar="DIR", help="the dataset directory")
    s.add_argument("--master", metavar="URL", help="Spark master URL (default local[*])")
    from . import show

    show.add_parser(sub)
    return parser


def _campaign_from(args: argparse.Namespace) -> Campaign:
    subjects: list[SubjectSpec] = []
    for role in ROLES:
        subjects += [SubjectSpec(role, spec) for spec in getattr(args, role)]
    failed = args.failed_publisher
    publishers = [s for s in subjects if s.role == "publisher"]
    if failed:
        if len(failed) not in (1, len(publishers)):
            raise UsageError(f"--failed-publisher given {len(failed)} times for {len(publishers)} "
                             "--publisher: give it once (for all) or once per publisher")
        pairs = failed * len(publishers) if len(failed) == 1 else failed
        fixed = iter(SubjectSpec("publisher", p.spec, f) for p, f in zip(publishers, pairs, strict=True))
        subjects = [next(fixed) if s.role == "publisher" else s for s in subjects]
    conf = {}
    for item in args.conf:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"--conf must be KEY=VALUE, got {item!r}")
        conf[key] = value
    settings = {knob_option(k.name).lstrip("-"): getattr(args, "knob_" + k.name)
                for k in KNOBS if getattr(args, "knob_" + k.name, None) is not None}
    values: dict[str, Any] = {
        "out": args.out, "repetitions": args.repetitions, "fuzz_seeds": args.fuzz_seeds,
        "seeds": args.seeds, "seed": args.seed, "rules": args.rules, "skip_rules": args.skip_rules,
        "grace_s": args.grace_s, "memory_mb": args.memory_mb, "adapter": args.adapter, "master": args.master, "ship": args.ship,
        "spark_ui": args.spark_ui, "conf": conf or None, "settings": settings or None,
    }
    if args.file is not None and args.file.suffix == ".py":
        if subjects:
            raise UsageError("give the subjects either in a test module or on the command line, not both")
        return build(declared_subjects(args.file), {k: v for k, v in values.items() if v is not None}, "command line")
    if args.file is not None:
        if subjects:
            raise UsageError("give the subjects either in the campaign file or on the command line, not both")
        overrides = {k: v for k, v in values.items() if k != "settings"}
        campaign = from_toml(args.file, overrides)
        if settings:
            from .plan import parse_knobs

            campaign.knobs.update(parse_knobs(settings, "command line"))
        return campaign
    return build(subjects, {k: v for k, v in values.items() if v is not None}, "command line")


def declared_subjects(path: Path) -> list[SubjectSpec]:
    """The subjects a test module declares (``rstck.pytest``), as ``module:name`` specs.

    The module is imported as pytest imports a test module (its first folder up without an
    ``__init__.py`` put on ``sys.path``), so each unit's process imports it the same way.
    """
    from rstck import pytest as declared

    path = path.resolve()
    if not path.is_file():
        raise UsageError(f"{path}: no such test module")
    root, parts = path.parent, [path.stem]
    while (root / "__init__.py").exists():
        parts.insert(0, root.name)
        root = root.parent
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    name = ".".join(parts)
    try:
        module = importlib.import_module(name)
    except Exception as exc:
        raise UsageError(f"{path}: importing it raised {type(exc).__name__}: {exc}") from None
    roles = {kind: role for role, kind in ROLES.items()}
    out: list[SubjectSpec] = []
    for attr, obj in vars(module).items():
        if not attr.startswith(("test", "Test")):
            continue
        declaration = declared.declaration_of(obj, attr)
        if declaration is None:
            continue
        if declaration.problem:
            raise UsageError(f"{declaration.location()}: {declaration.problem}")
        out.append(SubjectSpec(roles[declaration.kind], f"{name}:{attr}"))
    if not out:
        raise UsageError(f"{path}: declares no subject (rstck.pytest.publisher_verification, ...)")
    return out


def _check_subjects(campaign: Campaign) -> None:
    """Import every subject on the driver (never call it: that happens in the units)."""
    from ..hooks import make_manager
    from ..hooks import make_resolver

    resolve = make_resolver(make_manager(), campaign.adapter)
    for s in campaign.subjects:
        obj = resolve(s.spec, s.role)
        if not callable(obj) and not hasattr(obj, "factory") and not getattr(obj, "__rstck_declaration__", False):
            raise SetupError(f"--{s.role.replace('_', '-')}={s.spec}: {type(obj).__name__} object is not callable")
        if s.failed:
            resolve(s.failed, "failed_publisher")


class Progress:
    """``units done/total, failing tests, rate`` on stderr: rewritten in place on a terminal."""

    def __init__(self, total: int, label: str) -> None:
        self.total, self.label = total, label
        self.tty = sys.stderr.isatty()
        self.last_print = 0.0
        self.last_done = -1

    def __call__(self, done: int, failing: int, elapsed: float) -> None:
        now = time.monotonic()
        if not self.tty and (done == self.last_done or now - self.last_print < 5) and done < self.total:
            return
        if not self.tty and done == self.last_done:
            return
        rate = done / elapsed if elapsed > 0 else 0.0
        left = f", about {(self.total - done) / rate:.0f} s left" if rate > 0 and done < self.total else ""
        line = (f"{self.label}: {done}/{self.total} units, {failing} failing test(s), "
                f"{rate:.2f} units/s{left}")
        print(("\r" + line.ljust(100)) if self.tty else line, end="" if self.tty else "\n", file=sys.stderr, flush=True)
        self.last_print, self.last_done = now, done

    def finish(self) -> None:
        if self.tty:
            print(file=sys.stderr)


def _write_outputs(spark: Any, out: Path) -> tuple[list[dict[str, Any]], int]:
    from . import report
    from . import summary
    from .spark import read_results

    df = read_results(spark, out)
    if df is None:
        raise UsageError(f"{out}: no campaign dataset here (expected {out / 'results'})")
    df = df.cache()
    rows = summary.summary_rows(df, out)
    points = summary.trend(df)
    details = summary.failure_details(df)
    _replace(out / "summary.json", json.dumps(rows, indent=2) + "\n")
    _replace(out / "trend.json", json.dumps(points, indent=2) + "\n")
    _replace(out / summary.FAILURES_FILE, json.dumps(details, indent=2) + "\n")
    report.write(out / "report.html", rows, points, summary.manifests(out), details)
    df.unpersist()
    return rows, len(rows)


def _replace(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


#: What a dataset directory holds, and of which kind each entry must be.
_LAYOUT = {"results": "directory", "campaigns": "directory", "spool": "directory",
           "summary.json": "file", "trend.json": "file", "report.html": "file", "failures.json": "file",
           "quarantine.jsonl": "file"}


def _prepare_out(out: Path) -> None:
    """Check ``--out`` before anything runs: a unit's rows must never be lost for want of a place."""
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out}: is a file, not a directory")
    for name, kind in _LAYOUT.items():
        path = out / name
        if path.exists() and path.is_dir() != (kind == "directory"):
            raise UsageError(f"--out {out}: {path} must be a {kind} (it is where the campaign writes its "
                             f"{name}); move it away or choose another --out")
    try:
        (out / "campaigns").mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--out {out}: cannot create it: {exc.strerror or exc}") from None
    if not os.access(out, os.W_OK):
        raise UsageError(f"--out {out}: not writable")


def _session(master: str | None, app: str, given: Any, **kw: Any) -> tuple[Any, bool]:
    """The command's one session: the caller's (kept running), else a new one (stopped at the end)."""
    from . import spark as rs_spark

    if given is not None:
        return given, False
    if master is not None:
        from .plan import check_master

        check_master(master)
        rs_spark.check_reachable(master)
    return rs_spark.session(master, app=app, **kw), True


def _command() -> str:
    """The command as typed, for the resume hint and the manifest."""
    if Path(sys.argv[0]).name == PROG:
        return shlex.join([PROG, *sys.argv[1:]])
    return shlex.join([PROG, *sys.argv[1:]]) if sys.argv[1:2] == ["campaign"] else f"{PROG} campaign ..."


#: Seconds Ctrl-C gives the cancelled Spark job to end before the interrupt is raised anyway.
CANCEL_WAIT_S = 15.0


@contextlib.contextmanager
def _plain_interrupt(spark: Any) -> Iterator[None]:
    """Ctrl-C cancels Spark's jobs, then raises KeyboardInterrupt as the block ends, and prints nothing.

    The signal handler raises nothing itself. An interrupt raised inside a Py4J call makes Py4J
    drop that call's connection, and the JVM at times refuses the next one: the quieting and the
    cancel then never reach it, and the JVM, exiting with the job still running, logs the job's
    Java stack to the terminal. (PySpark's own handler calls into the JVM from the signal handler,
    on the connection the interrupted call is using.) Instead a thread of its own, on a
    connection of its own, turns Spark's logging off and cancels every job until the block ends;
    the interrupted call returns as any cancelled job does, and nothing is left running in the
    JVM. A second Ctrl-C, or a job not ended within ``CANCEL_WAIT_S``, raises at once.
    The main thread only: signals go there.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    requested = threading.Event()
    ended = threading.Event()
    main = threading.main_thread().ident
    assert main is not None

    def cancel() -> None:
        logging.disable(logging.CRITICAL)  # Py4J and PySpark log the cancelled call
        sc = spark.sparkContext
        with contextlib.suppress(Exception):
            sc.setLogLevel("OFF")  # before the cancel: an aborted write logs a Java trace
        deadline = time.monotonic() + CANCEL_WAIT_S
        while not ended.is_set():
            with contextlib.suppress(Exception):
                sc.cancelAllJobs()  # again until the block ends: a job may start after a cancel
            if time.monotonic() > deadline:
                signal.pthread_kill(main, signal.SIGINT)
                return
            ended.wait(0.2)

    def interrupted(signum: int, frame: Any) -> None:
        if requested.is_set():
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # a third must not cut the saving short
            raise KeyboardInterrupt
        requested.set()
        threading.Thread(target=cancel, name="rs-tck-campaign-cancel", daemon=True).start()

    previous = signal.signal(signal.SIGINT, interrupted)
    try:
        yield
    except Exception:
        if not requested.is_set():
            raise  # a failure of its own; an interrupted run's failures are its cancelled jobs
    finally:
        ended.set()
        if requested.is_set():
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not cut the saving short
        elif signal.getsignal(signal.SIGINT) is interrupted:
            signal.signal(signal.SIGINT, previous)
    if requested.is_set():
        raise KeyboardInterrupt


def _interrupted(saved: str, cid: str, spark: Any, owned: bool, sigint: Any, shipped_in: Path | None) -> int:
    """A campaign stopped by Ctrl-C: say what is saved and how to resume; 130, as a shell's Ctrl-C."""
    from . import spark as rs_spark

    if sys.stderr.isatty():
        print(file=sys.stderr)
    print(f"{PROG} campaign {cid}: interrupted: {saved}; run the same command to resume: {_command()}",
          file=sys.stderr, flush=True)
    logging.disable(logging.NOTSET)
    if not owned:
        with contextlib.suppress(Exception):
            spark.sparkContext.setLogLevel("ERROR")
        with contextlib.suppress(ValueError):  # not the main thread: never changed
            signal.signal(signal.SIGINT, sigint)
        return 130
    # Nothing runs in the JVM any more and its logging is off: it exits, quietly, when this
    # process ends and closes its stdin; a stop would take seconds. The rows are on disk
    # (spooled ones are added by the next run), and the lock goes with this process.
    sys.stdout.flush()
    rs_spark.discard(shipped_in)
    os._exit(130)


def campaign_main(args: argparse.Namespace, given: Any = None) -> int:
    from . import lock
    from . import spark as rs_spark

    campaign = _campaign_from(args)
    _check_subjects(campaign)
    out = Path(campaign.out)
    _prepare_out(out)
    cid = campaign.campaign_id
    units = campaign.units()
    with lock.claim(out, "rs-tck command") as claim:
        if claim.previous:
            print(f"{PROG} campaign: {out} was left locked by {lock._owner_text(claim.previous)}, which is "
                  "gone: taking it over", file=sys.stderr)
        try:
            spark, owned = _session(campaign.master, f"rs-tck campaign {cid}", given, conf=campaign.conf,
                                    ui=campaign.spark_ui)
        except KeyboardInterrupt:  # while Spark starts: no unit has run, nothing is lost
            if sys.stderr.isatty():
                print(file=sys.stderr)
            print(f"{PROG} campaign {cid}: interrupted while Spark was starting: no unit run; run the "
                  f"same command to start again: {_command()}", file=sys.stderr, flush=True)
            return 130
        saved: list[str] = []
        done: set[str] = set()
        shipped_in: Path | None = None
        sigint = signal.getsignal(signal.SIGINT)
        try:
            with _plain_interrupt(spark):  # Ctrl-C: every job cancelled, then KeyboardInterrupt
                ship = campaign.ship if campaign.ship is not None else not rs_spark.is_local(spark.sparkContext.master)
                if ship:
                    shipped_in = rs_spark.scratch()
                    for path in rs_spark.ship(spark, [s.spec for s in campaign.subjects]
                                              + [s.failed for s in campaign.subjects if s.failed], shipped_in):
                        print(f"{PROG}: shipped {path} to the executors", file=sys.stderr)
                rs_spark.fold_spool(spark, out)
                done = rs_spark.done_units(spark, out, [u["unit_id"] for u in units])
                todo = [u for u in units if u["unit_id"] not in done]
                manifest_path = out / "campaigns" / f"{cid}.json"
                manifest = {"kind": "campaign", "campaign": campaign.to_json(), "units_total": len(units),
                            "command": _command(), "master": spark.sparkContext.master, "started_at": time.time()}
                _replace(manifest_path, json.dumps(manifest, indent=2) + "\n")
                print(f"{PROG} campaign {cid}: {len(units)} units ({len(done)} already in {out}), seed "
                      f"{campaign.base_seed}, master {spark.sparkContext.master}", file=sys.stderr)
                progress = Progress(len(todo), f"{PROG} campaign {cid}")
                rs_spark.run_units(spark, todo, campaign.task(), out, progress, saved)
                progress.finish()
                rs_spark.fold_spool(spark, out, saved)
                manifest["finished_at"] = time.time()
                _replace(manifest_path, json.dumps(manifest, indent=2) + "\n")
                _write_outputs(spark, out)
                from pyspark.sql import functions as F

                df = rs_spark.read_results(spark, out)
                assert df is not None
                mine = df.filter(F.col("campaign_id") == cid)
                counts = {r.outcome: r["count"] for r in mine.groupBy("outcome").count().collect()}
        except KeyboardInterrupt:
            ids = {u["unit_id"] for u in units}
            kept = (done | set(saved) | set(rs_spark.spooled(out))) & ids
            return _interrupted(f"{len(kept)} of {len(units)} units saved in {out}", cid, spark, owned, sigint,
                                shipped_in)
        finally:
            if owned:
                spark.stop()
                rs_spark.discard(shipped_in)
    bad = sum(counts.get(outcome, 0) for outcome in FAILING)
    print(f"{PROG} campaign {cid}: {sum(counts.values())} test executions: "
          + ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))
          + f"; wrote {out / 'summary.json'} and {out / 'report.html'}")
    return 1 if bad else 0


def ingest_main(args: argparse.Namespace, given: Any = None) -> int:
    from rstck.results import ResultsFileError

    from . import ingest
    from . import lock
    from . import spark as rs_spark

    out: Path = args.out
    _prepare_out(out)
    parsed = []
    rejected = 0
    def reject(path: Path, reason: str) -> None:
        nonlocal rejected
        print(f"{PROG} ingest: rejected {reason}", file=sys.stderr)
        ingest.quarantine(out, path, reason)
        rejected += 1

    for path in args.files:
        try:
            parsed.append((path, *ingest.read_file(path)))
        except ResultsFileError as exc:
            reject(path, str(exc))
        except Exception as exc:  # whatever a hostile file does, the other files go on
            reject(path, f"{path}: cannot be read as a results file: {type(exc).__name__}: {exc}")
    claim = lock.claim(out, "rs-tck command")
    try:
        spark, owned = _session(args.master, "rs-tck ingest", given)
    except BaseException:
        claim.release()
        raise
    try:
        ids = [p[1] for p in parsed]
        done = rs_spark.done_units(spark, out, ids)
        batch = "ingest-" + time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + f"-{os.getpid()}"
        rows: list[dict[str, Any]] = []
        units: dict[str, Any] = {}
        for path, unit_id, run in parsed:
            if unit_id in done or unit_id in units:
                print(f"{PROG} ingest: {path}: already in the dataset, skipped", file=sys.stderr)
                continue
            try:
                file_rows = ingest.rows_of(path, unit_id, batch, run)
            except Exception as exc:
                reject(path, f"{path}: cannot be read as a results file: {type(exc).__name__}: {exc}")
                continue
            units[unit_id] = {"file": str(path), "subjects": run.subjects, "settings": run.settings}
            incomplete = ingest.partial(run)
            if incomplete:
                units[unit_id]["partial"] = incomplete
                not_run = f", {incomplete['not_run']} test(s) not run" if incomplete.get("not_run") else ""
                print(f"{PROG} ingest: {path}: a partial run ({incomplete['reason']}{not_run}): ingested, "
                      "marked partial", file=sys.stderr)
            rows += file_rows
        if rows:
            manifest = {"kind": "ingest", "units": units, "units_total": len(units), "ingested_at": time.time(),
                        "partial": sum(1 for u in units.values() if u.get("partial"))}
            (out / "campaigns" / f"{batch}.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
            rs_spark.write_rows(spark.createDataFrame(rows, rs_spark.row_schema()), out)
        print(f"{PROG} ingest: {len(units)} file(s), {len(rows)} row(s) added to {out}; "
              f"{len(parsed) - len(units)} already there; {rejected} rejected"
              + (f" (listed in {out / 'quarantine.jsonl'})" if rejected else ""))
        if rs_spark.read_results(spark, out) is not None:
            _write_outputs(spark, out)
    finally:
        claim.release()
        if owned:
            spark.stop()
    return 1 if rejected else 0


def summary_main(args: argparse.Namespace, given: Any = None) -> int:
    out: Path = args.out
    if not (out / "results").is_dir():
        raise UsageError(f"{out}: no campaign dataset here (expected {out / 'results'})")
    from . import lock
    from .spark import fold_spool

    with lock.claim(out, "rs-tck command"):
        spark, owned = _session(args.master, "rs-tck summary", given)
        try:
            fold_spool(spark, out)
            rows, count = _write_outputs(spark, out)
        finally:
            if owned:
                spark.stop()
    flaky = sum(1 for r in rows if r["flaky"])
    print(f"{out / 'summary.json'}: {count} subject x test row(s), {flaky} flaky; {out / 'report.html'}")
    return 0


def main(argv: list[str] | None = None, *, spark: Any = None) -> int:
    """Run one command; ``spark``: an existing session to use (and leave running) instead of a new one."""
    args = _parser().parse_args(argv)
    from . import show
    from .spark import SparkUnavailable

    handlers = {"campaign": campaign_main, "ingest": ingest_main, "summary": summary_main, "show": show.main}
    try:
        return handlers[args.command](args, spark)
    except (UsageError, SetupError, SparkUnavailable) as exc:
        print(f"{PROG} {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
