"""Reading the dataset back: per subject x test pass rates, flakiness, timings, repro, trend.

Aggregation runs on Spark DataFrames (the data may live on a cluster); the results are small
and are written as ``summary.json``, ``trend.json`` and the HTML report by the driver.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

from rstck.results import Level
from rstck.settings import KNOBS_BY_NAME
from rstck.settings import Settings

from .plan import ROLES
from .plan import Campaign
from .stats import wilson

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

COUNTED = ("passed", "failed", "error")
QUANTILES = (0.05, 0.25, 0.5, 0.75, 0.95)


def manifests(out: Path) -> dict[str, dict[str, Any]]:
    """Every campaign and ingest manifest under ``out/campaigns``, by campaign id."""
    found: dict[str, dict[str, Any]] = {}
    for path in sorted((out / "campaigns").glob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            continue
        found[path.stem] = data
    return found


def rule_label(verification: str, test: str, cited: str | None = None) -> str:
    """The rule a test verifies, as ``--rs-rules`` selects it: its registered rule, ``sanity``
    or ``fuzz``; never the rule one of its failures cites (a fuzz test's failure cites many)."""
    from rstck.verifications import VERIFICATIONS

    kind = VERIFICATIONS.get(verification)
    for t in kind.tests if kind is not None else ():
        if t.name == test:
            return "fuzz" if t.level == Level.FUZZ else t.rule_id or "sanity"
    if test.startswith("fuzz_"):
        return "fuzz"
    return cited or "sanity"


def aggregate(df: DataFrame) -> list[dict[str, Any]]:
    """One dict per subject x verification x test, with the first failing execution attached.

    Grouped by test, never by a row's rule: a test's rows carry the rule their failure cites,
    which differs between its passing and failing runs (a fuzz test cites what it found).
    """
    from pyspark.sql import functions as F

    counted = F.col("outcome").isin(*COUNTED)
    failing = F.col("outcome").isin("failed", "error")
    quantiles = ", ".join(str(q) for q in QUANTILES)
    first = F.struct("campaign_id", "unit_id", "seed", "started_at", "failure_rule", "failure_observed")
    grouped = df.groupBy("subject", "verification", "test").agg(
        F.first("level", ignorenulls=True).alias("level"),
        F.min("rule").alias("rule"),
        F.sum(counted.cast("int")).alias("runs"),
        F.sum((F.col("outcome") == "passed").cast("int")).alias("passed"),
        F.sum((F.col("outcome") == "failed").cast("int")).alias("failed"),
        F.sum((F.col("outcome") == "error").cast("int")).alias("errors"),
        F.sum((F.col("outcome") == "skipped").cast("int")).alias("skipped"),
        F.expr(f"percentile(CASE WHEN outcome IN ('passed','failed','error') THEN duration_s END, "
               f"array({quantiles}))").alias("quantiles"),
        F.max(F.when(counted, F.col("duration_s"))).alias("max_s"),
        F.min(F.when(counted, F.col("duration_s"))).alias("min_s"),
        F.min_by(first, F.when(failing, F.col("started_at"))).alias("first_failure"),
        F.sort_array(F.collect_set(F.when(failing, F.col("failure_rule")))).alias("failure_rules"),
    )
    return [row.asDict(recursive=True) for row in grouped.collect()]


#: File of a dataset with every failing test's first failure in full, read by ``rs-tck show``.
FAILURES_FILE = "failures.json"


def failure_details(df: DataFrame) -> list[dict[str, Any]]:
    """Per failing subject x test, its first failing execution: the full message (as the pytest
    side prints it, with the signal trace) and the structured failures. Small, and read without
    Spark: the report's details and ``rs-tck show`` come from it."""
    from pyspark.sql import functions as F

    failing = df.filter(F.col("outcome").isin("failed", "error"))
    first = F.struct("started_at", "campaign_id", "unit_id", "seed", "repetition", "outcome", "message",
                     "failures", "failure_rule", "host", "process_pid", "duration_s")
    rows = (failing.groupBy("subject", "verification", "test")
            .agg(F.min(first).alias("first"), F.count("*").alias("failing")).collect())
    out = []
    for r in rows:
        f = r["first"].asDict()
        try:
            failures = json.loads(f.pop("failures") or "[]")
        except json.JSONDecodeError:
            failures = []
        out.append({"subject": r["subject"], "verification": r["verification"], "test": r["test"],
                    "failing": r["failing"], **f, "failures": failures})
    out.sort(key=lambda d: (d["subject"], d["verification"], d["test"]))
    return out


def trend(df: DataFrame) -> list[dict[str, Any]]:
    """Pass rate per rule and per campaign or ingested run, in time order."""
    from pyspark.sql import functions as F

    rows = (
        df.filter(F.col("outcome").isin(*COUNTED))
        .groupBy("verification", "test", "rule", "campaign_id")
        .agg(F.min("started_at").alias("at"), F.count("*").alias("runs"),
             F.sum((F.col("outcome") == "passed").cast("int")).alias("passed"))
        .collect()
    )
    merged: dict[tuple[str, str], dict[str, Any]] = {}
    for r in rows:
        rule = rule_label(r.verification, r.test, r.rule)
        point = merged.setdefault((rule, r.campaign_id), {"rule": rule, "run": r.campaign_id, "at": r.at,
                                                          "runs": 0, "passed": 0})
        point["at"] = min(point["at"], r.at) if point["at"] is not None and r.at is not None else point["at"] or r.at
        point["runs"] += r.runs
        point["passed"] += r.passed
    points = sorted(merged.values(), key=lambda p: (p["at"] or 0, p["rule"]))
    for p in points:
        p["pass_rate"] = round(p["passed"] / p["runs"], 4) if p["runs"] else None
    return points


def _selector(verification: str, test: str) -> str:
    """A ``-k`` expression that selects exactly this test (names may contain one another)."""
    from rstck.verifications import VERIFICATIONS

    kind = VERIFICATIONS.get(verification)
    others = sorted(t.name for t in (kind.tests if kind is not None else ()) if test in t.name and t.name != test)
    return " and ".join([test, *(f"not {o}" for o in others)])


def repro(first: dict[str, Any] | None, row: dict[str, Any], manifest: dict[str, Any] | None) -> str | None:
    """The plain ``pytest`` command that re-runs one failing execution: its subject, its test
    (selected by rule and name) and its seed (``RS_TCK_SEED``), with the run's settings."""
    if not first or manifest is None:
        return None
    from rstck.subjects import FAILED_ROLE
    from rstck.subjects import subject_option

    role = next((r for r, v in ROLES.items() if v == row["verification"]), None)
    if role is None:
        return None
    label = row["rule"]
    args = ["pytest", "-p", "no:cacheprovider"]
    if manifest.get("kind") == "ingest":
        origin = manifest.get("units", {}).get(first["unit_id"])
        if not origin:
            return None
        subjects = origin.get("subjects", {}) if isinstance(origin.get("subjects"), dict) else {}
        for verification, spec in sorted(subjects.items()):
            r = next((r for r, v in ROLES.items() if v == verification), None)
            if r is not None and ":" in str(spec):
                args.append(f"{subject_option(r)}={spec}")
        failed = subjects.get("failed_publisher")
        if failed and ":" in str(failed):
            args.append(f"{subject_option(FAILED_ROLE)}={failed}")
        args += [f"--rs-rules={label}", "-k", _selector(row["verification"], row["test"])]
        settings = origin.get("settings", {}) if isinstance(origin.get("settings"), dict) else {}
        args += _knob_args(settings, "--rs-", "=")
        return shlex.join(args)
    campaign = Campaign.from_json(manifest["campaign"])
    subject = next((s for s in campaign.subjects if s.spec == row["subject"]), None)
    if subject is None:
        return None
    args.append(f"{subject_option(subject.role)}={subject.spec}")
    if subject.failed:
        args.append(f"{subject_option(FAILED_ROLE)}={subject.failed}")
    args += [f"--rs-rules={label}", "-k", _selector(row["verification"], row["test"])]
    for name, value in sorted(campaign.knobs.items()):
        knob = KNOBS_BY_NAME[name]
        if knob.kind == "bool":
            if value:
                args.append(knob.option)
        else:
            args.append(f"{knob.option}={_knob_text(name, value)}")
    if campaign.adapter:
        args.append(f"--rs-adapter={campaign.adapter}")
    seed = first.get("seed")
    return (f"RS_TCK_SEED={int(seed)} " if seed is not None else "") + shlex.join(args)


def _knob_text(name: str, value: Any) -> str:
    knob = KNOBS_BY_NAME[name]
    if knob.kind == "ms":
        return f"{float(value) * 1000:g}"
    return str(value).lower() if isinstance(value, bool) else str(value)


def _knob_args(saved: dict[str, Any], prefix: str, sep: str) -> list[str]:
    """Options for the settings of an ingested run that differ from the defaults."""
    defaults = Settings().to_json()
    args = []
    for key, value in sorted(saved.items()):
        name = key.removesuffix("_ms")
        knob = KNOBS_BY_NAME.get(name)
        if knob is None or defaults.get(key) == value:
            continue
        text = str(value).lower() if isinstance(value, bool) else f"{value:g}" if isinstance(value, float) else str(value)
        args.append(f"{prefix}{knob.option.removeprefix('--rs-')}{sep}{text}")
    return args


def summary_rows(df: DataFrame, out: Path) -> list[dict[str, Any]]:
    """The rows of ``summary.json``: flaky tests first, then by failure rate, subject and test."""
    found = manifests(out)
    rows = []
    for g in aggregate(df):
        runs = g["runs"] or 0
        rate = round(g["passed"] / runs, 4) if runs else None
        q = g["quantiles"] or [None] * len(QUANTILES)
        first = g["first_failure"]
        if first and first.get("unit_id") is None:
            first = None
        row = {
            "subject": g["subject"], "verification": g["verification"],
            "rule": rule_label(g["verification"], g["test"], g["rule"]),
            "test": g["test"], "level": g["level"], "runs": runs, "passed": g["passed"],
            "failed": g["failed"], "errors": g["errors"], "skipped": g["skipped"], "pass_rate": rate,
            "flaky": rate is not None and 0 < rate < 1,
            "p50_s": _round(q[2]), "p95_s": _round(q[4]), "max_s": _round(g["max_s"]),
            "min_s": _round(g["min_s"]), "p05_s": _round(q[0]), "p25_s": _round(q[1]), "p75_s": _round(q[3]),
            "first_failing_seed": first["seed"] if first else None,
            "first_failure_rule": first["failure_rule"] if first else None,
            "failure_rules": [r for r in g["failure_rules"] or [] if r],
            "first_failure_observed": first["failure_observed"] if first else None,
        }
        interval = wilson(g["passed"], runs)
        row["pass_rate_ci95"] = [round(interval[0], 4), round(interval[1], 4)] if interval else None
        row["repro"] = repro(first, row, found.get(first["campaign_id"])) if first else None
        rows.append(row)
    rows.sort(key=lambda r: (not r["flaky"], r["pass_rate"] if r["pass_rate"] is not None else 2,
                             r["subject"], r["verification"], r["test"]))
    return rows


def _round(value: float | None) -> float | None:
    return None if value is None else round(float(value), 6)
