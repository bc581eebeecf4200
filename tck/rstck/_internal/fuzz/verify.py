"""The fuzz verifications' bodies: search (or replay), then report the shrunk scenario.

A failure is reported as the rule the smallest failing scenario broke, with that scenario as
numbered steps, the signal trace of its last run (it becomes the verification's trace), and
the replay token that runs exactly that scenario again (``--rs-fuzz-replay``).
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Iterator
from typing import Any

from ...errors import NotVerified
from ...errors import RuleViolation
from ...errors import SetupError
from ...fuzz import deselected
from . import publisher_side
from . import subscriber_side
from .sandbox import scenario_env
from .scenario import ReplayError
from .scenario import Scenario
from .scenario import decode
from .scenario import encode
from .search import RACE_REPLAYS
from .search import Budget
from .search import Finding
from .search import Outcome
from .search import ScreenResult
from .search import search

#: Seconds a fuzz verification may spend shrinking a failure before it reports the best so far.
SHRINK_S = 5.0


class FuzzViolation(RuleViolation):
    """A rule broken by a generated scenario: the rule's own failure plus how to see it again."""

    def __init__(self, violation: RuleViolation, side: str, scenario: Scenario, steps: list[str],
                 finding: Finding | None) -> None:
        super().__init__(violation.rule, violation.expected, violation.observed, hint=violation.hint,
                         evidence=violation.evidence, setting=violation.setting)
        self.__cause__ = violation.__cause__
        self.replay = encode(side, scenario)
        race = finding.race if finding is not None else None
        #: What the results JSON carries under ``"fuzz"``, and the runner renders in the message.
        self.fuzz: dict[str, Any] = {
            "side": side,
            "scenario": steps,
            "replay": self.replay,
            "replay_option": f"--rs-fuzz-replay={self.replay}",
            "examples": finding.examples if finding else 0,
            "runs": finding.runs if finding else 1,
            "seconds_to_find": round(finding.seconds_to_find, 3) if finding else 0.0,
            "seconds": round(finding.seconds, 3) if finding else 0.0,
            "race": {"failed": race[0], "replays": race[1]} if race else None,
            "phase": finding.phase if finding else "replay",
        }


#: Seconds of generating per example asked for, at most: a scenario takes about 0.03 s, so 100
#: take some 3 s; on a loaded machine the search stops at 10 s with fewer. A failure found in
#: that time is then shrunk for at most ``SHRINK_S``.
EXPLORE_S_PER_EXAMPLE = 0.1


#: Seconds the systematic phase may add to the generating time, by ``--rs-fuzz-steps``: about
#: ten times what it takes on an idle machine (3 steps need a raised ``--rs-test-limit-ms``: the
#: generating time is at most half of it).
SYSTEMATIC_S = {0: 0.0, 1: 1.0, 2: 5.0, 3: 120.0}


def _budget(settings: Any) -> Budget:
    explore = max(2.0, settings.fuzz_examples * EXPLORE_S_PER_EXAMPLE) + SYSTEMATIC_S[settings.fuzz_steps]
    return Budget(examples=settings.fuzz_examples, shrink_s=min(SHRINK_S, settings.test_limit / 4),
                  explore_s=min(explore, settings.test_limit / 2), database=settings.fuzz_db or None,
                  derandomize=not settings.fuzz_random)


def _replay_scenario(settings: Any, side: str) -> Scenario | None:
    if not settings.fuzz_replay:
        return None
    try:
        token_side, scenario = decode(settings.fuzz_replay)
    except ReplayError as exc:
        raise SetupError(str(exc)) from None
    return scenario if token_side == side else None


def _run(ctx: Any, side: str, generate: Callable[[random.Random], Scenario],
         candidates: Callable[[Scenario], Iterator[Scenario]],
         execute_in: Callable[[Any, Scenario], RuleViolation | None], render: Callable[[Scenario], list[str]],
         shape: Callable[[Scenario], bool], systematic: Iterable[Scenario] = (),
         screen_in: Callable[[Any, list[Scenario], Callable[[Scenario], None]], ScreenResult] | None = None) -> None:
    settings = ctx.settings
    deselected(settings)

    outer = ctx.env

    def execute(scenario: Scenario) -> Outcome:
        with scenario_env(ctx) as env:
            outer.on_stall = lambda stalled: _stalled(outer, side, scenario, stalled, render)
            try:
                violation = execute_in(env, scenario)
            finally:
                outer.on_stall = None
            if violation is None and env.problems:
                violation = _first(env)
            return Outcome(scenario, violation, env if violation is not None else None)

    replay = _replay_scenario(settings, side)
    if replay is not None:
        if not shape(replay):
            raise SetupError("--rs-fuzz-replay: the token does not hold a well-formed "
                             f"{side} scenario")
        ctx.env.trace.note(f"replaying the scenario of --rs-fuzz-replay ({RACE_REPLAYS} runs at most)")
        for _ in range(RACE_REPLAYS):
            outcome = execute(replay)
            if outcome.violation is not None:
                _report(ctx, side, outcome, render, None)
        ctx.env.trace.note(f"the replayed scenario passed {RACE_REPLAYS} runs")
        return
    def screen(batch: list[Scenario]) -> ScreenResult:
        assert screen_in is not None

        def running(scenario: Scenario) -> None:
            outer.on_stall = lambda stalled: _stalled(outer, side, scenario, stalled, render)

        with scenario_env(ctx) as env:
            try:
                return screen_in(env, batch, running)
            finally:
                outer.on_stall = None

    budget = _budget(settings)
    finding = search(generate, candidates, execute, budget, systematic,
                     screen if screen_in is not None else None)
    if finding is not None and finding.race is not None and finding.race[0] == 0:
        # Seen once, then not in any replay: too weak to accuse anyone of; said in the trace.
        ctx.env.trace.note(f"a {side} scenario failed once ({finding.outcome.violation}) and passed "
                           f"{finding.race[1]} replays: not reported")
        finding = None
    if finding is None:
        cut = "" if budget.ran >= settings.fuzz_examples else \
            f" (of {settings.fuzz_examples} asked: the time budget of {budget.explore_s:.1f} s ran out)"
        if budget.systematic_ran or budget.systematic_cut:
            ctx.env.trace.note(f"{budget.systematic_ran} systematic scenario(s) of up to {settings.fuzz_steps} "
                               f"step(s){' (cut: the time budget ran out)' if budget.systematic_cut else ''}: "
                               "no violation")
        ctx.env.trace.note(f"{budget.ran} generated scenario(s) ({side} side){cut}: no violation")
        ctx.env.count_iterations(budget.systematic_ran + budget.ran, 0)
        return
    _report(ctx, side, finding.outcome, render, finding)


def _stalled(outer: Any, side: str, scenario: Scenario, stalled: RuleViolation,
             render: Callable[[Scenario], list[str]]) -> RuleViolation:
    """The watchdog's verdict on a scenario that blocked: with that scenario, its trace (of the
    run recording when it blocked: the scenario's, or a baseline run inside it) and its token."""
    nested = outer.nested
    while nested is not None and nested.nested is not None:
        nested = nested.nested
    if nested is not None:
        outer.trace = nested.trace
    return FuzzViolation(stalled, side, scenario, render(scenario), None)


def _first(env: Any) -> RuleViolation:
    from ..environment import as_violation

    return as_violation(env.problems[0], None)


def _report(ctx: Any, side: str, outcome: Outcome, render: Callable[[Scenario], list[str]],
            finding: Finding | None) -> None:
    violation = outcome.violation
    assert violation is not None
    record = outcome.record
    if record is not None:
        # The verification's trace becomes the final run's, and its other problems are listed.
        ctx.env.trace = record.trace
        for problem in record.problems:
            if problem.error is not violation and getattr(violation, "problem", None) is not problem:
                with ctx.env._lock:
                    ctx.env._keep(problem)
    if finding is not None:
        race = finding.race
        ctx.env.count_iterations(*(race[::-1] if race else (finding.examples, 1)))
    raise FuzzViolation(violation, side, outcome.scenario, render(outcome.scenario), finding)


# -- the publisher side ----------------------------------------------------------------------


def fuzz_publisher(ctx: Any) -> None:
    """Generated request/cancel orders against fresh publishers from the factory."""
    settings = ctx.settings
    subscribers = 3 if settings.max_subscribers >= 3 else 2 if settings.max_subscribers >= 2 else 1
    failed = getattr(ctx.subject, "failed_factory", None) is not None
    references: dict[int, tuple[Any, ...] | None] = {}

    def reference(n: int) -> tuple[Any, ...] | None:
        if n not in references:
            references[n] = publisher_side.reference_sequence(ctx, n)
        return references[n]

    replay = _replay_scenario(settings, "publisher")
    empty = True
    if settings.can_complete and (not replay or replay[0] == 0):
        if not replay:
            # Scenarios judge what is owed by n: a factory that ignores it would be blamed on a rule.
            ctx.factory_contract([k for k in publisher_side.sizes_for(settings) if k > 0])
        # The empty stream is optional, as in the JVM TCK: a factory(0) that is not one is
        # left out (the optional 1.5 test reports it), not blamed on the rule a scenario trips.
        gave = ctx.empty_stream()
        if gave is not None:
            empty = False
            ctx.env.trace.note(f"factory(0) is not an empty stream ({gave}): the empty stream is "
                               "optional, scenarios of factory(0) are left out")
            if replay or not publisher_side.sizes_for(settings, empty=False):
                raise NotVerified("needs an empty stream from factory(0) (optional: it gave "
                                  f"{gave}), or a larger max_elements")

    def execute_in(env: Any, scenario: Scenario) -> RuleViolation | None:
        try:
            return publisher_side.PublisherScenario(ctx, env, scenario, reference).execute()
        except RuleViolation as violation:
            return violation

    def screen_in(env: Any, batch: list[Scenario], running: Callable[[Scenario], None]) -> ScreenResult:
        return publisher_side.screen(ctx, env, batch, reference, running)

    generate = publisher_side.generator(settings, subscribers=subscribers, failed=failed, empty=empty)
    _run(ctx, "publisher", generate, functools.partial(publisher_side.candidates, empty=empty), execute_in,
         publisher_side.render, publisher_side.well_formed, publisher_side.systematic(settings, settings.fuzz_steps),
         screen_in)


# -- the subscriber side ---------------------------------------------------------------------


def fuzz_subscriber(ctx: Any, *, whitebox: bool) -> None:
    """Generated legal signal orders sent to fresh subscribers from the factory."""
    baselines: dict[str, Any] = {}

    def execute_in(env: Any, scenario: Scenario) -> RuleViolation | None:
        try:
            return subscriber_side.SubscriberScenario(ctx, env, scenario, whitebox, baselines).execute()
        except RuleViolation as violation:
            return violation

    _run(ctx, "subscriber", subscriber_side.generator(whitebox=whitebox), subscriber_side.candidates,
         execute_in, subscriber_side.render, subscriber_side.well_formed)
