"""A conforming publisher with a slow moment now and then (what a loaded machine makes of any
publisher) must pass the race hunts that run two threads in rounds.

The 1.1 hunt of requests from another thread (``stochastic_spec101_...``) hands each round's
other part to a rival thread. A first request that returned late made that round's "emission
begun" signal come after the round, where it started the next round before its subscription
existed; a test thread slow between two rounds left the rival thread gone. Both ended in a
rule accused of a publisher that breaks none.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from rstck._internal.one_rule import run_test
from rstck.contexts import PublisherContext
from rstck.reference import range_publisher
from rstck.subjects import PublisherSubject

from tests.verdicts.test_publisher_catalogue import BY_NAME
from tests.verdicts.test_publisher_catalogue import SETTINGS

HUNT = "stochastic_spec101_requests_from_another_thread_during_emission_must_add_up_exactly"

#: Longer than the kit's timeout in SETTINGS (0.5 s): the round's wait for its emission ends first.
SLOW_S = 0.7


class _SlowOnce:
    """A subscription of the reference range publisher whose first call of one kind, from a
    thread other than the subscribing one, is slow: once per publisher."""

    def __init__(self, inner: Any, subscriber_thread: int, slow: str, moments: list[str]) -> None:
        self._inner = inner
        self._subscriber_thread = subscriber_thread
        self._slow = slow
        self._moments = moments

    def _maybe_slow(self, call: str) -> None:
        if call == self._slow and threading.get_ident() != self._subscriber_thread and call not in self._moments:
            self._moments.append(call)
            time.sleep(SLOW_S)

    def request(self, n: int) -> None:
        self._maybe_slow("request")
        self._inner.request(n)

    def cancel(self) -> None:
        self._maybe_slow("cancel")
        self._inner.cancel()


class _SlowOncePublisher:
    def __init__(self, n: int, slow: str, moments: list[str]) -> None:
        self._inner = range_publisher(n)
        self._slow = slow
        self._moments = moments

    def subscribe(self, subscriber: Any) -> None:
        if subscriber is None:
            raise TypeError("subscribe(None)")
        me, publisher = threading.get_ident(), self

        class Relay:
            def on_subscribe(self, subscription: Any) -> None:
                subscriber.on_subscribe(_SlowOnce(subscription, me, publisher._slow, publisher._moments))

            def on_next(self, element: Any) -> None:
                subscriber.on_next(element)

            def on_error(self, error: BaseException) -> None:
                subscriber.on_error(error)

            def on_complete(self) -> None:
                subscriber.on_complete()

        self._inner.subscribe(Relay())


@pytest.mark.parametrize("slow", ["request", "cancel"])
def test_a_publisher_slow_once_passes_the_hunt_of_requests_from_another_thread(slow: str) -> None:
    moments: list[str] = []
    subject = PublisherSubject(lambda n: _SlowOncePublisher(n, slow, moments), label=f"slow {slow}")
    result = run_test(BY_NAME[HUNT], lambda env: PublisherContext(env, subject), SETTINGS,
                      subject_label=subject.label)
    assert moments == [slow]  # the slow moment came, in a round before the last
    assert result.verdict == "passed", result.message[:2000]
