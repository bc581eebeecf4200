"""The processor's TCK upstream and downstream: what they accept from a conforming processor.

A processor's upstream answers request(n <= 0) as a conforming publisher does (rule 3.9), never
beside another signal; the whitebox probe tells a processor's own on_error from a relay of the
TCK's, and still catches a relay made twice.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from rstck._internal.environment import Environment
from rstck._internal.feeder import CountingUpstream
from rstck.errors import RuleViolation
from rstck.manual import ManualPublisher
from rstck.whitebox import WhiteboxProbe

from .support import rules_flagged


class Recorder:
    """A subscriber that records its signals, and any signal that starts inside another one
    (nested on the same thread, or beside it on another: rule 1.3)."""

    def __init__(self, on_next: Any = None, on_subscribe: Any = None) -> None:
        self.signals: list[Any] = []
        self.nested: list[str] = []
        self.subscription: Any = None
        self._inside = 0
        self._lock = threading.Lock()
        self._on_next = on_next
        self._on_subscribe = on_subscribe

    def _enter(self, what: str) -> None:
        with self._lock:
            if self._inside:
                self.nested.append(what)
            self._inside += 1

    def _exit(self) -> None:
        with self._lock:
            self._inside -= 1

    def on_subscribe(self, subscription: Any) -> None:
        self._enter("on_subscribe")
        self.subscription = subscription
        if self._on_subscribe is not None:
            self._on_subscribe(self)
        self._exit()

    def on_next(self, element: Any) -> None:
        self._enter("on_next")
        self.signals.append(element)
        if self._on_next is not None:
            self._on_next(self, element)
        self._exit()

    def on_error(self, exc: BaseException) -> None:
        self._enter("on_error")
        self.signals.append(("error", exc))
        self._exit()

    def on_complete(self) -> None:
        self._enter("on_complete")
        self.signals.append("complete")
        self._exit()


def _errors(sub: Recorder) -> list[BaseException]:
    return [s[1] for s in sub.signals if isinstance(s, tuple)]


@pytest.mark.parametrize("n", [0, -1, -(2**63)])
def test_an_illegal_request_is_answered_with_on_error_not_reported(env: Environment, n: int) -> None:
    upstream = ManualPublisher(env, answers_illegal=True)
    sub = Recorder()
    upstream.subscribe(sub)
    sub.subscription.request(n)
    (error,) = _errors(sub)
    assert isinstance(error, ValueError)
    assert "rule 3.9" in str(error)
    assert rules_flagged(env) == []
    # The subscription is over: nothing more goes out, and a request after it is a no-op (3.6).
    sub.subscription.request(1)
    sub.subscription.request(0)
    assert len(sub.signals) == 1
    with pytest.raises(RuleViolation, match="answered with on_error"):
        upstream.send_next(timeout=0.05)
    assert upstream.send_complete() is False
    assert len(sub.signals) == 1


def test_a_subject_upstream_still_reports_an_illegal_request(env: Environment) -> None:
    # A subscriber verification's upstream: the subject made the illegal request itself.
    upstream = ManualPublisher(env)
    sub = Recorder()
    upstream.subscribe(sub)
    sub.subscription.request(0)
    assert rules_flagged(env) == ["3.9"]
    assert sub.signals == []


def test_no_answer_after_cancel(env: Environment) -> None:
    upstream = ManualPublisher(env, answers_illegal=True)
    sub = Recorder()
    upstream.subscribe(sub)
    sub.subscription.cancel()
    sub.subscription.request(0)
    assert sub.signals == []
    assert rules_flagged(env) == []


def test_the_answer_to_a_request_made_inside_on_next_waits_for_it_to_return(env: Environment) -> None:
    upstream = ManualPublisher(env, answers_illegal=True)
    sub = Recorder(on_next=lambda s, e: s.subscription.request(0))
    upstream.subscribe(sub)
    sub.subscription.request(5)
    upstream.send_next()
    assert sub.signals[0] == 0
    assert isinstance(sub.signals[1][1], ValueError)
    assert sub.nested == []  # delivered after on_next returned, not inside it (rule 1.3)
    assert rules_flagged(env) == []


def test_the_answer_inside_on_subscribe_waits_for_it_to_return(env: Environment) -> None:
    upstream = ManualPublisher(env, answers_illegal=True)
    sub = Recorder(on_subscribe=lambda s: s.subscription.request(0))
    upstream.subscribe(sub)
    assert isinstance(_errors(sub)[0], ValueError)
    assert sub.nested == []


def test_a_feeder_sends_nothing_after_the_answer_from_another_thread(env: Environment) -> None:
    for _ in range(20):
        upstream = ManualPublisher(env, count=10**6, answers_illegal=True, end=None)
        sub = Recorder()
        upstream.subscribe(sub)
        sub.subscription.request(10**6)
        time.sleep(0.001)  # the feeder is emitting
        threading.Thread(target=sub.subscription.request, args=(0,)).start()
        deadline = time.monotonic() + 2
        while not _errors(sub) and time.monotonic() < deadline:
            time.sleep(0.001)
        count = len(sub.signals)
        time.sleep(0.01)
        upstream.close()
        assert isinstance(sub.signals[-1], tuple)
        assert len(sub.signals) == count
        assert sub.nested == []
    assert rules_flagged(env) == []


# -- the whitebox probe: a processor's own failure ----------------------------------------------


def test_an_on_error_the_tck_never_sent_is_the_processors_own(env: Environment) -> None:
    probe = WhiteboxProbe(env)
    own = TypeError("Element must not be null")
    assert not probe.relays_sent_error(own)
    probe.own_error(own)
    assert rules_flagged(env) == []
    with pytest.raises(RuleViolation, match="an on_error of its own") as caught:
        probe.expect_complete(timeout=5.0)  # no wait: nothing can follow an on_error
    assert "within" not in str(caught.value).splitlines()[0]


def test_a_relay_of_the_tcks_error_is_processing_and_twice_breaks_2_11(env: Environment) -> None:
    probe = WhiteboxProbe(env)
    sent = RuntimeError("the upstream failed")
    probe.signalled("on_error", sent)
    assert probe.relays_sent_error(sent)
    wrapped = ValueError("wrapped")
    wrapped.__cause__ = sent
    assert probe.relays_sent_error(wrapped)
    with probe.error(sent):
        pass
    probe.expect_error(sent, timeout=0.1)
    assert rules_flagged(env) == []
    with probe.error(sent):
        pass
    assert rules_flagged(env) == ["2.11"]


# -- the counting upstream of the long streams (rstck._internal.feeder) ---------------------------


def _settled(sub: Recorder, done: Any) -> None:
    deadline = time.monotonic() + 5
    while not done() and time.monotonic() < deadline:
        time.sleep(0.001)
    time.sleep(0.02)  # anything more would come now


def test_the_counting_upstream_sends_what_is_asked_in_order_then_completes(env: Environment) -> None:
    upstream = CountingUpstream(env, "upstream", 50, lambda i: i)
    sub = Recorder(on_next=lambda s, e: s.subscription.request(1) if e % 3 == 0 and e < 40 else None)
    upstream.subscribe(sub)
    sub.subscription.request(3)
    _settled(sub, lambda: len(sub.signals) >= 5)
    assert sub.signals == list(range(5))  # 3, then 1 more from each of #0 and #3
    sub.subscription.request(45)
    _settled(sub, lambda: "complete" in sub.signals)
    assert sub.signals == [*range(50), "complete"]
    assert sub.nested == []
    assert rules_flagged(env) == []


@pytest.mark.parametrize("stop", ["cancel", "illegal"])
def test_the_counting_upstream_stops_a_run_between_two_elements(env: Environment, stop: str) -> None:
    def on_next(s: Recorder, e: Any) -> None:
        if e == 2:
            if stop == "cancel":
                s.subscription.cancel()
            else:
                s.subscription.request(0)

    upstream = CountingUpstream(env, "upstream", 1000, lambda i: i)
    sub = Recorder(on_next=on_next)
    upstream.subscribe(sub)
    sub.subscription.request(1000)  # one run of 1000, cut short at element 2
    _settled(sub, lambda: len(sub.signals) >= 3 and (stop == "cancel" or len(sub.signals) >= 4))
    assert sub.signals[:3] == [0, 1, 2]
    if stop == "cancel":
        assert sub.signals == [0, 1, 2]
    else:
        assert len(sub.signals) == 4
        assert isinstance(_errors(sub)[0], ValueError)
    assert sub.nested == []
