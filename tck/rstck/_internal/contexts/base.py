"""What every test body gets: the environment, probe factories, and calls the watchdog sees."""

from __future__ import annotations

import gc
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from ...errors import SetupError
from ...probe import ProbeSubscriber
from ..environment import Environment
from ..trace import short_repr


class YoungCollections:
    """The kit's collections of the young generations, kept out of the count of full ones.

    CPython counts each collection of generation 1 towards the next full collection (one after
    ten of them, once a quarter of the old objects is new), explicit ones included: one per test
    made a full collection, a walk of every object of the process (10-25 ms), every ten tests or
    so. Each of the kit's is offset by raising the collector's last threshold by one until the
    next full collection, which resets that count: the next of the kit's collections then takes
    the offset back, so full collections keep the cadence the process's own allocations give
    them. The full collections are told by the collector's statistics, not by a gc callback: a
    callback runs Python code inside any collection, and on CPython 3.11 one inside
    ``sys._current_frames()`` (a stack dump by another library) can hang the process
    (python/cpython#106883). A threshold the user set meanwhile is left as set, and counted
    from. Python 3.14's incremental collector counts otherwise: there it only collects.
    """

    def __init__(self) -> None:
        self.offset = 0  # the kit's collections since the last full one, added to the threshold
        self._set: int | None = None  # the last threshold set here, to tell one the user set
        self._full = -1  # full collections counted when the offset was last raised
        self._lock = threading.Lock()

    def collect(self) -> None:
        """Collect generations 0 and 1 now, as ``gc.collect(1)``."""
        if sys.version_info >= (3, 14):
            gc.collect(1)
            return
        with self._lock:
            self._settle()
            gc.collect(1)  # does nothing while another thread collects: an offset one too high
            t0, t1, t2 = gc.get_threshold()  # (until the next full collection) is all that costs
            self.offset += 1
            self._set = t2 + 1
            self._full = gc.get_stats()[2]["collections"]
            gc.set_threshold(t0, t1, t2 + 1)

    def restore(self) -> None:
        """Take the offset back now: the kit's tests are over, the rest of the process is the user's."""
        if sys.version_info >= (3, 14):
            return
        with self._lock:
            if self.offset:
                t0, t1, t2 = gc.get_threshold()
                if t2 == self._set:
                    gc.set_threshold(t0, t1, max(t2 - self.offset, 0))
            self.offset, self._set = 0, None

    def _settle(self) -> None:
        """Take the offset back once a full collection came, or forget it if the user set theirs."""
        if not self.offset:
            return
        t0, t1, t2 = gc.get_threshold()
        if t2 != self._set:
            self.offset, self._set = 0, None  # the user set a threshold since: theirs is the base
        elif gc.get_stats()[2]["collections"] != self._full:
            gc.set_threshold(t0, t1, max(t2 - self.offset, 0))
            self.offset, self._set = 0, None


YOUNG = YoungCollections()


class TckFailure(RuntimeError):
    """The exception the TCK signals with on_error: recognisable in traces and reports."""


class Context:
    """The base of every test body's context: the environment and the probes it made."""

    def __init__(self, env: Environment) -> None:
        self.env = env
        self.settings = env.settings
        self._probes: list[ProbeSubscriber] = []
        self._closing: list[Callable[[], object]] = []

    def probe(self, name: str = "probe", **options: Any) -> ProbeSubscriber:
        return self.keep(ProbeSubscriber(self.env, name, **options))

    def keep(self, probe: ProbeSubscriber) -> ProbeSubscriber:
        """Own ``probe``: it is closed (its subscription cancelled) when the test ends."""
        self._probes.append(probe)
        return probe

    def call(self, label: str, fn: Callable[..., Any], *args: Any) -> Any:
        """Call into the subject from the verification thread, visible to the watchdog."""
        return self.env.invoke(label, fn, *args)

    def made(self, label: str, what: str, fn: Callable[..., Any], *args: Any, advice: str = "") -> Any:
        """What a user's factory returns: an exception there is bad input, not a verdict."""
        self.env.trace.note(label)
        try:
            return self.call(label, fn, *args)
        except Exception as exc:
            raise SetupError(f"{what} raised {type(exc).__name__}: {short_repr(exc, 200)}{advice}") from exc

    def closing_quiet(self, probe: ProbeSubscriber, *, after: str = "", since: int | None = None,
                      rule: str | None = None) -> None:
        """The test's last claim: nothing more arrives on ``probe`` for a no-signal window.

        The window starts now and is waited out by ``finish``, together with the test's other
        closing claims (one window for all of them), while the engine may already start the
        next test: nothing the TCK does afterwards can make this probe's publisher signal.
        Only for claims the test body makes nothing else after.
        """
        start = probe.mark() if since is None else since
        deadline = time.monotonic() + self.settings.no_signal_window
        rule = self.env.rule if rule is None else rule

        def claim() -> None:
            probe.expect_quiet(window=max(0.0, deadline - time.monotonic()), since=start, after=after,
                               rule=rule)

        self._closing.append(claim)

    def closing_drain(self, probe: ProbeSubscriber) -> None:
        """Let ``probe``'s in-flight signals arrive before the verdict (bounded), as the test's
        last step, so that the probe's live checks see them; waited out by ``finish``."""

        def drain() -> None:
            probe.wait_quiet()

        self._closing.append(drain)

    def at_close(self, check: Callable[[], object]) -> None:
        """Run ``check`` in ``finish``, after the closing claims made before it: a test's last
        step that only waits (a drain, a settle), so the next test may start meanwhile."""
        self._closing.append(check)

    def adopt(self, *views: Context) -> None:
        """Make the closing claims of ``views`` (contexts a test body sees instead of this one)
        part of this context's, so ``finish`` waits them out and checks them."""
        for view in views:
            view._closing = self._closing

    def close(self) -> None:
        """Cancel whatever the test left open."""
        for probe in self._probes:
            probe.close()

    def finish(self) -> None:
        """Wait out the closing claims, close, then raise any problem recorded on the way."""
        try:
            if self._closing:
                if self.env.slot is not None:
                    self.env.slot.close()
                for claim in self._closing:
                    claim()
        finally:
            self.close()
            # Collect the young generations now, so that errors raised while this test's garbage
            # is finalised (an abandoned asyncio task, a __del__) are reported here and not in a
            # later test. Not the oldest: a full collection walks every object of the process
            # (26 ms per test in a small pytest session, growing with the user's imports), and
            # what this test made is young unless it lived through an older collection; that
            # rest is finalised at Python's next full collection, reported by the test then.
            YOUNG.collect()
        self.env.check()
