"""Threads a subject leaks must not keep the pytest process alive after the report is written.

A subject that starts a non-daemon thread that never ends (say, in ``subscribe``) would make the
interpreter wait for it forever at exit, after the session has already reported. At unconfigure
the plugin names such threads in a warning and stops the interpreter from waiting for them; an
``os._exit`` would do the same but drop buffered output and the exit status of plugins.
"""

from __future__ import annotations

import threading
from collections.abc import Callable


def snapshot() -> set[threading.Thread]:
    return set(threading.enumerate())


def leaked_since(before: set[threading.Thread]) -> list[threading.Thread]:
    """Non-daemon threads started after ``before`` was taken and still running."""
    return [t for t in threading.enumerate()
            if t not in before and t.is_alive() and not t.daemon and t is not threading.main_thread()]


def release(threads: list[threading.Thread]) -> bool:
    """Let the interpreter exit without joining ``threads``; False where CPython's internals differ.

    On CPython 3.11/3.12 ``threading._shutdown`` joins the ``_tstate_lock`` of every non-daemon
    thread kept in ``threading._shutdown_locks``; marking the thread daemon alone does not remove
    that lock, so both are done.
    """
    locks = getattr(threading, "_shutdown_locks", None)
    guard = getattr(threading, "_shutdown_locks_lock", None)
    if not isinstance(locks, set) or guard is None:
        return False
    with guard:
        for thread in threads:
            thread._daemonic = True  # type: ignore[attr-defined]
            locks.discard(getattr(thread, "_tstate_lock", None))
    return True


def release_leaked(before: set[threading.Thread], write: Callable[[str], None]) -> list[str]:
    """Warn about and release the threads leaked since ``before``; their names."""
    leaked = leaked_since(before)
    if not leaked:
        return []
    names = [t.name for t in leaked]
    released = release(leaked)
    write(f"rs-tck: WARNING {len(names)} non-daemon thread(s) started during the run are still alive: "
          f"{', '.join(names)}; "
          + ("the process exits without waiting for them" if released else "exit may wait for them"))
    return names
