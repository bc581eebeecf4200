"""Fuzzing a subscriber: the TCK plays a publisher sending legal signal orders in many shapes.

The upstream only ever sends what is legal: elements within the demand the subscriber
signalled (one by one or in bursts, from the test thread or another thread, or synchronously
inside the subscriber's own ``request()`` as rules 3.10/3.11 allow), elements after the
subscriber cancelled while demand is outstanding (2.8), and ``on_complete``/``on_error`` at any
point, with or without outstanding demand (2.9, 2.10). For a whitebox subscriber it also pulls
the puppet (``request(k)``, ``cancel()``).

The verdict rests on the live checks of the TCK's upstream (2.3, 2.7, 3.9, 2.13) and the
whitebox probe (2.11: each signal processed once), and on the subscriber's demand accounting:
a subscriber that, fed one element at a time from the test thread, keeps asking for more must
keep asking under any other legal delivery order too. One that stops asking (without
cancelling) because, say, an ``on_next`` arrived inside its own ``request()`` and its counter
lost the update would wait forever: rule 2.1, shown against the one-by-one run.
"""

from __future__ import annotations

import functools
import random
import threading
import time
from collections.abc import Callable
from collections.abc import Iterator
from typing import Any

from ...errors import RuleViolation
from ...manual import ManualPublisher
from ...manual import ManualSubscription
from ..environment import Environment
from ..one_rule import stall_limit
from ..reach import nothing_else_runs
from ..reach import only_the_kit_runs
from ..worker import spawn
from .sandbox import scenario_env
from .scenario import Scenario
from .search import drop_chunks
from .search import pick

#: Elements a scenario's upstream has available.
_SIZES = (0, 1, 2, 3, 5, 8, 20, 50)


@functools.lru_cache(maxsize=2)
def generator(*, whitebox: bool) -> Callable[[random.Random], Scenario]:
    """Scenarios ``(n, steps)``: an upstream of n elements and what it (or the puppet) does
    (the same function each time, so that ``search.expand`` makes each seed's once)."""

    def generate(rng: random.Random) -> Scenario:
        def via() -> str:
            return str(pick(rng, ((2, "here"), (1, "thread"))))

        def step() -> tuple[Any, ...]:
            rows: list[tuple[int, Any]] = [
                (6, lambda: ("send", rng.randint(1, 4), via())),
                (2, lambda: ("send", rng.randint(5, 60), via())),
                (4, lambda: ("inline", rng.random() < 0.7)),
                (1, ("run",)),
                (1, ("complete",)),
                (1, ("error",)),
            ]
            if whitebox:
                rows += [(2, lambda: ("puppet_request", rng.randint(1, 5))), (1, ("puppet_cancel",))]
            return tuple(pick(rng, rows))

        count = rng.randint(0, 10) if rng.random() < 0.85 else rng.randint(30, 150)
        # Mostly long enough that a subscriber which stops asking is seen stopping early.
        n = rng.choice(_SIZES[4:]) if rng.random() < 0.8 else rng.choice(_SIZES)
        return (n, tuple(step() for _ in range(count)))

    return generate


def candidates(scenario: Scenario) -> Iterator[Scenario]:
    """Simpler variants of a failing scenario, for the shrinker."""
    n, steps = scenario
    for shorter in drop_chunks(steps):
        yield (n, shorter)
    for smaller in sorted({k for k in _SIZES if k < n} | {n // 2, n - 1}):
        if smaller >= 0:
            yield (smaller, steps)
    for i, step in enumerate(steps):
        simpler: list[tuple[Any, ...]] = []
        if step[0] == "send":
            simpler += [("send", k, step[2]) for k in (1, step[1] // 2) if 0 < k < step[1]]
            if step[2] == "thread":
                simpler.append(("send", step[1], "here"))
        elif step[0] == "puppet_request" and step[1] > 1:
            simpler.append(("puppet_request", 1))
        for variant in simpler:
            yield (n, (*steps[:i], variant, *steps[i + 1:]))


def well_formed(scenario: Any) -> bool:
    try:
        n, steps = scenario
        return isinstance(n, int) and n >= 0 and all(isinstance(s, tuple) and s and isinstance(s[0], str)
                                                     for s in steps)
    except (TypeError, ValueError):
        return False


@functools.lru_cache(maxsize=1024)
def _step_text(step: tuple[Any, ...]) -> str:
    """A step as the trace and the steps show it (cached: a few hundred distinct ones)."""
    kind = step[0]
    if kind == "send":
        where = " from another thread (waited for)" if step[2] == "thread" else ""
        return f"send up to {step[1]} element(s) within the outstanding demand{where}"
    if kind == "inline":
        return ("from now on deliver inside request(), synchronously (rule 3.10)" if step[1]
                else "from now on deliver from the test thread, not inside request()")
    return {
        "run": "let it run (wait until the subscriber makes no call)",
        "complete": "signal on_complete",
        "error": "signal on_error",
        "puppet_request": f"puppet.request({step[1]})" if len(step) > 1 else "puppet.request",
        "puppet_cancel": "puppet.cancel()",
    }[kind]


def render(scenario: Scenario) -> list[str]:
    n, steps = scenario
    lines = [f"1. subscribe a fresh subscriber to the TCK's upstream of {n} element(s)"]
    lines += [f"{i}. {_step_text(step)}" for i, step in enumerate(steps, 2)]
    lines.append(f"{len(steps) + 2}. feed one element at a time while it asks, then check its demand")
    return lines


class _Upstream(ManualPublisher):
    """The scenario's publisher: one signal at a time, whichever thread delivers (rule 1.3)."""

    def __init__(self, env: Environment, **options: Any) -> None:
        super().__init__(env, **options)
        self._delivering = threading.RLock()
        self.on_loop = env.settings.loop == "asyncio"

    def _pause(self) -> None:
        """Yield inside request/cancel (rule 2.7) unless no other thread could race in: the call
        comes from a kit thread (a signal this upstream delivers, or the puppet) and nothing but
        the kit runs. This upstream delivers one signal at a time and the scenario's callers wait
        for each other, so the kit's threads never meet in the subscriber; a call from one of the
        subscriber's own threads, or beside one, or on a loop, yields as any upstream's does. An
        idle yield only sleeps (``time.sleep(0)`` waits out the timer slack: some 60 us, and a
        turn of the scheduler on a busy machine)."""
        if self.yield_s is not None and (self.on_loop or not only_the_kit_runs()):
            time.sleep(self.yield_s)

    def _next(self, sub: ManualSubscription, rule: str | None) -> Any:
        with self._delivering:
            return super()._next(sub, rule)

    def _terminate(self, sub: ManualSubscription, signal: str, error: BaseException | None,
                   rule: str | None) -> bool:
        with self._delivering:
            return super()._terminate(sub, signal, error, rule)

    def _drain(self, sub: ManualSubscription) -> None:
        """Deliver inside request() only when no other thread is delivering.

        That other thread may be waiting for the very event loop that is running this
        request() (under ``--rs-loop=asyncio`` every signal is a call on the subject's loop):
        blocking here would deadlock the TCK on itself. The demand stays, and a later step
        or the settle delivers it, as a publisher that does not deliver inline would.
        """
        if not self._delivering.acquire(blocking=False):
            self.env.trace.note("inline delivery deferred: another thread is delivering")
            return
        try:
            super()._drain(sub)
        finally:
            self._delivering.release()

    def ready(self, sub: ManualSubscription) -> bool:
        """Whether the subscriber asked for an element the stream still has."""
        with self._cond:
            return sub.terminal is None and not sub.broken and sub.demand > 0 and sub.sent < (self.count or 0)

    def send_within_demand(self, sub: ManualSubscription) -> bool:
        """Deliver the next element if the subscriber asked for it and the stream has one."""
        with self._delivering:
            ready = self.ready(sub)
            if ready:
                self._next(sub, None)
            return ready


class _Gate:
    """One sender thread's hand-over: its next send, and the locks both sides wait on."""

    def __init__(self, job: Callable[[], Any]) -> None:
        self.job: Callable[[], Any] | None = job
        self.go = threading.Lock()
        self.go.acquire()
        self.done = threading.Lock()
        self.done.acquire()
        self.serving = True  # False once the thread ends (or is left to a send that blocked)

    def serve(self) -> None:
        while True:
            job, self.job = self.job, None
            if job is None or not self.serving:
                return
            try:
                job()
            except BaseException:
                self.serving = False  # the pool reports it, as any call's; the next send spawns
                raise
            finally:
                self.done.release()
            self.go.acquire()


class _Sender:
    """The scenario's other thread: a kit thread that runs its sends one after another.

    A send "from another thread" is waited for, so the two threads take turns, and each turn
    is a wake-up the scheduler grants late on a busy machine. A pooled thread handed each send
    (``sandbox.call_on_thread``) goes on, once the send is done, to put itself back in the pool
    while the scenario's thread wakes to go on: both want the interpreter lock, and the
    scenario's thread is woken twice. This thread, once a send is done, waits for the next at
    once; it is the same thread for every send of the scenario, as the pool's most recently
    idle thread mostly was, and goes back to the pool when the scenario ends.
    """

    def __init__(self) -> None:
        self._gate: _Gate | None = None

    def call(self, env: Environment, label: str, fn: Callable[[], Any], timeout: float) -> bool:
        """Run ``fn`` on the sender's thread and wait for it; False if it did not return in time
        (that thread is left to it, and the next send gets one of its own)."""
        with env.calling(label):
            gate = self._gate
            if gate is not None and gate.serving:
                gate.job = fn
                gate.go.release()
            else:
                gate = self._gate = _Gate(fn)
                spawn(gate.serve, "rs-tck-fuzz-caller")
            if gate.done.acquire(timeout=max(0.0, timeout)):
                return True
            self._gate = None
            gate.serving = False
            gate.go.release()  # should the send ever return, its thread ends there
            return False

    def close(self) -> None:
        """The scenario is over: its thread goes back to the pool."""
        gate, self._gate = self._gate, None
        if gate is not None and gate.serving:
            gate.serving = False
            gate.go.release()


class SubscriberScenario:
    """One scenario against a fresh subscriber of the verification's context."""

    def __init__(self, ctx: Any, env: Any, scenario: Scenario, whitebox: bool,
                 baselines: dict[str, Any]) -> None:
        self.ctx = ctx
        self.env = env
        self.scenario = scenario
        self.whitebox = whitebox
        self.baselines = baselines
        settings = env.settings
        self.timeout = settings.timeout
        self.window = max(0.002, settings.no_signal_window / 20)
        self.blocked_s = stall_limit(settings) + 1.0
        self.on_loop = settings.loop == "asyncio"
        self.stage: Any = None
        self.sender = _Sender()

    def _start(self, n: int) -> tuple[_Upstream, ManualSubscription]:
        ctx = self.ctx
        upstream = _Upstream(self.env, name="upstream", element=ctx.element, end=None)
        ctx._upstreams.append(upstream)
        if self.whitebox:
            from ...whitebox import WhiteboxProbe

            probe = WhiteboxProbe(self.env)
            subscriber = ctx.whitebox_subscriber(probe)
            upstream.listen(probe.signalled)
            ctx.attach(upstream, subscriber)
            self.stage = (probe, probe.expect_puppet())
        else:
            subscriber = ctx.subscriber()
            ctx.attach(upstream, subscriber)
            ctx.trigger(subscriber)
        upstream.count = n
        return upstream, upstream.subscription

    def execute(self) -> RuleViolation | None:
        n, steps = self.scenario
        if self.on_loop or not nothing_else_runs():
            # The search's turn is given up between scenarios while the subscriber (or a loop the
            # kit runs) has threads of its own: a scenario of such a subscriber may wait out no
            # window, and the rule tests it runs beside, whose windows are then whole, would wait
            # for the whole search before their first call. Once nothing but the kit runs, their
            # windows end at once too (``rstck._internal.reach``): nothing would overlap, and each
            # turn handed over costs two thread switches, late ones on a busy machine.
            with self.env.aside():
                pass
        self.env.trace.note(f"step 1: subscribe to an upstream of {n} element(s)")
        upstream, sub = self._start(n)
        try:
            for number, step in enumerate(steps, 2):
                self.env.trace.note(f"step {number}: {_step_text(step)}")
                self._step(upstream, sub, step)
                if self.env.problems:
                    break
        finally:
            self.sender.close()
        return self._settle(upstream, sub, n)

    def _step(self, upstream: _Upstream, sub: ManualSubscription, step: tuple[Any, ...]) -> None:
        kind = step[0]
        if kind == "send":
            def burst() -> None:
                for _ in range(step[1]):
                    if not upstream.send_within_demand(sub):
                        break

            if step[2] == "thread":
                if upstream.ready(sub) or self.on_loop or not only_the_kit_runs():
                    self.sender.call(self.env, "send", burst, self.blocked_s)
                # Otherwise the burst would send nothing (most such steps find no demand, or the
                # stream ended), and no thread but the kit's could raise the demand meanwhile: the
                # other thread would run none of the subscriber's code, only cost two wake-ups.
            else:
                burst()
        elif kind == "inline":
            upstream.inline = bool(step[1])
        elif kind == "run":
            # An interleaving, not a verdict (the settle at the end waits whole windows and the
            # timeout): a subscriber still working after this short a window meets the next step,
            # and is not taken for idle (a request of its backlog after the end is no 2.4 breach).
            # A subscriber without a thread of its own (nor a loop the kit runs) has nothing to
            # run meanwhile: the scenario's callers have returned, so the window would only wait.
            if self.on_loop or not nothing_else_runs():
                upstream.settle(subscription=sub, window=self.window / 4, limit=self.timeout, idle=False)
        elif kind in ("complete", "error"):
            with upstream._delivering:
                if sub.terminal is None:
                    if kind == "complete":
                        upstream.send_complete(subscription=sub)
                    else:
                        from ...contexts import TckFailure

                        upstream.send_error(TckFailure("failure signalled by the TCK (fuzz scenario)"),
                                            subscription=sub)
        elif self.stage is not None:
            puppet = self.stage[1]
            sub.stir()
            if sub.terminal is not None:
                sub.excuse()  # what the subscriber does on the puppet's orders is no 2.4 breach
            if kind == "puppet_request":
                self.env.trace.add("tck", "puppet.request", str(step[1]))
                self.ctx.call(f"puppet.request({step[1]})", puppet.request, step[1])
            else:
                self.env.trace.add("tck", "puppet.cancel")
                self.ctx.call("puppet.cancel()", puppet.cancel)

    def _settle(self, upstream: _Upstream, sub: ManualSubscription, n: int) -> RuleViolation | None:
        """Feed one element at a time while the subscriber asks; compare with the one-by-one run."""
        self.env.trace.note("settle: feeding one element at a time while the subscriber asks")
        upstream.inline = False
        while True:
            consumed = _feed(upstream, sub, self.window)
            if self.env.problems or sub.terminal is not None or sub.cancelled or sub.broken:
                return None
            expected = self._baseline(n)
            if expected is None or consumed >= min(expected, n):
                return None
            # Before accusing, give a slow subscriber the whole timeout to ask (event-driven).
            if upstream.wait_demand(subscription=sub, timeout=self.timeout) <= 0:
                break
        return RuleViolation(
            "2.1", f"the subscriber to keep signalling demand as it does when fed one element at a "
            f"time from the test thread (it then took {min(expected, n)} of {n} elements)",
            f"it stopped asking after {consumed} element(s) without cancelling: "
            f"{sub.describe()}; it would now wait forever",
            hint="the subscriber's demand accounting depends on the order of signals: check what "
            "happens to its counter when on_next arrives inside its own request() call, or "
            "from another thread while it is updating it")

    def _baseline(self, n: int) -> int | None:
        """Elements the subscriber takes when fed one at a time; cached per stream size."""
        key = f"n={n}"
        if key not in self.baselines:
            self.baselines[key] = _one_by_one(self.ctx, self.whitebox, n, self.baselines)
        value = self.baselines[key]
        return value if isinstance(value, int) else None


def _feed(upstream: _Upstream, sub: ManualSubscription, window: float) -> int:
    """Send one element at a time while there is demand; return once none comes in a window."""
    while True:
        if upstream.send_within_demand(sub):
            continue
        if sub.sent >= (upstream.count or 0) or sub.terminal is not None or sub.broken:
            return sub.sent
        upstream.settle(subscription=sub, window=window, limit=window * 4)
        if not upstream.send_within_demand(sub):
            return sub.sent


def _one_by_one(ctx: Any, whitebox: bool, n: int, cache: dict[str, Any]) -> int | None:
    """The baseline: twice, and only when both runs agree (a deterministic subscriber)."""
    seen = []
    for _ in range(2):
        with scenario_env(ctx) as env:
            run = SubscriberScenario(ctx, env, (n, ()), whitebox, cache)
            upstream, sub = run._start(n)
            consumed = _feed(upstream, sub, run.window)
            if env.problems or sub.terminal is not None or sub.broken:
                return None
            seen.append(consumed)
    return seen[0] if seen[0] == seen[1] else None


Checker = Callable[[Any, Scenario], RuleViolation | None]
