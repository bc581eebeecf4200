"""The kit's pooled threads: reused without a start's wait, and clean between calls."""

from __future__ import annotations

import sys
import threading
import time
from typing import Any

import pytest
from rstck._internal import worker
from rstck._internal.reach import _kit_only
from rstck._internal.worker import IDLE_NAME
from rstck._internal.worker import Worker
from rstck._internal.worker import spawn


def _idle_again(thread: threading.Thread, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while thread.name != IDLE_NAME or thread not in worker._idle:
        assert time.monotonic() < deadline, f"{thread.name} never went back to the pool"
        time.sleep(0.001)


def test_an_idle_thread_runs_the_next_call_under_its_name() -> None:
    names: list[tuple[str, int]] = []
    first = Worker(lambda: names.append((threading.current_thread().name, threading.get_ident())), "rs-tck:one")
    assert first.wait(5)
    _idle_again(first.thread)
    second = Worker(lambda: names.append((threading.current_thread().name, threading.get_ident())), "rs-tck:two")
    assert second.wait(5)
    assert second.thread is first.thread
    assert [n for n, _ in names] == ["rs-tck:one", "rs-tck:two"]
    assert names[0][1] == names[1][1]


def test_a_blocked_call_keeps_its_thread_and_the_next_call_gets_another() -> None:
    release = threading.Event()
    blocked = Worker(lambda: release.wait(5), "rs-tck:blocked")
    other = Worker(threading.get_ident, "rs-tck:other")
    try:
        assert other.wait(5)
        assert other.thread is not blocked.thread
        assert blocked.thread.name == "rs-tck:blocked"  # still at it: not handed out again
        assert blocked.thread not in worker._idle
    finally:
        release.set()
    assert blocked.wait(5)


def test_an_exception_escaping_a_pooled_call_reaches_threading_excepthook() -> None:
    seen: list[Any] = []
    previous = threading.excepthook
    threading.excepthook = lambda args: seen.append((args.exc_type, args.thread.name if args.thread else None))
    try:
        done = threading.Event()

        def boom() -> None:
            try:
                raise KeyError("from the subject")
            finally:
                done.set()

        thread = spawn(boom, "rs-tck:raising")
        assert done.wait(5)
        _idle_again(thread)
    finally:
        threading.excepthook = previous
    # Named as the call's thread, as an unpooled thread would be: the kit routes it to its test.
    assert seen == [(KeyError, "rs-tck:raising")]


def test_a_trace_function_left_by_a_call_does_not_reach_the_next() -> None:
    def leave_a_trace() -> None:
        sys.settrace(lambda *args: None)
        sys.setprofile(lambda *args: None)

    first = Worker(leave_a_trace, "rs-tck:tracer")
    assert first.wait(5)
    _idle_again(first.thread)
    second = Worker(lambda: (sys.gettrace(), sys.getprofile()), "rs-tck:after")
    assert second.wait(5)
    assert second.thread is first.thread
    assert second.result() == (None, None)


def test_idle_threads_end_after_a_while_and_count_as_the_kits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(worker, "IDLE_S", 0.05)
    # Drain the pool of threads made under the long default: they would outlive this test.
    with worker._idle_lock:
        old, worker._idle[:] = list(worker._idle), []
    try:
        call = Worker(lambda: None, "rs-tck:short-lived")
        assert call.wait(5)
        _idle_again(call.thread)
        assert _kit_only(call.thread)  # idle, it cannot call a subject: no 2.4 watch waits for it
        call.thread.join(5)
        assert not call.thread.is_alive()
        assert call.thread not in worker._idle
    finally:
        for thread in old:  # each waits on its own lock: hand it a no-op to end its wait normally
            thread.give(lambda: None, IDLE_NAME)


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs fork")
def test_a_forked_child_starts_its_own_threads() -> None:
    import os

    call = Worker(lambda: None, "rs-tck:before-fork")
    assert call.wait(5)
    _idle_again(call.thread)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: the parent's idle threads do not exist here
        try:
            child = Worker(lambda: b"ran", "rs-tck:in-child")
            os.write(write, child.result() if child.wait(5) else b"hung")
        finally:
            os._exit(0)
    os.close(write)
    try:
        assert os.read(read, 16) == b"ran"
    finally:
        os.close(read)
        os.waitpid(pid, 0)
