"""Subjects that live on an event loop: the loop their factories are called on, at start-up and in
the tests, for subscribers and processors as for publishers."""

from __future__ import annotations

from typing import Any

import pytest
from rstck.errors import SetupError
from rstck.reference import IdentityProcessor
from rstck.reference import identity_processor
from rstck.run_api import run_verification
from rstck.settings import Settings
from rstck.subjects import ProcessorSubject
from rstck.subjects import PublisherSubject
from rstck.subjects import SubscriberSubject
from rstck.subjects import WhiteboxSubject
from rstck.subjects import smoke_check_subject

from tests.conforming.subscribers import LoopSubscriber


async def async_subscriber() -> LoopSubscriber:
    return LoopSubscriber()


async def async_whitebox(probe: Any) -> LoopSubscriber:
    return LoopSubscriber(probe)


async def async_processor() -> IdentityProcessor:
    return identity_processor()


async def async_publisher(n: int) -> Any:
    raise NotImplementedError


@pytest.mark.parametrize("subject", [
    SubscriberSubject(async_subscriber), WhiteboxSubject(async_whitebox), ProcessorSubject(async_processor),
    PublisherSubject(async_publisher),
], ids=lambda s: type(s).__name__)
def test_an_async_def_factory_implies_asyncio_unless_the_user_chose(subject: Any) -> None:
    assert subject.apply(Settings()).loop == "asyncio"
    chosen = Settings(loop="thread", explicit=frozenset({"loop"}))
    assert subject.apply(chosen).loop == "thread"


def test_a_plain_factory_implies_no_loop() -> None:
    assert SubscriberSubject(lambda: LoopSubscriber()).apply(Settings()).loop == "thread"
    assert ProcessorSubject(identity_processor).apply(Settings()).loop == "thread"


@pytest.mark.parametrize(("subject", "option"), [
    (SubscriberSubject(async_subscriber), "--rs-subscriber"),
    (WhiteboxSubject(async_whitebox), "--rs-whitebox-subscriber"),
    (ProcessorSubject(async_processor), "--rs-processor"),
    (SubscriberSubject(lambda: LoopSubscriber(), loop="asyncio"), "--rs-subscriber"),
    (WhiteboxSubject(lambda probe: LoopSubscriber(probe), loop="asyncio"), "--rs-whitebox-subscriber"),
], ids=["async-subscriber", "async-whitebox", "async-processor", "declared-subscriber", "declared-whitebox"])
def test_the_start_up_check_calls_a_loop_subjects_factory_on_a_loop(subject: Any, option: str) -> None:
    smoke_check_subject(subject, option, timeout=5.0)


def test_the_start_up_check_follows_the_runs_loop_option() -> None:
    undeclared = SubscriberSubject(lambda: LoopSubscriber(), label="undeclared")
    smoke_check_subject(undeclared, "--rs-subscriber", timeout=5.0, loop="asyncio")
    with pytest.raises(SetupError, match=r"no running event loop \(a subject that must be called on an "
                                         r"event loop needs --rs-loop=asyncio\)"):
        smoke_check_subject(undeclared, "--rs-subscriber", timeout=5.0)


def test_an_awaitable_returned_off_a_loop_is_refused_with_the_option_that_awaits_it() -> None:
    plain = WhiteboxSubject(lambda probe: async_whitebox(probe), label="plain")
    with pytest.raises(SetupError, match=r"plain: calling it returned an awaitable; run with --rs-loop=asyncio"):
        smoke_check_subject(plain, "--rs-whitebox-subscriber", timeout=5.0)


def test_an_async_def_whitebox_factory_is_awaited_in_the_tests() -> None:
    results = run_verification("subscriber_whitebox", WhiteboxSubject(async_whitebox), Settings(no_signal_window=0.05),
                               rules=["2.1", "2.13"])
    assert results
    assert all(r.outcome == "passed" for r in results), [r.message for r in results]
