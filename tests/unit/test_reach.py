"""When a closing watch or a quiet window may end early: no thread but the kit's could still call
the subject."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from rstck._internal.reach import alone_with_idle_kit_threads
from rstck._internal.reach import nothing_else_runs
from rstck._internal.reach import only_the_kit_runs
from rstck._internal.reach import waiting_for_results
from rstck._internal.worker import IDLE_NAME

from .support import HoldingSubscriber
from .support import zero_sleeps

#: Threads the host runs (xdist's, say) are not these tests': only those a test starts count.
pytestmark = pytest.mark.usefixtures("only_this_tests_threads")


@contextmanager
def thread(name: str, *, waiting: bool = False) -> Iterator[None]:
    started, stop = threading.Event(), threading.Event()

    def run() -> None:
        if waiting:
            with waiting_for_results():
                started.set()
                stop.wait(10)
        else:
            started.set()
            stop.wait(10)

    t = threading.Thread(target=run, name=name, daemon=True)
    t.start()
    started.wait(5)
    try:
        yield
    finally:
        stop.set()
        t.join(5)


def run_on_kit_thread() -> bool:
    out: list[bool] = []
    t = threading.Thread(target=lambda: out.append(nothing_else_runs()), name="rs-tck-probe")
    with waiting_for_results():  # the test's own thread waits for it, as a consumer does
        t.start()
        t.join(5)
    return out[0]


def test_only_the_kits_threads_left_means_nothing_else_runs() -> None:
    with thread("rs-tck-runner-7"), thread("rs-tck:upstream-feeder"):
        assert run_on_kit_thread()


def test_any_other_thread_could_still_call() -> None:
    with thread("Thread-9"):  # a timer, a pool worker, a loop of the subject's: who knows
        assert not run_on_kit_thread()
    with thread("refill_0"):
        assert not run_on_kit_thread()


def test_the_kits_event_loop_runs_subjects_callbacks() -> None:
    with thread("rs-tck-loop"):
        assert not run_on_kit_thread()


def test_a_thread_blocked_in_the_kit_for_results_does_not_count() -> None:
    with thread("MainThread-of-an-app", waiting=True):
        assert run_on_kit_thread()
    # the caller's own thread, once it stops waiting, counts again
    out: list[bool] = []
    t = threading.Thread(target=lambda: out.append(nothing_else_runs()), name="rs-tck-probe")
    t.start()
    t.join(5)
    assert out == [False]


def test_the_watch_after_the_end_stops_soon_after_the_last_other_thread_does() -> None:
    # The thread in the way is often busy for a moment only (pytest reporting a verdict): once
    # the quiet window has passed, the watch looks again every few ms, not a window later.
    from rstck._internal.environment import Environment
    from rstck.manual import ManualPublisher
    from rstck.settings import Settings

    from tests.broken.subscribers import GoodSubscriber

    quiet, busy_for = 0.4, 0.5
    with Environment(Settings(timeout=1.0, no_signal_window=quiet)) as env:
        upstream = ManualPublisher(env)
        upstream.subscribe(GoodSubscriber())
        upstream.send_complete()
        other = threading.Thread(target=time.sleep, args=(busy_for,), name="Thread-busy", daemon=True)
        other.start()
        started = time.monotonic()
        upstream.closing_after_terminal(window=5.0)()
        took = time.monotonic() - started
        other.join(5)
    assert busy_for * 0.9 <= took < 2 * quiet - 0.05, took  # looking only once a window: 2 * quiet


def _settled_in(upstream: object) -> float:
    started = time.monotonic()
    assert upstream.settle()  # type: ignore[attr-defined]
    return time.monotonic() - started


def test_a_settle_ends_at_once_when_nothing_but_the_kit_could_call() -> None:
    # A subscriber without a thread of its own can do nothing until the TCK signals it again;
    # any other thread (its worker, a timer, a pool's) keeps the window whole.
    from rstck._internal.environment import Environment
    from rstck.manual import ManualPublisher
    from rstck.settings import Settings

    from tests.broken.subscribers import GoodSubscriber

    window = 0.8  # (what "at once" is measured against, with room for a loaded machine's pauses)
    with Environment(Settings(timeout=1.0, no_signal_window=window)) as env:
        upstream = ManualPublisher(env)
        upstream.subscribe(GoodSubscriber())
        alone = _settled_in(upstream)
        assert upstream.subscription.idle  # nothing can be at work: a later request is unexplained
        with thread("Thread-9"):
            beside = _settled_in(upstream)
    assert alone < window / 2 <= window * 0.9 <= beside, (alone, beside)


def test_a_feeder_delivering_keeps_the_window_whole() -> None:
    # The TCK's own feeder thread calls the subscriber: while it runs, a request may still come.
    from rstck._internal.environment import Environment
    from rstck.manual import ManualPublisher
    from rstck.settings import Settings

    from tests.broken.subscribers import NeverRequests

    window = 0.3
    with Environment(Settings(timeout=1.0, no_signal_window=window)) as env:
        upstream = ManualPublisher(env, count=3)
        upstream.subscribe(NeverRequests())  # the feeder waits for demand that never comes
        try:
            waited = _settled_in(upstream)
        finally:
            upstream.close()
    assert waited >= window * 0.9, waited


def on_thread(name: str, look: Any) -> Any:
    out: list[Any] = []
    t = threading.Thread(target=lambda: out.append(look()), name=name)
    with waiting_for_results():  # the test's own thread waits for it, as a consumer does
        t.start()
        t.join(5)
    return out[0]


def test_a_kit_thread_is_alone_in_the_subject_only_while_nothing_else_runs() -> None:
    assert on_thread("rs-tck-body", only_the_kit_runs)
    with thread("subscriber-worker"):
        assert not on_thread("rs-tck-body", only_the_kit_runs)


def test_a_subjects_own_thread_is_never_alone_the_kits_threads_may_call_beside_it() -> None:
    """Its request() may meet the on_next or cancel() a kit thread is delivering (rule 2.7)."""
    assert on_thread("take-worker_0", nothing_else_runs)
    assert not on_thread("take-worker_0", only_the_kit_runs)
    assert not on_thread("rs-tck-loop", only_the_kit_runs)  # a loop the kit runs calls the subject's code


def test_the_upstreams_requests_yield_only_when_another_thread_could_race_in(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A 0 s yield offers the turn to a thread entering the subscription beside the call (rule 2.7):
    a call from the test's own thread, with only the kit's idle threads alive, has none to offer
    it to. While another thread lives beside it, every call yields; once another thread called
    on the subscription, every call yields while any thread but an idle one of the kit's pool
    lives (a kit thread that called may call again)."""
    from rstck._internal.environment import Environment
    from rstck.manual import ManualPublisher
    from rstck.settings import Settings

    seen: list[list[str]] = []
    with Environment(Settings(timeout=1.0, no_signal_window=0.05)) as env:
        upstream = ManualPublisher(env)
        holder = HoldingSubscriber()

        def test_body() -> None:  # one thread throughout, as a test's body
            env.body_ident = threading.get_ident()
            upstream.subscribe(holder)
            sleeps = zero_sleeps(monkeypatch)
            holder.subscription.request(1)
            seen.append(list(sleeps))
            with thread("subscriber-worker"):
                holder.subscription.request(1)
            seen.append(list(sleeps))
            holder.subscription.request(1)  # that thread is gone again
            seen.append(list(sleeps))
            worker = threading.Thread(target=holder.subscription.request, args=(1,), name="subscriber-worker")
            worker.start()
            worker.join(5)
            seen.append(list(sleeps))
            with thread("rs-tck:paused-side"):  # a second thread called: a kit thread at work yields
                holder.subscription.request(1)
            seen.append(list(sleeps))
            with thread(IDLE_NAME):  # ... an idle pooled one, or none, does not
                holder.subscription.request(1)
            holder.subscription.request(1)
            seen.append(list(sleeps))

        on_thread("rs-tck-body", test_body)
    body = "rs-tck-body"
    assert seen == [[], [body], [body], [body, "subscriber-worker"], [body, "subscriber-worker", body],
                    [body, "subscriber-worker", body]]


def test_a_thread_is_alone_with_the_kits_idle_threads_only_while_no_other_works() -> None:
    """Every other thread idle in the kit's pool, or waiting in it for results: none can race in."""
    assert on_thread("rs-tck-body", alone_with_idle_kit_threads)
    with thread(IDLE_NAME), thread("rs-tck-runner", waiting=True):
        assert on_thread("rs-tck-body", alone_with_idle_kit_threads)
    for busy in ("rs-tck:upstream-feeder", "rs-tck:paused-side", "rs-tck-loop", "subscriber-worker"):
        with thread(busy):
            assert not on_thread("rs-tck-body", alone_with_idle_kit_threads), busy
