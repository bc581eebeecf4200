"""Runs one rule test against a fresh subject and turns what happened into its ``TestResult``.

The body of a verification runs on a TCK-owned daemon thread; this thread only watches it.
A subject that blocks inside a call (neither returning nor signalling) costs that one
verification: it is failed with the stack of the blocked call and its thread is abandoned, so
one hostile subject cannot hang a whole session. A verification that overruns its time limit
(``test_limit``) is abandoned too, but a slow subject is not a broken one: unless the probes
saw a rule broken on the way, it ends inconclusive (outcome and verdict ``error``, no rule
cited), visible and failing the run, never a rule's failure.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

from ..errors import NotVerified
from ..errors import RuleViolation
from ..errors import SetupError
from ..errors import format_exception
from ..errors import format_frames
from ..registry import TckTest
from ..results import Failure
from ..results import Level
from ..results import Outcome
from ..results import TestResult
from ..results import Verdict
from ..rules import rule as lookup_rule
from ..settings import KNOBS_BY_NAME
from ..settings import Settings
from .clock import RunningClock
from .environment import Environment
from .environment import Problem
from .environment import Slot
from .environment import as_violation
from .reach import thread_frames
from .reach import waiting_for_results
from .trace import short_repr
from .worker import Worker

if TYPE_CHECKING:
    from ..contexts import Context

#: How often the watchdog looks at a running verification (it wakes at once when it ends).
_WATCH_INTERVAL = 0.05


class _Stalled(Exception):
    """The body blocked or overran; ``setting`` is the limit it ran into.

    ``call`` is the call that blocked its caller (``request(1)``), None when the body overran.
    """

    def __init__(self, text: str, setting: str, call: str | None = None) -> None:
        super().__init__(text)
        self.setting = setting
        self.call = call


def stall_limit(settings: Settings) -> float:
    """How long a call may neither return nor signal before it counts as blocked."""
    return max(2 * settings.timeout, 1.0)


def run_test(
    test: TckTest,
    make_context: Callable[[Environment], Context],
    settings: Settings,
    *,
    subject_label: str = "",
    slot: Slot | None = None,
    on_blocked: Callable[[str], None] | None = None,
) -> TestResult:
    """Run ``test`` and return its result; never raises for anything the subject does.

    ``slot`` is given up while the test only waits (see ``Environment.aside``), so a scheduler
    can let another test call its subject meanwhile. ``on_blocked`` is told the call (as
    ``request(1)``) when the subject blocked its caller in this test.
    """
    env = Environment(settings)
    env.rule = test.rule_id
    env.slot = slot
    if settings.loop == "asyncio":
        from .loop import shared_loop

        env.dispatch = shared_loop(env, settings.timeout).call
    started_at, start = time.time(), time.monotonic()

    def body() -> None:
        env.body_ident = threading.get_ident()
        env.threads.add(env.body_ident)
        context = make_context(env)
        try:
            test.func(context)
        except BaseException:  # the subject may raise anything, KeyboardInterrupt included
            # Always clean up; the body's own finding stays the headline, and whatever the
            # probes recorded is listed beside it (finish raises only the first of those).
            with contextlib.suppress(BaseException):
                context.finish()
            raise
        context.finish()

    switching = sys.getswitchinterval()
    with env:
        worker = Worker(body, "rs-tck-body")
        with waiting_for_results():
            stalled = _watch(env, worker, start, settings)
    sys.setswitchinterval(switching)  # a race-hunting test that was abandoned cannot restore it
    duration = time.monotonic() - start
    error = stalled if stalled is not None else worker.error
    if stalled is not None and stalled.call is not None and on_blocked is not None:
        on_blocked(stalled.call)
    return _result(test, env, error, started_at, duration, subject_label)


def _watch(env: Environment, worker: Worker, start: float, settings: Settings) -> _Stalled | None:
    """Watch for a call that blocks its caller, and for the test's overall limit (the time it
    waited for its turn while other tests called their subjects left out).

    A call counts as blocked after ``stall_limit`` of silence, measured on a ``RunningClock``:
    each look credits at most twice its interval, so when the whole process is starved (the
    watchdog wakes late, a loaded CI machine) that time is not held against the subject. A
    subject that truly blocks leaves the watchdog waking on time, and is caught as before.
    """
    limit = stall_limit(settings)
    seen, call_seen, silent = env.progress, env.current_call, 0.0
    clock = RunningClock()
    while not worker.wait(_WATCH_INTERVAL):
        step = clock.step(2 * _WATCH_INTERVAL)
        call = env.current_call
        if env.progress != seen or call is not call_seen:
            seen, call_seen, silent = env.progress, call, 0.0
        else:
            silent += step
        if call is not None and silent > limit:
            return _Stalled(
                f"`{call[0]}` neither returned nor signalled for {limit * 1000:.0f} ms: the subject "
                f"blocked its caller (rules 3.4/3.5: request and cancel return promptly; 1.9: "
                f"subscribe returns normally)\n  blocked at:\n{_stack(worker.thread)}",
                "timeout", call[0],
            )
        if time.monotonic() - start - env.turn_waited() > settings.test_limit:
            where = f" inside `{call[0]}`" if call else ""
            return _Stalled(
                f"the verification did not finish within its limit of {settings.test_limit:.1f} s"
                f"{where} (--rs-test-limit-ms)\n  it was at:\n{_stack(worker.thread)}",
                "test_limit",
            )
    return None


def _call_record(env: Environment, call: str | None) -> tuple[int, ...]:
    """The trace record of the call that blocked (``request(1)``: the probe's request record)."""
    if call is None:
        return ()
    for record in reversed(env.trace.records()):
        shown = f"{record.signal}({record.detail})" if record.signal != "note" else record.detail
        if shown == call or (record.signal != "note" and call.startswith(f"{record.signal}(")):
            return (record.seq,)
    return ()


def _stack(thread: threading.Thread) -> str:
    frame = thread_frames().get(thread.ident or -1)
    if frame is None:
        return "    (stack unavailable)"
    text = format_frames(traceback.extract_stack(frame)[-8:])
    return "".join("    " + line + "\n" for line in text.splitlines()).rstrip()


def _result(
    test: TckTest,
    env: Environment,
    error: BaseException | None,
    started_at: float,
    duration: float,
    subject: str,
) -> TestResult:
    problems = env.problems
    primary: RuleViolation | None = None
    overran = ""  # the time limit's report, when the test was stopped there after a violation
    verdict, outcome, message = Verdict.PASSED, Outcome.PASSED, ""
    failures: list[Failure] = []
    if isinstance(error, NotVerified):
        outcome, verdict = Outcome.SKIPPED, error.kind
        message = f"{error.kind.replace('_', ' ')}: {error.reason}"
    elif isinstance(error, SetupError):
        outcome, verdict = Outcome.ERROR, Verdict.ERROR
        failures = [Failure(None, "a subject the TCK can set up", str(error))]
        message = f"[setup] {error}"
    elif isinstance(error, _Stalled) and error.setting == "test_limit" and problems:
        # Stopped at its limit after the probes had seen a rule broken: that is the verdict.
        primary = as_violation(problems[0], test.rule_id)
        overran = str(error)
    elif isinstance(error, _Stalled) and error.setting == "test_limit":
        # A slow subject is not a broken one: no rule is cited, and the run does not pass.
        outcome, verdict = Outcome.ERROR, Verdict.ERROR
        limit = env.settings.test_limit
        failures = [Failure(None, f"the verification to finish within its limit of {limit:.1f} s "
                            "(--rs-test-limit-ms)", str(error).split("\n", 1)[0], setting="test_limit")]
        message = _inconclusive_message(test, env, str(error), subject)
    elif isinstance(error, _Stalled):
        primary = RuleViolation(test.rule, "the verification to run to its end", str(error),
                                setting=error.setting, evidence=_call_record(env, error.call))
        if env.on_stall is not None:
            primary = env.on_stall(primary)
    elif isinstance(error, RuleViolation):
        primary = error
    elif error is not None:
        # An exception escaping a call into the subject that no check anticipated.
        primary = RuleViolation(
            test.rule,
            "every call into the subject to return normally",
            f"{type(error).__name__}: {short_repr(error, 300)}",
        )
        primary.__cause__ = error
    elif problems:
        primary = as_violation(problems[0], test.rule_id)
    if primary is not None and env.refused and env.settings.max_subscribers > 1 and not primary.hint:
        primary.hint = _one_subscriber_hint(env.refused[0])
    if primary is not None:
        outcome, verdict, message, failures = _failed(test, env, primary, error, subject, overran)
    records = env.trace.records()
    rule = test.rule_id
    if test.level == Level.FUZZ and primary is not None and primary.rule is not None:
        rule = primary.rule.id  # a fuzz test verifies no single rule: it reports the one broken
    return TestResult(
        test=test.name,
        verification=test.verification,
        rule=rule,
        level=Level(test.level),
        outcome=outcome,
        verdict=verdict,
        duration_s=duration,
        message=message,
        trace=[r.to_json() for r in records],
        trace_total=env.trace.total,
        subject=subject,
        fuzz=getattr(primary, "fuzz", None),
        failures=failures,
        started_at=started_at,
        finished_at=time.time(),
        iterations=_iterations(test, env, outcome == Outcome.FAILED and primary is not None
                               and primary.rule is not None and not isinstance(error, _Stalled)),
    )


def _failed(test: TckTest, env: Environment, primary: RuleViolation, error: BaseException | None,
            subject: str, overran: str) -> tuple[Outcome, Verdict, str, list[Failure]]:
    """A test that found a problem: every problem as a ``Failure``, ``primary`` (the headline)
    first, and the verdict; an optional test that broke only its own rule is unsupported."""
    problems = env.problems
    made_from: Problem | None = getattr(primary, "problem", None)
    shown = next((p for p in problems if p.error is primary or p is made_from), None)
    others = [p for p in problems if p is not shown]
    raised = error if _unanticipated(error) else made_from.error if made_from is not None else None
    found = [_Found(primary, shown, raised)]
    found += [_Found(as_violation(p, test.rule_id), p, None if isinstance(p.error, RuleViolation) else p.error)
              for p in others]
    failures = [f.violation.failure() for f in found]
    message = _failure_message(test, found, env, subject, overran)
    cited = {f.rule for f in failures}
    if test.level == Level.OPTIONAL and cited <= {test.rule_id, None} and not isinstance(error, _Stalled):
        # The optional behaviour is absent; nothing the spec requires was broken.
        return Outcome.SKIPPED, Verdict.OPTIONAL_UNSUPPORTED, "optional, not supported: " + message, failures
    return Outcome.FAILED, Verdict.FAILED, message, failures


def _iterations(test: TckTest, env: Environment, showed: bool) -> dict[str, int] | None:
    """The rounds a race hunt ran, the failing one included (each is counted as it begins), and
    how many showed a defect: one that failed on a rule showed it in the round it failed in. A
    hunt that failed otherwise (blocked, or a setup problem) showed nothing of its race."""
    counted = env.iterations
    if counted is None or test.level == Level.FUZZ or not showed:
        return counted
    return {"ran": max(counted["ran"], 1), "showed": max(counted["showed"], 1)}


def _one_subscriber_hint(refused: str) -> str:
    """What to do when the subject refused a subscriber while it served another."""
    return (f"{refused} before requesting anything while another subscriber was served: a subject "
            "that serves one subscriber at a time declares it with --rs-max-subscribers=1 (or "
            "max_subscribers=1 on its PublisherSubject or ProcessorSubject); the tests that need a "
            "second subscriber then do not apply")


def not_run(test: TckTest, blocked_in: str, call: str, subject: str = "") -> TestResult:
    """The result of a test left out because ``blocked_in``, a test of the same subject, found
    ``call`` blocking its caller: every test would wait out the stall limit on it in turn.

    The message is the same for every test left out, so a report can fold them into one line.
    """
    now = time.time()
    return TestResult(
        test=test.name, verification=test.verification, rule=test.rule_id, level=Level(test.level),
        outcome=Outcome.SKIPPED, verdict=Verdict.NOT_RUN, duration_s=0.0,
        message=(f"not run: the subject blocked in {blocked_in} (`{call}` neither returned nor signalled; "
                 "that test's failure shows where it blocked)"),
        trace=[], trace_total=0, subject=subject, started_at=now, finished_at=now,
    )


@dataclass(frozen=True)
class _Found:
    """One problem of a test: as a violation, where it was seen, and what raised it, if anything."""

    violation: RuleViolation
    problem: Problem | None
    raised: BaseException | None


def _unanticipated(error: BaseException | None) -> bool:
    return error is not None and not isinstance(error, RuleViolation | _Stalled)


#: The core's own files: frames in them are the TCK calling the subject, not the subject.
_TCK_DIR = Path(__file__).resolve().parents[1]


def _user_frames(exc: BaseException) -> str:
    """The frames of ``exc``'s traceback outside the TCK: where in the subject it was raised."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if not Path(f.filename).resolve().is_relative_to(_TCK_DIR)]
    return format_frames(frames[-8:]).rstrip()


def _failure_lines(failure: Failure, raised: BaseException | None,
                   violation: BaseException | None = None) -> list[str]:
    lines = [failure.headline()]
    if failure.hint:
        lines.append(f"  check   : {failure.hint}")
    if failure.evidence:
        lines.append(f"  evidence: {', '.join(f'#{seq}' for seq in failure.evidence)} (marked > in the trace below)")
    if failure.setting:
        knob = KNOBS_BY_NAME.get(failure.setting)
        lines.append(f"  setting : {failure.setting}" + (f" ({knob.option})" if knob else ""))
    if failure.rule:
        cited = lookup_rule(failure.rule)
        lines.append(f"  rule    : {cited.id} ({cited.strength.value}) {cited.summary}")
        lines.append(f"  spec    : {cited.url}")
    if raised is not None:
        tb = format_exception(raised, limit=4).rstrip()
        lines.append("  raised  :\n    " + tb.replace("\n", "\n    "))
    elif violation is not None and violation.__cause__ is not None:
        # A violation caused by the subject's own exception (on_next raised, say): show where.
        where = _user_frames(violation.__cause__)
        if where:
            lines.append("  raised at (most recent call last):\n  " + where.replace("\n", "\n  "))
    return lines


def _fuzz_lines(fuzz: dict[str, Any] | None) -> list[str]:
    """A fuzz failure's shrunk scenario, how it was found, and how to replay it."""
    if not fuzz:
        return []
    lines = []
    race = fuzz.get("race")
    if race:
        lines.append(f"  race    : the failure does not repeat on every run of this scenario: it failed "
                     f"{race['failed']} of {race['replays']} replays")
    if fuzz.get("runs", 1) > 1:
        lines.append(f"  found   : after {fuzz['examples']} generated scenario(s) ({fuzz['seconds_to_find']:.2f} s),"
                     f" shrunk in {fuzz['runs']} run(s) in all")
    lines.append("  scenario: the smallest found; the trace below is its last run")
    lines += ["    " + step for step in fuzz.get("scenario", [])]
    lines.append(f"  replay  : pytest ... {fuzz['replay_option']}")
    return lines


def _inconclusive_message(test: TckTest, env: Environment, stalled: str, subject: str) -> str:
    """The report of a test stopped at its time limit with no rule seen broken: inconclusive."""
    limit = env.settings.test_limit
    lines = [(f"inconclusive: too slow for this test within --rs-test-limit-ms ({limit * 1000:.0f} ms); "
             "no rule was seen broken, and none is verified"),
             ("  check   : raise --rs-test-limit-ms (ini rs_test_limit_ms, env RS_TCK_TEST_LIMIT_MS) for a "
             "subject this slow, or look at where it was when stopped (below)"),
             "  setting : test_limit (--rs-test-limit-ms)",
             "  stopped : " + stalled.replace("\n", "\n  ")]
    if subject:
        lines.append(f"  subject : {subject}")
    lines.append(f"  test    : {test.test_id} ({test.level})")
    lines.append(f"  trace   : {env.trace.total} record(s)")
    lines.append(env.trace.format(cited=[]))
    return "\n".join(lines)


def _failure_message(test: TckTest, found: list[_Found], env: Environment, subject: str,
                     overran: str = "") -> str:
    """The human-readable report of a failed test: the one place its failures become text."""
    first, others = found[0], found[1:]
    lines = _failure_lines(first.violation.failure(), first.raised, first.violation)
    if first.problem is not None:
        lines.append(f"  where   : {first.problem.origin}")
    if overran:
        lines.append("  stopped : " + overran.replace("\n", "\n  "))
    lines += _fuzz_lines(getattr(first.violation, "fuzz", None))
    if subject:
        lines.append(f"  subject : {subject}")
    if others:
        lines.append(f"  also    : {len(others)} more problem(s) in this verification:")
        for i, other in enumerate(others, 2):
            text = "\n    ".join(_failure_lines(other.violation.failure(), other.raised, other.violation))
            origin = f"\n    ({other.problem.origin})" if other.problem is not None else ""
            lines.append(f"    {i}. " + (text + origin).replace("\n", "\n    "))
    if env.problems_dropped:
        lines.append(f"  ... and {env.problems_dropped} more problem(s), not kept")
    cited = first.violation.rule
    if test.rule is None or cited is None or cited.id != test.rule.id:
        lines.append(f"  test    : {test.test_id} ({test.level})")
    lines.append(f"  trace   : {env.trace.total} record(s)")
    lines.append(env.trace.format(cited=[seq for f in found for seq in f.violation.evidence]))
    return "\n".join(lines)
