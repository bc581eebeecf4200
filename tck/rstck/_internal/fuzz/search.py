"""Driving the search: the systematic scenarios first, then generated ones; shrink the first
failure, tell a race from a bug.

The scenario interpreter is a plain function ``execute(scenario) -> Outcome``; a side that can
run many scenarios side by side gives ``screen(batch)`` too (True, or a falsy ``Screened``), and
both phases then screen ``BATCH`` scenarios at a time, running one alone only when its batch
failed. Each generated
scenario expands from a 16-bit seed; the seeds are a fixed sample (the same scenarios on every
run, locally and in CI) unless random ones are asked for. A failure is replayed once: one that
does not repeat is a race, reported with a failure rate measured over replays. Hypothesis is
imported only for its example database (``--rs-fuzz-db``): it then draws the seeds, replays
the ones that failed before, and turns ``Flaky`` into the same race verdict. Without it no
search pays Hypothesis' import and engine (about 0.15 s of CPU a run).
"""

from __future__ import annotations

import functools
import itertools
import random
import time
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Iterator
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ...api import MAX_DEMAND
from ...errors import RuleViolation
from .scenario import Scenario

#: Replays of a scenario whose failure did not repeat, to measure how often it fails.
RACE_REPLAYS = 5
#: Systematic scenarios run together, sharing their closing quiet window.
BATCH = 24


#: Bits of a generated scenario's seed: 65,536 scenarios for a budget of a hundred examples. With
#: an example database, Hypothesis draws them as booleans: it draws integers and bytes now and
#: then from constants it harvests from the caller's local modules (writing them to
#: ``.hypothesis/constants`` in the working directory), so the scenarios would depend on what
#: happens to be imported and the search would leave files in the user's project.
SEED_BITS = 16
#: What the fixed sample of seeds is drawn with (``Budget.derandomize``).
SEED_SAMPLE = 0x5EED


def seeds(count: int, derandomize: bool) -> list[int]:
    """``count`` distinct seeds: 0 (the scenario of all-zero draws) first, then a sample, fixed
    unless ``derandomize`` is False."""
    rng = random.Random(SEED_SAMPLE) if derandomize else random.SystemRandom()
    count = max(0, min(count, 1 << SEED_BITS))
    return [0, *rng.sample(range(1, 1 << SEED_BITS), count - 1)] if count else []


@functools.lru_cache(maxsize=4096)
def expand(generate: Callable[[random.Random], Scenario], seed: int) -> Scenario:
    """The scenario ``generate`` makes of ``seed``, made once per process: the seeds are a fixed
    sample, so the subjects of one run (a library's twenty publishers) share their expansions
    (a generator of the same settings is the same function: ``publisher_scenarios.generator``)."""
    return generate(random.Random(seed))


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


@dataclass(frozen=True)
class Screened:
    """What a ``screen`` that failed a batch may say besides False: which scenario's own verdict
    failed first (None: not one scenario's, say a problem no probe of its own flagged)."""

    suspect: int | None = None

    def __bool__(self) -> bool:
        return False  # a failed batch, as False


#: What a ``screen`` returns: True when every scenario of the batch passed.
ScreenResult = bool | Screened


def _alone(batch: list[Scenario], screened: ScreenResult, execute: Callable[[Scenario], Outcome],
           counts: dict[str, int]) -> tuple[int, Outcome, bool] | None:
    """The first scenario of a failed batch that fails on its own: ``(index, outcome, race)``.

    Each runs alone, in order: the first that fails is the same one, after the same count, as
    without batches. If none does, the scenario whose own verdict failed in the batch runs
    alone again, up to ``RACE_REPLAYS`` times: a race it lost once in the batch needs that many
    chances to show alone, as a scenario run alone first would have had (its replays), or
    the batch would make a race less likely to be seen. Found so, it is a race.
    """
    for index, scenario in enumerate(batch):
        counts["runs"] += 1
        outcome = execute(scenario)
        if outcome.violation is not None:
            return index, outcome, False
    suspect = screened.suspect if isinstance(screened, Screened) else None
    if suspect is None or not 0 <= suspect < len(batch):
        return None
    for _ in range(RACE_REPLAYS):
        counts["runs"] += 1
        outcome = execute(batch[suspect])
        if outcome.violation is not None:
            return suspect, outcome, True
    return None


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


def database_key() -> bytes:
    """Where generated seeds are remembered in the example database (``--rs-fuzz-db``); hashed
    when a database is used, not on import: ``hashlib`` loads OpenSSL, a few milliseconds of
    every run."""
    import hashlib

    return hashlib.sha384(b"rstck.fuzz.search").digest()


def enumerate_first(systematic: Iterable[Scenario], screen: Callable[[list[Scenario]], ScreenResult],
                    execute: Callable[[Scenario], Outcome], budget: Budget, deadline: float,
                    counts: dict[str, int]) -> tuple[Outcome, bool] | None:
    """The first failing scenario of ``systematic``, in its order, and whether it was a race
    (``_alone``); None if all pass.

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
        screened = screen(batch)
        if screened:
            continue
        found = _alone(batch, screened, execute, counts)
        if found is not None:
            index, outcome, race = found
            budget.systematic_ran += index + 1 - len(batch)
            return outcome, race


def search(
    generate: Callable[[random.Random], Scenario],
    candidates: Callable[[Scenario], Iterator[Scenario]],
    execute: Callable[[Scenario], Outcome],
    budget: Budget,
    systematic: Iterable[Scenario] = (),
    screen: Callable[[list[Scenario]], ScreenResult] | None = None,
) -> Finding | None:
    """The shrunk first failure of the systematic scenarios, then of up to ``budget.examples``
    generated ones; None if all pass.

    ``systematic`` (every short scenario of a small alphabet, deterministic) runs first, batched
    through ``screen``; it stops at the first failure, and the random search does not run. The
    generated scenarios are batched through ``screen`` too.

    Each generated example expands a seed (``seeds``; Hypothesis' with an example database)
    into a scenario with the weights the generator gives. A failure that does not repeat is
    told from one that does. A seed's shrinking says nothing about the scenario, so the
    failing scenario is shrunk structurally here instead: whole steps and re-entrant actions
    removed, amounts, sizes and threads simplified, as long as the same rule still breaks.
    """
    start = time.monotonic()
    counts = {"runs": 0, "skipped": 0}
    budget.ran = 0
    first = enumerate_first(systematic, screen or (lambda batch: all(execute(s).violation is None for s in batch)),
                            execute, budget, start + budget.explore_s, counts)
    unconfirmed: Finding | None = None
    if first is not None:
        finding = _confirmed(*first, candidates, execute, budget, start, counts)
        if finding.race is None or finding.race[0] > 0:
            return finding
        unconfirmed = finding  # seen once and never again: no finding; the random search still runs
    explored = counts["runs"]
    failed_at: list[float] = []
    if budget.database:
        found, race = _explore_with_database(generate, execute, budget, start, counts, failed_at)
    else:
        found, race = _explore(generate, execute, budget, start, counts, failed_at, screen)
    budget.ran = counts["runs"] - explored
    if found is None:
        return unconfirmed  # the caller says in the trace that it was seen once, unreported
    examples = counts["runs"]
    found_after = (failed_at[0] if failed_at else time.monotonic()) - start
    shrunk, cut = shrink(found, candidates, execute, budget.shrink_s, counts)
    finding = Finding(outcome=shrunk, examples=examples, runs=counts["runs"],
                      seconds_to_find=found_after, seconds=time.monotonic() - start, shrink_cut=cut)
    if race:
        failures = sum(execute(shrunk.scenario).violation is not None for _ in range(RACE_REPLAYS))
        counts["runs"] += RACE_REPLAYS
        finding.race, finding.runs = (failures, RACE_REPLAYS), counts["runs"]
    return finding


def _confirmed(first: Outcome, race: bool, candidates: Callable[[Scenario], Iterator[Scenario]],
               execute: Callable[[Scenario], Outcome], budget: Budget, start: float,
               counts: dict[str, int]) -> Finding:
    """The systematic phase's failure, replayed: shrunk if it repeats, else (or if it was found
    as a race) its rate measured."""
    found_after = time.monotonic() - start
    repeated = False
    if not race:
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
    return finding


def _explore(generate: Callable[[random.Random], Scenario], execute: Callable[[Scenario], Outcome],
             budget: Budget, start: float, counts: dict[str, int], failed_at: list[float],
             screen: Callable[[list[Scenario]], ScreenResult] | None = None) -> tuple[Outcome | None, bool]:
    """The first failing generated scenario, and whether it was a race (its replay passed).

    With ``screen`` the scenarios are screened ``BATCH`` at a time, as the systematic ones: a
    batch that fails runs again one scenario at a time, in order, so the first that fails on
    its own is the same scenario, found after the same count, as without batching.
    """
    pending = iter(seeds(budget.examples, budget.derandomize))
    while True:
        if time.monotonic() - start > budget.explore_s:
            counts["skipped"] += 1  # out of time: the remaining examples are not run
            break
        batch = [expand(generate, seed) for seed in itertools.islice(pending, BATCH if screen else 1)]
        if not batch:
            break
        if screen is None:
            screened: ScreenResult = False  # each alone
        else:
            screened = screen(batch)
            if screened:
                counts["runs"] += len(batch)
                continue
        found = _alone(batch, screened, execute, counts)
        if found is not None:
            _index, outcome, race = found
            failed_at.append(time.monotonic())
            if race:
                return outcome, True
            counts["runs"] += 1
            return outcome, execute(outcome.scenario).violation is None
    return None, False


def _explore_with_database(generate: Callable[[random.Random], Scenario], execute: Callable[[Scenario], Outcome],
                           budget: Budget, start: float, counts: dict[str, int],
                           failed_at: list[float]) -> tuple[Outcome | None, bool]:
    """``_explore`` through Hypothesis, whose example database replays the seeds that failed
    before (``--rs-fuzz-db``); its ``Flaky`` is the race."""
    import hypothesis
    from hypothesis import HealthCheck
    from hypothesis import Phase
    from hypothesis import Verbosity
    from hypothesis import strategies as st
    from hypothesis.database import DirectoryBasedExampleDatabase
    from hypothesis.errors import Flaky
    from hypothesis.reporting import with_reporter

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

    assert budget.database is not None
    settings = hypothesis.settings(
        max_examples=budget.examples, database=DirectoryBasedExampleDatabase(budget.database),
        derandomize=budget.derandomize, deadline=None, suppress_health_check=list(HealthCheck),
        verbosity=Verbosity.quiet, print_blob=False, report_multiple_bugs=False,
        phases=(Phase.explicit, Phase.reuse, Phase.generate),
    )
    drawn = st.tuples(*(st.booleans() for _ in range(SEED_BITS))).map(_seeded)
    test = settings(hypothesis.given(drawn)(run))
    # The example database's key, given rather than derived from this function's source: the
    # derivation parses source, and CPython 3.11's AST work is not safe beside pytest's.
    test._hypothesis_internal_database_key = database_key()  # type: ignore[attr-defined]
    try:
        with with_reporter(lambda *_: None):
            test()
    except _Failed as failed:
        return failed.outcome, False
    except Flaky as flaky:
        return _flaky_outcome(flaky), True
    return None, False


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
