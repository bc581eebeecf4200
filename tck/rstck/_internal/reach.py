"""Whether anything but the kit can still run a subject's code: when a watch or a window may end.

A 2.4 watch looks for requests a subscriber makes after its terminal signal, from a worker
or a credit timer, for a second. A subscriber can only act later on a thread: one of its own
(a worker, a ``threading.Timer``, a pool, an event loop's), or one that calls it. Once no live
thread is anything but the kit's own (which call a subject only while a test drives it), and
the subject's loop is not one the kit runs, nothing can make that request: waiting out the
rest of the second would prove nothing more. Any other thread, whoever started it and
whatever it waits on, keeps the watch going to its end. A subscriber test's quiet window
(``ManualPublisher.settle``) ends at once on the same look, and a kit thread alone with the
kit (``only_the_kit_runs``) skips what only another thread could use: a 0 s yield inside a call
on the TCK's upstream, a fuzz scenario's hand-over of its turn or of a send with nothing to send.
The test's own thread with every other thread idle in the kit's pool (``alone_with_idle_kit_threads``:
a race hunt between two rounds) skips a probe's or the upstream's yield, whoever called before.
"""

from __future__ import annotations

import gc
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .worker import IDLE_NAME

#: Every thread the kit starts is named with this prefix.
KIT_PREFIX = "rs-tck"

_lock = threading.Lock()
_threads = threading.enumerate  # the live threads (a seam for tests)
_waiting: dict[int, int] = {}  # thread ident -> depth: consumers blocked in the kit for results


@contextmanager
def waiting_for_results() -> Iterator[None]:
    """Mark the calling thread as blocked in the kit (a consumer waiting for a verdict)."""
    ident = threading.get_ident()
    with _lock:
        _waiting[ident] = _waiting.get(ident, 0) + 1
    try:
        yield
    finally:
        with _lock:
            if _waiting[ident] == 1:
                del _waiting[ident]
            else:
                _waiting[ident] -= 1


def _kit_only(thread: threading.Thread) -> bool:
    # The kit's event loops run subjects' callbacks, timers included: never "only the kit".
    return thread.name.startswith(KIT_PREFIX) and "loop" not in thread.name


def nothing_else_runs() -> bool:
    """True when every live thread but the caller is the kit's own or waits in it for results."""
    me = threading.get_ident()
    with _lock:
        waiting = set(_waiting)
    for thread in _threads():  # (a loop, not ``all()`` of a generator: a fuzz search asks often)
        name = thread.name
        if name.startswith(KIT_PREFIX) and "loop" not in name:  # ``_kit_only``, inlined
            continue
        ident = thread.ident
        if ident != me and ident not in waiting:
            return False
    return True


def only_the_kit_runs() -> bool:
    """True when the caller is one of the kit's own threads and ``nothing_else_runs``: no thread
    could be inside the subject beside it. A subject's own thread is never alone: the kit's
    threads may call the subject while it works."""
    return _kit_only(threading.current_thread()) and nothing_else_runs()


def alone_with_idle_kit_threads() -> bool:
    """True when every live thread but the caller is one of the kit's pooled threads idle
    between calls (``IDLE_NAME``) or waits in the kit for results: none is in a subject's code
    or can enter it before the caller hands it a call. A yield meant to let a rival thread in
    (a 0 s sleep: a thread switch and a timer's slack) would find none."""
    me = threading.get_ident()
    with _lock:
        waiting = set(_waiting)
    return all(t.ident == me or t.ident in waiting or t.name == IDLE_NAME for t in _threads())


_FRAMES_LOCK = threading.Lock()


def thread_frames() -> dict[int, Any]:
    """``sys._current_frames()``, one caller at a time and with the collector held off.

    CPython 3.11 builds that dict holding the runtime's thread-list lock: a collection there
    (a gc callback, such as Hypothesis's, or a finalizer) may hand the GIL to a thread that then
    waits for that lock (one starting or ending, or a second such call), and both hang for good
    (python/cpython#106883).
    """
    with _FRAMES_LOCK:
        enabled = gc.isenabled()
        gc.disable()
        try:
            return sys._current_frames()
        finally:
            if enabled:
                gc.enable()
