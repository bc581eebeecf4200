"""One test's environment: errors from foreign threads, hooks restored."""

from __future__ import annotations

import gc
import subprocess
import sys
import textwrap
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


def _in_a_fresh_interpreter(body: str) -> None:
    """Run ``body`` (asserts) where no other thread of this session's tests collects or sets the
    collector's thresholds meanwhile: the collector is one per process."""
    prelude = textwrap.dedent("""
        import gc
        from rstck._internal.contexts.base import YoungCollections
        young = YoungCollections()
        gc.disable()  # no automatic collection may reset the count while the body reads it
    """)
    done = subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(body) + "\nprint('ok')"],
                          check=False, capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "ok", done.stderr


@pytest.mark.skipif(sys.version_info >= (3, 14), reason="the incremental collector counts otherwise")
def test_the_kits_young_collections_do_not_bring_a_full_one_nearer() -> None:
    """Each test's collection of the young generations (``Context.finish``) raises the last
    threshold by one, as CPython counted it towards a full collection; the kit's next one after a
    full collection takes the offset back, and finalises what the young ones left as before."""
    _in_a_fresh_interpreter("""
        before = gc.get_threshold()
        finalised = []

        class Cycle:
            def __init__(self):
                self.me = self

            def __del__(self):
                finalised.append(True)

        Cycle()
        for _ in range(3):
            young.collect()
        assert finalised == [True], finalised  # the young garbage of the test that just ended
        assert gc.get_threshold() == (before[0], before[1], before[2] + 3), gc.get_threshold()
        assert young.offset == 3
        gc.collect()  # a full one: the next of the kit's takes the offset back, and counts itself
        young.collect()
        assert gc.get_threshold() == (before[0], before[1], before[2] + 1), gc.get_threshold()
        assert young.offset == 1
        young.restore()  # the kit's tests are over
        assert gc.get_threshold() == before, gc.get_threshold()
        assert young.offset == 0
    """)


@pytest.mark.skipif(sys.version_info >= (3, 14), reason="the incremental collector counts otherwise")
def test_the_kits_young_collections_run_no_python_code_inside_a_collection() -> None:
    """A gc callback would run inside any collection, also one inside ``sys._current_frames()``,
    which on CPython 3.11 can hang the process (python/cpython#106883)."""
    _in_a_fresh_interpreter("""
        callbacks = list(gc.callbacks)
        young.collect()
        gc.collect()
        young.collect()
        assert gc.callbacks == callbacks, gc.callbacks
    """)


@pytest.mark.skipif(sys.version_info >= (3, 14), reason="the incremental collector counts otherwise")
def test_a_threshold_the_user_sets_is_kept() -> None:
    _in_a_fresh_interpreter("""
        t0, t1, _ = gc.get_threshold()
        young.collect()
        gc.set_threshold(t0, t1, 50)
        gc.collect()
        assert gc.get_threshold() == (t0, t1, 50)
        young.collect()
        young.collect()
        assert gc.get_threshold() == (t0, t1, 52), gc.get_threshold()
        young.restore()
        assert gc.get_threshold() == (t0, t1, 50), gc.get_threshold()
    """)
