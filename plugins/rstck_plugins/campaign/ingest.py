"""Ingest: results files of ordinary ``pytest --rs-report-json`` runs, into the campaign dataset.

A file is keyed by the digest of its bytes, so ingesting it twice (or a copy of it) adds
nothing. A file that is not a results file, does not match the results schema or has no
results is rejected with one line and listed in ``quarantine.jsonl`` with the reason; the valid
files of the same call are ingested all the same. A file of an interrupted run is ingested and
marked partial.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any

from rstck.results import SCHEMA
from rstck.results import ResultsFileError
from rstck.results import RunResults
from rstck.results import read_json

from .schema import errors
from .unit import result_row


def read_file(path: Path) -> tuple[str, RunResults]:
    """``(unit_id, results)`` of one results file; raises ResultsFileError naming what is wrong."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ResultsFileError(f"{path}: cannot read results file: {exc.strerror or exc}") from None
    data = read_json(path)
    found = errors(data) if isinstance(data, dict) and data.get("schema") == SCHEMA else []
    if found:
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        raise ResultsFileError(f"{path}: does not match the results schema: {found[0]}{more}")
    run = RunResults.from_json(data, str(path))
    if not run.results:
        raise ResultsFileError(f"{path}: has no results (the run selected or reached no test): nothing to ingest")
    return "f-" + hashlib.sha256(raw).hexdigest()[:16], run


def partial(run: RunResults) -> dict[str, Any] | None:
    """What an interrupted run's file says of itself (reason, tests not run); None when complete."""
    if not run.interrupted:
        return None
    return {"reason": run.interrupted, "not_run": run.not_run}


def rows_of(path: Path, unit_id: str, campaign_id: str, run: RunResults) -> list[dict[str, Any]]:
    seen: dict[str, int] = {}
    rows = []
    for result in run.results:
        base = {
            "campaign_id": campaign_id, "unit_id": unit_id, "source": str(path),
            "subject": run.subjects.get(result.verification) or result.subject or "",
            "verification": result.verification, "repetition": 0, "seed": None, "host": None,
            "worker_pid": None, "process_pid": None, "python": run.python,
            "loop": run.settings.get("loop", "thread"), "subject_origin": None,
            "tck_version": run.tck_version, "started_at": path.stat().st_mtime, "attempt_id": unit_id,
        }
        row = result_row(result, base)
        key = row["row_id"]
        seen[key] = seen.get(key, 0) + 1
        if seen[key] > 1:
            row["row_id"] = f"{key}#{seen[key]}"
        rows.append(row)
    return rows


def quarantine(out: Path, path: Path, reason: str) -> None:
    entry = {"path": str(path), "reason": reason, "at": time.time()}
    with (out / "quarantine.jsonl").open("a", encoding="utf-8") as f:
        f.write(json.dumps(entry) + "\n")
