"""One environment per scenario: its own trace and problems, the verification's watchdog.

The search runs dozens of scenarios inside one verification; each must be judged on what it
alone did, so each gets a fresh ``Environment``. Calls into the subject still go through the
verification's dispatch (its event loop under ``--rs-loop=asyncio``) and stay visible to the
verification's watchdog, so a subject that blocks costs this verification, not the session.
The environment knows when no thread but a signalling one could enter the subject (``racing``).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from collections.abc import Iterator
from typing import Any

from ..environment import Environment
from ..reach import only_the_kit_runs
from ..worker import spawn


class ScenarioEnvironment(Environment):
    """An environment nested in the verification's: own records, shared dispatch and watchdog."""

    def __init__(self, outer: Environment) -> None:
        self.outer = outer  # first: ``_progress`` is the outer's from the base's __init__ on
        super().__init__(outer.settings)
        self.dispatch = outer.dispatch
        self.rule = outer.rule
        self.body_ident = outer.body_ident
        #: What the verification's thread waits for, blocked, right now (``racing``): until it
        #: holds, that thread makes no call (a signal it waits for, the end of a timed sleep).
        #: None: it is not so waiting.
        self.awaiting: Callable[[], bool] | None = None
        #: The threads running a call handed over by ``call_on_thread`` right now.
        self.handed: list[int] = []
        #: In a screened batch, the scenario whose subject the verification's thread calls
        #: now, or will call next; a probe names its scenario (``scenario``). None: any.
        self.focus: object = None

    def racing(self, probe: object = None) -> bool:
        """Whether a probe's signal should yield: not while no other thread could enter the
        subject meanwhile. That is so while the verification's thread waits, blocked, for
        what has not happened yet (``awaiting``), no call handed over runs but the signalling
        thread's own, and only the kit runs (no thread of the subject's, no event loop): a
        processor's feeder delivering while the search waits for what is owed, or sleeps out a
        window that is not over yet. The yield
        would only hand the interpreter to a thread that looks and waits again (a thread
        switch on both sides, about a fifth of a processor's search). A signal that ends the
        wait (its condition holds once it is counted) still yields: the woken thread may call.

        In a screened batch, the verification's thread calls one scenario's subject at a time
        (``focus``), and the next only once that one's probes are inside no signal (``_idle``):
        a signal of another scenario's probe has no call of that thread to meet meanwhile,
        whatever it waits for. (Scenarios of a batch meeting each other prove nothing: a batch
        that fails runs its scenarios again one by one, and only those are judged.)
        """
        focus = self.focus
        if focus is None or getattr(probe, "scenario", focus) is focus:
            awaiting = self.awaiting
            if awaiting is None or awaiting():
                return True
        handed = self.handed
        if handed and (len(handed) > 1 or handed[0] != threading.get_ident()):
            return True
        return self.settings.loop == "asyncio" or not only_the_kit_runs()

    def bump(self) -> None:
        self.outer.bump()

    @property
    def _progress(self) -> int:
        """The verification's count: the probes bump it inlined (``env._progress += 1``, or a
        trace seq written on on_next's fast path), and its watchdog and a scenario's quiet
        window must see every signal of the scenario."""
        return self.outer._progress

    @_progress.setter
    def _progress(self, value: int) -> None:
        self.outer._progress += 1  # a change, whatever the value: only change is looked for

    def invoke(self, label: str, fn: Callable[..., Any], *args: Any) -> Any:
        """The verification's own ``invoke``: it marks its thread inside the call, inlined
        (through ``calling`` each would cost a context manager: a search makes thousands)."""
        return self.outer.invoke(label, fn, *args)

    def calling(self, label: str) -> Any:
        """The verification's own context manager, not a second one wrapped around it: a
        scenario makes a few thousand calls a search."""
        return self.outer.calling(label)

    def aside(self) -> Any:
        """A scenario's wait is the verification's: other tests may call meanwhile."""
        return self.outer.aside()


def linked_contexts(ctx: Any) -> list[Any]:
    """``ctx`` and every context it works through (a processor's views and the processor's own).

    They all hold the environment they record into, so a scenario must switch all of them.
    """
    from ...contexts import Context

    found: list[Any] = []
    stack = [ctx]
    while stack:
        item = stack.pop()
        if not isinstance(item, Context) or any(item is seen for seen in found):
            continue
        found.append(item)
        stack.extend(value for value in vars(item).values() if isinstance(value, Context))
        subject = getattr(item, "subject", None)
        makers = [getattr(subject, "factory", None), getattr(subject, "failed_factory", None),
                  getattr(item, "whitebox_subscriber", None)]
        stack.extend(getattr(maker, "__self__", None) for maker in makers)
    return found


@contextlib.contextmanager
def scenario_env(ctx: Any) -> Iterator[ScenarioEnvironment]:
    """Point ``ctx`` (and its linked contexts) at a fresh scenario environment; close what it opened."""
    outer: Environment = ctx.env
    env = ScenarioEnvironment(outer)
    contexts = linked_contexts(ctx)
    opened = [(len(getattr(c, "_upstreams", ())), len(getattr(c, "_probes", ()))) for c in contexts]
    for context in contexts:
        context.env = env
    enclosing, outer.nested = outer.nested, env
    try:
        with env:
            yield env
    finally:
        outer.nested = enclosing
        for context, (upstream_count, probe_count) in zip(contexts, opened, strict=True):
            context.env = outer
            upstreams = getattr(context, "_upstreams", None)
            if upstreams is not None:
                for upstream in upstreams[upstream_count:]:
                    upstream.close()
                del upstreams[upstream_count:]
            probes = getattr(context, "_probes", None)
            if probes is not None:
                del probes[probe_count:]  # the scenario's own: closed with its environment


def call_on_thread(env: Environment, label: str, fn: Callable[[], Any], timeout: float) -> bool:
    """Run ``fn`` on a kit thread of its own and wait for it; False if it did not return in time.

    A plain lock, held until ``fn`` returns, is the gate (an ``Event`` costs a ``Condition``
    on both sides: a search hands off hundreds of calls). In a scenario's environment the
    thread is listed in ``handed`` while ``fn`` runs (``racing``).
    """
    done = threading.Lock()
    done.acquire()
    handed = env.handed if isinstance(env, ScenarioEnvironment) else []

    def run() -> None:
        me = threading.get_ident()
        handed.append(me)
        try:
            fn()
        finally:
            handed.remove(me)
            done.release()

    with env.calling(label):
        spawn(run, "rs-tck-fuzz-caller")
        return done.acquire(timeout=max(0.0, timeout))
