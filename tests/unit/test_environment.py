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
