"""Subjects that live on an asyncio loop: every call into them is made on the TCK's loop."""

from __future__ import annotations

from pathlib import Path

import pytest

LOOP_SUBJECTS = '''
import asyncio
import threading
from rstck.reference import LoopRangePublisher

FOREVER = threading.Event()

class BlocksLoopOnCancel(LoopRangePublisher):
    """Blocks its event loop inside cancel(): the loop is lost for good."""
    def subscribe(self, subscriber):
        super().subscribe(_Wrap(subscriber, self))

class _Wrap:
    def __init__(self, inner, publisher):
        self.inner, self.publisher = inner, publisher
    def on_subscribe(self, s):
        class S:
            def request(self, n): s.request(n)
            def cancel(self): FOREVER.wait()
        self.inner.on_subscribe(S())
    def on_next(self, e): self.inner.on_next(e)
    def on_error(self, e): self.inner.on_error(e)
    def on_complete(self): self.inner.on_complete()

def blocks_loop_on_cancel(n):
    return BlocksLoopOnCancel(0, n)

class FailsInTask(LoopRangePublisher):
    """Conforming, but a background task of it crashes: the loop's handler must report it."""
    def subscribe(self, subscriber):
        async def crash():
            raise RuntimeError("background task crashed")
        asyncio.get_running_loop().create_task(crash())
        super().subscribe(subscriber)

def fails_in_task(n):
    return FailsInTask(0, n)
'''


@pytest.fixture
def loop_project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(loopsubjects=LOOP_SUBJECTS)
    pytester.syspathinsert()
    return pytester


@pytest.mark.parametrize("repeat", range(3))
def test_async_def_factory_implies_asyncio_and_passes(loop_project: pytest.Pytester, repeat: int) -> None:
    result = loop_project.runpytest(
        "--rs-publisher=rstck.reference:asyncio_range_publisher",
        "--rs-failed-publisher=rstck.reference:failed_publisher",
    )
    result.assert_outcomes(passed=59, skipped=7)


def test_loop_bound_factory_with_the_loop_option(loop_project: pytest.Pytester) -> None:
    result = loop_project.runpytest("--rs-publisher=rstck.reference:loop_range_publisher", "--rs-loop=asyncio",
                                    "--rs-rules=1.1,1.3,3.2,3.9,3.13,3.17")
    result.assert_outcomes(passed=16)


def test_loop_bound_factory_without_the_option_is_a_usage_error(loop_project: pytest.Pytester) -> None:
    result = loop_project.runpytest("--rs-publisher=rstck.reference:loop_range_publisher")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "needs --rs-loop=asyncio" in result.stderr.str()


def test_bad_loop_value(loop_project: pytest.Pytester) -> None:
    result = loop_project.runpytest("--rs-publisher=rstck.reference:range_publisher", "--rs-loop=trio")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "rs-loop must be one of thread, asyncio, got 'trio'" in result.stderr.str()


def test_a_blocked_loop_costs_its_tests_and_is_replaced(loop_project: pytest.Pytester) -> None:
    result = loop_project.runpytest_subprocess(
        "--rs-publisher=loopsubjects:blocks_loop_on_cancel", "--rs-loop=asyncio", "--rs-timeout-ms=300",
        "--rs-rules=3.7,3.9", "-p", "no:cacheprovider", timeout=120,
    )
    out = result.stdout.str()
    assert "`cancel()` neither returned nor signalled" in out
    # 3.9's tests do not cancel and run on a fresh loop after 3.7 blocked the first one (one
    # block on one path: the other tests keep their verdicts).
    result.assert_outcomes(failed=1, passed=4)


def test_loop_callback_errors_are_reported_in_their_test(loop_project: pytest.Pytester) -> None:
    result = loop_project.runpytest("--rs-publisher=loopsubjects:fails_in_task", "--rs-loop=asyncio",
                                    "--rs-rules=1.2")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        (
            "[[]rule 1.2[]] expected no exception escaping the event loop; "
            "observed RuntimeError('background task crashed') on thread rs-tck-loop"
        ),
    ])
    assert "more problem" not in result.stdout.str()


# -- subscribers: the start-up check calls their factories on a loop too ------------------------

LOOP_SUBSCRIBERS = '''
from rstck import SubscriberSubject
from tests.conforming.subscribers import LoopSubscriber

# Made on a running loop, as loop-bound libraries' subscribers are: declared so.
loop_subscriber = SubscriberSubject(lambda: LoopSubscriber(), loop="asyncio")

async def async_loop_whitebox(probe):
    """An async def factory: implies asyncio."""
    return LoopSubscriber(probe)

def undeclared_loop_subscriber():
    return LoopSubscriber()
'''

SUBSCRIBER_RULES = "--rs-rules=2.1,2.5,2.9,2.12"


@pytest.fixture
def loop_subscribers(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    pytester.makepyfile(loopsubscribers=LOOP_SUBSCRIBERS)
    pytester.syspathinsert()
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).resolve().parents[2]))  # tests.conforming, in a subprocess
    return pytester


def test_a_subscriber_factory_that_needs_a_running_loop_runs_from_the_command_line(
    loop_subscribers: pytest.Pytester,
) -> None:
    # In a subprocess: an in-process run after another one in this session would meet the kit's
    # plugin module of the first (kept on its package), whose SubscriberSubject is another class.
    result = loop_subscribers.runpytest_subprocess("--rs-subscriber=loopsubscribers:loop_subscriber",
                                                   SUBSCRIBER_RULES, "-p", "no:cacheprovider", timeout=120)
    assert result.ret == pytest.ExitCode.OK, result.stderr.str()
    result.assert_outcomes(passed=6)


def test_an_async_def_whitebox_factory_implies_asyncio_from_the_command_line(
    loop_subscribers: pytest.Pytester,
) -> None:
    result = loop_subscribers.runpytest("--rs-whitebox-subscriber=loopsubscribers:async_loop_whitebox",
                                        SUBSCRIBER_RULES)
    assert result.ret == pytest.ExitCode.OK, result.stderr.str()
    result.assert_outcomes(passed=6)


def test_a_loop_bound_subscriber_without_the_option_is_a_usage_error_naming_it(
    loop_subscribers: pytest.Pytester,
) -> None:
    result = loop_subscribers.runpytest("--rs-subscriber=loopsubscribers:undeclared_loop_subscriber")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "no running event loop (a subject that must be called on an event loop needs --rs-loop=asyncio)" in (
        result.stderr.str())


def test_a_loop_bound_subscriber_with_the_loop_option_runs_from_the_command_line(
    loop_subscribers: pytest.Pytester,
) -> None:
    result = loop_subscribers.runpytest("--rs-subscriber=loopsubscribers:undeclared_loop_subscriber",
                                        "--rs-loop=asyncio", SUBSCRIBER_RULES)
    assert result.ret == pytest.ExitCode.OK, result.stderr.str()
    result.assert_outcomes(passed=6)
