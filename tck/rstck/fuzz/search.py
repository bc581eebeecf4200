"""Driving the search: the systematic scenarios first, then Hypothesis's generated ones; shrink
the first failure, tell a race from a bug.

The scenario interpreter is a plain function ``execute(scenario) -> Outcome``; this module owns
everything Hypothesis-specific: the settings (no example database unless a path is given,
derandomised unless asked, so runs locally and in CI search the same scenarios), silencing its
reporter, bounding the time spent shrinking, and turning ``Flaky`` (a failure that did not repeat) into a race verdict
with a failure rate measured over replays, instead of an error of the kit.
"""

from __future__ import annotations

import hashlib
import itertools
import random
import time
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Iterator
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import hypothesis
from hypothesis import HealthCheck
from hypothesis import Phase
from hypothesis import Verbosity
from hypothesis import strategies as st
from hypothesis.database import DirectoryBasedExampleDatabase
from hypothesis.errors import Flaky
from hypothesis.reporting import with_reporter

from ..api import MAX_DEMAND
from ..errors import RuleViolation
from .scenario import Scenario

#: Replays of a scenario whose failure did not repeat, to measure how often it fails.
RACE_REPLAYS = 5
#: Systematic scenarios run together, sharing their closing quiet window.
BATCH = 24


#: Bits of a generated scenario's seed. Drawn as booleans: Hypothesis draws integers and bytes now
#: and then from constants it harvests from the caller's local modules (writing them to
#: ``.hypothesis/constants`` in the working directory), so the scenarios would depend on what
#: happens to be imported and the search would leave files in the user's project. Each boolean
#: is a draw of Hypothesis' own (about 20 us): 16 bits, 65,536 seeds for a budget of a hundred
#: examples, cost a quarter of 64 (0.1 s of every kind's run).
SEED_BITS = 16


def _seeded(bits: tuple[bool, ...]) -> random.Random:
    return random.Random(sum(1 << i for i, bit in enumerate(bits) if bit))


@dataclass
class Outcome:
    """What one execution of a scenario showed; ``violation`` is None when it passed."""

    scenario: Scenario
    violation: RuleViolation | None
    #: The environment of the run, kept for the failing ones: its trace and other problems.
    record: Any = None


@dataclass
class Finding:
    """The smallest failing scenario found, and what it took to find and shrink it."""

    outcome: Outcome
    examples: int  # scenarios run until the first failure
    runs: int  # scenarios run in all, shrinking included
    seconds_to_find: float
    seconds: float
    #: ``(failed, replays)`` when the failure did not repeat reliably: a race.
    race: tuple[int, int] | None = None
    shrink_cut: bool = False
    #: "systematic" when the enumeration found it, "random" when Hypothesis's search did.
    phase: str = "random"


@dataclass
class Budget:
    """How much searching a fuzz verification may do."""

    examples: int
    #: Seconds of shrinking after the first failure; past it the best scenario so far stands.
    shrink_s: float
    #: Seconds of generating: a loaded machine runs fewer examples, never a longer search.
    explore_s: float = 60.0
    database: str | None = None
    #: The same scenarios on every run (locally and in CI); False draws new ones each time.
    derandomize: bool = True
    #: Examples actually run by the last search (fewer than ``examples`` when time ran out).
    ran: int = 0
    #: Systematic scenarios run by the last search, and whether time ran out before the last.
    systematic_ran: int = 0
    systematic_cut: bool = False


class _Failed(Exception):
    def __init__(self, outcome: Outcome) -> None:
        super().__init__(str(outcome.violation))
        self.outcome = outcome


def pick(rng: random.Random, table: Sequence[tuple[int, Any]]) -> Any:
    """A weighted choice from ``(weight, value)`` rows; a callable value is called for it."""
    roll = rng.randrange(sum(weight for weight, _ in table))
    for weight, value in table:
        if roll < weight:
            return value() if callable(value) else value
        roll -= weight
    raise AssertionError("unreachable")


def drop_chunks(items: tuple[Any, ...]) -> Iterator[tuple[Any, ...]]:
    """``items`` without one chunk, largest chunks first (the delta-debugging order)."""
    size = len(items)
    while size >= 1:
        for start in range(0, len(items), size):
            yield items[:start] + items[start + size:]
        size //= 2


def simpler_demand(n: int) -> Iterator[int]:
    """Smaller request amounts to try in place of ``n``: 1 first, then nearer ones."""
    if n > MAX_DEMAND:
        yield MAX_DEMAND
    if n > 1:
        yield 1
        if n // 2 > 1:
            yield n // 2
        if n - 1 > max(1, n // 2):
            yield n - 1
    elif n < 0:
        yield 0
        if n < -1:
            yield -1


def _size(scenario: Scenario) -> tuple[int, str]:
    return len(repr(scenario)), repr(scenario)


#: Where generated seeds are remembered in the example database (``--rs-fuzz-db``).
DATABASE_KEY = hashlib.sha384(b"rstck.fuzz.search").digest()


def enumerate_first(systematic: Iterable[Scenario], screen: Callable[[list[Scenario]], bool],
                    execute: Callable[[Scenario], Outcome], budget: Budget, deadline: float,
                    counts: dict[str, int]) -> Outcome | None:
    """The first failing scenario of ``systematic``, in its order; None if all pass.

    Scenarios are screened ``BATCH`` at a time (they share the quiet window that ends them);
    a batch that fails is run again one scenario at a time, and the first that fails on its
    own is the finding. One that fails only among the others is not reported (a batch's
    publishers live side by side; a subject may share state between them).
    """
    budget.systematic_ran, budget.systematic_cut = 0, False
    pending = iter(systematic)
    while True:
        batch = list(itertools.islice(pending, BATCH))
        if not batch:
            return None
        if time.monotonic() > deadline:
            budget.systematic_cut = True
            return None
        budget.systematic_ran += len(batch)
        counts["runs"] += len(batch)
        if screen(batch):
            continue
        for scenario in batch:
            counts["runs"] += 1
            outcome = execute(scenario)
            if outcome.violation is not None:
                budget.systematic_ran += batch.index(scenario) + 1 - len(batch)
                return outcome


def search(
    generate: Callable[[random.Random], Scenario],
    candidates: Callable[[Scenario], Iterator[Scenario]],
    execute: Callable[[Scenario], Outcome],
    budget: Budget,
    systematic: Iterable[Scenario] = (),
    screen: Callable[[list[Scenario]], bool] | None = None,
) -> Finding | None:
    """The shrunk first failure of the systematic scenarios, then of up to ``budget.examples``
    generated ones; None if all pass.

    ``systematic`` (every short scenario of a small alphabet, deterministic) runs first, batched
    through ``screen``; it stops at the first failure, and the random search does not run.

    Hypothesis draws a seed per example (the same ones on every run unless the budget says
    otherwise, remembered in the example
    database when one is configured) and tells a failure that does not repeat (``Flaky``)
    from one that does; each seed expands into a scenario with the weights the generator
    gives. Hypothesis would shrink the seed, which says nothing about the scenario, so the
    failing scenario is shrunk structurally here instead: whole steps and re-entrant actions
    removed, amounts, sizes and threads simplified, as long as the same rule still breaks.
    """
    start = time.monotonic()
    counts = {"runs": 0, "skipped": 0}
    failed_at: list[float] = []
    budget.ran = 0
    first = enumerate_first(systematic, screen or (lambda batch: all(execute(s).violation is None for s in batch)),
                            execute, budget, start + budget.explore_s, counts)
    if first is not None:
        found_after = time.monotonic() - start
        # As Hypothesis does for its own: a failure must repeat to be more than a race.
        counts["runs"] += 1
        repeated = execute(first.scenario).violation is not None
        shrunk, cut = shrink(first, candidates, execute, budget.shrink_s, counts) if repeated else (first, False)
        finding = Finding(outcome=shrunk, examples=budget.systematic_ran, runs=counts["runs"],
                          seconds_to_find=found_after, seconds=time.monotonic() - start, shrink_cut=cut,
                          phase="systematic")
        if not repeated:
            failures = sum(execute(first.scenario).violation is not None for _ in range(RACE_REPLAYS))
            counts["runs"] += RACE_REPLAYS
            finding.race, finding.runs = (failures, RACE_REPLAYS), counts["runs"]
        if finding.race is None or finding.race[0] > 0:
            return finding
        # Seen once and never again: no finding; the random search still runs.
        unconfirmed: Finding | None = finding
    else:
        unconfirmed = None
    explored = counts["runs"]

    def run(rng: random.Random) -> None:
        if time.monotonic() - start > budget.explore_s:
            counts["skipped"] += 1  # out of time: the remaining examples are not run
            return
        scenario = generate(rng)
        counts["runs"] += 1
        outcome = execute(scenario)
        if outcome.violation is not None:
            if not failed_at:
                failed_at.append(time.monotonic())
            raise _Failed(outcome)

    settings = hypothesis.settings(
        max_examples=budget.examples,
        database=DirectoryBasedExampleDatabase(budget.database) if budget.database else None,
        derandomize=budget.derandomize,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        verbosity=Verbosity.quiet,
        print_blob=False,
        report_multiple_bugs=False,
        phases=(Phase.explicit, Phase.reuse, Phase.generate),
    )
    seeds = st.tuples(*(st.booleans() for _ in range(SEED_BITS))).map(_seeded)
    test = settings(hypothesis.given(seeds)(run))
    # The example database's key, given rather than derived from this function's source: the
    # derivation parses source, and CPython 3.11's AST work is not safe beside pytest's.
    test._hypothesis_internal_database_key = DATABASE_KEY  # type: ignore[attr-defined]
    found: Outcome | None = None
    race = False
    try:
        with with_reporter(lambda *_: None):
            test()
    except _Failed as failed:
        found = failed.outcome
    except Flaky as flaky:
        race = True
        found = _flaky_outcome(flaky)
    budget.ran = counts["runs"] - explored
    if found is None:
        return unconfirmed  # the caller says in the trace that it was seen once, unreported
    examples = counts["runs"]
    found_after = (failed_at[0] if failed_at else time.monotonic()) - start
    shrunk, cut = shrink(found, candidates, execute, budget.shrink_s, counts)
    finding = Finding(outcome=shrunk, examples=examples, runs=counts["runs"],
                      seconds_to_find=found_after, seconds=time.monotonic() - start, shrink_cut=cut)
    if race:
        failures = 0
        for _ in range(RACE_REPLAYS):
            again = execute(shrunk.scenario)
            counts["runs"] += 1
            if again.violation is not None:
                failures += 1
        finding.race = (failures, RACE_REPLAYS)
        finding.runs = counts["runs"]
    return finding


#: Rules the shrinker treats as one: demand lost shows as 3.17 while the total is at or above
#: 2**63-1 and as 3.8 below it, so simpler amounts may move a failure from one to the other.
_SAME_DEFECT = {"3.17": "3.8"}


def _rule(outcome: Outcome) -> str | None:
    violation = outcome.violation
    rule = violation.rule.id if violation is not None and violation.rule is not None else None
    return _SAME_DEFECT.get(rule, rule) if rule is not None else None


def shrink(found: Outcome, candidates: Callable[[Scenario], Iterator[Scenario]],
           execute: Callable[[Scenario], Outcome], limit_s: float,
           counts: dict[str, int]) -> tuple[Outcome, bool]:
    """The smallest variant of ``found`` that still breaks the same rule, within ``limit_s``."""
    deadline = time.monotonic() + limit_s
    best, rule = found, _rule(found)
    tried: set[Scenario] = {found.scenario}
    improved = True
    while improved:
        improved = False
        for candidate in candidates(best.scenario):
            if time.monotonic() > deadline:
                return best, True
            if candidate in tried or _size(candidate) >= _size(best.scenario):
                continue
            tried.add(candidate)
            counts["runs"] += 1
            outcome = execute(candidate)
            if outcome.violation is not None and _rule(outcome) == rule:
                best, improved = outcome, True
                break
    return best, False


def _flaky_outcome(flaky: BaseException) -> Outcome | None:
    """The failure a ``Flaky`` stands for: the one it carries."""
    stack: list[BaseException] = [flaky]
    while stack:
        exc = stack.pop()
        if isinstance(exc, _Failed):
            return exc.outcome
        stack.extend(getattr(exc, "exceptions", ()))
        for linked in (exc.__cause__, exc.__context__):
            if linked is not None:
                stack.append(linked)
    return None
