"""Hostile publishers cost the tests they break, never the session (real pytest processes)."""

from __future__ import annotations

import time

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
        ("deadlocks_in_request", "`request(1)` neither returned nor signalled"),
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
    # It also accepts subscribe(None) silently (a 1.9 failure of its own); without a failed
    # publisher the rejection test is not applicable.
    result.assert_outcomes(failed=4, skipped=1)
    out = result.stdout.str()
    assert "`subscribe()` neither returned nor signalled" in out
    assert "FOREVER.wait()" in out  # the stack shows where the subject blocked
