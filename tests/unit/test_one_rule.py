"""One rule test run under its watchdog: failures as data, deadlines, setup errors."""

from __future__ import annotations

import threading
import types
from typing import Any

import pytest
from rstck.results import TestResult
from rstck.settings import Settings

# -- the structured failure record ---------------------------------------------------------------


def _run(subscription: type, rule: str, **settings: Any) -> list[TestResult]:
    from rstck.run_api import run_publisher_verification
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


def test_a_worker_is_abandoned_at_its_deadline_and_keeps_what_it_raised() -> None:
    from rstck._internal.worker import Worker

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
    from rstck.run_api import run_publisher_verification
    from rstck.subjects import PublisherSubject

    def factory(n: int) -> object:
        raise OSError("no database")

    result = run_publisher_verification(PublisherSubject(factory), Settings(timeout=0.2), rules=["1.2"])[0]
    assert result.outcome == "error"
    (failure,) = result.failures
    assert failure.rule is None
    assert "raised OSError" in failure.observed


def test_a_starved_process_is_not_taken_for_a_blocking_subject(monkeypatch: pytest.MonkeyPatch) -> None:
    """The watchdog wakes 5 s late once (the machine starved the process): that is not the
    subject's silence. A request that truly never returns is still caught."""
    import time as real_time

    from rstck._internal import one_rule as runner
    from rstck.run_api import run_publisher_verification
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


def test_the_kits_tracebacks_are_formatted_without_parsing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Python 3.11's carets parse source (``ast``), which two threads cannot do at once safely:
    the kit's threads format frames without them, the same text otherwise."""
    import ast
    import traceback

    from rstck.errors import format_exception
    from rstck.errors import format_frames

    def boom() -> None:
        raise ValueError("inside the subject")

    try:
        boom()
    except ValueError as exc:
        raised = exc
    frames = traceback.extract_tb(raised.__traceback__)

    def no_parse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("ast.parse called")

    monkeypatch.setattr(ast, "parse", no_parse)
    text = format_exception(raised)
    assert text.startswith("Traceback (most recent call last):\n")
    assert text.endswith("ValueError: inside the subject\n")
    assert 'raise ValueError("inside the subject")' in text
    assert f"line {frames[-1].lineno}, in boom" in format_frames(frames)
    assert "^" not in text


# -- the time limit: a slow subject is inconclusive, not broken ----------------------------------


def _overrunning(violate: bool) -> Any:
    """A rule test whose body keeps working (signals keep coming) past its time limit."""
    import time

    from rstck.contexts import Context
    from rstck.verifications import Registry

    registry = Registry("publisher")

    @registry("3.8", "required")
    def required_spec308_slow(ctx: Context) -> None:
        """A subject that serves, steadily, slower than the limit allows."""
        if violate:
            ctx.env.violation("1.1", "at most 1 on_next", "on_next #2 with no outstanding demand")
        deadline = time.monotonic() + 30.0
        while time.monotonic() < deadline and not ctx.env.closed:
            ctx.env.bump()  # progress: never taken for a blocked call
            time.sleep(0.01)

    return registry.tests[0]


def test_a_test_stopped_at_its_time_limit_is_inconclusive_not_a_rule_failure() -> None:
    from rstck._internal.one_rule import run_test
    from rstck.contexts import Context

    result = run_test(_overrunning(False), Context, Settings(timeout=0.2, test_limit=0.5))
    assert (result.outcome, result.verdict) == ("error", "error"), result.message
    assert result.message.startswith("inconclusive: too slow for this test within --rs-test-limit-ms (500 ms)")
    (failure,) = result.failures
    assert failure.rule is None  # no rule is blamed: the rule table shows no failure
    assert failure.setting == "test_limit"
    from rstck_plugins.reports.verdicts import broken_rules
    from rstck_plugins.reports.verdicts import is_failure

    assert broken_rules(result) == []
    assert is_failure(result)  # but it does not pass silently either: the run fails


def test_a_violation_seen_before_the_time_limit_stays_the_verdict() -> None:
    from rstck._internal.one_rule import run_test
    from rstck.contexts import Context

    result = run_test(_overrunning(True), Context, Settings(timeout=0.2, test_limit=0.5))
    assert result.outcome == "failed", result.message
    assert result.failures[0].rule == "1.1"
    assert "stopped : the verification did not finish within its limit of 0.5 s" in result.message
