"""How sure a pass rate is: Wilson score intervals, and the runs a race of a given rate needs.

Pure Python, so ``summary.json``, the report and the documentation's table agree.
"""

from __future__ import annotations

import math

#: The normal quantile of a two-sided 95 % interval.
Z95 = 1.959963984540054


def wilson(passed: int, runs: int, z: float = Z95) -> tuple[float, float] | None:
    """The Wilson score interval of ``passed / runs`` (95 % by default); None without runs.

    Unlike ``p +- z*sqrt(p(1-p)/n)``, it stays inside [0, 1] and is not zero-width at 0 or
    all runs passing: 50 of 50 passed still allows a failure rate of about 7 %.
    """
    if runs <= 0:
        return None
    p = passed / runs
    z2 = z * z
    centre = (p + z2 / (2 * runs)) / (1 + z2 / runs)
    half = z * math.sqrt(p * (1 - p) / runs + z2 / (4 * runs * runs)) / (1 + z2 / runs)
    return max(0.0, centre - half), min(1.0, centre + half)


def runs_to_see(failure_rate: float, confidence: float = 0.95) -> int:
    """Runs needed for a failure of this per-run rate to show at least once, at ``confidence``."""
    if not 0 < failure_rate < 1 or not 0 < confidence < 1:
        raise ValueError("failure_rate and confidence must lie strictly between 0 and 1")
    return math.ceil(math.log(1 - confidence) / math.log(1 - failure_rate))
