"""CI-sized soaks: every reference subject in both modes, and a cut of the conforming catalogue,
while two busy processes load the CPU.

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


#: A CI-sized cut of the catalogue soak (``benchmarks/soak.py --catalogue`` is the full one): the
#: shapes whose verdicts rest longest on timeouts (one request per half timeout, an actor's
#: mailbox between two threads), an ``rs`` edition range and a real design judged by ``ALLOWED``.
CATALOGUE_CUT = [
    "conforming:subscriber_whitebox:one_at_a_time",
    "conforming:processor:actor",
    "rs:async_range",
    "real:publisher:rx_range",
]


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_catalogue_cut_passes_under_load_with_real_designs_judged_by_their_allowed_entries() -> None:
    soak = _load()
    burners = soak.start_load(2)
    try:
        report = soak.soak(1, CATALOGUE_CUT, catalogue=True)
    finally:
        for p in burners:
            p.terminate()
    assert set(report) == set(CATALOGUE_CUT)
    failures = {label: r["failures"] for label, r in report.items() if r["failures"]}
    assert not failures, failures
