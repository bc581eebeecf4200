"""More hostile publishers: BaseExceptions, leaked threads and concurrent signals (real pytest processes)."""

from __future__ import annotations

import re
import time

import pytest

HOSTILE = '''
import threading
from rstck.reference import range_publisher

class _Wrapped:
    def __init__(self, n, request):
        self._inner, self._request = range_publisher(n), request
    def subscribe(self, subscriber):
        if subscriber is None:
            raise TypeError("subscriber is None")
        outer = self
        class Sub:
            def on_subscribe(self, s):
                class Subscription:
                    def request(self, n):
                        return outer._request(s, n)
                    def cancel(self):
                        return s.cancel()
                subscriber.on_subscribe(Subscription())
            def on_next(self, e): subscriber.on_next(e)
            def on_error(self, e): subscriber.on_error(e)
            def on_complete(self): subscriber.on_complete()
        self._inner.subscribe(Sub())

def _interrupt(s, n):
    raise KeyboardInterrupt("from request()")

def _exit(s, n):
    raise SystemExit(3)

def interrupts_in_request(n):
    return _Wrapped(n, _interrupt)

def exits_in_request(n):
    return _Wrapped(n, _exit)

FOREVER = threading.Event()

def leaks_a_thread(n):
    inner = range_publisher(n)
    class Leaky:
        def subscribe(self, subscriber):
            threading.Thread(target=FOREVER.wait, name="leaked-by-subscribe").start()
            inner.subscribe(subscriber)
    return Leaky()

def leaks_a_non_daemon_thread(n):
    inner = range_publisher(n)
    class Leaky:
        def subscribe(self, subscriber):
            threading.Thread(target=FOREVER.wait, name="leaked-by-subscribe", daemon=False).start()
            inner.subscribe(subscriber)
    return Leaky()

def eight_threads_on_next(n):
    class Chorus:
        def subscribe(self, subscriber):
            if subscriber is None:
                raise TypeError("subscriber is None")
            lock = threading.Lock()
            state = {"sent": 0, "demand": 0}
            class S:
                def request(self, k):
                    with lock:
                        state["demand"] += k
                    gate = threading.Barrier(8)
                    def emit():
                        gate.wait()
                        with lock:
                            if state["sent"] >= min(n, state["demand"]):
                                return
                            state["sent"] += 1
                            i = state["sent"]
                        subscriber.on_next(i)
                        if i == n:
                            subscriber.on_complete()
                    for j in range(8):
                        threading.Thread(target=emit, name=f"emitter-{j}", daemon=True).start()
                def cancel(self):
                    pass
            subscriber.on_subscribe(S())
    return Chorus()
'''


@pytest.fixture
def hostile(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(hostile=HOSTILE)
    return pytester


def run(pytester: pytest.Pytester, factory: str, rules: str) -> tuple[pytest.RunResult, float]:
    start = time.monotonic()
    result = pytester.runpytest_subprocess(
        f"--rs-publisher=hostile:{factory}", f"--rs-rules={rules}", "--rs-timeout-ms=300",
        "-p", "no:cacheprovider", timeout=120,
    )
    return result, time.monotonic() - start


@pytest.mark.parametrize(
    ("factory", "raised"),
    [("interrupts_in_request", "KeyboardInterrupt"), ("exits_in_request", "SystemExit")],
)
def test_base_exception_from_request_fails_that_test_only(hostile: pytest.Pytester, factory: str, raised: str) -> None:
    """A KeyboardInterrupt or SystemExit raised by the subject is a subject failure, not a stop.

    The TCK calls the subject on its own worker thread and catches whatever escapes, BaseException
    included, so it becomes that test's failure and the session carries on to every selected test
    (exit status 1, not 2 for an interrupted run). A real Ctrl-C from the user is delivered by the
    signal handler to pytest's main thread, which is not running subject code, so it still stops
    the session.
    """
    result, elapsed = run(hostile, factory, "1.1,3.9")
    result.assert_outcomes(failed=5, skipped=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    out = result.stdout.str()
    assert f"expected every call into the subject to return normally; observed {raised}" in out
    assert "Interrupted" not in out
    assert elapsed < 60


def test_a_leaked_non_daemon_thread_is_named_and_does_not_hang_exit(hostile: pytest.Pytester) -> None:
    """A non-daemon thread the subject starts and never ends would make the interpreter wait at exit.

    The plugin names it in a warning and lets the process exit after the report is written.
    """
    result, elapsed = run(hostile, "leaks_a_non_daemon_thread", "1.1")
    result.assert_outcomes(passed=2)
    assert result.ret == pytest.ExitCode.OK
    out = result.stdout.str()
    assert re.search(r"rs-tck: WARNING \d+ non-daemon thread\(s\) started during the run are still alive: "
                     r"leaked-by-subscribe", out), out
    assert "the process exits without waiting for them" in out
    assert elapsed < 60


def test_a_thread_inheriting_the_workers_daemon_flag_never_blocked_exit(hostile: pytest.Pytester) -> None:
    """Threads started on the TCK's daemon worker are daemon themselves; no warning is needed."""
    result, elapsed = run(hostile, "leaks_a_thread", "1.1")
    result.assert_outcomes(passed=2)
    assert "non-daemon thread" not in result.stdout.str()
    assert elapsed < 60


def test_on_next_from_eight_threads_at_once_is_a_1_3_violation(hostile: pytest.Pytester) -> None:
    result, elapsed = run(hostile, "eight_threads_on_next", "1.3")
    result.assert_outcomes(failed=2)
    out = result.stdout.str()
    assert "[rule 1.3] expected signals delivered one at a time" in out
    assert re.search(r"on_next entered on thread emitter-\d while on_\w+ was running on thread \S+",
                     out), out
    assert elapsed < 60
