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

from rstck.settings import KNOBS_BY_NAME
from rstck.settings import Settings

from .plan import ROLES
from .plan import Campaign
from .plan import knob_option

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


def aggregate(df: DataFrame) -> list[dict[str, Any]]:
    """One dict per subject x verification x test, with the first failing execution attached."""
    from pyspark.sql import functions as F

    counted = F.col("outcome").isin(*COUNTED)
    failing = F.col("outcome").isin("failed", "error")
    quantiles = ", ".join(str(q) for q in QUANTILES)
    first = F.struct("campaign_id", "unit_id", "seed", "started_at", "failure_rule", "failure_observed")
    grouped = df.withColumn("rule", F.coalesce("rule", F.lit("sanity"))).groupBy(
        "subject", "verification", "rule", "test", "level"
    ).agg(
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
    )
    return [row.asDict(recursive=True) for row in grouped.collect()]


def trend(df: DataFrame) -> list[dict[str, Any]]:
    """Pass rate per rule and per campaign or ingested run, in time order."""
    from pyspark.sql import functions as F

    rows = (
        df.filter(F.col("outcome").isin(*COUNTED))
        .withColumn("rule", F.coalesce("rule", F.lit("sanity")))
        .groupBy("rule", "campaign_id")
        .agg(F.min("started_at").alias("at"), F.count("*").alias("runs"),
             F.sum((F.col("outcome") == "passed").cast("int")).alias("passed"))
        .orderBy("at")
        .collect()
    )
    return [
        {"rule": r.rule, "run": r.campaign_id, "at": r.at, "runs": r.runs, "passed": r.passed,
         "pass_rate": round(r.passed / r.runs, 4) if r.runs else None}
        for r in rows
    ]


def repro(first: dict[str, Any] | None, rule: str, manifest: dict[str, Any] | None) -> str | None:
    """The command that re-runs one failing execution, from its campaign or ingest manifest."""
    if not first or manifest is None:
        return None
    if manifest.get("kind") == "ingest":
        origin = manifest.get("units", {}).get(first["unit_id"])
        if not origin:
            return None
        args = ["pytest"]
        for verification, label in sorted(origin.get("subjects", {}).items()):
            role = next((r for r, v in ROLES.items() if v == verification), None)
            if role is not None and ":" in str(label):
                args.append(f"--rs-{role.replace('_', '-')}={label}")
        args.append(f"--rs-rules={rule}")
        args += _knob_args(origin.get("settings", {}), "--rs-", "=")
        return shlex.join(args)
    campaign = Campaign.from_json(manifest["campaign"])
    cmd = ["rs-tck", "campaign"]
    subject = next((s for s in campaign.subjects if s.spec == first.get("_subject")), None)
    if subject is None:
        return None
    cmd += [f"--{subject.role.replace('_', '-')}", subject.spec]
    if subject.failed:
        cmd += ["--failed-publisher", subject.failed]
    cmd += ["--rules", rule, "--repetitions", "1", "--seeds", str(first["seed"])]
    for name, value in sorted(campaign.knobs.items()):
        cmd += [knob_option(name), _knob_text(name, value)]
    if campaign.adapter:
        cmd += ["--adapter", campaign.adapter]
    cmd += ["--master", "local[1]", "--out", "rs-tck-repro"]
    return shlex.join(cmd)


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
        if first:
            first["_subject"] = g["subject"]
        rows.append({
            "subject": g["subject"], "verification": g["verification"], "rule": g["rule"],
            "test": g["test"], "level": g["level"], "runs": runs, "passed": g["passed"],
            "failed": g["failed"], "errors": g["errors"], "skipped": g["skipped"], "pass_rate": rate,
            "flaky": rate is not None and 0 < rate < 1,
            "p50_s": _round(q[2]), "p95_s": _round(q[4]), "max_s": _round(g["max_s"]),
            "min_s": _round(g["min_s"]), "p05_s": _round(q[0]), "p25_s": _round(q[1]), "p75_s": _round(q[3]),
            "first_failing_seed": first["seed"] if first else None,
            "first_failure_rule": first["failure_rule"] if first else None,
            "first_failure_observed": first["failure_observed"] if first else None,
            "repro": repro(first, g["rule"], found.get(first["campaign_id"])) if first else None,
        })
    rows.sort(key=lambda r: (not r["flaky"], r["pass_rate"] if r["pass_rate"] is not None else 2,
                             r["subject"], r["verification"], r["test"]))
    return rows


def _round(value: float | None) -> float | None:
    return None if value is None else round(float(value), 6)
