"""Hostile publishers cost the tests they break, never the session (real pytest processes)."""

from __future__ import annotations

import json
import time
import xml.etree.ElementTree as ET
from typing import Any

import pytest

HOSTILE = '''
import threading
from rstck.reference import range_publisher

FOREVER = threading.Event()

class _Wrapped:
    """Delegates to a conforming range publisher, replacing one subscription method."""
    def __init__(self, n, request=None, cancel=None, subscribe=None):
        self._inner, self._request, self._cancel, self._subscribe = range_publisher(n), request, cancel, subscribe
    def subscribe(self, subscriber):
        if self._subscribe:
            return self._subscribe(subscriber)
        outer = self
        class Sub:
            def on_subscribe(self, s):
                class Subscription:
                    def request(self, n):
                        return outer._request(s, n) if outer._request else s.request(n)
                    def cancel(self):
                        return outer._cancel(s) if outer._cancel else s.cancel()
                subscriber.on_subscribe(Subscription())
            def on_next(self, e): subscriber.on_next(e)
            def on_error(self, e): subscriber.on_error(e)
            def on_complete(self): subscriber.on_complete()
        if subscriber is None:
            raise TypeError("subscriber is None")
        self._inner.subscribe(Sub())

def deadlocks_in_request(n):
    return _Wrapped(n, request=lambda s, k: FOREVER.wait())

def blocks_in_subscribe(n):
    return _Wrapped(n, subscribe=lambda sub: FOREVER.wait() if sub is not None else None)

def _recurse(s, k):
    return _recurse(s, k)

def recurses_without_bound(n):
    return _Wrapped(n, request=_recurse)

def floods(n):
    class Flood:
        def subscribe(self, subscriber):
            class S:
                def request(self, k):
                    i = 0
                    while True:
                        subscriber.on_next(i)
                        i += 1
                def cancel(self):
                    pass
            subscriber.on_subscribe(S())
    return Flood()
'''


@pytest.fixture
def hostile(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(hostile=HOSTILE)
    return pytester


@pytest.mark.parametrize(
    ("factory", "fragment"),
    [
        ("recurses_without_bound", "RecursionError"),
        ("floods", "[rule 1.1]"),
    ],
)
def test_hostile_request_costs_only_its_tests(hostile: pytest.Pytester, factory: str, fragment: str) -> None:
    start = time.monotonic()
    result = hostile.runpytest_subprocess(
        f"--rs-publisher=hostile:{factory}", "--rs-rules=1.1,3.9,1.10", "--rs-timeout-ms=300",
        "-p", "no:cacheprovider", timeout=120,
    )
    elapsed = time.monotonic() - start
    result.assert_outcomes(failed=6, skipped=1)  # the optional 3.9 test fails too: a MUST broke
    assert fragment in result.stdout.str()
    assert elapsed < 60


def test_blocking_subscribe_is_reported_with_its_stack(hostile: pytest.Pytester) -> None:
    result = hostile.runpytest_subprocess(
        "--rs-publisher=hostile:blocks_in_subscribe", "--rs-rules=1.9", "--rs-timeout-ms=300",
        "-p", "no:cacheprovider", timeout=120,
    )
    # Tests under way when the first blocked fail the same way; the rest are not run.
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed", 0) >= 1
    assert outcomes.get("failed", 0) + outcomes.get("skipped", 0) == 5
    out = result.stdout.str()
    assert "`subscribe()` neither returned nor signalled" in out
    assert "FOREVER.wait()" in out  # the stack shows where the subject blocked


def test_a_subject_that_blocked_its_caller_is_not_run_again_test_after_test(hostile: pytest.Pytester) -> None:
    """Each test would wait out the stall limit (2 s by default) on a subject known to hang: a
    whole verification took two minutes. The tests not started are reported at once, in the
    terminal (one folded line), the results file and JUnit, naming the test that showed it."""
    start = time.monotonic()
    result = hostile.runpytest_subprocess(
        "--rs-publisher=hostile:deadlocks_in_request", "--rs-report-json=r.json", "--junitxml=j.xml",
        "-p", "no:cacheprovider", timeout=120,
    )
    elapsed = time.monotonic() - start
    assert elapsed < 40, elapsed
    data = json.loads((hostile.path / "r.json").read_text())
    by_verdict: dict[str, list[dict[str, Any]]] = {}
    for r in data["results"]:
        by_verdict.setdefault(r["verdict"], []).append(r)
    failed, not_run = by_verdict["failed"], by_verdict["not_run"]
    assert 1 <= len(failed) <= 5
    assert len(not_run) >= 40
    assert {r["outcome"] for r in not_run} == {"skipped"}
    (message,) = {r["message"] for r in not_run}
    assert message.startswith("not run: the subject blocked in publisher::")
    assert "`request(1)` neither returned nor signalled" in message
    blocked_in = message.split("blocked in ", 1)[1].split(" ", 1)[0]
    assert any(f"publisher::{r['test']}[" in blocked_in for r in failed)
    assert all(r["verdict"] == "untested" for r in by_verdict.get("skipped", []) + by_verdict.get("untested", []))
    out = result.stdout.str()
    assert out.count("FOREVER.wait()") == len(failed)  # the stack, once per test that blocked
    result.stdout.fnmatch_lines([f"SKIPPED [[]{len(not_run)}[]] publisher: not run: the subject blocked in *"])
    junit = ET.parse(hostile.path / "j.xml").getroot()
    skipped = [s.get("message", "") for s in junit.iter("skipped")]
    assert sum(1 for m in skipped if "not run: the subject blocked in publisher::" in m) == len(not_run)
