"""An asyncio event loop on a TCK-owned thread, for subjects that live on a loop.

With ``--rs-loop=asyncio`` every call the TCK makes into a subject (the factory, ``subscribe``,
``request``, ``cancel``, and a subscriber's ``on_*``) is run on this loop, because such
subjects (rsocket-py's streams, for one) only work when called from their loop's thread.
The verification thread still does the waiting, so while it waits for "nothing else arrives"
the loop keeps running. Exceptions from the loop's callbacks and tasks reach the running
verification through the loop's exception handler.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import threading
from collections.abc import Callable
from typing import Any

from .environment import Environment


class LoopThread:
    """One event loop running forever on a daemon thread."""

    def __init__(self, name: str = "rs-tck-loop") -> None:
        self.loop = asyncio.new_event_loop()
        self.loop.set_exception_handler(self._on_exception)
        self.env: Environment | None = None
        self._ready = threading.Event()
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.thread.start()
        self._ready.wait(5)

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.call_soon(self._ready.set)
        self.loop.run_forever()

    def _on_exception(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        env = self.env
        if env is None or env.closed:
            return
        error = context.get("exception")
        if not isinstance(error, BaseException):
            # asyncio's own diagnostics ("Task was destroyed but it is pending!") name no
            # exception and surface whenever garbage happens to be collected: a note in the
            # trace, not a verdict on whichever test is running at that moment.
            env.trace.note(f"event loop: {context.get('message', 'diagnostic')}")
            return
        if isinstance(error, asyncio.CancelledError) or getattr(error, "rs_tck_internal", False):
            return
        env.flop(error, source="loop")

    @property
    def on_loop_thread(self) -> bool:
        return threading.get_ident() == self.thread.ident

    def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run ``fn(*args)`` on the loop (awaiting it if it returns an awaitable); return its result.

        From the loop's own thread (a probe requesting inside ``on_next``) the call is made
        directly: waiting for the loop there would wait for ourselves.
        """
        if self.on_loop_thread:
            return fn(*args)
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()

        def run() -> None:
            try:
                result = fn(*args)
            except BaseException as exc:
                future.set_exception(exc)
                return
            if inspect.isawaitable(result):
                task = asyncio.ensure_future(result)
                task.add_done_callback(lambda t: _settle(future, t))
            else:
                future.set_result(result)

        self.loop.call_soon_threadsafe(run)
        # Unbounded here on purpose: the runner's watchdog notices a call that neither
        # returns nor signals and abandons this thread, as it would for a direct call.
        return future.result()

    def responsive(self, timeout: float) -> bool:
        """Whether the loop runs a callback within ``timeout`` (a subject may have blocked it)."""
        if not self.thread.is_alive():
            return False
        done = threading.Event()
        self.loop.call_soon_threadsafe(done.set)
        return done.wait(timeout)


def _settle(future: concurrent.futures.Future[Any], task: asyncio.Future[Any]) -> None:
    if task.cancelled():
        future.set_exception(asyncio.CancelledError())
    elif (error := task.exception()) is not None:
        future.set_exception(error)
    else:
        future.set_result(task.result())


_shared: LoopThread | None = None
_lock = threading.Lock()


def shared_loop(env: Environment, timeout: float) -> LoopThread:
    """The session's loop, replaced by a fresh one if an earlier subject left it blocked."""
    global _shared
    with _lock:
        if _shared is not None and not _shared.responsive(timeout):
            env.trace.note("the event loop is blocked by an earlier verification; starting a new one")
            _shared = None
        if _shared is None:
            _shared = LoopThread()
        _shared.env = env
        return _shared
