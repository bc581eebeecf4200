"""Unit tests of the core pieces: probe, environment, settings, results contract."""

from __future__ import annotations

import gc
import itertools
import json
import threading
import time
import types
from pathlib import Path
from typing import Any

import pytest
from rstck import MAX_DEMAND
from rstck.environment import Environment
from rstck.errors import RuleViolation
from rstck.probe import ProbeSubscriber
from rstck.results import ResultsFileError
from rstck.results import TestResult
from rstck.results import document
from rstck.results import load
from rstck.settings import KNOBS_BY_NAME
from rstck.settings import Settings
from rstck.settings import parse_value


class NullSubscription:
    def __init__(self) -> None:
        self.requests: list[int] = []
        self.cancels = 0

    def request(self, n: int) -> None:
        self.requests.append(n)

    def cancel(self) -> None:
        self.cancels += 1


@pytest.fixture
def env() -> Any:
    with Environment(Settings(timeout=0.2, no_signal_window=0.02)) as environment:
        yield environment


def rules_flagged(env: Environment) -> list[str | None]:
    return [p.error.rule.id if isinstance(p.error, RuleViolation) and p.error.rule else None for p in env.problems]


def test_probe_flags_each_protocol_violation_as_it_happens(env: Environment) -> None:
    probe = ProbeSubscriber(env, yield_s=None)
    probe.on_next(1)  # before on_subscribe
    assert rules_flagged(env) == ["1.9"]
    second = NullSubscription()
    probe.on_subscribe(NullSubscription())
    probe.on_subscribe(second)  # second on_subscribe: flagged, and cancelled as rule 2.5 asks
    assert rules_flagged(env)[-1] == "1.9"
    assert second.cancels == 1
    probe.request(1)
    probe.on_next(None)  # None element
    assert "2.13" in rules_flagged(env)
    probe.on_next(3)  # beyond demand
    assert rules_flagged(env)[-1] == "1.1"
    probe.on_complete()
    probe.on_error(ValueError("late"))  # after a terminal signal
    assert rules_flagged(env)[-1] == "1.7"
    assert [r.signal for r in env.trace.records() if r.actor == "probe"][-2:] == ["on_complete", "on_error"]


def test_probe_records_demand_at_each_signal(env: Environment) -> None:
    probe = ProbeSubscriber(env)
    probe.on_subscribe(NullSubscription())
    probe.request(2)
    probe.on_next("a")
    probe.on_next("b")
    probe.request(MAX_DEMAND)
    probe.on_next("c")
    demands = [(r.signal, r.demand) for r in env.trace.records() if r.actor == "probe"]
    assert demands == [
        ("on_subscribe", 0), ("request", 2), ("on_next", 2), ("on_next", 1),
        ("request", MAX_DEMAND), ("on_next", MAX_DEMAND),
    ]
    assert env.problems == []


def test_probe_sees_two_threads_inside_at_once(env: Environment) -> None:
    inside, release = threading.Event(), threading.Event()

    def hold(p: ProbeSubscriber, element: Any) -> None:
        if element == "first":
            inside.set()
            release.wait(2)

    probe = ProbeSubscriber(env, on_next=hold)
    probe.on_subscribe(NullSubscription())
    probe.request(2)
    first = threading.Thread(target=probe.on_next, args=("first",), name="emitter-1")
    first.start()
    assert inside.wait(2)
    second = threading.Thread(target=probe.on_next, args=("second",), name="emitter-2")
    second.start()
    second.join(2)
    release.set()
    first.join(2)
    violation = env.problems[0].error
    assert isinstance(violation, RuleViolation)
    assert violation.rule is not None
    assert violation.rule.id == "1.3"
    assert "emitter-2" in str(violation)
    assert "emitter-1" in str(violation)


def test_a_call_handed_over_from_inside_a_signal_may_signal_on_its_thread_but_no_other(env: Environment) -> None:
    # The fuzz verification's "from on_subscribe: from another thread (waited for)": the waiting
    # thread runs nothing, so the JVM RangePublisher's synchronous on_next on the calling thread
    # nests as it would on one thread; an emitter thread of the publisher's own does not.
    results: dict[str, int] = {}

    def hand_over(p: ProbeSubscriber, s: Any) -> None:
        waiting = threading.get_ident()

        def call() -> None:
            with p.acting_for(waiting):
                p.on_next("delivered by the call")
            results["after call"] = len(env.problems)
            emitter = threading.Thread(target=p.on_next, args=("from its own thread",), name="emitter")
            emitter.start()
            emitter.join(2)

        caller = threading.Thread(target=call, name="caller")
        caller.start()
        caller.join(2)

    def ask(p: ProbeSubscriber, s: Any) -> None:
        p.request(2)
        hand_over(p, s)

    probe = ProbeSubscriber(env, on_subscribe=ask)
    probe.on_subscribe(NullSubscription())
    assert results["after call"] == 0
    (problem,) = env.problems
    assert isinstance(problem.error, RuleViolation)
    assert problem.error.rule is not None
    assert problem.error.rule.id == "1.3"
    assert "emitter" in str(problem.error)


def test_same_thread_nesting_is_not_concurrency(env: Environment) -> None:
    subscription = NullSubscription()

    def nest(p: ProbeSubscriber, element: int) -> None:
        if element < 3:
            p.on_next(element + 1)  # what a synchronous, non-trampolined publisher does

    probe = ProbeSubscriber(env, on_next=nest)
    probe.on_subscribe(subscription)
    probe.request(10)
    probe.on_next(0)
    assert env.problems == []
    assert probe.max_depth == 4


def test_trace_memory_is_bounded_for_a_million_elements(env: Environment) -> None:
    probe = ProbeSubscriber(env, keep_elements=False, yield_s=None)
    probe.on_subscribe(NullSubscription())
    probe.request(MAX_DEMAND)
    for i in range(1_000_000):
        probe.on_next(i)
    records = env.trace.records()
    assert len(records) == 2 * env.settings.trace_keep
    assert env.trace.total == 1_000_002
    assert records[-1].detail == "999999"
    assert not probe.elements
    assert "records not kept" in env.trace.format(limit=1000)


def test_environment_collects_every_error_from_foreign_threads(env: Environment) -> None:
    def boom(text: str) -> None:
        raise RuntimeError(text)

    threads = [threading.Thread(target=boom, args=(f"boom {i}",), name=f"subject-{i}") for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    class Finalizer:
        def __del__(self) -> None:
            raise KeyError("in __del__")

    Finalizer()
    gc.collect()
    sources = sorted((p.source, p.thread) for p in env.problems)
    assert sources == [("thread", "subject-0"), ("thread", "subject-1"), ("unraisable", "MainThread")]
    with pytest.raises(RuleViolation, match=r"RuntimeError\('boom 0'\) on thread subject-0") as info:
        env.check()
    assert "no exception escaping a thread" in str(info.value)


def test_environment_restores_previous_hooks() -> None:
    before = threading.excepthook
    with Environment(Settings()):
        assert threading.excepthook is not before
    assert threading.excepthook is before


@pytest.mark.parametrize(
    ("knob", "raw", "value"),
    [("max_elements", "2**63-1", MAX_DEMAND), ("max_elements", "1_000", 1000), ("timeout", "250", 0.25),
     ("skip_stochastic", "yes", True), ("skip_stochastic", "0", False)],
)
def test_parse_value(knob: str, raw: str, value: object) -> None:
    assert parse_value(KNOBS_BY_NAME[knob], raw, "here") == value


@pytest.mark.parametrize(("knob", "raw"), [("timeout", "0"), ("timeout", "fast"), ("max_elements", "many"),
                                           ("skip_stochastic", "maybe")])
def test_parse_value_names_source_and_form(knob: str, raw: str) -> None:
    with pytest.raises(ValueError, match=f"^ini setting x: .* must be .*got '{raw}'"):
        parse_value(KNOBS_BY_NAME[knob], raw, "ini setting x")


def test_results_round_trip(tmp_path: Path) -> None:
    result = TestResult("required_spec309_x", "publisher", "3.9", "required", "failed", "failed", 0.5, "m",
                        [{"seq": 0}], 1, "s")
    path = tmp_path / "r.json"
    path.write_text(json.dumps(document([result], subjects={"publisher": "s"}, settings={})))
    data, results = load(path)
    assert results == [result]
    assert data["summary"]["failed"] == 1


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "cannot read results file"),
        ("{not json", "not valid JSON (line 1, column 2)"),
        ('{"schema": "other/1"}', "expected a results file with schema 'rs-tck-results/1', found 'other/1'"),
        ('{"schema": "rs-tck-results/1", "results": [{"test": "t"}]}', "results[0] is malformed"),
        (
            ('{"schema": "rs-tck-results/1", "results": [{"test": "t", "verification": "publisher", "rule": null,'
            ' "level": "required", "outcome": "exploded", "duration_s": 1}]}'),
            "outcome 'exploded' is not one of",
        ),
        (
            ('{"schema": "rs-tck-results/1", "results": [{"test": "t", "verification": "publisher", "rule": null,'
            ' "level": "required", "outcome": "passed", "verdict": "great", "duration_s": 1}]}'),
            "results[0].verdict 'great' is not one of ('passed', 'failed', 'error', 'optional_unsupported',",
        ),
    ],
)
def test_malformed_results_file_is_named(tmp_path: Path, content: str | None, message: str) -> None:
    path = tmp_path / "r.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(ResultsFileError, match=r"r\.json: ") as info:
        load(path)
    assert message in str(info.value)


# -- the structured failure record ---------------------------------------------------------------


def _run(subscription: type, rule: str, **settings: Any) -> list[TestResult]:
    from rstck.engine import run_publisher_verification
    from rstck.subjects import PublisherSubject

    from tests.broken.publishers import factory

    return run_publisher_verification(
        PublisherSubject(factory(subscription)), Settings(timeout=0.5, **settings), rules=[rule]
    )


def test_a_live_violation_is_a_failure_citing_the_trace_records_that_show_it() -> None:
    from tests.broken.publishers import ExtraElement

    result = next(r for r in _run(ExtraElement, "1.1") if r.outcome == "failed")
    headline = result.failures[0]
    assert headline.rule == "1.1"
    assert "no outstanding demand" in headline.observed
    cited = [r for r in result.trace if r["seq"] in headline.evidence]
    assert cited
    assert all(r["signal"] == "on_next" for r in cited)
    assert result.message.startswith(headline.headline())
    assert f"#{headline.evidence[0]}" in result.message
    assert 0 < result.started_at <= result.finished_at
    assert result.finished_at - result.started_at >= result.duration_s * 0.5


def test_every_problem_a_test_collected_is_a_failure_of_its_own() -> None:
    from tests.broken.publishers import ExtraElement

    result = next(r for r in _run(ExtraElement, "1.1") if r.outcome == "failed")
    assert len(result.failures) >= 2
    assert f"also    : {len(result.failures) - 1} more problem(s)" in result.message
    for failure in result.failures[1:]:
        assert failure.headline() in result.message


def test_a_timed_verdict_names_the_setting_it_rests_on() -> None:
    from tests.broken.publishers import Noop

    failed = [r for r in _run(Noop, "1.2") if r.outcome == "failed"]
    assert failed
    assert failed[0].failures[0].setting == "timeout"
    assert "setting : timeout (--rs-timeout-ms)" in failed[0].message


def test_a_stochastic_test_counts_the_rounds_that_showed_the_race() -> None:
    from tests.broken.publishers import ConcurrentOnNext
    from tests.broken.publishers import RangeSubscription

    passed = _run(RangeSubscription, "1.3", stochastic_iterations=6)[0]
    assert passed.outcome == "passed"
    assert passed.failures == []
    assert passed.iterations == {"ran": 6, "showed": 0}
    racy = _run(ConcurrentOnNext, "1.3")[0]
    assert racy.outcome == "failed"
    assert racy.iterations is not None
    assert racy.iterations["showed"] == 1
    assert 1 <= racy.iterations["ran"] <= 100
    assert racy.failures[0].rule == "1.3"
    inside = {r["seq"]: r for r in racy.trace}
    threads = {inside[seq]["thread"] for seq in racy.failures[0].evidence if seq in inside}
    assert len(threads) == 2  # the signal already inside, and the one that entered beside it


def test_results_round_trip_the_failures() -> None:
    from rstck.results import Failure

    failure = Failure("3.9", "on_error(ValueError)", "on_complete()", "validate n", (3, 4), "timeout")
    result = TestResult("required_spec309_x", "publisher", "3.9", "required", "failed", "failed", 0.5, "m",
                        failures=[failure], started_at=10.0, finished_at=10.5, iterations={"ran": 2, "showed": 1})
    data = result.to_json()
    assert data["failures"] == [{"rule": "3.9", "expected": "on_error(ValueError)", "observed": "on_complete()",
                                 "hint": "validate n", "evidence": [3, 4], "setting": "timeout"}]
    assert TestResult.from_json(json.loads(json.dumps(data))) == result


def test_results_written_before_the_failure_fields_still_load() -> None:
    old = {"test": "required_spec309_x", "verification": "publisher", "rule": "3.9", "level": "required",
           "outcome": "failed", "duration_s": 0.5, "message": "[rule 3.9] expected a; observed b", "trace": []}
    result = TestResult.from_json(old)
    assert result.failures == []
    assert result.iterations is None
    assert (result.started_at, result.finished_at) == (0.0, 0.0)


def test_a_worker_is_abandoned_at_its_deadline_and_keeps_what_it_raised() -> None:
    from rstck.worker import Worker

    release = threading.Event()
    stuck = Worker(lambda: release.wait(5), "stuck")
    assert not stuck.wait(0.05)
    assert stuck.thread.daemon
    release.set()
    assert stuck.wait(2)
    assert stuck.result() is True

    def fail() -> None:
        raise KeyError("boom")

    failing = Worker(fail, "failing")
    assert failing.wait(2)
    assert isinstance(failing.error, KeyError)
    with pytest.raises(KeyError):
        failing.result()


def test_an_included_test_keeps_its_name_and_rule_and_runs_on_the_view_given() -> None:
    from rstck.verifications import Registry

    seen: list[object] = []
    source = Registry("publisher")

    @source("1.2", "required")
    def required_spec102_x(ctx: object) -> None:
        """Doc."""
        seen.append(ctx)

    target = Registry("processor")
    target.include(source.tests, via=lambda ctx: ("view of", ctx))
    (test,) = target.tests
    assert (test.name, test.rule_id, test.level, test.verification, test.doc) == (
        "required_spec102_x", "1.2", "required", "processor", "Doc.")
    test.func("ctx")
    assert seen == [("view of", "ctx")]


def test_a_setup_error_is_a_failure_citing_no_rule() -> None:
    from rstck.engine import run_publisher_verification
    from rstck.subjects import PublisherSubject

    def factory(n: int) -> object:
        raise OSError("no database")

    result = run_publisher_verification(PublisherSubject(factory), Settings(timeout=0.2), rules=["1.2"])[0]
    assert result.outcome == "error"
    (failure,) = result.failures
    assert failure.rule is None
    assert "raised OSError" in failure.observed


# -- the probe's fast path: every check it skips must come back when it could matter -------------


def fast_probe(env: Environment, *, demand: int = MAX_DEMAND, elements: int | None = None,
               **kwargs: Any) -> ProbeSubscriber:
    """A probe signalled on the verification's own thread past the trace's head: on its fast path."""
    env.body_ident = threading.get_ident()
    probe = ProbeSubscriber(env, **kwargs)
    probe.on_subscribe(NullSubscription())
    probe.request(demand)
    for i in range(2 * env.settings.trace_keep if elements is None else elements):
        probe.on_next(i)
    assert probe._fast_owner == threading.get_ident()
    return probe


def overlap_of(env: Environment) -> RuleViolation:
    violations = [p.error for p in env.problems if isinstance(p.error, RuleViolation)]
    assert [v.rule.id for v in violations if v.rule] == ["1.3"], env.problems
    return violations[0]


def test_the_fast_path_records_thread_demand_time_and_element(env: Environment) -> None:
    probe = fast_probe(env, keep_elements=True)
    probe.on_next("text")
    probe.on_next(1 << 300)  # an int whose text is cut, as short_repr cuts it
    records = env.trace.records()
    assert len(records) == 2 * env.settings.trace_keep  # bounded
    last = records[-3:]
    assert [r.detail for r in last] == ["199", "'text'", repr(1 << 300)[:77] + "..."]
    assert {(r.thread, r.actor, r.signal, r.demand) for r in last} == {
        (threading.current_thread().name, "probe", "on_next", MAX_DEMAND)}
    assert all(a.t <= b.t for a, b in itertools.pairwise(records))
    assert [r.seq for r in records][-1] == env.trace.total - 1 == 2 * env.settings.trace_keep + 3
    assert probe.received == 2 * env.settings.trace_keep + 2 == len(probe.elements)
    assert env.problems == []


def test_the_fast_path_counts_demand_down_and_hands_excess_to_the_full_path(env: Environment) -> None:
    probe = fast_probe(env, demand=250, elements=250)
    assert probe.demand == 0
    probe.on_next(250)
    assert rules_flagged(env) == ["1.1"]
    assert "on_next #251 (250) with no outstanding demand" in str(env.problems[0].error)
    assert [r.demand for r in env.trace.records() if r.signal == "on_next"][-3:] == [2, 1, 0]
    assert probe._fast_owner is None  # beyond demand once: the full path from now on


def test_a_second_thread_arriving_during_the_fast_path_is_a_1_3_overlap(env: Environment) -> None:
    probe = fast_probe(env)
    closed = threading.Event()

    class Slow:
        def __repr__(self) -> str:  # runs inside the fast path, while "emitter-2" arrives
            rival.start()
            closed.wait(5)  # the rival closed the fast path and now looks for us inside it
            return "Slow()"

    def watch() -> None:
        while probe._fast_owner is not None:
            threading.Event().wait(0.001)
        threading.Event().wait(0.05)
        closed.set()

    rival = threading.Thread(target=probe.on_next, args=(7,), name="emitter-2")
    watcher = threading.Thread(target=watch)
    watcher.start()
    probe.on_next(Slow())
    rival.join(5)
    watcher.join(5)
    violation = overlap_of(env)
    assert (f"on_next entered on thread emitter-2 while on_next was running on thread "
            f"{threading.current_thread().name}, in the same subscriber") in str(violation)
    by_seq = {r.seq: r for r in env.trace.records()}
    assert [(by_seq[s].thread, by_seq[s].detail) for s in violation.evidence] == [
        (threading.current_thread().name, "Slow()"), ("emitter-2", "7")]
    assert probe._fast_owner is None
    probe.on_next(8)  # two threads seen: the full path, which pauses for races, from now on
    assert probe._fast_owner is None
    assert probe._racy


def test_the_fast_paths_thread_arriving_while_another_is_inside_is_a_1_3_overlap(env: Environment) -> None:
    probe = fast_probe(env, yield_s=0.5)  # the rival pauses 0.5 s inside on_next
    rival = threading.Thread(target=probe.on_next, args=(7,), name="emitter-2")
    rival.start()
    while not probe._sections:
        threading.Event().wait(0.001)
    probe.on_next(8)
    rival.join(5)
    violation = overlap_of(env)
    assert (f"on_next entered on thread {threading.current_thread().name} while on_next was "
            "running on thread emitter-2, in the same subscriber") in str(violation)


def test_a_request_from_another_thread_closes_the_fast_path(env: Environment) -> None:
    probe = fast_probe(env, demand=300, elements=200)
    helper = threading.Thread(target=probe.request, args=(5,))
    helper.start()
    helper.join(5)
    assert probe._fast_owner is None
    assert probe.demand == 105
    for i in range(105):
        probe.on_next(i)
    assert env.problems == []
    assert probe._fast_owner is not None  # the full path opened it again: one thread signals
    probe.on_next(0)
    assert rules_flagged(env) == ["1.1"]


def test_a_hook_set_later_still_sees_every_nested_on_next(env: Environment) -> None:
    probe = fast_probe(env)
    depths: list[int] = []

    def nest(p: ProbeSubscriber, element: int) -> None:
        depths.append(p.depth())
        if element < 3:
            p.on_next(element + 1)  # a synchronous, non-trampolined publisher

    probe.on_next_hook = nest
    assert probe._fast_owner is None
    probe.on_next(0)
    assert depths == [1, 2, 3, 4]
    assert probe.max_depth == 4
    assert env.problems == []


def test_cancel_and_terminal_signals_close_the_fast_path(env: Environment) -> None:
    probe = fast_probe(env)
    probe.cancelled = True  # as a test that cancels through its own calls declares it
    assert probe._fast_owner is None
    probe.on_next(1)
    assert probe.after_cancel == 1
    other = fast_probe(env, name="sub2")
    other.on_complete()
    other.on_next(1)
    assert rules_flagged(env) == ["1.7"]


def test_a_wait_on_another_thread_is_woken_by_the_fast_path(env: Environment) -> None:
    probe = fast_probe(env)
    start = probe.received
    woke: list[bool] = []
    waiter = threading.Thread(target=lambda: woke.append(probe._wait(lambda: probe.received >= start + 50, 5)))
    waiter.start()
    while not probe._waiters:
        threading.Event().wait(0.001)
    for i in range(100):
        probe.on_next(i)
    waiter.join(2)
    assert woke == [True]


class _Trickle:
    """A publisher that delivers one element every ``gap`` seconds from its own thread.

    Slow but steady is conforming (the spec sets no latency); ``stall_after`` makes it stop
    delivering for good, which is lost demand.
    """

    def __init__(self, n: int, gap: float, stall_after: int | None = None) -> None:
        self.n, self.gap, self.stall_after = n, gap, stall_after

    def subscribe(self, subscriber: Any) -> None:
        state = {"demand": 0, "sent": 0, "cancelled": False}
        wake = threading.Condition()
        publisher = self

        class Subscription:
            def request(self, k: int) -> None:
                with wake:
                    state["demand"] += k
                    wake.notify()

            def cancel(self) -> None:
                with wake:
                    state["cancelled"] = True
                    wake.notify()

        def run() -> None:
            while True:
                with wake:
                    wake.wait_for(lambda: state["cancelled"] or state["demand"] > 0, 5.0)
                    if state["cancelled"] or state["demand"] <= 0:
                        return
                    state["demand"] -= 1
                    state["sent"] += 1
                    sent = state["sent"]
                if publisher.stall_after is not None and sent > publisher.stall_after:
                    return
                try:
                    subscriber.on_next(sent)
                except Exception:  # 2.13: a raising subscriber counts as cancelled (a probe whose
                    return  # test ended raises: one element may race a cancel made meanwhile)
                if sent == publisher.n:
                    subscriber.on_complete()
                    return
                threading.Event().wait(publisher.gap)

        subscriber.on_subscribe(Subscription())
        threading.Thread(target=run, daemon=True).start()


def test_a_slow_but_steady_publisher_is_not_accused_of_losing_demand() -> None:
    """300 elements at 3 ms each take three times the 0.3 s timeout: that is not a stall."""
    from rstck.engine import run_publisher_verification
    from rstck.subjects import PublisherSubject

    # max_elements leaves out the 3.8 tests of thousands of elements (minutes at 3 ms each).
    settings = Settings(timeout=0.3, no_signal_window=0.02, max_elements=400)
    steady = run_publisher_verification(
        PublisherSubject(lambda n: _Trickle(n, gap=0.003)), settings, rules=["3.8"])
    (hundreds,) = [r for r in steady if r.test == "required_spec308_hundreds_of_requests_must_add_up"]
    assert hundreds.verdict == "passed", hundreds.message
    assert hundreds.duration_s > settings.timeout

    stalled = run_publisher_verification(
        PublisherSubject(lambda n: _Trickle(n, gap=0.001, stall_after=265)), settings, rules=["3.8"])
    (lost,) = [r for r in stalled if r.test == "required_spec308_hundreds_of_requests_must_add_up"]
    assert lost.verdict == "failed"
    assert lost.failures[0].rule == "3.8"
    assert "265 arrived" in lost.failures[0].observed


def test_the_trace_counts_every_record_even_when_it_keeps_none() -> None:
    from rstck.trace import Trace

    trace = Trace(0)
    for _ in range(3):
        trace.note("x")
    assert (trace.total, trace.records(), trace.dropped) == (3, [], 3)
    kept = Trace(2)
    for i in range(5):
        kept.log("probe", "on_next", str(i), 5 - i)
    assert [(r.seq, r.detail, r.demand) for r in kept.records()] == [
        (0, "0", 5), (1, "1", 4), (3, "3", 2), (4, "4", 1)]
    assert (kept.total, kept.dropped) == (5, 1)


def test_a_starved_process_is_not_taken_for_a_blocking_subject(monkeypatch: pytest.MonkeyPatch) -> None:
    """The watchdog wakes 5 s late once (the machine starved the process): that is not the
    subject's silence. A request that truly never returns is still caught."""
    import time as real_time

    from rstck import runner
    from rstck.engine import run_publisher_verification
    from rstck.subjects import PublisherSubject

    class SlowRequest:
        """Answers each request after 0.3 s, while the clock jumps."""

        def __init__(self, n: int, block: bool = False) -> None:
            self.n, self.block = n, block

        def subscribe(self, subscriber: Any) -> None:
            publisher = self
            sent = [0]

            class Subscription:
                def request(self, k: int) -> None:
                    if publisher.block:
                        threading.Event().wait(3.0)
                        return
                    real_time.sleep(0.3)
                    for _ in range(min(k, publisher.n - sent[0])):
                        sent[0] += 1
                        subscriber.on_next(sent[0])
                    if sent[0] == publisher.n:
                        subscriber.on_complete()

                def cancel(self) -> None:
                    pass

            subscriber.on_subscribe(Subscription())

    jump, looks = [0.0], [0]
    real_monotonic = real_time.monotonic

    def monotonic() -> float:
        if threading.current_thread().name != "rs-tck-body":
            looks[0] += 1
            if looks[0] == 6:  # the watchdog's fourth look, while a request is running
                jump[0] = 5.0
        return real_monotonic() + jump[0]

    clock = types.SimpleNamespace(monotonic=monotonic, time=real_time.time)
    monkeypatch.setattr(runner, "time", clock)
    settings = Settings(timeout=0.5, no_signal_window=0.02, test_limit=20.0)
    (slow,) = run_publisher_verification(PublisherSubject(SlowRequest), settings,
                                         rules=["1.2"])[:1]
    assert slow.verdict == "passed", slow.message
    monkeypatch.undo()
    (blocked,) = run_publisher_verification(PublisherSubject(lambda n: SlowRequest(n, block=True)),
                                            settings, rules=["1.2"])[:1]
    assert blocked.verdict in ("failed", "error")
    assert "neither returned nor signalled" in blocked.message


def _schedule_log(bodies: list[tuple[str, Any]], concurrency: int = 1,
                  settings: Settings | None = None) -> tuple[list[TestResult], list[tuple[str, str, float]]]:
    """Run ``bodies`` (level, body(ctx, log)) through a Schedule; every body logs what it does."""
    from rstck.contexts import Context
    from rstck.engine import Schedule
    from rstck.registry import TckTest

    log: list[tuple[str, str, float]] = []
    lock = threading.Lock()

    def note(name: str, what: str) -> None:
        with lock:
            log.append((name, what, time.monotonic()))

    tests = [TckTest(f"{level}_t{i}", "publisher", None, level, (lambda ctx, b=body, n=f"t{i}": b(ctx, n, note)), "")
             for i, (level, body) in enumerate(bodies)]
    schedule = Schedule(tests, Context, settings or Settings(no_fuzz=True), concurrency=concurrency)
    return list(schedule.results()), log


def _intervals(log: list[tuple[str, str, float]], start: str, end: str) -> dict[str, list[tuple[float, float]]]:
    found: dict[str, list[tuple[float, float]]] = {}
    opened: dict[str, float] = {}
    for name, what, at in log:
        if what == start:
            opened[name] = at
        elif what == end:
            found.setdefault(name, []).append((opened.pop(name), at))
    return found


def _overlap(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def test_the_default_schedule_overlaps_windows_but_never_two_tests_calls() -> None:
    def body(ctx: Any, name: str, note: Any) -> None:
        def work() -> None:
            note(name, "call")
            time.sleep(0.01)  # the subject working, inside the TCK's call
            note(name, "returned")

        ctx.call("request(1)", work)
        with ctx.env.aside():  # a no-signal window
            note(name, "window")
            time.sleep(0.1)
            note(name, "window over")
        ctx.call("request(1)", work)

    results, log = _schedule_log([("required", body)] * 6)
    assert [r.outcome for r in results] == ["passed"] * 6
    calls = [(name, span) for name, spans in _intervals(log, "call", "returned").items() for span in spans]
    assert not [(a, b) for (a, x), (b, y) in itertools.combinations(calls, 2) if _overlap(x, y)]
    windows = [span for spans in _intervals(log, "window", "window over").values() for span in spans]
    assert any(_overlap(x, y) for x, y in itertools.combinations(windows, 2))


def test_waiting_for_the_turn_back_is_not_held_against_a_tests_limit() -> None:
    # A test back from a window waits while other tests call (long streams, say): that is not its
    # time. Its own calls take 0.6 s of its 2 s limit (slack for a loaded machine); the two
    # others keep it waiting 1.8 s or more.
    def waiting(ctx: Any, name: str, note: Any) -> None:
        ctx.call("request(1)", lambda: time.sleep(0.3))
        with ctx.env.aside():
            time.sleep(0.05)
        note(name, "back")
        ctx.call("request(1)", lambda: time.sleep(0.3))

    def busy(ctx: Any, name: str, note: Any) -> None:
        ctx.call("request(1)", lambda: time.sleep(1.8))

    settings = Settings(no_fuzz=True, test_limit=2.0)
    results, _log = _schedule_log([("required", waiting), ("required", busy), ("required", busy)],
                                 settings=settings)
    assert [r.outcome for r in results] == ["passed"] * 3, [r.message for r in results]
    assert results[0].duration_s > settings.test_limit  # it did wait past its limit


def test_a_window_inside_a_call_into_the_subject_keeps_the_turn() -> None:
    # The subject's code is on the stack (perhaps holding its lock): another test calling now
    # could deadlock against it, so a window taken there is not given up.
    def lingering(ctx: Any, name: str, note: Any) -> None:
        def subscribe() -> None:
            with ctx.env.aside():
                note(name, "window")
                time.sleep(0.1)
                note(name, "window over")

        ctx.call("subscribe()", subscribe)

    def other(ctx: Any, name: str, note: Any) -> None:
        ctx.call("request(1)", lambda: note(name, "call"))

    results, log = _schedule_log([("required", lingering), ("required", other), ("required", other)])
    assert [r.outcome for r in results] == ["passed"] * 3
    ((start, end),) = _intervals(log, "window", "window over")["t0"]
    assert all(not start < at < end for name, what, at in log if what == "call")


def test_a_race_hunting_test_runs_with_no_other_test_calling() -> None:
    def windowed(ctx: Any, name: str, note: Any) -> None:
        with ctx.env.aside():
            time.sleep(0.05)
        ctx.call("request(1)", lambda: note(name, "call"))

    def racing(ctx: Any, name: str, note: Any) -> None:
        note(name, "race")
        with ctx.env.aside():  # its waits keep the turn too
            time.sleep(0.1)
        note(name, "race over")

    results, log = _schedule_log([("required", windowed)] * 3 + [("stochastic", racing)] + [("required", windowed)] * 3,
                                 concurrency=4)
    assert [r.outcome for r in results] == ["passed"] * 7
    ((start, end),) = _intervals(log, "race", "race over")["t3"]
    assert all(not start < at < end for name, what, at in log if what == "call")


def test_a_fuzz_search_starts_before_the_rule_tests_and_no_result_is_handed_back_beside_it() -> None:
    """The search computes while the rule tests wait out their windows; the caller reports no
    result meanwhile (pytest parses source to report, and so may Hypothesis on the search's
    thread: CPython 3.11 does not allow both at once)."""
    from rstck.contexts import Context
    from rstck.engine import Schedule
    from rstck.registry import TckTest

    log: list[tuple[str, str, float]] = []

    def rule(ctx: Any, name: str) -> None:
        with ctx.env.aside():  # a no-signal window
            time.sleep(0.05)
        ctx.call("request(1)", lambda: log.append((name, "call", time.monotonic())))

    def search(ctx: Any, name: str) -> None:
        log.append((name, "search", time.monotonic()))
        for _ in range(8):
            ctx.call("request(1)", lambda: time.sleep(0.01))
            with ctx.env.aside():  # a scenario's settle
                time.sleep(0.02)
        log.append((name, "search over", time.monotonic()))

    levels = ["required"] * 4 + ["fuzz"] + ["required"] * 3
    tests = [TckTest(f"{level}_t{i}", "publisher", None, level,
                     (lambda ctx, b=(search if level == "fuzz" else rule), n=f"t{i}": b(ctx, n)), "")
             for i, level in enumerate(levels)]
    handed: list[float] = []
    for result in Schedule(tests, Context, Settings()).results():
        assert result.outcome == "passed", result.message
        handed.append(time.monotonic())
    ((start, end),) = _intervals(log, "search", "search over")["t4"]
    calls = [at for name, what, at in log if what == "call"]
    assert all(at > start for at in calls)  # the search started first
    assert sum(start < at < end for at in calls) >= 3  # the rule tests ran beside it
    assert min(handed) >= end


# -- the results contract's types ----------------------------------------------------------------


def test_outcomes_verdicts_and_levels_are_one_enum_each_equal_to_their_words() -> None:
    import rstck.results
    from rstck.results import Level
    from rstck.results import Outcome
    from rstck.results import Verdict
    from rstck_plugins import verdicts

    assert tuple(Verdict) == rstck.results.VERDICTS
    assert tuple(Level) == rstck.results.LEVELS
    assert set(verdicts.LABELS) == set(Verdict) == set(verdicts.SEVERITY)
    assert verdicts.FAILING is rstck.results.FAILING
    result = TestResult("required_spec309_x", "publisher", "3.9", "required", "skipped", "not_applicable", 0.5)
    assert (type(result.level), type(result.outcome), type(result.verdict)) == (Level, Outcome, Verdict)
    assert result.outcome == "skipped"
    assert f"{result.verdict}" == "not_applicable"
    # A file written without verdicts reads its outcome in their place, as before.
    data = result.to_json()
    # Builtin str in the record: xdist (execnet) refuses to carry a subclass from its workers.
    assert {type(data[key]) for key in ("level", "outcome", "verdict")} == {str}
    del data["verdict"]
    assert TestResult.from_json(data).verdict is Outcome.SKIPPED
    with pytest.raises(ValueError, match=r"^level 'mandatory' is not one of \('required', "):
        TestResult("t", "publisher", None, "mandatory", "passed", "passed", 0.0)


def test_the_results_document_is_built_whole_and_reads_as_before(tmp_path: Path) -> None:
    from importlib import resources

    import jsonschema

    failed = TestResult("required_spec309_x", "publisher", "3.9", "required", "failed", "failed", 0.5, "m")
    skipped = TestResult("optional_spec111_y", "publisher", "1.11", "optional", "skipped",
                         "optional_unsupported", 0.25)
    data = document([failed, skipped], subjects={"publisher": "s"}, settings={},
                    interrupted="stopping after 1 failures", not_run=3)
    # Keys in the order the file always had them, the partial-run marks last.
    assert list(data) == ["schema", "edition", "tck_version", "python", "subjects", "settings", "summary",
                          "results", "interrupted", "interrupted_reason", "not_run"]
    assert (data["interrupted"], data["interrupted_reason"], data["not_run"]) == (True, "stopping after 1 failures", 3)
    text = json.dumps(data, indent=2)
    assert '"summary": {\n    "total": 2,\n    "passed": 0,\n    "failed": 1,\n    "skipped": 1,\n    "error": 0,' in text
    assert '"verdicts": {\n      "passed": 0,\n      "failed": 1,\n      "error": 0,\n      "optional_unsupported": 1,' in text
    assert '"level": "optional",\n      "outcome": "skipped",\n      "verdict": "optional_unsupported",' in text
    schema = json.loads(resources.files("rstck").joinpath("schemas/rs-tck-results-1.schema.json").read_text())
    jsonschema.validate(json.loads(text), schema)
    complete = document([failed], subjects={}, settings={})
    assert "interrupted" not in complete
    assert "not_run" not in complete
    assert "not_run" not in document([failed], subjects={}, settings={}, interrupted="stopped early")
