"""A loaded machine pauses a thread now and then; the long-stream verdicts must not call that a stall.

A stream of thousands of elements has thousands of gaps, so a pause longer than ``timeout``
somewhere in it is likely on a busy machine, while a stall (demand lost, emission not
rescheduled) lasts. The publisher below is conforming: once per subscription it pauses for
longer than the timeout, as a descheduled thread does, then goes on.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from rstck.reference import async_range_publisher
from rstck.run_api import run_verification
from rstck.settings import Settings
from rstck.subjects import PublisherSubject

from ..broken import publishers as bp

TIMEOUT_S = 0.2
PAUSE_AT = 600  # past it only in the long streams


class _PausingRelay:
    """Hands the inner subscription and signals through; sleeps once, before element ``PAUSE_AT``."""

    def __init__(self, downstream: Any) -> None:
        self.downstream = downstream
        self.count = 0
        self.lock = threading.Lock()

    def on_subscribe(self, subscription: Any) -> None:
        self.downstream.on_subscribe(subscription)

    def on_next(self, element: Any) -> None:
        with self.lock:
            self.count += 1
            pause = self.count == PAUSE_AT
        if pause:
            time.sleep(TIMEOUT_S * 1.5)
        self.downstream.on_next(element)

    def on_error(self, exc: BaseException) -> None:
        self.downstream.on_error(exc)

    def on_complete(self) -> None:
        self.downstream.on_complete()


class PausingPublisher:
    def __init__(self, n: int) -> None:
        self.inner = async_range_publisher(n)

    def subscribe(self, subscriber: Any) -> None:
        if subscriber is None:
            raise TypeError("rule 1.9: subscribe(None)")
        self.inner.subscribe(_PausingRelay(subscriber))


def test_a_pause_longer_than_the_timeout_in_a_long_stream_is_not_a_stall() -> None:
    results = run_verification("publisher", PublisherSubject(PausingPublisher), rules=["3.8", "3.17"],
                               settings=Settings(timeout=TIMEOUT_S, no_signal_window=0.05))
    accused = [f"{r.test}: {r.message.splitlines()[0]}" for r in results
               if r.outcome in ("failed", "error") and r.level == "required"]
    assert not accused, "\n".join(accused)


def test_a_stall_is_still_a_stall() -> None:
    """The publisher that stops rescheduling after a full turn still fails 3.8, citing the whole silence."""
    results = run_verification("publisher", PublisherSubject(bp.factory(bp.StopsWhenOneOwedAfterTurn)), rules=["3.8"],
                               settings=Settings(timeout=TIMEOUT_S, no_signal_window=0.05))
    bp.halt_all()
    long = [r for r in results if "long_streams" in r.test]
    assert long, [r.test for r in results]
    assert long[0].outcome == "failed", long[0].message
    assert f"then nothing for {TIMEOUT_S * 4 * 1000:.0f} ms" in long[0].message


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
    from rstck.run_api import run_publisher_verification
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
