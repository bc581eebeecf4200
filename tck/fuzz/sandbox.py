"""One environment per scenario: its own trace and problems, the verification's watchdog.

Hypothesis runs dozens of scenarios inside one verification; each must be judged on what it
alone did, so each gets a fresh ``Environment``. Calls into the subject still go through the
verification's dispatch (its event loop under ``--rs-loop=asyncio``) and stay visible to the
verification's watchdog, so a subject that blocks costs this verification, not the session.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from collections.abc import Iterator
from typing import Any

from ..environment import Environment


class ScenarioEnvironment(Environment):
    """An environment nested in the verification's: own records, shared dispatch and watchdog."""

    def __init__(self, outer: Environment) -> None:
        super().__init__(outer.settings)
        self.outer = outer
        self.dispatch = outer.dispatch
        self.rule = outer.rule
        self.body_ident = outer.body_ident

    def bump(self) -> None:
        self.outer.bump()

    @contextlib.contextmanager
    def calling(self, label: str) -> Iterator[None]:
        with self.outer.calling(label):
            yield


@contextlib.contextmanager
def scenario_env(ctx: Any) -> Iterator[ScenarioEnvironment]:
    """Point ``ctx`` at a fresh scenario environment for the duration; close what it opened."""
    outer: Environment = ctx.env
    env = ScenarioEnvironment(outer)
    upstreams = getattr(ctx, "_upstreams", None)
    opened = len(upstreams) if upstreams is not None else 0
    ctx.env = env
    try:
        with env:
            yield env
    finally:
        ctx.env = outer
        if upstreams is not None:
            for upstream in upstreams[opened:]:
                upstream.close()
            del upstreams[opened:]


def call_on_thread(env: Environment, label: str, fn: Callable[[], Any], timeout: float) -> bool:
    """Run ``fn`` on a fresh thread and wait for it; False if it did not return in time."""
    done = threading.Event()

    def run() -> None:
        try:
            fn()
        finally:
            done.set()

    thread = threading.Thread(target=run, name="rs-tck-fuzz-caller", daemon=True)
    with env.calling(label):
        thread.start()
        return done.wait(timeout)
