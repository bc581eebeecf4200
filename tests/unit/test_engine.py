"""The schedule: windows overlap, calls never do; turns, race hunts and the fuzz search."""

from __future__ import annotations

import itertools
import threading
import time
from typing import Any

from rstck.results import TestResult
from rstck.settings import Settings


def _schedule_log(bodies: list[tuple[str, Any]], concurrency: int = 1,
                  settings: Settings | None = None) -> tuple[list[TestResult], list[tuple[str, str, float]]]:
    """Run ``bodies`` (level, body(ctx, log)) through a Schedule; every body logs what it does."""
    from rstck.contexts import Context
    from rstck.registry import TckTest
    from rstck.run_api import Schedule

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
    # time. Its own calls take 0.6 s of its 2 s limit, the others' 1.4 s each (slack for a loaded
    # machine); the two others keep it waiting 1.4 s or more, past its limit.
    def waiting(ctx: Any, name: str, note: Any) -> None:
        ctx.call("request(1)", lambda: time.sleep(0.3))
        with ctx.env.aside():
            time.sleep(0.05)
        note(name, "back")
        ctx.call("request(1)", lambda: time.sleep(0.3))

    def busy(ctx: Any, name: str, note: Any) -> None:
        ctx.call("request(1)", lambda: time.sleep(1.4))

    settings = Settings(no_fuzz=True, test_limit=2.0)
    results, _log = _schedule_log([("required", waiting), ("required", busy), ("required", busy)],
                                 settings=settings)
    assert [r.outcome for r in results] == ["passed"] * 3, [r.message for r in results]
    assert results[0].duration_s > settings.test_limit  # it did wait past its limit


def test_a_test_back_from_a_window_calls_before_new_tests_start() -> None:
    """A source may give up on a subscriber that does not ask in time (RxJava's TCK harnesses,
    a second after the factory call): a test back from its window waits only for the test that
    is calling, not for every test yet to start (twelve here, each calling 50 ms first)."""

    def early(ctx: Any, name: str, note: Any) -> None:
        ctx.call("request(1)", lambda: None)
        with ctx.env.aside():
            time.sleep(0.05)
            note(name, "back")  # the window is over: the turn is taken back as the block ends
        ctx.call("request(1)", lambda: note(name, "called again"))

    def late(ctx: Any, name: str, note: Any) -> None:
        ctx.call("request(1)", lambda: time.sleep(0.05))
        with ctx.env.aside():
            time.sleep(0.05)

    results, log = _schedule_log([("required", early)] + [("required", late)] * 12)
    assert [r.outcome for r in results] == ["passed"] * 13, [r.message for r in results]
    (back,) = [at for name, what, at in log if name == "t0" and what == "back"]
    (again,) = [at for name, what, at in log if name == "t0" and what == "called again"]
    assert again - back < 0.3  # behind one 50 ms call, not twelve


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


def test_a_race_hunt_runs_while_the_rule_tests_wait_out_their_windows() -> None:
    # Not first, ahead of every window: once each rule test has made its calls and waits, the
    # hunt takes the turn; a test back from its window waits for the hunt to end.
    def windowed(ctx: Any, name: str, note: Any) -> None:
        ctx.call("request(1)", lambda: note(name, "call"))
        with ctx.env.aside():
            note(name, "window")
            time.sleep(0.15)
            note(name, "window over")
        ctx.call("request(1)", lambda: note(name, "call"))

    def racing(ctx: Any, name: str, note: Any) -> None:
        note(name, "race")
        time.sleep(0.05)
        note(name, "race over")

    results, log = _schedule_log([("stochastic", racing)] + [("required", windowed)] * 4)
    assert [r.outcome for r in results] == ["passed"] * 5
    ((race,),) = _intervals(log, "race", "race over").values()
    windows = [span for spans in _intervals(log, "window", "window over").values() for span in spans]
    assert any(_overlap(race, window) for window in windows)
    assert all(not race[0] < at < race[1] for name, what, at in log if what == "call")


def test_a_fuzz_search_starts_before_the_rule_tests_and_no_result_is_handed_back_beside_it() -> None:
    """The search computes while the rule tests wait out their windows; the caller reports no
    result meanwhile (pytest parses source to report, and so may Hypothesis on the search's
    thread: CPython 3.11 does not allow both at once)."""
    from rstck.contexts import Context
    from rstck.registry import TckTest
    from rstck.run_api import Schedule

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


class _CancelBlocks:
    """A range publisher whose cancel() never returns: a block on one path, not every test's."""

    def __init__(self, n: int) -> None:
        from rstck.reference import range_publisher

        self.inner = range_publisher(n)

    def subscribe(self, subscriber: Any) -> None:
        forever = threading.Event()

        class Outer:
            def on_subscribe(self, s: Any) -> None:
                class Blocking:
                    def request(self, k: int) -> None:
                        s.request(k)

                    def cancel(self) -> None:
                        forever.wait()

                subscriber.on_subscribe(Blocking())

            def on_next(self, e: Any) -> None:
                subscriber.on_next(e)

            def on_error(self, e: BaseException) -> None:
                subscriber.on_error(e)

            def on_complete(self) -> None:
                subscriber.on_complete()

        if subscriber is None:
            raise TypeError("subscriber is None")
        self.inner.subscribe(Outer())


def test_a_block_on_one_path_leaves_the_other_tests_their_verdicts_until_it_is_systematic() -> None:
    from rstck.run_api import BLOCKS_TO_STOP
    from rstck.run_api import run_verification
    from rstck.subjects import PublisherSubject

    settings = Settings(timeout=0.3, no_signal_window=0.02, no_fuzz=True, skip_stochastic=True)
    results = run_verification("publisher", PublisherSubject(_CancelBlocks), settings,
                               rules=["sanity", "1.2", "3.9", "1.8", "3.6", "3.7", "3.12", "3.13", "3.15"])
    verdicts = {r.test: r.verdict for r in results}
    blocked = [r for r in results if "neither returned nor signalled" in r.message and r.verdict == "failed"]
    assert len(blocked) >= BLOCKS_TO_STOP
    # Tests that never cancel, run before the block was systematic, kept their verdicts.
    assert verdicts["required_sanity_factory_1_produces_exactly_1_element"] == "passed"
    assert verdicts["required_spec102_may_signal_fewer_than_requested_and_terminate"] == "passed"
    not_run = [r for r in results if r.verdict == "not_run"]
    assert not_run
    assert {r.message for r in not_run} == {not_run[0].message}
    assert blocked[0].test in not_run[0].message

