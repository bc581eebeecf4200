"""What every test body gets: the environment, probe factories, and calls the watchdog sees."""

from __future__ import annotations

import gc
from collections.abc import Callable
from typing import Any

from ..environment import Environment
from ..errors import SetupError
from ..probe import ProbeSubscriber
from ..trace import short_repr


class TckFailure(RuntimeError):
    """The exception the TCK signals with on_error: recognisable in traces and reports."""


class Context:
    """The base of every test body's context: the environment and the probes it made."""

    def __init__(self, env: Environment) -> None:
        self.env = env
        self.settings = env.settings
        self._probes: list[ProbeSubscriber] = []

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

    def close(self) -> None:
        """Cancel whatever the test left open."""
        for probe in self._probes:
            probe.close()

    def finish(self) -> None:
        """Close, then raise any problem recorded on the way."""
        self.close()
        # Collect now, so that errors raised while this test's garbage is finalised (an
        # abandoned asyncio task, a __del__) are reported here and not in a later test.
        gc.collect()
        self.env.check()
