"""Threads a subject leaks must not keep the pytest process alive after the report is written.

A subject that starts a non-daemon thread that never ends (say, in ``subscribe``) would make the
interpreter wait for it forever at exit, after the session has already reported. At unconfigure
the plugin names such threads in a warning and stops the interpreter from waiting for them; an
``os._exit`` would do the same but drop buffered output and the exit status of plugins.
"""

from __future__ import annotations

import threading
import weakref
from collections import Counter
from collections.abc import Callable

#: Threads the interpreter must not wait for at exit (CPython 3.13+; see ``_spare``).
_released: weakref.WeakSet[threading.Thread] = weakref.WeakSet()


def snapshot() -> set[threading.Thread]:
    return set(threading.enumerate())


def leaked_since(before: set[threading.Thread]) -> list[threading.Thread]:
    """Non-daemon threads started after ``before`` was taken and still running."""
    return [t for t in threading.enumerate()
            if t not in before and t.is_alive() and not t.daemon and t is not threading.main_thread()]


def release(threads: list[threading.Thread]) -> bool:
    """Let the interpreter exit without joining ``threads``; False where CPython's internals differ.

    At exit the interpreter calls ``threading._shutdown``, which waits for every non-daemon
    thread. On 3.11/3.12 it joins the ``_tstate_lock`` of each thread kept in
    ``threading._shutdown_locks``: marking the thread daemon alone does not remove that lock, so
    both are done. From 3.13 it ends in ``_thread._shutdown``, which waits on the C-level handle
    of every non-daemon thread and offers no way to drop one: ``_spare`` stands in for it.
    """
    locks = getattr(threading, "_shutdown_locks", None)
    guard = getattr(threading, "_shutdown_locks_lock", None)
    if isinstance(locks, set) and guard is not None:
        with guard:
            for thread in threads:
                thread._daemonic = True  # type: ignore[attr-defined]
                locks.discard(getattr(thread, "_tstate_lock", None))
        return True
    if callable(getattr(threading, "_thread_shutdown", None)):
        _released.update(threads)
        _spare()
        for thread in threads:
            thread._daemonic = True  # type: ignore[attr-defined]
        return True
    return False


def _spare() -> None:
    """Replace ``threading._thread_shutdown`` (3.13+) by a wait that leaves released threads out.

    While a released thread is alive, exit joins every other non-daemon thread, as CPython
    would; once none is alive, CPython's own wait runs unchanged. Installed once per process.
    """
    original = threading._thread_shutdown  # type: ignore[attr-defined]
    if getattr(original, "rstck_spares_released", False):
        return

    def shutdown() -> None:
        if not any(t.is_alive() for t in _released):
            original()
            return
        me = threading.current_thread()
        while True:
            waiting = [t for t in threading.enumerate()
                       if t is not me and t is not threading.main_thread() and not t.daemon
                       and t not in _released and t.is_alive()]
            if not waiting:
                return
            for thread in waiting:
                thread.join()

    shutdown.rstck_spares_released = True  # type: ignore[attr-defined]
    threading._thread_shutdown = shutdown  # type: ignore[attr-defined]


def names_by_count(names: list[str]) -> str:
    """``rs-worker x148, leaked-by-subscribe``: each name once, with how often it repeats."""
    counts = Counter(names)
    return ", ".join(name if n == 1 else f"{name} x{n}" for name, n in counts.most_common())


def release_leaked(before: set[threading.Thread], write: Callable[[str], None]) -> list[str]:
    """Warn about and release the threads leaked since ``before``; their names."""
    leaked = leaked_since(before)
    if not leaked:
        return []
    names = [t.name for t in leaked]
    released = release(leaked)
    write(f"rs-tck: WARNING {len(names)} non-daemon thread(s) started during the run are still alive: "
          f"{names_by_count(names)}; "
          + ("the process exits without waiting for them" if released else "exit may wait for them"))
    return names
