"""Ingest: results files of ordinary ``pytest --rs-report-json`` runs, into the campaign dataset.

A file is keyed by the digest of its bytes, so ingesting it twice (or a copy of it) adds
nothing. A file that is not a results file is rejected with one line and listed in
``quarantine.jsonl``; the valid files of the same call are ingested all the same.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any

from rstck.results import ResultsFileError
from rstck.results import load

from .unit import result_row


def read_file(path: Path) -> tuple[str, dict[str, Any], list[dict[str, Any]]]:
    """``(unit_id, document, results)`` of one results file; raises ResultsFileError."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ResultsFileError(f"{path}: cannot read results file: {exc.strerror or exc}") from None
    try:
        data, results = load(path)
    except UnicodeDecodeError:
        raise ResultsFileError(f"{path}: not a results file (not UTF-8 text)") from None
    return "f-" + hashlib.sha256(raw).hexdigest()[:16], data, [r.to_json() for r in results]


def rows_of(path: Path, unit_id: str, campaign_id: str, data: dict[str, Any],
            results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    settings = data.get("settings") or {}
    subjects = data.get("subjects") or {}
    seen: dict[str, int] = {}
    rows = []
    for result in results:
        base = {
            "campaign_id": campaign_id, "unit_id": unit_id, "source": str(path),
            "subject": subjects.get(result["verification"]) or result.get("subject") or "",
            "verification": result["verification"], "repetition": 0, "seed": None, "host": None,
            "worker_pid": None, "process_pid": None, "python": data.get("python"),
            "loop": settings.get("loop", "thread"), "subject_origin": None,
            "tck_version": data.get("tck_version"), "started_at": path.stat().st_mtime,
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
