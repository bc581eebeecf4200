"""How every reporter names, orders and folds verdicts, so the terminal, HTML and baseline agree.

A rule verified by several tests gets one verdict per verification: the worst of its tests,
by ``SEVERITY``.
"""

from __future__ import annotations

from collections.abc import Iterable

from rstck.results import FAILING
from rstck.results import Level
from rstck.results import Outcome
from rstck.results import TestResult
from rstck.results import Verdict

#: Worst first: the verdict a rule's cell shows when several tests verify it.
SEVERITY = (Verdict.FAILED, Verdict.ERROR, Verdict.NOT_RUN, Verdict.OPTIONAL_UNSUPPORTED, Verdict.NOT_APPLICABLE,
            Verdict.UNTESTED, Verdict.DESELECTED, Verdict.PASSED)
#: How people read a verdict: its word, spaced.
LABELS: dict[str, str] = {v: v.replace("_", " ") for v in Verdict}


def verdict(r: TestResult) -> Verdict | Outcome:
    """The TCK's verdict of a result, or its pytest outcome when the verdict is not one we name."""
    return r.verdict if r.verdict in LABELS else r.outcome


def inconclusive(r: TestResult) -> bool:
    """Whether ``r`` is an error of the kind "too slow for this test": stopped at its time limit
    (``test_limit``) with no rule seen broken. It fails the run, yet blames no rule."""
    return r.verdict == Verdict.ERROR and any(f.rule is None and f.setting == "test_limit" for f in r.failures)


def is_failure(r: TestResult) -> bool:
    return r.verdict in FAILING or r.outcome in FAILING


def worst(results: Iterable[TestResult]) -> Verdict:
    verdicts = {verdict(r) for r in results}
    return next((v for v in SEVERITY if v in verdicts), Verdict.PASSED)


def shown(results: Iterable[TestResult]) -> Verdict:
    """The verdict a rule's cell shows: a failure if any test failed, else passed if any passed.

    A cell with two passed tests and one not applicable read as "not applicable", as if the rule
    had not been checked; the counts beside the cell list the other verdicts.
    """
    results = list(results)
    bad = worst(results)
    if bad in FAILING:
        return bad
    return Verdict.PASSED if any(verdict(r) == Verdict.PASSED for r in results) else bad


def counts(items: Iterable[str], order: Iterable[str] = SEVERITY) -> str:
    """``["passed", "failed", "passed"]`` as ``"1 failed, 2 passed"``, in ``order``, others last."""
    tally: dict[str, int] = {}
    for item in items:
        tally[item] = tally.get(item, 0) + 1
    order = list(order)
    ranked = [k for k in order if k in tally] + sorted(k for k in tally if k not in order)
    return ", ".join(f"{tally[k]} {LABELS.get(k, k)}" for k in ranked)


def broken_rules(r: TestResult) -> list[str]:
    """The rules a failed result's problems cite, headline first, each once (none if it did not fail).

    A test verifies one rule, but the probes watch others in every test (1.1, 1.3, 1.7, 1.9), so
    a failure can cite a rule other than the test's own.
    """
    if r.outcome not in FAILING:
        return []
    return list(dict.fromkeys(f.rule for f in r.failures if f.rule is not None))


def race_count(results: Iterable[TestResult]) -> str:
    """How much a race hunt or a fuzz search tried, and what it showed; "" for other tests.

    One green run of a race hunt is weak evidence; the count says how much was tried. A hunt
    that failed for another reason (no race shown) gets no count: its failure is not a race.
    A fuzz failure is a race only when its scenario did not fail on every replay; a
    deterministic find is said as such, never as a race rate.
    """
    results = list(results)
    hunts = [r.iterations for r in results if r.iterations and r.level != Level.FUZZ
             and not (r.outcome in FAILING and not r.iterations.get("showed", 0))]
    parts = []
    if hunts:
        ran = sum(c.get("ran", 0) for c in hunts)
        showed = sum(c.get("showed", 0) for c in hunts)
        parts.append(f"race shown in {showed} of {ran} iteration{'' if ran == 1 else 's'}")
    for r in results:
        if r.level != Level.FUZZ or not r.iterations:
            continue
        race = (r.fuzz or {}).get("race") if isinstance(r.fuzz, dict) else None
        if r.outcome in FAILING and isinstance(race, dict):
            parts.append(f"a race: the scenario failed {race.get('failed')} of {race.get('replays')} replays")
        elif r.outcome in FAILING:
            examples = (r.fuzz or {}).get("examples") or r.iterations.get("ran", 0)
            parts.append(f"found after {examples} generated scenario{'' if examples == 1 else 's'}, "
                         "fails every run")
        else:
            ran = r.iterations.get("ran", 0)
            parts.append(f"{ran} generated scenario{'' if ran == 1 else 's'}, none failed")
    return "; ".join(parts)
