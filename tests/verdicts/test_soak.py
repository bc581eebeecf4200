"""A CI-sized soak: every reference subject, in both modes, while two busy processes load the CPU.

Timing-sensitive checks flake under load first; the references conform, so any failure here is
a TCK flake. ``benchmarks/soak.py`` is the full-sized version.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

SOAK = Path(__file__).resolve().parents[2] / "benchmarks" / "soak.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("rstck_soak", SOAK)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_reference_subjects_pass_in_both_modes_under_load() -> None:
    soak = _load()
    burners = soak.start_load(2)
    try:
        # Once one test at a time (closing windows overlapping), once with four tests at once.
        reports = {mode: soak.soak(1, concurrency=mode) for mode in (1, 4)}
    finally:
        for p in burners:
            p.terminate()
    for report in reports.values():
        assert set(report) == set(soak.subjects())
    failures = {(mode, label): r["failures"] for mode, report in reports.items()
                for label, r in report.items() if r["failures"]}
    assert not failures, failures
