"""A callable run on a TCK-owned daemon thread, waited for with a deadline.

Whatever the TCK calls that may block for good (a user's factory, a signal into a subject, a
whole verification body) runs this way: the caller waits a bounded time and, if the call does
not return, abandons the thread (it is a daemon) instead of hanging with it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any


class Worker:
    """``fn()`` running on its own daemon thread from construction; its value or exception kept."""

    def __init__(self, fn: Callable[[], Any], name: str) -> None:
        self._fn = fn
        self._done = threading.Event()
        self.value: Any = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.thread.start()

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
