"""Fuzzing a publisher: request/cancel orders no fixed verification uses, judged by the rules.

A scenario subscribes probes to a fresh publisher from the factory and makes calls on their
subscriptions: ``request(k)`` with small, boundary, non-positive and huge k (sums crossing
2**63-1 included), ``cancel()``; from the test thread, from another thread, or re-entrantly from
inside ``on_subscribe``/``on_next`` (a given one, or every one; there, also handed to another
thread while ``on_next`` waits, which is how a request lands while a drain loop is running);
further subscribers to the same publisher (the failed publisher too); "let it run" pauses;
calls after terminal signals; and a subscriber that fails: its on_next #i or its on_error raises. ``systematic`` spells every short scenario of a small alphabet,
run (batched by ``screen``) before the random ones.

The verdict rests on the rules, checked as in every verification by the probes (1.1, 1.3, 1.7,
1.9, 2.13, 3.15, 3.16 live) and, at the end of each scenario, by this module:

* 3.6/1.8: after ``cancel()`` only what was in flight may still arrive: at most the demand
  outstanding at that moment, and for unbounded demand the signals must stop within the
  timeout. A bounded batch after cancel is conforming (1.8 says "eventually");
* 3.8/3.17: demand requested and not cancelled is served: ``min(requested, n)`` elements arrive
  (3.17 when the total crossed 2**63-1), and 1.5: on_complete follows the n-th, at the
  latest once one more element is requested (the kit asks when the demand is spent);
* 3.9: a non-positive request on a live subscription ends it with ``on_error(ValueError)``;
* 2.13: after on_next raised, no element follows: the subscription counts as cancelled, and
  nothing is owed (request() and subscribe() must still return, as the probes check live);
* conservation, for a subject that declares ``deterministic_sequence`` only: no element lost,
  duplicated or reordered. The factory contract promises n elements, not their values or
  order (a merge interleaves its sources by demand, a parallel source by timing), so an
  undeclared subject is held to counts. The reference is what the same factory produced for
  a plain subscriber, twice, when both runs agree.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from ...api import MAX_DEMAND
from ...errors import NotVerified
from ...errors import RuleViolation
from ...probe import ProbeAbort
from ...probe import ProbeSubscriber
from ...probe import SubscriberFailure
from ...probe import passes_on_failure
from ..environment import Environment
from ..environment import as_violation
from ..one_rule import stall_limit
from ..trace import Trace
from ..trace import short_repr
from .publisher_scenarios import _SIZES
from .publisher_scenarios import EVERY
from .publisher_scenarios import EVERY_LIMIT
from .publisher_scenarios import FAILED
from .publisher_scenarios import LONG_SHARE
from .publisher_scenarios import LONG_STEPS
from .publisher_scenarios import ON_ERROR
from .publisher_scenarios import RAISE
from .publisher_scenarios import REFERENCE_PREFIX
from .publisher_scenarios import TAKE_LIMIT
from .publisher_scenarios import _name
from .publisher_scenarios import action_text
from .publisher_scenarios import candidates
from .publisher_scenarios import generator
from .publisher_scenarios import render
from .publisher_scenarios import size
from .publisher_scenarios import sizes_for
from .publisher_scenarios import systematic
from .publisher_scenarios import well_formed
from .sandbox import ScenarioEnvironment
from .sandbox import call_on_thread
from .sandbox import scenario_env
from .scenario import Scenario
from .scenario import demand_text
from .search import Screened
from .search import ScreenResult

__all__ = ["EVERY", "FAILED", "LONG_SHARE", "LONG_STEPS", "_SIZES", "PublisherScenario", "candidates", "generator",
           "reference_sequence", "render", "screen", "size", "sizes_for", "systematic", "well_formed"]


# -- running scenarios ----------------------------------------------------------------------


class _FailingProbe(ProbeSubscriber):
    """The scenario's probe: ``on_error`` raises once ``fail_on_error`` is set (rule 2.13)."""

    fail_on_error = False
    #: The scenario it belongs to (``ScenarioEnvironment.racing``).
    scenario: Any = None

    def _wait(self, predicate: Callable[[], bool], timeout: float) -> bool:
        """The probe's wait; the verification's thread says what it waits for (``racing``)."""
        env = self.env
        if not isinstance(env, ScenarioEnvironment) or threading.get_ident() != env.body_ident \
                or env.awaiting is not None:
            return super()._wait(predicate, timeout)
        env.awaiting = predicate
        try:
            return super()._wait(predicate, timeout)
        finally:
            env.awaiting = None

    def wait_progress(self, predicate: Callable[[], bool], timeout: float, *, limit: float | None = None) -> bool:
        """The probe's wait, woken by every signal to start its timeout again, but going on only
        once ``predicate`` holds: until then the verification's thread makes no call (``racing``)."""
        env = self.env
        if not isinstance(env, ScenarioEnvironment) or threading.get_ident() != env.body_ident \
                or env.awaiting is not None:
            return super().wait_progress(predicate, timeout, limit=limit)
        env.awaiting = predicate
        try:
            return super().wait_progress(predicate, timeout, limit=limit)
        finally:
            env.awaiting = None

    def on_error(self, exc: BaseException) -> None:
        super().on_error(exc)
        if self.fail_on_error and exc is not None:
            self.fail_on_error = False
            self.env.trace.note(f"{self.name}: on_error raises SubscriberFailure (a failing subscriber, rule 2.13)")
            raise SubscriberFailure(f"{self.name}: on_error failed (raised by the TCK, rule 2.13)")


class _Subscriber:
    """One probe of a scenario: its armed re-entrant actions and what the checks need."""

    def __init__(self, run: PublisherScenario, index: int, on_subscribe: tuple[Any, ...]) -> None:
        self.run = run
        self.index = index
        self.name = _name(index)
        #: Serialises the TCK's calls on this subscription (rule 2.7 binds the TCK too).
        self.lock = threading.RLock()
        self.armed: dict[int, list[tuple[Any, ...]]] = {}
        self.pending: list[tuple[str, tuple[Any, ...]]] = []
        self.initial = on_subscribe
        self.illegal_at: int | None = None  # trace seq of a non-positive request while live
        self.illegal_in_flight = 0
        self.cancel_demand: int | None = None
        self.cancel_received = 0
        self.requests_after_cancel = 0
        self.took_all = False
        #: Whether the settle asked for one more element to see the end (``_ask_for_the_end``).
        self.asked_end = False
        #: Elements received when on_next raised (the subscription then counts as cancelled),
        #: and the trace record of the raise.
        self.raised_at: int | None = None
        self.raised_seq: int | None = None
        #: Re-entrant actions being made right now; a lock held until on_subscribe's are done
        #: (a gate: an ``Event`` is a ``Condition`` to make and to wait on, for every subscriber).
        self.busy = 0
        self.subscribing = threading.Lock()
        self.subscribing.acquire()
        self.probe = _FailingProbe(run.env, self.name, on_subscribe=self._on_subscribe,
                                   on_next=self._on_next, storm_limit=4 * TAKE_LIMIT)
        self.probe.scenario = run

    # hooks, on the publisher's thread

    def _on_subscribe(self, probe: ProbeSubscriber, subscription: Any) -> None:
        try:
            for action in self.initial:
                self.reentrant("on_subscribe", action)
        finally:
            self.subscribing.release()

    def _on_next(self, probe: ProbeSubscriber, element: Any) -> None:
        count = probe.received
        if count >= TAKE_LIMIT and not probe.cancelled and probe.demand >= MAX_DEMAND:
            self.took_all = True
            self.run.env.trace.note(f"{self.name} took {count} elements of unbounded demand: cancelling")
            self.reentrant(f"on_next #{count}", ("cancel", "here"))
            return
        fails = False
        for action in self.armed.pop(count, ()):
            if action == RAISE:
                fails = True
            else:
                self.reentrant(f"on_next #{count}", action)
        if count <= EVERY_LIMIT:
            for action in self.armed.get(EVERY, ()):
                self.reentrant(f"on_next #{count} (every on_next)", action)
        if fails and self.raised_at is None:
            self.raised_at = count
            self.raised_seq = self.run.env.trace.note(
                f"{self.name}: on_next #{count} raises SubscriberFailure (a failing subscriber, rule 2.13)").seq
            raise SubscriberFailure(f"{self.name}: on_next #{count} failed (raised by the TCK, rule 2.13)")

    def reentrant(self, where: str, action: tuple[Any, ...]) -> None:
        """Act from inside a signal; deferred if the TCK is inside a call from another thread."""
        self.busy += 1
        try:
            self._reentrant(where, action)
        finally:
            self.busy -= 1

    def _reentrant(self, where: str, action: tuple[Any, ...]) -> None:
        if not self.lock.acquire(blocking=False):
            self.run.env.trace.note(f"{self.name}: from {where}: {action_text(action)} deferred "
                                    "(the TCK was inside a call on another thread)")
            self.pending.append((where, action))
            return
        try:
            if self.run.noting:
                self.run.env.trace.note(f"{self.name}: from {where}: {action_text(action)}")
            if action[-1] == "thread" and self.run.env.settings.loop == "asyncio":
                # Every call runs on the subject's event loop, which this signal occupies: a
                # call handed to another thread would wait for it. "Here" is the same context.
                self.run.env.trace.note("on an event loop every call runs on the loop: made here")
                action = (*action[:-1], "here")
            self.perform(action)
        finally:
            self.lock.release()

    # actions, with the lock held

    def perform(self, action: tuple[Any, ...]) -> None:
        if action[-1] == "thread":
            plain = (*action[:-1], "here")
            waiting = threading.get_ident()

            def act() -> None:
                with self.probe.acting_for(waiting):
                    self._act(plain)

            finished = call_on_thread(self.run.env, action_text(action), act, self.run.handoff_s)
            if not finished:
                self.run.env.trace.note(f"{self.name}: {action_text(plain)} on another thread has "
                                        "not returned yet; going on")
            return
        self._act(action)

    def _act(self, action: tuple[Any, ...]) -> None:
        probe = self.probe
        if action[0] == "request":
            n = action[1]
            live = not probe.cancelled and probe.terminal is None
            if probe.cancelled:
                self.requests_after_cancel += 1
            if n <= 0 and live and self.illegal_at is None:
                self.illegal_at = self.run.env.trace.total
                with probe._lock:
                    # Only what was already owed may complete the stream before the on_error.
                    self.illegal_in_flight = probe.received + probe.demand
            probe.request(n)
        else:
            if self.cancel_demand is None:
                with probe._lock:
                    self.cancel_demand = probe.demand
                    self.cancel_received = probe.received
            probe.cancel()

    def flush(self) -> None:
        while self.pending:
            where, action = self.pending.pop(0)
            with self.lock:
                self.run.env.trace.note(f"{self.name}: deferred action from {where}: {action_text(action)}")
                self.perform(action)


#: Windows shorter than this keep the search's turn to call (see ``PublisherScenario._quiet``):
#: shorter than the calls of another test it would wait behind to take the turn back.
KEEP_TURN_S = 0.01


class PublisherScenario:
    """Runs one scenario against a fresh publisher of the verification's context."""

    def __init__(self, ctx: Any, env: ScenarioEnvironment, scenario: Scenario,
                 reference: Callable[[int], tuple[Any, ...] | None]) -> None:
        self.ctx = ctx
        self.env = env
        self.scenario = scenario
        self.reference = reference
        settings = env.settings
        self.timeout = settings.timeout
        self.window = max(0.002, settings.no_signal_window / 50)
        self.handoff_s = max(0.05, settings.no_signal_window)
        self.blocked_s = stall_limit(settings) + 1.0
        self.subs: list[_Subscriber] = []
        self.publisher: Any = None
        #: Whether the steps are noted in the trace. A screened batch's trace is never shown
        #: (a batch that fails runs again one scenario at a time, noted), so it goes without
        #: the notes of every step, about a tenth of a search's CPU.
        self.noting = True

    def execute(self) -> RuleViolation | None:
        failure = self.run_steps()
        if failure is not None:
            return failure
        self.await_owed()
        return self.verdict(self.settle_quiet())

    def run_steps(self) -> RuleViolation | None:
        """Subscribe and make the scenario's calls; a violation that already ends it, or None."""
        n, first, reactions, steps = self.scenario
        self.reactions = reactions
        made = "failed publisher" if n == FAILED else f"factory({demand_text(n)})"
        if self.noting:
            self.env.trace.note(f"step 1: subscribe probe to {made}")
        if n == FAILED:
            self.publisher = self.ctx.failed_publisher()
        else:
            self.publisher = self.ctx.publisher(n)
        failure = self._subscribe(first)
        for number, step in enumerate(steps, 2):
            failure = failure or self._step(number, step)
            if failure is not None:
                break
            self._flush()
        return failure

    def _quiet(self, limit: float, window: float | None = None) -> bool:
        """Wait until a whole window passes with no signal to any probe; False if not in ``limit``.

        A window shorter than ``KEEP_TURN_S`` is first waited out holding the turn: handing it
        over for a few milliseconds cost the search the rest of another test's calls before it
        got it back (about 10 ms a window, 2.5 s of a processor's session). Only if signals
        still arrive does the wait go on aside, where another test may call meanwhile.
        """
        deadline = time.monotonic() + limit
        window = self.window if window is None else window
        if window < KEEP_TURN_S:
            seen = self.env.outer.progress
            self._sleep(window)
            if self.env.outer.progress == seen:
                return True
        with self.env.aside():
            while True:
                seen = self.env.outer.progress
                self._sleep(window)
                if self.env.outer.progress == seen:
                    return True
                if time.monotonic() >= deadline:
                    return False

    def _sleep(self, seconds: float) -> None:
        """``time.sleep``, saying until when (``racing``): a signal yields only once the sleep may
        be over, when this thread may go on to its next call (the interleaving a window makes)."""
        env = self.env
        until = time.monotonic() + seconds  # (the sleep, begun later, ends later)
        env.awaiting = lambda: time.monotonic() >= until
        try:
            time.sleep(seconds)
        finally:
            env.awaiting = None

    def _flush(self) -> None:
        for sub in self.subs:
            if sub.pending:  # seldom: read here, not in a call per subscriber per step
                sub.flush()

    def _subscribe(self, actions: tuple[Any, ...]) -> RuleViolation | None:
        sub = _Subscriber(self, len(self.subs), actions)
        for target, index, action in self.reactions:
            if target == sub.index:
                sub.armed.setdefault(index, []).append(action)
        sub.probe.fail_on_error = RAISE in sub.armed.pop(ON_ERROR, ())
        self.subs.append(sub)
        self.env.trace.log("tck", "subscribe", sub.name)
        try:
            self.env.invoke("subscribe()", self.publisher.subscribe, sub.probe)
        except ProbeAbort:
            pass
        except Exception as exc:
            if passes_on_failure(exc):  # the subscriber's own failure, passed on (2.13 allows it)
                self.env.trace.note(f"subscribe() passed on the subscriber's failure: {short_repr(exc)}")
                return self._after_subscribe(sub)
            return RuleViolation("1.9", "subscribe() to return normally (failures are signalled with on_error)",
                                 f"it raised {type(exc).__name__}: {short_repr(exc, 200)}")
        return self._after_subscribe(sub)

    def _after_subscribe(self, sub: _Subscriber) -> RuleViolation | None:
        try:
            sub.probe.expect_subscription()
        except RuleViolation as violation:
            return violation
        # on_subscribe may run on the publisher's thread: its actions belong to this step.
        sub.subscribing.acquire(timeout=self.blocked_s)
        return None

    def _step(self, number: int, step: tuple[Any, ...]) -> RuleViolation | None:
        kind = step[0]
        if kind == "subscribe":
            if self.noting:
                self.env.trace.note(f"step {number}: subscribe {_name(len(self.subs))}")
            return self._subscribe(step[1])
        if kind == "run":
            if self.noting:
                self.env.trace.note(f"step {number}: let it run")
            # An interleaving, not a verdict (those wait for the whole window, or the timeout):
            # a publisher still delivering after this short a window meets the next step midway.
            self._quiet(self.timeout, window=self.window / 4)
            return None
        if step[1] >= len(self.subs):
            return None
        sub = self.subs[step[1]]
        action = ("request", step[2], step[3]) if kind == "request" else ("cancel", step[2])
        if self.noting:
            self.env.trace.note(f"step {number}: {sub.name}: {action_text(action)}")
        if action[-1] == "thread":
            plain = (*action[:-1], "here")

            def locked() -> None:
                with sub.lock:
                    sub.perform(plain)

            call_on_thread(self.env, action_text(action), locked, self.blocked_s)
        else:
            with sub.lock:
                sub.perform(action)
        return None

    # -- the verdict ------------------------------------------------------------------------

    def await_owed(self) -> None:
        """Wait (event-driven) for what every subscriber is owed."""
        if self.noting:
            self.env.trace.note("settle: waiting for what is owed")
        n = self.scenario[0]
        # Judge only once no re-entrant action is being made (an asynchronous publisher runs
        # them on its own thread, possibly still now).
        self._idle()
        for sub in self.subs:
            probe = sub.probe
            if probe.subscription is None or sub.raised_at is not None:
                continue  # a subscriber that raised is owed nothing (2.13: cancelled)
            if sub.illegal_at is not None or n == FAILED:
                if not probe.cancelled:
                    probe._wait(_ended_or_excused(sub), self.timeout)
                    if n != FAILED and n < MAX_DEMAND - 1:
                        # All n arrived and no end: a stream that never ends breaks 1.5 before
                        # 3.9, but only if it stays silent when more is asked for.
                        self._ask_for_the_end(sub, n)
                        if sub.asked_end:
                            probe._wait(_ended_or_excused(sub), self.timeout)
            elif not probe.cancelled and sub.index == 0:
                # What is owed is read live: a re-entrant request or cancel may still be made.
                # One that raises meanwhile is owed nothing more (2.13): no waiting out the timeout.
                if not self._wait_owed(sub, n):
                    continue  # a stall (the verdict is lost demand) or paced: no wait for a terminal
                if n < MAX_DEMAND - 1 and probe.requested >= n and not probe.cancelled \
                        and sub.raised_at is None:
                    # (a cancel from on_next may have landed meanwhile: no terminal is owed then;
                    # nor once the last element's on_next raises, after it was counted)
                    self._ask_for_the_end(sub, n)
                    probe._wait(_ended_or_excused(sub), self.timeout)

    def _wait_owed(self, sub: _Subscriber, n: int) -> bool:
        """``wait_progress`` for what ``sub`` is owed; False on a stall, and as soon as a fellow
        subscriber that asks for nothing paces the stream, confirmed by a quiet window with no
        re-entrant action under way.

        The verdict does not count elements so withheld as lost (``_held_back_by_another``):
        waiting out the timeout for them would buy nothing, and a multicast processor paced by
        a subscriber that asked for 3 of 64 cost every such scenario a whole timeout. Once the
        steps are made, only a fellow's own hook (inside a signal, which ``_idle`` waits out)
        can give it demand again, so the scenario's short window confirms the pacing as well
        as a long one (a window of ``handoff_s`` cost the processor 0.6 s a search).
        """
        probe = sub.probe
        owed = _owed_or_raised(sub, n)
        if owed():
            return True  # most scenarios: served by the time the steps are made; no wait to set up

        def paced() -> bool:
            return self._held_back_by_another(sub)

        deadline = time.monotonic() + self.env.settings.test_limit / 2
        while True:
            if not probe.wait_progress(lambda: owed() or paced(), self.timeout):
                return False
            if owed():
                return True
            if time.monotonic() >= deadline or (self._quiet(self.timeout) and not self._idle()
                                                and paced() and not owed()):
                return owed()

    def _ask_for_the_end(self, sub: _Subscriber, n: int) -> None:
        """request(1) once all ``n`` elements arrived with no demand left and no end yet.

        Rule 1.5 asks for on_complete, not for the end to be known before more is asked for
        (a lazy source, a filter asking upstream for a replacement): as in the fixed 1.5 test,
        only silence after a further request breaks it. factory(0) with nothing requested is
        asked the same way.
        """
        probe = sub.probe
        with probe._lock:
            spent = probe.demand <= 0 and probe.received >= n and probe.terminal is None \
                and not probe.cancelled and sub.raised_at is None
        if not spent:
            return
        self.env.trace.note(f"settle: {sub.name} has all {n} element(s), no demand left and no end yet: "
                            "request(1) for the end")
        sub.asked_end = True
        with sub.lock:
            probe.request(1)

    def served(self) -> bool:
        """Whether the first subscriber has what ``await_owed`` waited for (else it timed out);
        a stream paced by a fellow subscriber is not owed more (``_wait_owed``), as the verdict
        has it: a batch failed on it only to run every scenario again alone."""
        n = self.scenario[0]
        probe = self.subs[0].probe if self.subs else None
        if probe is None or probe.subscription is None or probe.cancelled or self.subs[0].raised_at is not None:
            return True
        if self.subs[0].illegal_at is not None or n == FAILED:
            return probe.terminal is not None
        if not _owed_arrived(probe, n)():
            return self._held_back_by_another(self.subs[0])
        return not (n < MAX_DEMAND - 1 and probe.requested >= n and probe.terminal is None)

    def settle_quiet(self) -> bool:
        """Wait until nothing arrives for a window; False if signals kept coming."""
        self._idle()
        self._flush()
        quiet_now = self._quiet(self.timeout)
        if self._idle():  # an action began meanwhile (a hook that was about to run): settle again
            self._flush()
            quiet_now = self._quiet(self.timeout)
        return quiet_now

    def verdict(self, quiet_now: bool) -> RuleViolation | None:
        """The scenario's violation, judged once it has settled (``quiet_now``: nothing arrives)."""
        if quiet_now:
            quiet = {sub.name: True for sub in self.subs}
        else:
            quiet = {sub.name: sub.probe.wait_quiet(window=self.window, limit=self.window * 4)[1]
                     for sub in self.subs}
        mine = self._judge(quiet)
        problems = self.env.problems
        if mine and mine[0].rule is not None and mine[0].rule.id == "3.6":
            found: RuleViolation | None = mine[0]
        elif problems:
            found = as_violation(problems[0], None)
        else:
            found = mine[0] if mine else None
        if found is not None:
            return self._shared_subscription(found) or found
        return None

    def _shared_subscription(self, found: RuleViolation) -> RuleViolation | None:
        """The cause, when a later subscriber was handed an earlier one's subscription object.

        A publisher that serves one subscriber (a stream object that is its own subscription)
        and re-targets it to whoever subscribes last breaks the first subscriber: its demand
        now drives the other's signals, so its elements stop (3.8, or 3.17 past 2**63-1) or
        arrive unasked at the other (1.1). Neither is the cause: a publisher must reject a
        subscriber it cannot serve (on_subscribe, then on_error) or isolate it (1.11).
        """
        for sub in self.subs[1:]:
            mine = sub.probe.subscription
            for other in self.subs[: sub.index]:
                if mine is not None and mine is other.probe.subscription:
                    what = found.rule.id if found.rule is not None else "sanity"
                    return RuleViolation(
                        "1.11", "each subscriber served on its own: a publisher that supports one subscriber "
                        "rejects a later one (on_subscribe, then on_error) or keeps it apart from the first",
                        f"{sub.name} was handed {other.name}'s subscription (the same object, "
                        f"{short_repr(mine)}), and then: {found.observed} [shows as rule {what}]",
                        hint="a second subscribe() must not re-target the first subscriber's subscription; "
                        "give each subscriber its own, or signal on_error to the ones not supported",
                        evidence=found.evidence)
        return None

    def _idle(self) -> bool:
        """Wait (bounded) until no probe is inside a signal and no re-entrant action is running.

        Judging while a hook is still about to make its action (the signal that woke the wait
        has been counted, the hook has not run yet) would judge a scenario that is not over.
        Returns whether there was anything to wait for. Polled at an eighth of the window: a
        signal is over in well under a millisecond, and a whole window a poll cost a
        processor's search 0.1 s.
        """
        subs = self.subs
        if not any(sub.busy or sub.probe._sections for sub in subs):
            return False
        deadline = time.monotonic() + self.blocked_s

        def idle() -> bool:
            return not any(sub.busy or sub.probe._sections for sub in subs)

        self.env.awaiting = idle  # a signal of these probes need not yield meanwhile (``racing``)
        try:
            while not idle() and time.monotonic() < deadline:
                time.sleep(self.window / 8)
        finally:
            self.env.awaiting = None
        return True

    def _judge(self, quiet: dict[str, bool]) -> list[RuleViolation]:
        n = self.scenario[0]
        found: list[RuleViolation] = []
        for sub in self.subs:
            probe = sub.probe
            if probe.subscription is None:
                continue
            with probe._lock:
                received, requested, terminal, error = probe.received, probe.requested, probe.terminal, probe.error
                after_cancel = probe.after_cancel
                elements = list(probe.elements)
            who = f"{sub.name}: " if len(self.subs) > 1 else ""
            if sub.raised_at is not None:
                # The subscription counts as cancelled from the raise on: the publisher's own
                # thread saw the exception, so nothing is in flight (as the fixed 2.13 test).
                if received > sub.raised_at:
                    found.append(RuleViolation(
                        "2.13", f"no element after on_next #{sub.raised_at} raised (the subscription "
                        "counts as cancelled)",
                        f"{who}{received - sub.raised_at} element(s) followed",
                        hint="when a subscriber's signal method raises, stop signalling it: treat the "
                        "exception as cancel(), on every path that delivers an element",
                        evidence=(sub.raised_seq,) if sub.raised_seq is not None else ()))
                elif sub.index == 0:
                    found += self._conserved(sub, n, elements, who)
                continue
            if sub.cancel_demand is not None and sub.cancel_demand < MAX_DEMAND and \
                    after_cancel > sub.cancel_demand and sub.requests_after_cancel:
                found.append(RuleViolation(
                    "3.6", "request(n) after cancel() to be a no-op: at most the demand outstanding at "
                    f"cancel() ({sub.cancel_demand}) may still arrive",
                    f"{who}{after_cancel} element(s) after cancel(), which followed {sub.cancel_received} "
                    f"element(s), once request(n) was called again after cancel()",
                    hint="cancel() must stop the stream for good: check that the emitting loop does not "
                    "write back a stale 'not cancelled' state when its batch ends"))
            if not quiet[sub.name] and probe.cancelled and not sub.took_all:
                found.append(RuleViolation(
                    "1.8", f"signals to stop within {self.timeout * 1000:.0f} ms of cancel()",
                    f"{who}still signalling after {after_cancel} element(s) following cancel()"))
            if n == FAILED:
                if received:
                    found.append(RuleViolation("1.4", "the failed publisher to signal no element",
                                               f"{who}{received} on_next signal(s)"))
                elif requested and not probe.cancelled and terminal != "on_error":
                    found.append(RuleViolation("1.4", "on_error from the failed publisher",
                                               f"{who}{probe._terminal_text() or 'no terminal signal'} "
                                               f"(after request({demand_text(requested)}))"))
                continue
            if sub.illegal_at is not None and not probe.cancelled and sub.index > 0:
                # A later subscriber may have been turned away (1.9, 3.14: a publisher that shut
                # down): any terminal signal ends it; none at all breaks 3.9.
                if terminal is None:
                    found.append(RuleViolation(
                        "3.9", "a terminal signal after a request(n) with n <= 0",
                        f"{who}none (the request is record #{sub.illegal_at} of the trace, or near it)"))
                continue
            if sub.illegal_at is not None and not probe.cancelled and terminal is None \
                    and n < MAX_DEMAND - 1 and received >= n:
                # Every element arrived and the stream never ended: that is the first rule
                # broken, whatever the non-positive request met afterwards.
                found += self._owed(sub, n, received, max(requested, n), terminal, who)
                continue
            if sub.illegal_at is not None and not probe.cancelled:
                natural_end = terminal == "on_complete" and received >= n and sub.illegal_in_flight >= n
                if (terminal != "on_error" and not natural_end) or \
                        (terminal == "on_error" and not isinstance(error, ValueError)):
                    found.append(RuleViolation(
                        "3.9", "on_error(ValueError) after a request(n) with n <= 0",
                        f"{who}{probe._terminal_text() or 'no terminal signal'} "
                        f"(the request is record #{sub.illegal_at} of the trace, or near it)"))
                continue
            if sub.index == 0 and not probe.cancelled and not self._held_back_by_another(sub):
                found += self._owed(sub, n, received, requested, terminal, who)
            if sub.index == 0:
                found += self._conserved(sub, n, elements, who)
        return found

    def _held_back_by_another(self, sub: _Subscriber) -> bool:
        """Whether another live subscriber with no demand outstanding may be pacing the stream.

        A multicast publisher (a processor) may deliver no faster than its slowest subscriber:
        elements withheld while a fellow subscriber asks for nothing are not lost demand.
        """
        for other in self.subs:
            p = other.probe
            if other is not sub and p.subscription is not None and not p.cancelled \
                    and p.terminal is None and p.demand <= 0:
                return True
        return False

    def _owed(self, sub: _Subscriber, n: int, received: int, requested: int, terminal: str | None,
              who: str) -> list[RuleViolation]:
        owed = min(requested, n)
        crossed = requested >= MAX_DEMAND
        rule = "3.17" if crossed else "3.8"
        elements = list(sub.probe.elements)
        if received > n and n < MAX_DEMAND - 1 and (
                not self.env.settings.deterministic_sequence or _distinct(elements)):
            # More elements than n is the factory's doing, not a rule's (for a subject that
            # declares its sequence, a repeated element is judged by _conserved).
            return [RuleViolation(None, f"at most {n} element(s) from factory({n}) (the factory contract: "
                                  f"exactly n elements, then on_complete)",
                                  f"{who}{received} element(s)",
                                  hint="check that the factory honours n, including 0")]
        if received < owed and terminal is None:
            return [RuleViolation(
                rule, f"the {demand_text(owed)} element(s) requested and not cancelled within "
                f"{self.timeout * 1000:.0f} ms of the last signal" + (" (demand of 2**63-1 or more: unbounded)" if crossed else ""),
                f"{who}{received} arrived, and nothing more: requested demand was lost",
                hint="check the demand counter: a request arriving while an earlier one is being "
                "served (or from inside on_next) must add to it, and sums must saturate at 2**63-1")]
        if terminal == "on_error":
            return [RuleViolation(None, f"only on_complete from factory({n}) (the factory contract)",
                                  f"{who}{sub.probe._terminal_text()} after {received} element(s)")]
        if terminal == "on_complete" and received < n:
            return [RuleViolation(None, f"all {n} elements before on_complete (the factory contract)",
                                  f"{who}on_complete after {received} element(s)")]
        if n < MAX_DEMAND - 1 and requested >= n and terminal is None:
            further = ", even after a further request(1)" if sub.asked_end else ""
            return [RuleViolation("1.5", f"on_complete after the last of {n} elements, at the latest "
                                  "once more is requested",
                                  f"{who}no terminal signal within {self.timeout * 1000:.0f} ms{further}")]
        return []

    def _conserved(self, sub: _Subscriber, n: int, elements: list[Any], who: str) -> list[RuleViolation]:
        if not self.env.settings.deterministic_sequence:
            return []  # undeclared: neither the order nor the values are promised
        reference = self.reference(n)
        if reference is None:
            return []
        for i, got in enumerate(elements[: len(reference)]):
            if got == reference[i]:
                continue
            if got in elements[:i]:
                what = f"element #{i + 1} is {short_repr(got)}, a duplicate of one already delivered"
            elif got in reference[i + 1:]:
                skipped = reference.index(got) - i
                what = (f"element #{i + 1} is {short_repr(got)}: {skipped} element(s) from "
                        f"{short_repr(reference[i])} on were skipped or reordered")
            else:
                what = f"element #{i + 1} is {short_repr(got)}, which the stream does not contain"
            shown = ", ".join(short_repr(e) for e in reference[:6])
            return [RuleViolation(
                None, f"the stream's elements in order, each once (factory({n}) produced "
                f"{shown}{', ...' if len(reference) > 6 else ''} for a plain subscriber, twice, "
                "and the subject declares deterministic_sequence)",
                f"{who}{what}", hint="no element may be lost, duplicated or reordered by a "
                "particular order of requests and cancels")]
        return []


def _distinct(elements: list[Any]) -> bool:
    try:
        return len(set(elements)) == len(elements)
    except TypeError:
        return False


class _Tail(Trace):
    """The trace of a screened scenario: its last records only, no head, nothing pinned (and no
    sink for the probes' fast path, which waits for a head that is never filled here).

    A batch's verdict is a yes or no, and a failed batch runs again one scenario at a time,
    each traced in full; only a call that blocks is reported from the batch (the watchdog's
    verdict), with the last records of the scenario that made it. Keeping a whole trace per
    scenario (the head, and the records around every rare signal pinned) was about a tenth of
    a search's CPU.
    """

    def log(self, actor: str, signal: str, detail: str = "", demand: int | None = None) -> int:
        seq: int = next(self._seqs)
        self._tail.append((seq, time.monotonic(), threading.current_thread().name, actor, signal, detail, demand))
        return seq

    def _append(self, actor: str, signal: str, detail: Any, demand: int | None) -> tuple[Any, ...]:
        row = (next(self._seqs), time.monotonic(), threading.current_thread().name, actor, signal, detail, demand)
        self._tail.append(row)
        return row


def screen(ctx: Any, env: ScenarioEnvironment, scenarios: list[Scenario],
           reference: Callable[[int], tuple[Any, ...] | None],
           running: Callable[[Scenario], None] = lambda scenario: None) -> ScreenResult:
    """Whether every scenario passes, run one after another in one environment.

    The systematic search runs hundreds of short scenarios whose cost is mostly waiting: for
    the quiet window each ends with, and for an asynchronous publisher's deliveries. Here they
    share one window, and the calls of every scenario are made before any is waited for. Their subscriptions are separate (a fresh
    publisher each), so each is judged on its own probes; a scenario's violation, or any
    problem a probe flagged, fails the batch, and the caller runs its scenarios one by one
    to find (and report) the one that breaks a rule on its own. ``running`` is told which
    scenario the calls are made for (a subject that blocks is reported with it). Each records
    into a trace of its own that keeps only its last records (``_Tail``): a batch's traces
    are shown only when a call blocks.
    A failed batch names the first scenario whose own verdict failed (``Screened``), if one did.
    """
    runs: list[PublisherScenario] = []
    traces: list[Trace] = []
    try:
        for scenario in scenarios:
            env.trace = _Tail(env.settings.trace_keep)
            run = env.focus = PublisherScenario(ctx, env, scenario, reference)  # (``racing``)
            run.noting = False
            running(scenario)
            if run.run_steps() is not None:
                return Screened(len(runs))
            runs.append(run)
            traces.append(env.trace)
        for index, (run, trace) in enumerate(zip(runs, traces, strict=True)):  # deliveries overlap meanwhile
            env.trace = trace
            env.focus = run
            running(run.scenario)
            run.await_owed()
            if env.problems:
                return Screened()  # a failure: the caller finds it alone, without waiting out the rest
            if not run.served():
                return Screened(index)
        env.focus = None
        for run in runs:
            run._idle()
            run._flush()
        quiet = runs[-1]._quiet(runs[-1].timeout) if runs else True
        waited = [run._idle() for run in runs]  # every one, not up to the first that waited
        if any(waited):
            quiet = False  # a re-entrant action began meanwhile: each is judged on its own wait
        if env.problems:
            return Screened()
        for index, run in enumerate(runs):
            if run.verdict(quiet) is not None:
                return Screened(index)
        return True
    except (RuleViolation, NotVerified, ProbeAbort):
        return Screened()
    finally:
        env.focus = None


def _owed_or_raised(sub: _Subscriber, n: int) -> Callable[[], bool]:
    owed = _owed_arrived(sub.probe, n)
    return lambda: sub.raised_at is not None or owed()


def _ended_or_excused(sub: _Subscriber) -> Callable[[], bool]:
    """A terminal signal arrived, or none is owed any more: the subscriber cancelled or raised."""
    probe = sub.probe
    return lambda: probe.terminal is not None or probe.cancelled or sub.raised_at is not None


def _owed_arrived(probe: ProbeSubscriber, n: int) -> Callable[[], bool]:
    return lambda: probe.cancelled or probe.terminal is not None or probe.received >= min(probe.requested, n)


def reference_sequence(ctx: Any, n: int) -> tuple[Any, ...] | None:
    """What factory(n) gives a plain subscriber, if two runs agree on it; None otherwise."""
    runs = []
    for _ in range(2):
        with scenario_env(ctx) as env:
            try:
                runs.append(_plain_run(ctx, env, n))
            except (RuleViolation, NotVerified, ProbeAbort):
                return None
            if env.problems:
                return None
    first = runs[0]
    if first is None or runs[1] != first:
        return None
    try:
        if len(set(first)) != len(first):
            return None  # repeated values: a skipped element would not be told from a duplicate
    except TypeError:
        return None
    return first


def _plain_run(ctx: Any, env: Environment, n: int) -> tuple[Any, ...] | None:
    count = min(n, REFERENCE_PREFIX)
    publisher = ctx.publisher(n)
    probe = ProbeSubscriber(env, "reference")
    env.invoke("subscribe()", publisher.subscribe, probe)
    probe.expect_subscription()
    if count:
        probe.request(count)
    probe.wait_progress(lambda: probe.received >= count or probe.terminal is not None, env.settings.timeout)
    if probe.received < count:
        return None
    probe.close()
    return tuple(probe.elements)[:count]
