"""What the race-hunting rule tests share: tight thread switching, how long a rival is held, and
the subscriber-side hunt that lands elements where a delivery loop gives up its turn."""

from __future__ import annotations

import contextlib
import dis
import functools
import sys
import threading
import time
from collections.abc import Callable
from collections.abc import Iterator
from typing import Any

from ...errors import RuleViolation
from ..clock import starved_wait
from ..evidence import cite
from ..reach import thread_frames
from ..watching import Preemption
from ..watching import kits_step
from ..worker import Worker

#: The thread switch interval while a test hunts a race. The interpreter's default (5 ms) lets
#: one thread run a whole signal method before another gets the lock, hiding most overlaps;
#: 10 us interleaves them. The runner restores the previous interval even if a test is abandoned.
RACE_SWITCH_INTERVAL = 1e-5


#: How long a call on the TCK's subscription from one of the subject's own threads waits for a
#: rival thread in the 2.7 tests (it ends the moment one enters). Two threads released together
#: are then caught even when the scheduler wakes the second late: with a 0.5 ms pause alone, a
#: processor that splits each request across two threads passed one run in six on an idle machine.
RIVAL_HOLD_S = 0.005


#: Elements sent by a subscriber-side 2.7 hunt: two of three on time, one late (see race_rounds).
RACE_ROUNDS = 72
#: How far into its own code after a request/cancel a subject's thread is paused for a late
#: element, swept from 1 call event to this many: a loop that ends its turn and then makes one
#: more pass does so a dozen events after its request returns.
PREEMPT_SWEEP = 24
#: How long a late element waits for the subject's thread to reach its pause.
PREEMPT_WAIT_S = 0.002
#: How long an element on time waits for a request of the subscriber's own to be in progress.
PROMPT_WAIT_S = 0.002
#: How long a late element waits, at most, for the subscriber to work off the elements before it.
CATCH_UP_S = 0.05
#: Rounds of the 2.5 hunt: two publishers subscribe one fresh subscriber at the same moment.
SUBSCRIBE_RACE_ROUNDS = 24


def paced_deadline(settings: Any) -> float:
    """When a test that sends element after element as a subscriber asks stops sending: half
    its time limit from now. A slow subscriber (one element at a time, each a while after the
    last) is not a broken one: the test is sized to its pace, not ended at its limit."""
    return time.monotonic() + float(settings.test_limit) / 2


def out_of_time(env: Any, deadline: float | None, done: int, what: str) -> bool:
    """Whether ``deadline`` (``paced_deadline``) has passed; noted in the trace once it has."""
    if deadline is None or time.monotonic() < deadline:
        return False
    env.trace.note(f"{what}: stopped after {done} at half the time limit (--rs-test-limit-ms): "
                   "the subscriber's own pace, not a stall")
    return True


def race_rounds(env: Any, upstream: Any, rounds: int, sent: list[Any] | None = None,
                caught_up: Callable[[float], bool] | None = None, deadline: float | None = None) -> list[Any]:
    """Send up to ``rounds`` elements as demand allows, two on time, then one late; returns them.

    An element on time goes out while the subscriber's request() is still held (waiting for a
    rival thread): a second worker the subscriber starts for it is caught there, and two in a
    row catch a worker that handles one more signal after giving up its turn. For a late one
    the TCK lets the request return and pauses the subscriber's thread a swept number of call
    events into its own code (``Preemption``), delivers the element meanwhile, then lets the
    thread go on: the element lands, in turn, at each point of the code that follows a request,
    among them the moment when a delivery loop has given up its turn but still has work in hand.
    ``caught_up(timeout)`` (the whitebox probe's: one element at most left to process) holds a
    late element back until the subscriber has worked off the others, so that its loop is about
    to run dry. Stops at a cancel(), when demand runs out, or at ``deadline`` (``paced_deadline``).
    """
    sub = upstream.subscription
    sent = [] if sent is None else sent
    direct = env.dispatch is type(env)._direct
    requested, first = sub.request_count, len(sent)
    preemption = sub.preemption = Preemption()
    try:
        for i in range(rounds):
            if upstream.wait_demand(until_cancelled=True) <= 0 or sub.cancelled:
                break
            if out_of_time(env, deadline, len(sent), "the race rounds"):
                break
            # A call from the test's thread (a synchronous subscriber) has no thread to pause, and
            # a subject served on its event loop would have the TCK's signal wait on the pause.
            threaded = sub.last_caller != env.body_ident
            late = i % 3 == 2 and threaded and direct
            if not late and threaded and 2 * (sub.request_count - requested) >= len(sent) - first:
                # On time means while a request of the subscriber's own is held: with demand to
                # spare (a whitebox puppet's), a subscriber that answers most elements with a
                # request is given a moment to begin one (one that asks in batches is not).
                sub.wait_inside(PROMPT_WAIT_S)
            if late:
                if caught_up is not None:
                    deadline = time.monotonic() + CATCH_UP_S
                    while not caught_up(PREEMPT_WAIT_S) and time.monotonic() < deadline:
                        sub.release()  # holds end early while the subscriber catches up
                # Swept over every late element of the test (a test may call this per round).
                preemption.arm(1 + (len(sent) // 3) % PREEMPT_SWEEP)
                sub.release()
                preemption.wait_paused(PREEMPT_WAIT_S)
            try:
                sent.append(upstream.send_next())
            finally:
                if late:
                    preemption.resume()
            env.count_iterations(len(sent), sub.overlaps)
            env.check()
    finally:
        sub.preemption = None
        preemption.resume()
    return sent


@contextlib.contextmanager
def aggressive_switching(interval: float = RACE_SWITCH_INTERVAL) -> Iterator[None]:
    """Switch threads as often as ``interval`` for the duration (never less often than now)."""
    previous = sys.getswitchinterval()
    sys.setswitchinterval(min(previous, interval))
    try:
        yield
    finally:
        sys.setswitchinterval(previous)


def _either_cancelled(a: Any, b: Any) -> bool:
    return bool(a.cancelled or b.cancelled)


def _polled(done: Callable[[], bool]) -> Callable[[float], bool]:
    """``done`` looked at every millisecond for up to a step: a bounded wait for ``starved_wait``."""

    def wait(step: float) -> bool:
        until = time.monotonic() + step
        while not done() and time.monotonic() < until:
            time.sleep(0.001)
        return done()

    return wait


def race_two_subscriptions(ctx: Any, make: Callable[[], Any], rounds: int = SUBSCRIBE_RACE_ROUNDS) -> None:
    """Two publishers subscribe one fresh subscriber at once, ``rounds`` times (rule 2.5).

    Whichever on_subscribe the subscriber takes first, it must keep one subscription and cancel
    the other. One that asks "have I a subscription?" and stores the answer in two steps takes
    both when the calls interleave, and then cancels neither. Under the interpreter lock two
    such calls almost never interleave on their own: the first runs on a TCK thread that stops
    at its ``k``-th call event in the subject's code (``k`` swept over the rounds, the pause
    bounded), and the second is delivered meanwhile. A subject served on an event loop gets the
    two one after the other, so there one round checks the plain case.
    """
    env = ctx.env
    direct = env.dispatch is type(env)._direct
    limit = 2 * ctx.settings.timeout + 1.0
    for done in range(rounds if direct else 1):
        subscriber = make()
        first, second = ctx.upstream("first"), ctx.upstream("second")
        offer = functools.partial(first.attach, subscriber)
        if direct:
            call, paused, resume = _paused_call(offer, 1 + done % PREEMPT_SWEEP_SUBSCRIBE, threading.get_ident())
            paused.wait(PREEMPT_WAIT_S * 5)
            try:
                theirs = second.attach(subscriber)
            finally:
                resume.set()
        else:
            call = Worker(offer, "rs-tck:first-publisher")
            theirs = second.attach(subscriber)
        if not starved_wait(call.wait, limit):
            raise RuleViolation("2.5", "on_subscribe to return promptly",
                                "the first publisher's on_subscribe did not return", setting="timeout")
        mine = call.result()
        env.check()
        with env.aside():  # running time, not wall time: a starved process is not the subject's fault
            starved_wait(_polled(functools.partial(_either_cancelled, mine, theirs)), ctx.settings.timeout)
        if not (mine.cancelled or theirs.cancelled):
            env.count_iterations(done + 1, 1)
            raise RuleViolation(
                "2.5", "one of two subscriptions offered at once cancelled (one is kept)",
                f"neither was cancelled within {ctx.settings.timeout * 1000:.0f} ms: {mine.describe()}; "
                f"{theirs.describe()}",
                hint="decide which subscription is active in one step (under a lock, or on one "
                "thread): a test and a store apart let two on_subscribe calls both win",
                evidence=cite(mine.subscribed_seq, theirs.subscribed_seq), setting="timeout")
        env.count_iterations(done + 1, 0)


#: How far into the first on_subscribe the 2.5 hunt stops it, swept from 1 call event.
PREEMPT_SWEEP_SUBSCRIBE = 8
#: The longest the first on_subscribe stays stopped (the second may wait on a lock it holds).
SUBSCRIBE_PAUSE_S = 0.002


def _paused_call(fn: Callable[[], Any], k: int,
                 rival: int | None = None) -> tuple[Worker, threading.Event, threading.Event]:
    """``fn()`` on a TCK thread that stops at its ``k``-th call event in the subject's own code
    until ``resume`` is set (at most ``SUBSCRIBE_PAUSE_S``); ``paused`` is set when it stops.
    ``rival``: the thread that runs the other side meanwhile; once it waits at a ``with`` entry
    of the subject's code (a lock the paused thread holds, taken around a check and its store),
    the pause ends: it cannot move on before the paused thread does, so holding on shows nothing."""
    paused, resume = threading.Event(), threading.Event()  # paused: stopped, or done

    def run() -> Any:
        left = [k]

        def hook(frame: Any, event: str, arg: Any) -> None:
            if event not in ("call", "c_call") or kits_step(frame):
                return
            left[0] -= 1
            if left[0] > 0:
                return
            sys.setprofile(None)
            paused.set()
            _hold(resume, SUBSCRIBE_PAUSE_S, rival, locks_only=True)

        sys.setprofile(hook)
        try:
            return fn()
        finally:
            sys.setprofile(None)
            paused.set()  # (never stopped: its code had fewer call events than k)

    return Worker(run, "rs-tck:first-publisher"), paused, resume


def _paused_at_line(fn: Callable[[], Any], k: int, name: str, *, c_calls: bool = False,
                    pause_s: float = SUBSCRIBE_PAUSE_S, rival: int | None = None,
                    locks_only: bool = False) -> tuple[Worker, threading.Event, threading.Event, list[int]]:
    """``fn()`` on a TCK thread that stops before its ``k``-th line of the subject's own code until
    ``resume`` is set (at most ``pause_s``); ``paused`` is set when it stops. The list holds the
    steps still to go: above 0 once the call returned, it never stopped (it had fewer than ``k``).

    Finer than ``_paused_call``: a window between two lines with no call in between (a flag
    read, then a list joined) has a line event of its own. With ``c_calls``, a call of a builtin
    is a step too: ``x = max(0, x - 1)`` reads, calls, then stores, all on one line. Only the
    subject's frames are traced line by line; the kit's run untraced. ``rival``: the thread
    that runs the other side meanwhile; when it stands still in the subject's code (waiting for
    a lock the paused thread holds), the pause ends then instead of at ``pause_s``; with
    ``locks_only``, only when it stands at a ``with`` block's entry (see ``_hold``).
    """
    paused, resume = threading.Event(), threading.Event()
    left = [k]

    def lines(frame: Any, event: str, arg: Any) -> Any:
        if event != "line" or left[0] <= 0:
            return lines if left[0] > 0 else None
        left[0] -= 1
        if left[0] > 0:
            return lines
        sys.settrace(None)
        sys.setprofile(None)
        paused.set()
        _hold(resume, pause_s, rival, locks_only=locks_only)
        return None

    def calls(frame: Any, event: str, arg: Any) -> Any:
        if left[0] <= 0 or kits_step(frame):
            return None
        return lines

    def builtins(frame: Any, event: str, arg: Any) -> None:
        if event != "c_call" or left[0] <= 0 or kits_step(frame):
            return
        left[0] -= 1
        if left[0] > 0:
            return
        sys.settrace(None)
        sys.setprofile(None)
        paused.set()
        _hold(resume, pause_s, rival, locks_only=locks_only)

    def run() -> Any:
        sys.settrace(calls)
        if c_calls:
            sys.setprofile(builtins)
        try:
            return fn()
        finally:
            sys.settrace(None)
            sys.setprofile(None)
            paused.set()  # (never stopped: its code had fewer steps than k)

    return Worker(run, name), paused, resume, left


class PausedSide:
    """A race's first side: ``fn()`` on a TCK thread stopped before its ``k``-th step of the
    subject's code (see ``_paused_at_line``) until let go."""

    def __init__(self, fn: Callable[[], Any], k: int, name: str, *, c_calls: bool = False,
                 rival: int | None = None, pause_s: float = SUBSCRIBE_PAUSE_S,
                 locks_only: bool = False) -> None:
        self.call, self.paused, self.resume, self._left = _paused_at_line(
            fn, k, name, c_calls=c_calls, rival=rival, pause_s=pause_s, locks_only=locks_only)

    @property
    def ran_through(self) -> bool:
        """Whether the call returned without stopping: its code had fewer steps than ``k``."""
        return self.call.wait(0) and self._left[0] > 0

    def let_go(self, timeout: float) -> bool:
        """Let it go on now; whether its call then returned within ``timeout``."""
        self.resume.set()
        return starved_wait(self.call.wait, timeout)


def race(first: Callable[[], Any], second: Callable[[], Any], k: int, *, rule: str, what: str,
         timeout: float, name: str = "rs-tck:paused-side", c_calls: bool = False,
         watch_rival: bool = False, reached: Callable[[PausedSide], object] | None = None,
         after: Callable[[], object] | None = None, pause_s: float = SUBSCRIBE_PAUSE_S,
         locks_only: bool = False) -> PausedSide:
    """``first`` on a TCK thread stopped before its ``k``-th step of the subject's code, ``second``
    on this thread meanwhile; then the first goes on and must return within ``timeout`` (else
    ``rule`` is broken: ``what``). Returns the first side, its call over.

    ``reached(side)`` waits for the first side to stop (by default a moment for its pause);
    ``after()`` runs once the second side is done, as the first is let go (a hold to end).
    ``watch_rival``: this thread runs the second side, and the pause ends early when it stands
    still in the subject's code (waiting for a lock the paused thread holds; with
    ``locks_only``, only at a ``with`` block's entry). ``pause_s``: the longest pause.
    """
    side = PausedSide(first, k, name, c_calls=c_calls, rival=threading.get_ident() if watch_rival else None,
                      pause_s=pause_s, locks_only=locks_only)
    if reached is None:
        side.paused.wait(PREEMPT_WAIT_S * 5)
    else:
        reached(side)
    try:
        second()
    finally:
        side.resume.set()
        if after is not None:
            after()
    if not starved_wait(side.call.wait, timeout):
        raise RuleViolation(rule, what, "the call made on the TCK's thread did not return", setting="timeout")
    side.call.result()
    return side


#: How often a pause looks at its rival thread, and for how many looks in a row it must stand
#: still at one instruction of the subject's code to count as waiting for the paused one (a
#: thread merely waiting its turn for the interpreter lock moves on sooner).
_RIVAL_LOOK_S = 0.0002
_RIVAL_STILL_LOOKS = 4
#: Fewer for a rival standing at the entry of a ``with`` block (``with lock:``): it stands there
#: only inside the lock's ``__enter__``, which returns at once unless the lock is held.
_RIVAL_LOCK_LOOKS = 1
_BEFORE_WITH = dis.opmap["BEFORE_WITH"]


def _entering_with(frame: Any) -> bool:
    """Whether ``frame`` is inside the ``__enter__`` of a ``with`` statement (CPython 3.11+)."""
    code: bytes = frame.f_code.co_code
    lasti: int = frame.f_lasti
    return 0 <= lasti < len(code) and code[lasti] == _BEFORE_WITH


def _hold(resume: threading.Event, limit: float, rival: int | None, *, locks_only: bool = False) -> None:
    """Wait for ``resume`` (at most ``limit``), ending early when ``rival`` is stuck in the subject;
    with ``locks_only``, only when it waits at a ``with`` block's entry (a lock held by the paused
    thread), never for standing still elsewhere (a rival the scheduler left waiting, late)."""
    if rival is None:
        resume.wait(limit)
        return
    deadline = time.monotonic() + limit
    last: tuple[int, int] | None = None
    still = 0
    while not resume.wait(_RIVAL_LOOK_S) and time.monotonic() < deadline:
        frame = thread_frames().get(rival)
        if frame is None or kits_step(frame):
            last, still = None, 0  # the kit's own work (a probe's pause, its bookkeeping) goes on
            continue
        seen = (id(frame), frame.f_lasti)
        still = still + 1 if seen == last else 0
        locked = bool(still) and _entering_with(frame)
        if (locked and still >= _RIVAL_LOCK_LOOKS) or (not locks_only and still >= _RIVAL_STILL_LOOKS):
            return  # waiting for a lock the paused thread holds: holding on gains nothing
        last = seen


#: How long a thread paused by ``pause_after_here`` waits, at most, for the rival's call.
EXIT_PAUSE_S = 0.02


class ExitPause:
    """Pause the thread delivering a signal ``k`` steps of the subject's code after that signal
    returns: where a publisher's emission loop checks for more work and gives up its turn.

    ``arm()`` is called from inside the signal method (a probe's on_next hook), on whatever
    thread delivers it, the subject's own included: every frame of the subject's code on that
    stack gets a tracer, and the thread one for the frames it enters after, so the steps the
    loop takes once the signal returns are counted: lines, or with ``opcodes`` bytecode
    instructions (a read-modify-write such as ``wip -= missed`` without its lock is one line
    of several). At the ``k``-th the tracing ends and the thread waits (``paused`` set) until
    ``resume`` is set, at most ``EXIT_PAUSE_S``, or until the ``rival`` thread stands still in
    the subject's code (waiting for a lock the paused one holds).
    """

    def __init__(self, k: int, rival: int | None, *, opcodes: bool = False) -> None:
        self.k = k
        self.rival = rival
        self.opcodes = opcodes
        self.left = k
        self.counted = 0  # steps taken since arm(), the pause's own among them
        self.paused = threading.Event()
        self.resume = threading.Event()

    def arm(self) -> None:
        step = "opcode" if self.opcodes else "line"

        def steps(frame: Any, event: str, arg: Any) -> Any:
            if self.left <= 0:
                sys.settrace(None)
                return None
            if event != step or kits_step(frame):
                return steps
            self.left -= 1
            self.counted += 1
            if self.left > 0:
                return steps
            sys.settrace(None)
            self.paused.set()
            _hold(self.resume, EXIT_PAUSE_S, self.rival)
            return None

        def calls(frame: Any, event: str, arg: Any) -> Any:
            if self.left <= 0:
                sys.settrace(None)  # disarmed: the thread's next call ends the tracing on it
                return None
            if self.opcodes:
                # Only the frames on the stack at the signal are followed instruction by
                # instruction (the loop's own): a frame entered from one traced so, a
                # comprehension's, is not touched (CPython 3.11 can crash there).
                return None
            return None if kits_step(frame) else steps

        frame: Any = sys._getframe(1)
        while frame is not None:
            if not kits_step(frame):
                if self.opcodes:
                    frame.f_trace_opcodes = True
                frame.f_trace = steps
            frame = frame.f_back
        sys.settrace(calls)

    def disarm(self) -> None:
        """The signal's thread left without reaching the ``k``-th step: nothing more is counted."""
        self.left = 0
