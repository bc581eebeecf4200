"""The fuzz verifications: they catch what only a particular order shows, and nothing else.

Each order-dependent broken implementation of ``tests/broken/order_dependent.py`` is run
through every fixed verification (all pass: they never make that order) and through the fuzz
verification with the default budget, which draws the same scenarios on every run (it must fail, on the rule the
case names, with a shrunk scenario and a replay token that reproduces it). The conforming
references must pass the fuzz verifications, also while the CPU is loaded.
"""

from __future__ import annotations

import importlib.util
import json
import random
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from rstck._internal.fuzz import search as fuzz_search
from rstck._internal.fuzz.publisher_side import render as render_publisher
from rstck._internal.fuzz.publisher_side import size
from rstck._internal.fuzz.scenario import ReplayError
from rstck._internal.fuzz.scenario import decode
from rstck._internal.fuzz.scenario import encode
from rstck._internal.fuzz.search import Budget
from rstck._internal.fuzz.search import Outcome
from rstck._internal.one_rule import run_test
from rstck._internal.verifications._racing import aggressive_switching
from rstck.reference import async_range_publisher
from rstck.reference import async_subscriber
from rstck.reference import async_whitebox_subscriber
from rstck.reference import range_publisher
from rstck.reference import sync_subscriber
from rstck.reference import sync_whitebox_subscriber
from rstck.results import TestResult
from rstck.settings import Settings
from rstck.subjects import PublisherSubject
from rstck.subjects import SubscriberSubject
from rstck.subjects import WhiteboxSubject
from rstck.verifications import VERIFICATIONS

from tests.broken import order_dependent as od
from tests.broken import publishers as bp

pytest_plugins = ["pytester"]

#: Short waits, as in the other catalogues; the fuzz budget stays the default one.
#: Short windows, with a timeout a loaded machine still meets (a pooled subject's first element).
FAST = Settings(timeout=1.0, no_signal_window=0.05, gc_window=1.0, stochastic_iterations=10)
FUZZ_TEST = {"publisher": "fuzz_demand_cancel_orders", "subscriber_blackbox": "fuzz_signal_orders",
             "subscriber_whitebox": "fuzz_signal_orders"}


@dataclass(frozen=True)
class Case:
    """One order-dependent broken implementation and the rule the fuzzer must cite."""

    id: str
    verification: str
    subject: Any
    rule: str


CASES = [
    *(pytest.param(Case(id, "publisher", PublisherSubject(factory), rule), id=id)
      for id, factory, rule in od.PUBLISHERS),
    *(pytest.param(Case(id, "subscriber_blackbox", SubscriberSubject(factory), rule), id=id)
      for id, factory, rule in od.SUBSCRIBERS),
]


def run(verification: str, name: str, subject: Any, settings: Settings = FAST) -> TestResult:
    v = VERIFICATIONS[verification]
    (test,) = [t for t in v.tests if t.name == name]
    return run_test(test, lambda env: v.make_context(env, subject), subject.apply(settings),
                    subject_label=subject.label)


@pytest.mark.parametrize("case", CASES)
def test_fixed_verifications_miss_the_order_dependent_defect(case: Case) -> None:
    """Only the fuzz verification finds it, but for the fixed tests listed in ``ALSO_CAUGHT_BY``.

    Race hunts (stochastic tests) are left out: an order-dependent race may show there too.
    """
    tests = [t for t in VERIFICATIONS[case.verification].tests
             if t.level not in ("untested", "fuzz", "stochastic")]
    failed = [(t.name, r.message.splitlines()[0]) for t in tests
              if (r := run(case.verification, t.name, case.subject)).outcome in ("failed", "error")]
    expected = od.ALSO_CAUGHT_BY.get(case.id, set())
    assert {name for name, _ in failed} == expected, (
        f"{case.id}: fixed verifications that catch it {failed}, expected exactly {sorted(expected)}")


@pytest.mark.parametrize("case", CASES)
def test_default_fuzz_budget_catches_it_on_its_rule(case: Case) -> None:
    result = run(case.verification, FUZZ_TEST[case.verification], case.subject, FAST)
    assert (result.outcome, result.level, result.rule) == ("failed", "fuzz", case.rule), result.message
    assert result.failures[0].rule == case.rule
    assert result.message.startswith(f"[rule {case.rule}]"), result.message
    fuzz = result.fuzz
    assert fuzz is not None
    assert fuzz["scenario"][0].startswith("1. ")
    assert "  scenario: the smallest found" in result.message
    assert fuzz["replay_option"] in result.message
    # The token replays exactly that scenario, and it breaks the same rule again.
    again = run(case.verification, FUZZ_TEST[case.verification], case.subject,
                FAST.replace(fuzz_replay=fuzz["replay"]))
    assert (again.outcome, again.rule) == ("failed", case.rule), again.message
    assert again.fuzz is not None
    assert again.fuzz["scenario"] == fuzz["scenario"]
    # Shrunk to the steps the defect needs, and no more.
    shrunk = decode(fuzz["replay"])[1]
    steps = size(shrunk) if case.verification == "publisher" else len(shrunk[1])
    assert steps <= od.STEPS[case.id], fuzz["scenario"]


def test_element_order_is_judged_only_when_the_subject_declares_it() -> None:
    """The factory promises n elements, not their order: a swap passes unless it is declared."""
    factory = od.factory(od.ReordersAfterAReentrantRequest)
    plain = run("publisher", FUZZ_TEST["publisher"], PublisherSubject(factory), FAST)
    assert plain.outcome == "passed", plain.message
    declared = run("publisher", FUZZ_TEST["publisher"], PublisherSubject(factory, deterministic_sequence=True), FAST)
    assert (declared.outcome, declared.rule) == ("failed", None), declared.message
    assert "in order, each once" in declared.message
    assert "deterministic_sequence" in declared.message


class _IdleAfterAnOddTurn(bp.IdleAfterATurnWithNothingOwed):
    """Idles when a turn of 37 ends at the last element; the next request finds the end."""

    TURN = 37


@pytest.mark.parametrize(("case", "outcome"), [
    (od.SilentEndAfterReentrantBulk, "failed"),  # never ends, whatever is asked
    (bp.NoCompleteWhenAnOddTurnEndsAtTheLast, "failed"),  # ignores requests once exhausted
    (_IdleAfterAnOddTurn, "passed"),  # ends once more is asked for: legal
])
def test_a_stream_whose_demand_is_spent_is_asked_once_more_before_it_is_accused(case: Any, outcome: str) -> None:
    """1.5 in the fuzz: 37 requested exactly, in two parts; the kit then asks one more and judges."""
    scenario = (37, (), ((0, 1, ("request", 36, "here")),), (("request", 0, 1, "here"),))
    subject = PublisherSubject(od.factory(case))
    result = run("publisher", FUZZ_TEST["publisher"], subject, FAST.replace(fuzz_replay=encode("publisher", scenario)))
    assert result.outcome == outcome, result.message
    if outcome == "failed":
        assert result.rule == "1.5", result.message
        assert "even after a further request(1)" in result.message, result.message


CONFORMING = [
    pytest.param("publisher", PublisherSubject(range_publisher), id="range-publisher"),
    pytest.param("publisher", PublisherSubject(async_range_publisher), id="async-range-publisher"),
    pytest.param("subscriber_blackbox", SubscriberSubject(sync_subscriber), id="sync-subscriber"),
    pytest.param("subscriber_blackbox", SubscriberSubject(async_subscriber), id="async-subscriber"),
    pytest.param("subscriber_whitebox", WhiteboxSubject(sync_whitebox_subscriber), id="sync-whitebox"),
    pytest.param("subscriber_whitebox", WhiteboxSubject(async_whitebox_subscriber), id="async-whitebox"),
]


@pytest.mark.parametrize(("verification", "subject"), CONFORMING)
def test_conforming_references_are_never_flagged(verification: str, subject: Any) -> None:
    result = run(verification, FUZZ_TEST[verification], subject, Settings())
    assert result.outcome == "passed", result.message
    assert result.iterations is not None
    assert result.iterations["ran"] > 0
    assert result.iterations["showed"] == 0


def test_conforming_references_are_never_flagged_under_load() -> None:
    soak = _load_soak()
    burners = soak.start_load(2)
    try:
        for verification, subject in [p.values for p in CONFORMING]:  # type: ignore[attr-defined]
            result = run(verification, FUZZ_TEST[verification], subject, Settings(fuzz_examples=40))
            assert result.outcome == "passed", result.message
    finally:
        for burner in burners:
            burner.terminate()


def test_the_processor_is_fuzzed_as_a_publisher_and_passes() -> None:
    from rstck.reference import identity_processor
    from rstck.subjects import ProcessorSubject

    names = {t.name for t in VERIFICATIONS["processor"].tests if t.level == "fuzz"}
    assert names == {"fuzz_demand_cancel_orders"}
    result = run("processor", "fuzz_demand_cancel_orders", ProcessorSubject(identity_processor),
                 Settings(fuzz_examples=40))
    assert result.outcome == "passed", result.message


class _EmptyNeverEnds(bp.RangeSubscription):
    """factory(0) neither gives an element nor ends; every other size is right."""

    def deliver_complete(self, subscriber: Any) -> None:
        if self.index > 0:
            super().deliver_complete(subscriber)


@pytest.mark.parametrize(("subscription", "gave"), [
    pytest.param(bp.AtLeastOne, "1 element(s), then on_complete()", id="one-element"),
    pytest.param(_EmptyNeverEnds, "0 element(s), then no terminal signal", id="never-ends"),
])
def test_a_factory_0_that_is_not_an_empty_stream_is_left_out_not_accused(subscription: Any, gave: str) -> None:
    """The empty stream is optional, as in the JVM TCK: the fuzz learns that factory(0) is not
    one and uses no scenario of it (RxJava's JustTckTest is ``Flowable.just(0L)`` for every n)."""
    subject = PublisherSubject(bp.factory(subscription), label="not-empty")
    result = run("publisher", FUZZ_TEST["publisher"], subject, FAST.replace(fuzz_examples=40))
    assert result.outcome == "passed", result.message
    notes = [r["detail"] for r in result.trace if r["signal"] == "note"]
    assert any(f"factory(0) is not an empty stream ({gave})" in note for note in notes), notes
    replay = FAST.replace(fuzz_replay=encode("publisher", (0, (), (), (("request", 0, 1, "here"),))))
    result = run("publisher", FUZZ_TEST["publisher"], subject, replay)
    assert result.verdict == "not_applicable", result.message


def test_without_an_empty_stream_no_scenario_is_generated_or_shrunk_to_factory_0() -> None:
    from rstck._internal.fuzz.publisher_side import candidates
    from rstck._internal.fuzz.publisher_side import generator

    rng = random.Random(7)
    without = generator(Settings(), subscribers=3, failed=True, empty=False)
    assert all(without(rng)[0] != 0 for _ in range(2000))
    with_empty = generator(Settings(), subscribers=3, failed=True)
    assert any(with_empty(rng)[0] == 0 for _ in range(2000))
    scenario = (1, (), (), (("request", 0, 1, "here"),))
    assert [c for c in candidates(scenario, empty=False) if c[0] == 0] == []
    assert [c for c in candidates(scenario) if c[0] == 0] != []


def test_asyncio_loop_runs_the_fuzz_verification_through_the_event_loop() -> None:
    result = run("publisher", "fuzz_demand_cancel_orders", PublisherSubject(range_publisher),
                 Settings(loop="asyncio", fuzz_examples=30))
    assert result.outcome == "passed", result.message
    assert any(r["thread"] != "rs-tck-body" for r in result.trace if r["signal"] == "note") or result.trace


def test_no_fuzz_deselects_the_fuzz_verifications() -> None:
    result = run("publisher", "fuzz_demand_cancel_orders", PublisherSubject(range_publisher),
                 Settings(no_fuzz=True))
    assert (result.outcome, result.verdict) == ("skipped", "deselected")


# -- the search: races, shrinking, tokens ----------------------------------------------------


def test_a_failure_that_does_not_repeat_is_reported_as_a_race_with_its_rate() -> None:
    from rstck.errors import RuleViolation

    calls = {"n": 0}

    def execute(scenario: Any) -> Outcome:
        calls["n"] += 1
        broke = calls["n"] == 3  # once only: Hypothesis's replay of it passes
        return Outcome(scenario, RuleViolation("1.3", "one thread at a time", "two") if broke else None)

    finding = fuzz_search.search(lambda rng: (rng.randint(0, 9), ()), lambda s: iter(()), execute,
                                 Budget(examples=20, shrink_s=1.0, derandomize=True))
    assert finding is not None
    assert finding.race == (0, fuzz_search.RACE_REPLAYS)
    assert finding.outcome.violation is not None
    assert finding.outcome.violation.rule is not None
    assert finding.outcome.violation.rule.id == "1.3"


def test_shrinking_keeps_the_rule_and_drops_what_does_not_matter() -> None:
    from rstck.errors import RuleViolation

    def execute(scenario: Any) -> Outcome:
        n, _first, _reactions, steps = scenario
        broke = n >= 3 and ("request", 0, 2, "here") in steps
        return Outcome(scenario, RuleViolation("3.8", "served", "lost") if broke else None)

    big = (16, (("request", 5, "thread"),), ((0, 2, ("cancel", "here")),),
           (("run",), ("request", 0, 7, "thread"), ("request", 0, 2, "here"), ("cancel", 0, "here")))
    from rstck._internal.fuzz.publisher_side import candidates

    shrunk, cut = fuzz_search.shrink(execute(big), candidates, execute, 5.0, {"runs": 0})
    assert not cut
    assert shrunk.scenario == (3, (), (), (("request", 0, 2, "here"),))
    assert render_publisher(shrunk.scenario) == [
        "1. subscribe probe to factory(3) (3 elements)",
        "2. request(2)",
        "3. wait for what is owed, then check every subscriber",
    ]


def test_replay_tokens_round_trip_and_bad_ones_are_named() -> None:
    scenario = (7, (("request", 2**63 - 1, "here"),), ((0, 1, ("cancel", "thread")),), (("run",),))
    assert decode(encode("publisher", scenario)) == ("publisher", scenario)
    for bad in ("nonsense", "rsfz1-elsewhere-abc", "rsfz1-publisher-!!!"):
        with pytest.raises(ReplayError, match="--rs-fuzz-replay"):
            decode(bad)


def test_a_damaged_token_stops_a_run_before_any_test_while_settings_keep_it_as_text() -> None:
    from rstck.fuzz import check_replay
    from rstck.run_api import run_verification

    settings = Settings(fuzz_replay="rsfz1-publisher-AAAA")  # the token's format is the fuzzer's
    with pytest.raises(ReplayError, match="the token is damaged"):
        check_replay(settings)
    seen: list[TestResult] = []
    with pytest.raises(ReplayError, match="the token is damaged"):
        run_verification("publisher", PublisherSubject(range_publisher), settings, on_result=seen.append)
    assert seen == []


def test_generated_scenarios_reach_every_kind_of_step() -> None:
    from rstck._internal.fuzz.publisher_side import generator

    generate = generator(Settings(), subscribers=3, failed=True)
    rng = random.Random(7)
    seen: set[str] = set()
    for _ in range(300):
        n, first, reactions, steps = generate(rng)
        seen |= {s[0] + (f":{s[-1]}" if s[0] in ("request", "cancel") else "") for s in steps}
        seen |= {"reentrant:" + a[0] + ":" + a[-1] for _, _, a in reactions}
        seen |= {"illegal" for s in steps if s[0] == "request" and s[2] <= 0}
        seen |= {"past-max" for a in first if a[0] == "request" and a[1] >= 2**63 - 1}
        seen |= {"failed" if n < 0 else "finite"}
        seen |= {"long" for _ in [0] if len(steps) >= 40}
    assert seen >= {"request:here", "request:thread", "cancel:here", "cancel:thread", "run", "subscribe",
                    "reentrant:request:here", "reentrant:request:thread", "reentrant:cancel:here",
                    "illegal", "past-max", "failed", "finite", "long"}


def test_aggressive_switching_restores_the_interval() -> None:
    import sys

    before = sys.getswitchinterval()
    with aggressive_switching():
        assert sys.getswitchinterval() <= 1e-5
    assert sys.getswitchinterval() == before


# -- through pytest ---------------------------------------------------------------------------


def test_default_run_includes_the_fuzz_verification_and_json_carries_the_scenario(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(broken="from tests.broken.order_dependent import PUBLISHERS\n"
                               "overwrites = PUBLISHERS[2][1]\n")
    pytester.syspathinsert(Path(__file__).resolve().parents[2])
    result = pytester.runpytest("-p", "no:cacheprovider", "--rs-publisher=broken:overwrites",
                                "--rs-rules=fuzz,sanity", "--rs-report-json=out.json",
                                "--rs-timeout-ms=500", "-v")
    result.stdout.fnmatch_lines(["*publisher::fuzz_demand_cancel_orders[[]fuzz[]] FAILED*",
                                 "*scenario: the smallest found*", "*--rs-fuzz-replay=rsfz1-publisher-*"])
    data = json.loads((pytester.path / "out.json").read_text())
    (fuzz,) = [r for r in data["results"] if r["level"] == "fuzz"]
    assert fuzz["rule"] == "3.8"
    assert fuzz["failures"][0]["rule"] == "3.8"
    assert fuzz["fuzz"]["replay"].startswith("rsfz1-publisher-")
    assert fuzz["fuzz"]["scenario"]


def test_fuzz_options_have_ini_and_env_forms(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makeini("[pytest]\nrs_fuzz_examples = 5\nrs_fuzz_steps = 0\n")
    monkeypatch.setenv("RS_TCK_NO_FUZZ", "1")
    result = pytester.runpytest("-p", "no:cacheprovider", "--rs-publisher=rstck.reference:range_publisher",
                                "--rs-rules=fuzz", "-rs")
    result.stdout.fnmatch_lines(["*fuzzing is switched off (--rs-no-fuzz)*"])
    monkeypatch.delenv("RS_TCK_NO_FUZZ")
    result = pytester.runpytest("-p", "no:cacheprovider", "--rs-publisher=rstck.reference:range_publisher",
                                "--rs-rules=fuzz", "--rs-report-json=out.json")
    assert result.ret == 0
    data = json.loads((pytester.path / "out.json").read_text())
    assert data["results"][0]["iterations"]["ran"] == 5
    assert data["settings"]["fuzz_examples"] == 5
    assert data["settings"]["fuzz_steps"] == 0
    result = pytester.runpytest("-p", "no:cacheprovider", "--rs-publisher=rstck.reference:range_publisher",
                                "--rs-fuzz-steps=4")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--rs-fuzz-steps must be 0 to 3*"])


def test_a_damaged_replay_token_is_a_one_line_usage_error(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("-p", "no:cacheprovider", "--rs-publisher=rstck.reference:range_publisher",
                                "--rs-fuzz-replay=rsfz1-publisher-AAAA")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--rs-fuzz-replay: the token is damaged*"])


def _drawn(budget: Budget) -> list[int]:
    """The first number of each random scenario a search of ``budget`` draws."""
    drawn: list[int] = []

    def generate(rng: random.Random) -> Any:
        drawn.append(rng.getrandbits(32))
        return (0, ())

    fuzz_search.search(generate, lambda s: iter(()), lambda s: Outcome(s, None), budget)
    return drawn


def test_the_random_phase_draws_the_same_scenarios_locally_and_in_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    """A baseline written on a laptop must hold in CI: the search is a function of the code."""
    from rstck._internal.fuzz.verify import _budget

    local = _drawn(_budget(Settings(fuzz_examples=10)))
    monkeypatch.setenv("CI", "true")
    assert _drawn(_budget(Settings(fuzz_examples=10))) == local
    assert len(set(local)) == len(local) == 10
    widened = _drawn(_budget(Settings(fuzz_examples=10, fuzz_random=True)))
    assert widened != local


def test_no_hypothesis_directory_is_written_into_the_working_directory(pytester: pytest.Pytester) -> None:
    """A fresh process, as a user's: Hypothesis harvests constants from the local modules it sees
    (a subject's module, say) into ``.hypothesis/constants`` when a search draws integers."""
    pytester.makepyfile(subjects="from rstck.reference import range_publisher\nLIMIT = 12345\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--rs-publisher=subjects:range_publisher",
                                           "--rs-rules=fuzz", "--rs-fuzz-examples=30")
    assert result.ret == pytest.ExitCode.OK
    assert not (pytester.path / ".hypothesis").exists()


def test_a_search_without_an_example_database_imports_no_part_of_hypothesis() -> None:
    """The seeds are the kit's own unless ``--rs-fuzz-db`` asks for Hypothesis' database: a
    default run pays neither its import nor its engine (a fresh process, as a user's)."""
    code = ("import sys\n"
            "from rstck.run_api import run_verification\n"
            "from rstck.reference import range_publisher\n"
            "from rstck.settings import Settings\n"
            "from rstck.subjects import PublisherSubject\n"
            "[r] = run_verification('publisher', PublisherSubject(range_publisher), Settings(fuzz_examples=20),\n"
            "                       rules=['fuzz'])\n"
            "assert r.outcome == 'passed', r.message\n"
            "print(sorted(m for m in sys.modules if 'hypothesis' in m))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]", done.stdout


def test_no_example_database_is_written_unless_asked(pytester: pytest.Pytester) -> None:
    pytester.runpytest("-p", "no:cacheprovider", "--rs-publisher=rstck.reference:range_publisher",
                       "--rs-rules=fuzz", "--rs-fuzz-examples=5")
    assert not (pytester.path / ".hypothesis").exists()
    pytester.runpytest("-p", "no:cacheprovider", "--rs-publisher=rstck.reference:range_publisher",
                       "--rs-rules=fuzz", "--rs-fuzz-examples=5", "--rs-fuzz-db=fuzzdb")
    assert not (pytester.path / ".hypothesis").exists()


def _load_soak() -> Any:
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "soak.py"
    spec = importlib.util.spec_from_file_location("rstck_soak_fuzz", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


#: A scenario whose last action, a cancel() handed to another thread from inside on_next #4,
#: lands just after the element that satisfied the wait for what was owed: judged before it
#: landed, a conforming pooled publisher was accused of losing demand (3.8) in one run of ten.
LATE_CANCEL = ("rsfz1-publisher-eNqLNteJjlYqSi0sTS0uUdIx0lHKSC1KVYrVQRUsyShKTUxRigWKRxvoGCPLGqLIGuiY"
               "ACWTE_OSU3OUkGSAUrGxAFkYIjE")


def test_a_scenario_is_judged_only_once_its_last_reentrant_action_has_landed() -> None:
    from tests.broken import publishers as bp

    subject = PublisherSubject(bp.factory(bp.PooledRangeSubscription), bp.FailedPublisher, label="pooled")
    for _ in range(6):  # each replay runs the scenario up to 5 times: 30 runs in all
        result = run("publisher", FUZZ_TEST["publisher"], subject, FAST.replace(fuzz_replay=LATE_CANCEL))
        assert result.verdict == "passed", result.message


#: Found by the soak against the JVM RangePublisher port (and the one-shot publisher built on
#: it): a request handed to another thread from inside on_subscribe, waited for there, makes the
#: synchronous publisher signal on that thread while on_subscribe has not returned. The waiting
#: thread runs nothing, so this is the nesting rule 3.10 allows, not a 1.3 overlap; it was
#: reported as one on every run.
HANDED_OVER_FROM_ON_SUBSCRIBE = (
    "rsfz1-publisher-eNqLNtCJjgWjaKXi0qTi5KLMpFQlEK8otbA0tbhEScdQR6kkoyg1MUUpFgQAnaMQgQ",
    "rsfz1-publisher-eNqLNtCJjlYqSi0sTS0uUdIx1FEqyShKTUxRio3ViQahWAC9gArf",
)


@pytest.mark.parametrize("token", HANDED_OVER_FROM_ON_SUBSCRIBE)
@pytest.mark.parametrize("shape", ["jvm_range_publisher", "one_shot_publisher"])
def test_a_synchronous_signal_on_the_thread_a_call_was_handed_to_is_not_an_overlap(shape: str, token: str) -> None:
    from tests.conforming import publishers as cp

    subject = PublisherSubject(getattr(cp, shape), label=shape)
    result = run("publisher", FUZZ_TEST["publisher"], subject, FAST.replace(fuzz_replay=token))
    assert result.verdict == "passed", result.message


# -- asyncio subscribers and blocked scenarios -------------------------------------------------


@pytest.mark.parametrize("verification", ["subscriber_blackbox", "subscriber_whitebox"])
def test_an_asyncio_subscriber_requesting_from_loop_callbacks_passes_the_fuzz(verification: str) -> None:
    """The TCK's upstream never waits for the loop while that loop runs a request() into it."""
    from tests.conforming import subjects

    _, subject = subjects()[f"{verification}:asyncio_loop"]
    for _ in range(2):
        result = run(verification, FUZZ_TEST[verification], subject, Settings())
        assert result.outcome == "passed", result.message


def test_a_scenario_that_blocks_is_reported_with_its_scenario_trace_and_token() -> None:
    import threading

    release = threading.Event()

    class BlocksOnThirdElement:
        def __init__(self) -> None:
            self.seen = 0

        def on_subscribe(self, subscription: Any) -> None:
            subscription.request(10)

        def on_next(self, element: Any) -> None:
            self.seen += 1
            if self.seen == 3:
                release.wait(30)

        def on_error(self, exc: BaseException) -> None:
            pass

        def on_complete(self) -> None:
            pass

    try:
        result = run("subscriber_blackbox", "fuzz_signal_orders",
                     SubscriberSubject(BlocksOnThirdElement, label="blocks"), FAST.replace(timeout=0.3))
    finally:
        release.set()
    assert result.outcome == "failed"
    assert "blocked its caller" in result.message
    assert result.fuzz is not None
    assert result.fuzz["scenario"][0].startswith("1. ")
    assert result.fuzz["replay_option"] in result.message
    assert result.trace, result.message
    assert "trace   : 0 record(s)" not in result.message
@pytest.mark.parametrize("scenario", [
    # probe's request reaches sub2, which asked for nothing: seen as 1.1 at sub2
    (4, (), (), (("subscribe", ()), ("request", 0, 1, "here"))),
    # probe's demand (unbounded) drives sub2's signals: seen as 1.1 at sub2, 3.17 at probe
    (4, (("request", 1, "here"),), (), (("subscribe", ()), ("request", 0, 2**63 - 1, "here"))),
])
def test_demand_lost_to_a_later_subscriber_handed_the_same_subscription_is_rule_1_11(scenario: Any) -> None:
    subject = PublisherSubject(od.retargeted_stream, label="retargeted")
    result = run("publisher", FUZZ_TEST["publisher"], subject,
                 FAST.replace(fuzz_replay=encode("publisher", scenario)))
    assert (result.outcome, result.rule) == ("failed", "1.11"), result.message
    assert "sub2 was handed probe's subscription" in result.message


def _conforming_publishers() -> list[Any]:
    from tests.conforming import subjects

    return [pytest.param(verification, subject, id=label) for label, (verification, subject) in subjects().items()
            if verification in ("publisher", "processor")]


@pytest.mark.parametrize(("verification", "subject"), _conforming_publishers())
def test_the_systematic_scenarios_never_accuse_a_conforming_publisher(verification: str, subject: Any) -> None:
    # The systematic phase in full, and a single random scenario after it.
    result = run(verification, "fuzz_demand_cancel_orders", subject, Settings(fuzz_examples=1))
    assert result.outcome in ("passed", "skipped"), result.message
    if result.outcome == "passed":
        assert result.iterations is not None
        assert result.iterations["ran"] > 200


# -- the systematic phase ---------------------------------------------------------------------


def test_the_systematic_phase_spells_every_short_scenario_once_in_a_fixed_order() -> None:
    from rstck._internal.fuzz import publisher_scenarios as ps
    from rstck.api import MAX_DEMAND

    settings = Settings(max_elements=100)
    two = list(ps.systematic(settings, 2))
    assert two == list(ps.systematic(settings, 2))  # deterministic
    assert len(two) == len(set(two))
    assert list(ps.systematic(settings, 0)) == []
    one = list(ps.systematic(settings, 1))
    assert two[: len(one)] == one  # shortest first
    assert max(size(s) for s in two) == 2
    # Every amount of the alphabet, from every place.
    amounts = {a[1] for s in two for a in s[1] if a[0] == "request"}
    amounts |= {s[2] for sc in two for s in sc[3] if s[0] == "request"}
    assert amounts == set(ps.ALPHABET_DEMAND)
    assert {(r[1], r[2][-1]) for s in two for r in s[2]} == {
        (1, "here"), (1, "thread"), (2, "here"), (ps.EVERY, "here"),
        (1, "raise"), (2, "raise"), (ps.ON_ERROR, "raise")}
    # A failing subscriber: its first element raising, with the demand asked in on_subscribe
    # or from the test thread, and its on_error raising after request(0).
    assert (4, (("request", 2, "here"),), ((0, 1, ps.RAISE),), ()) in two
    assert (4, (), ((0, 1, ps.RAISE),), (("request", 0, 2, "here"),)) in two
    assert (4, (("request", 0, "here"),), ((0, ps.ON_ERROR, ps.RAISE),), ()) in two
    # The two orders the random search used to miss are among them.
    assert (4, (), ((0, 1, ("request", 3, "here")),), (("request", 0, 1, "here"),)) in two
    assert (4, (), ((0, ps.EVERY, ("request", MAX_DEMAND - 1, "here")),), (("request", 0, 2, "here"),)) in two
    # A re-entrant action a conforming publisher never reaches is not run: on_next #2 after request(1).
    assert not any(s[3] == (("request", 0, 1, "here"),) and len(s[2]) == 1 and s[2][0][1] == 2 for s in two)
    assert any(s[3] == (("request", 0, 2, "here"),) and len(s[2]) == 1 and s[2][0][1] == 2 for s in two)
    # Three steps, the thorough level, stay within a CI job (a few thousand).
    assert len(list(ps.systematic(settings, 3))) < 5000
    # An endless stream's scenarios use the declared size.
    assert {s[0] for s in ps.systematic(Settings(max_elements=MAX_DEMAND), 1)} == {MAX_DEMAND}


def test_the_searched_scenarios_and_their_order_are_what_the_catalogue_counts_rest_on() -> None:
    """Each catalogue case is found after a count of scenarios, with a replay token: both follow
    from the systematic words in their order and from what each fixed seed expands into. A
    faster spelling or generator must give the very same scenarios; a change of the search
    itself changes these digests, on purpose, and the counts in docs/fuzzing.md with them."""
    import hashlib

    from rstck._internal.fuzz import publisher_scenarios as ps

    def digest(scenarios: list[Any]) -> str:
        return hashlib.sha256(repr(scenarios).encode()).hexdigest()[:16]

    assert digest(list(ps.systematic(Settings(), 2))) == "e69c5a10bbe8fc61"
    seeds = fuzz_search.seeds(100, True)
    full = ps.generator(Settings(), subscribers=3, failed=True)
    assert digest([fuzz_search.expand(full, seed) for seed in seeds]) == "085e168da4db0d70"
    plain = ps.generator(Settings(max_elements=10), subscribers=1, failed=False, empty=False)
    assert digest([fuzz_search.expand(plain, seed) for seed in seeds]) == "d75856efa7bdb525"


def test_a_screened_scenario_keeps_only_its_last_records() -> None:
    """A batch's traces are shown only when a call blocks: each scenario keeps its last records
    (what the blocked call followed), numbered for the checks that cite them; no head, nothing
    pinned, and no sink for the probes' fast path."""
    from rstck._internal.fuzz.publisher_side import _Tail

    trace = _Tail(3)
    seqs = [trace.log("probe", "on_next", str(i), 1) for i in range(5)]
    note = trace.note("a note")
    assert seqs == [0, 1, 2, 3, 4]
    assert note.seq == 5
    assert trace.total == 6
    assert [r.detail for r in trace.records()] == ["3", "4", "a note"]
    assert trace.tail_sink() is None
    trace.keep([4])
    assert [r.seq for r in trace.records()] == [3, 4, 5]


def test_a_publisher_that_blocks_in_a_screened_batch_is_reported_with_that_scenarios_records() -> None:
    """The first systematic scenario asks factory(4) for one element: this publisher blocks
    there (only there: the factory contract's checks ask for n + 1 at once). The watchdog's
    verdict names the scenario and shows the records it made before the call blocked."""
    import threading

    release = threading.Event()

    class Subscription:
        def __init__(self, subscriber: Any, count: int) -> None:
            self.subscriber, self.count, self.sent, self.done = subscriber, count, 0, False

        def request(self, n: int) -> None:
            if self.count == 4 and n == 1:
                release.wait(30)
            while n > 0 and self.sent < self.count and not self.done:
                self.sent, n = self.sent + 1, n - 1
                self.subscriber.on_next(self.sent)
            if self.sent == self.count and not self.done:
                self.done = True
                self.subscriber.on_complete()

        def cancel(self) -> None:
            self.done = True

    class Publisher:
        def __init__(self, count: int) -> None:
            self.count = count

        def subscribe(self, subscriber: Any) -> None:
            subscriber.on_subscribe(Subscription(subscriber, self.count))

    try:
        result = run("publisher", FUZZ_TEST["publisher"], PublisherSubject(Publisher, label="blocks"),
                     FAST.replace(timeout=0.3))
    finally:
        release.set()
    assert result.outcome == "failed", result.message
    assert "blocked its caller" in result.message
    assert result.fuzz is not None
    assert result.fuzz["scenario"][0] == "1. subscribe probe to factory(4) (4 elements)"
    assert result.fuzz["scenario"][1] == "2. request(1)"
    assert [(r["actor"], r["signal"]) for r in result.trace][-3:] == [
        ("tck", "subscribe"), ("probe", "on_subscribe"), ("probe", "request")], result.message


def test_the_systematic_phase_runs_first_stops_at_the_first_failure_and_skips_the_random_search() -> None:
    from rstck.errors import RuleViolation

    systematic = [(4, (), (), (("request", 0, k, "here"),)) for k in range(1, 60)]
    screened: list[int] = []
    executed: list[Any] = []

    def execute(scenario: Any) -> Outcome:
        executed.append(scenario)
        broke = scenario[3][0][2] >= 30
        return Outcome(scenario, RuleViolation("3.8", "served", "lost") if broke else None)

    def screen(batch: list[Any]) -> bool:
        screened.append(len(batch))
        return all(execute(s).violation is None for s in batch)

    def generate(rng: random.Random) -> Any:
        raise AssertionError("the random search ran")

    budget = Budget(examples=10, shrink_s=1.0, derandomize=True)
    finding = fuzz_search.search(generate, lambda s: iter(()), execute, budget, systematic, screen)
    assert finding is not None
    assert finding.phase == "systematic"
    assert finding.outcome.scenario == systematic[29]
    assert finding.examples == 30
    assert screened == [fuzz_search.BATCH, fuzz_search.BATCH]  # the second batch failed, and stopped it


def test_shrinking_merges_requests_and_lowers_amounts_to_the_alphabet() -> None:
    from rstck._internal.fuzz.publisher_side import candidates
    from rstck.errors import RuleViolation

    def execute(scenario: Any) -> Outcome:
        n, _first, _reactions, steps = scenario
        total = sum(s[2] for s in steps if s[0] == "request")
        broke = n >= 4 and total >= 3 and any(s[2] >= 3 for s in steps if s[0] == "request")
        return Outcome(scenario, RuleViolation("3.8", "served", "lost") if broke else None)

    big = (16, (), (), (("request", 0, 1, "here"), ("request", 0, 1, "here"), ("request", 0, 1, "here"),
                        ("run",), ("request", 0, 7, "here")))
    shrunk, cut = fuzz_search.shrink(execute(big), candidates, execute, 5.0, {"runs": 0})
    assert not cut
    assert shrunk.scenario == (4, (), (), (("request", 0, 3, "here"),))


def test_a_stream_that_ends_silently_is_1_5_even_when_a_non_positive_request_follows() -> None:
    scenario = (4, (), ((0, 1, ("request", 3, "here")),), (("request", 0, 1, "here"), ("request", 0, 0, "here")))
    subject = PublisherSubject(od.factory(od.SilentEndAfterReentrantBulk), label="silent-end")
    result = run("publisher", FUZZ_TEST["publisher"], subject, FAST.replace(fuzz_replay=encode("publisher", scenario)))
    assert (result.outcome, result.rule) == ("failed", "1.5"), result.message


def test_an_action_from_every_on_next_is_shown_and_replayed() -> None:
    from rstck._internal.fuzz.publisher_side import EVERY

    scenario = (4, (), ((0, EVERY, ("request", 1, "here")),), (("request", 0, 1, "here"),))
    assert render_publisher(scenario)[0] == ("1. subscribe probe to factory(4) (4 elements); "
                                             "from every on_next: request(1)")
    result = run("publisher", FUZZ_TEST["publisher"], PublisherSubject(range_publisher),
                 FAST.replace(fuzz_replay=encode("publisher", scenario)))
    assert result.outcome == "passed", result.message
    # The overflow the random search found one run in three: request(2**63-2) from every on_next.
    wraps = (4, (), ((0, EVERY, ("request", 2**63 - 2, "here")),), (("request", 0, 2, "here"),))
    subject = PublisherSubject(od.factory(od.DemandWrapsInEmissionLoop), label="wraps")
    result = run("publisher", FUZZ_TEST["publisher"], subject, FAST.replace(fuzz_replay=encode("publisher", wraps)))
    assert (result.outcome, result.rule) == ("failed", "3.17"), result.message
    notes = [r["detail"] for r in result.trace if r["signal"] == "note"]
    assert any("on_next #1 (every on_next): request(2**63-2)" in note for note in notes), notes


def test_a_systematic_failure_that_does_not_repeat_is_a_race_and_the_random_search_still_runs() -> None:
    from rstck.errors import RuleViolation

    calls = {"n": 0}

    def execute(scenario: Any) -> Outcome:
        calls["n"] += 1
        broke = calls["n"] == 2  # the batch's own run passes, the first lone run fails, then never again
        return Outcome(scenario, RuleViolation("1.3", "one thread at a time", "two") if broke else None)

    def screen(batch: list[Any]) -> bool:
        return False  # the batch failed: each scenario runs alone

    systematic = [(4, (), (), (("request", 0, 1, "here"),)), (4, (), (), (("request", 0, 2, "here"),))]
    budget = Budget(examples=5, shrink_s=1.0, derandomize=True)
    finding = fuzz_search.search(lambda rng: (4, (), (), ()), lambda s: iter(()), execute, budget, systematic,
                                 screen)
    assert finding is not None
    assert finding.phase == "systematic"
    assert finding.race == (0, fuzz_search.RACE_REPLAYS)
    assert budget.ran == 5  # not confirmed: the random search ran all the same


def test_a_scenario_that_failed_in_its_batch_gets_the_chances_alone_a_race_needs() -> None:
    """Screened, a race must be lost twice (in the batch, then alone): the scenario whose own
    verdict failed in the batch runs alone again, and one failure there is a race, rated."""
    from rstck.errors import RuleViolation

    a, b = (4, (), (), (("request", 0, 1, "here"),)), (4, (), (), (("request", 0, 2, "here"),))
    runs: dict[Any, int] = {a: 0, b: 0}

    def execute(scenario: Any) -> Outcome:
        runs[scenario] += 1
        broke = scenario == b and runs[b] in (3, 5)  # its third run alone, then one replay of five
        return Outcome(scenario, RuleViolation("1.3", "one thread at a time", "two") if broke else None)

    def screen(batch: list[Any]) -> Any:
        return fuzz_search.Screened(suspect=1)

    budget = Budget(examples=5, shrink_s=1.0, derandomize=True)
    finding = fuzz_search.search(lambda rng: (4, (), (), ()), lambda s: iter(()), execute, budget, [a, b], screen)
    assert finding is not None
    assert (finding.phase, finding.outcome.scenario, finding.examples) == ("systematic", b, 2)
    assert finding.race == (1, fuzz_search.RACE_REPLAYS)
    assert runs == {a: 1, b: 3 + fuzz_search.RACE_REPLAYS}
    # Not named by the batch (a problem of the batch's own), it is let go: nothing is rerun.
    runs.update({a: 0, b: 0})
    assert fuzz_search.search(lambda rng: (4, (), (), ()), lambda s: iter(()), execute,
                              Budget(examples=0, shrink_s=1.0), [a, b], lambda batch: fuzz_search.Screened()) is None
    assert runs == {a: 1, b: 1}


def test_a_subscriber_raising_at_its_last_element_is_owed_no_terminal_signal_to_wait_for() -> None:
    # The probe counts the element, then its on_next raises: the settle saw all it was owed and
    # waited out the whole timeout for an on_complete that a cancelled subscription never gets.
    from rstck.reference import identity_processor
    from rstck.subjects import ProcessorSubject

    scenario = (7, (("request", 2, "here"), ("request", 1, "here"), ("request", 1, "here")),
                ((0, 2, ("request", 2, "here")), (0, 7, ("raise",))),
                (("subscribe", (("request", 3, "here"), ("request", 1, "here"))), ("request", 1, 2, "here"),
                 ("request", 0, 1, "here"), ("request", 0, 2, "here"), ("request", 0, 5, "here"),
                 ("subscribe", ()), ("request", 0, 2, "here")))
    settings = FAST.replace(timeout=2.0, fuzz_replay=encode("publisher", scenario))
    result = run("processor", FUZZ_TEST["publisher"], ProcessorSubject(identity_processor), settings)
    assert result.outcome == "passed", result.message
    assert result.duration_s < settings.timeout, result.duration_s
