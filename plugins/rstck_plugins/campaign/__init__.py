"""Conformance campaigns: the same verifications run many times on Spark, read as pass rates.

A race in 1.3 or 3.5 shows in one run out of many; a campaign expands subjects x verifications
x repetitions x seeds into work units, runs each unit in a child process of a Spark executor
(so a hung or crashing subject costs one unit, never the job), keeps one row per test
execution in a Parquet dataset and reads it back as per-rule pass rates, flakiness, timings
and the command that reproduces a failing run.

Nothing here imports PySpark at import time: the core and the pytest plugin work without it.
"""

from __future__ import annotations

from typing import Any


def main(argv: list[str], *, spark: Any = None) -> int:
    """``rs-tck campaign|ingest|summary|show ...``; ``spark``: a session to use (and leave running)."""
    from .cli import main as campaign_main

    return campaign_main(argv, spark=spark)


__all__ = ["main"]
