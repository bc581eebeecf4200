"""A callable run on a TCK-owned daemon thread, waited for with a deadline.

Whatever the TCK calls that may block for good (a user's factory, a signal into a subject, a
whole verification body) runs this way: the caller waits a bounded time and, if the call does
not return, abandons the thread (it is a daemon) instead of hanging with it.

The threads are pooled (``spawn``). ``Thread.start`` waits until the new thread has run, and
while another thread computes (a fuzz search, a long stream) that costs two turns of the
interpreter lock, about 10 ms, per start; a verification starts hundreds (a body per test, a
feeder per stream). An idle pooled thread is handed its next call without that wait.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from typing import Any

#: The name of a pooled thread between calls: the kit's own (``rstck._internal.reach``), doing nothing.
IDLE_NAME = "rs-tck-idle"
#: How long a pooled thread waits for its next call before it ends.
IDLE_S = 10.0

_idle: list[_Pooled] = []
_idle_lock = threading.Lock()


def _forked() -> None:
    # A forked child has only the thread that forked: the pooled ones it lists do not exist there
    # (a call handed to one would never run), and the lock may have been held mid-fork.
    global _idle_lock
    _idle.clear()
    _idle_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forked)


class _Pooled(threading.Thread):
    """A daemon thread that runs one call after another, renamed for each."""

    def __init__(self, fn: Callable[[], object], name: str) -> None:
        super().__init__(name=name, daemon=True)
        self._go = threading.Lock()  # released when a call is handed over
        self._job: Callable[[], object] | None = fn

    def give(self, fn: Callable[[], object], name: str) -> None:
        self.name = name  # named for its call from the hand-over on, before it wakes to run it
        self._job = fn
        self._go.release()

    def run(self) -> None:
        while True:
            fn, self._job = self._job, None
            assert fn is not None
            try:
                fn()
            except BaseException:  # what an unpooled thread does: threading.excepthook
                self._report()
            finally:
                del fn
                # A race hunt traces the subject's thread; nothing of that may reach the next call.
                sys.settrace(None)
                sys.setprofile(None)
            self.name = IDLE_NAME
            self._go.acquire(blocking=False)  # reset: held until the next give()
            with _idle_lock:
                _idle.append(self)
            if not self._go.acquire(timeout=IDLE_S):
                with _idle_lock:
                    if self in _idle:
                        _idle.remove(self)
                        return
                self._go.acquire()  # taken from the pool meanwhile: its call is on the way

    def _report(self) -> None:
        exc_type, exc_value, exc_tb = sys.exc_info()
        try:
            threading.excepthook(threading.ExceptHookArgs((exc_type, exc_value, exc_tb, self)))
        finally:
            del exc_type, exc_value, exc_tb


def spawn(fn: Callable[[], object], name: str) -> threading.Thread:
    """Run ``fn`` on a kit thread named ``name`` (an idle pooled one if any), without waiting."""
    with _idle_lock:
        thread = _idle.pop() if _idle else None
    if thread is None:
        thread = _Pooled(fn, name)
        thread.start()
    else:
        thread.give(fn, name)
    return thread


class Worker:
    """``fn()`` running on its own daemon thread from construction; its value or exception kept."""

    def __init__(self, fn: Callable[[], Any], name: str) -> None:
        self._fn = fn
        self._done = threading.Event()
        self.value: Any = None
        self.error: BaseException | None = None
        self.thread = spawn(self._run, name)

    def _run(self) -> None:
        try:
            self.value = self._fn()
        except BaseException as exc:  # handed to whoever waits; a subject may raise anything
            self.error = exc
        finally:
            self._done.set()

    def wait(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds; whether ``fn`` has finished (returned or raised)."""
        return self._done.wait(max(0.0, timeout))

    def result(self) -> Any:
        """The value ``fn`` returned, or its exception raised again; only once it finished."""
        if self.error is not None:
            raise self.error
        return self.value
