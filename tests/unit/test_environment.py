"""One test's environment: errors from foreign threads, hooks restored."""

from __future__ import annotations

import gc
import threading

import pytest
from rstck._internal.environment import Environment
from rstck.errors import RuleViolation
from rstck.settings import Settings


def test_environment_collects_every_error_from_foreign_threads(env: Environment) -> None:
    def boom(text: str) -> None:
        raise RuntimeError(text)

    threads = [threading.Thread(target=boom, args=(f"boom {i}",), name=f"subject-{i}") for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    class Finalizer:
        def __del__(self) -> None:
            raise KeyError("in __del__")

    Finalizer()
    gc.collect()
    sources = sorted((p.source, p.thread) for p in env.problems)
    assert sources == [("thread", "subject-0"), ("thread", "subject-1"), ("unraisable", "MainThread")]
    with pytest.raises(RuleViolation, match=r"RuntimeError\('boom 0'\) on thread subject-0") as info:
        env.check()
    assert "no exception escaping a thread" in str(info.value)


def test_environment_restores_previous_hooks() -> None:
    before = threading.excepthook
    with Environment(Settings()):
        assert threading.excepthook is not before
    assert threading.excepthook is before


def test_a_call_into_the_subject_is_marked_for_the_watchdog_where_the_environment_says() -> None:
    """``invoke`` marks the verification thread's outermost call (what the watchdog reads), and a
    nested environment that marks its calls in the outer one (a fuzz scenario's) is obeyed."""
    from rstck._internal.fuzz.sandbox import ScenarioEnvironment

    outer = Environment(Settings())
    outer.body_ident = threading.get_ident()
    seen: list[object] = []

    def call(env: Environment) -> None:
        seen.append((outer.current_call or ("",))[0])
        seen.append(env.current_call if env is not outer else None)

    outer.invoke("request(1)", call, outer)
    nested = ScenarioEnvironment(outer)
    nested.invoke("request(2)", call, nested)
    assert seen == ["request(1)", None, "request(2)", None]
    assert outer.current_call is None
    off_thread = threading.Thread(target=outer.invoke, args=("request(3)", call, outer))
    off_thread.start()
    off_thread.join()
    assert seen[-2:] == ["", None]  # another thread's call is not the verification's
