"""The engine: runs one verification against one subject, with no test framework involved.

The body of a verification runs on a TCK-owned daemon thread; this thread only watches it.
A subject that blocks inside a call (neither returning nor signalling), or a verification that
overruns its time limit, costs that one verification: it is failed with the stack of the
blocked call and its thread is abandoned, so one hostile subject cannot hang a whole session.
"""

from __future__ import annotations

import sys
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any

from .environment import Environment
from .environment import as_violation
from .errors import NotVerified
from .errors import RuleViolation
from .errors import SetupError
from .results import TestResult
from .settings import Settings
from .trace import short_repr
from .verifications._base import Context
from .verifications._base import TckTest

#: How often the watchdog looks at a running verification (it wakes at once when it ends).
_WATCH_INTERVAL = 0.05


class _Stalled(Exception):
    pass


def stall_limit(settings: Settings) -> float:
    """How long a call may neither return nor signal before it counts as blocked."""
    return max(2 * settings.timeout, 1.0)


def run_test(
    test: TckTest,
    make_context: Callable[[Environment], Context],
    settings: Settings,
    *,
    subject_label: str = "",
) -> TestResult:
    """Run ``test`` and return its result; never raises for anything the subject does."""
    env = Environment(settings)
    env.rule = test.rule_id
    if settings.loop == "asyncio":
        from .loop import shared_loop

        env.dispatch = shared_loop(env, settings.timeout).call
    start = time.monotonic()
    outcome: dict[str, BaseException | None] = {"error": None}
    done = threading.Event()

    def body() -> None:
        env.body_ident = threading.get_ident()
        try:
            context = make_context(env)
            try:
                test.func(context)
            except BaseException as exc:  # the subject may raise anything, KeyboardInterrupt included
                outcome["error"] = exc
            # Always clean up; the body's own finding stays the headline, and whatever the
            # probes recorded is listed beside it (finish raises only the first of those).
            context.finish()
        except BaseException as exc:
            if outcome["error"] is None:
                outcome["error"] = exc
        finally:
            done.set()

    worker = threading.Thread(target=body, name="rs-tck-body", daemon=True)
    stalled: _Stalled | None = None
    with env:
        worker.start()
        stalled = _watch(env, worker, done, start, settings)
    duration = time.monotonic() - start
    error = stalled if stalled is not None else outcome["error"]
    return _result(test, env, error, duration, subject_label)


def _watch(
    env: Environment, worker: threading.Thread, done: threading.Event, start: float, settings: Settings
) -> _Stalled | None:
    limit = stall_limit(settings)
    seen, changed = env.progress, time.monotonic()
    while not done.wait(_WATCH_INTERVAL):
        now = time.monotonic()
        if env.progress != seen:
            seen, changed = env.progress, now
        call = env.current_call
        if call is not None and now - max(call[1], changed) > limit:
            return _Stalled(
                f"`{call[0]}` neither returned nor signalled for {limit * 1000:.0f} ms: the subject "
                f"blocked its caller (rules 3.4/3.5: request and cancel return promptly; 1.9: "
                f"subscribe returns normally)\n  blocked at:\n{_stack(worker)}"
            )
        if now - start > settings.test_limit:
            where = f" inside `{call[0]}`" if call else ""
            return _Stalled(
                f"the verification did not finish within its limit of {settings.test_limit:.1f} s"
                f"{where} (--rs-test-limit-ms)\n  it was at:\n{_stack(worker)}"
            )
    return None


def _stack(thread: threading.Thread) -> str:
    frame = sys._current_frames().get(thread.ident or -1)
    if frame is None:
        return "    (stack unavailable)"
    lines = traceback.format_stack(frame)[-8:]
    return "".join("    " + line.replace("\n", "\n    ").rstrip() + "\n" for line in lines).rstrip()


def _result(
    test: TckTest, env: Environment, error: BaseException | None, duration: float, subject: str
) -> TestResult:
    problems = env.problems
    primary: RuleViolation | None = None
    verdict, outcome, message = "passed", "passed", ""
    if isinstance(error, NotVerified):
        outcome, verdict = "skipped", error.kind
        message = f"{error.kind.replace('_', ' ')}: {error.reason}"
    elif isinstance(error, SetupError):
        outcome, verdict = "error", "error"
        message = f"[setup] {error}"
    elif isinstance(error, _Stalled):
        primary = RuleViolation(test.rule, "the verification to run to its end", str(error))
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
    shown = getattr(primary, "problem", None)
    others = [p for p in problems if p.error is not primary and p is not shown]
    if primary is not None:
        outcome, verdict = "failed", "failed"
        cited = {primary.rule.id if primary.rule else None}
        cited |= {p.error.rule.id if isinstance(p.error, RuleViolation) and p.error.rule else None for p in others}
        if test.level == "optional" and cited <= {test.rule_id, None} and not isinstance(error, _Stalled):
            # The optional behaviour is absent; nothing the spec requires was broken.
            outcome, verdict = "skipped", "optional_unsupported"
        message = _failure_message(test, primary, others, env, subject, error)
        if verdict == "optional_unsupported":
            message = "optional, not supported: " + message
    records = env.trace.records()
    rule = test.rule_id
    if test.level == "fuzz" and primary is not None and primary.rule is not None:
        rule = primary.rule.id  # a fuzz test verifies no single rule: it reports the one broken
    return TestResult(
        test=test.name,
        verification=test.verification,
        rule=rule,
        level=test.level,
        outcome=outcome,
        verdict=verdict,
        duration_s=duration,
        message=message,
        trace=[r.to_json() for r in records],
        trace_total=env.trace.total,
        subject=subject,
        fuzz=getattr(primary, "fuzz", None),
    )


def _failure_message(
    test: TckTest,
    primary: RuleViolation,
    others: list[Any],
    env: Environment,
    subject: str,
    error: BaseException | None,
) -> str:
    lines = primary.details()
    if subject:
        lines.append(f"  subject : {subject}")
    if isinstance(error, BaseException) and not isinstance(error, RuleViolation | _Stalled):
        tb = "".join(traceback.format_exception(error)[-6:]).rstrip()
        lines.append("  raised  :\n    " + tb.replace("\n", "\n    "))
    if others:
        lines.append(f"  also    : {len(others)} more problem(s) in this verification:")
        for i, problem in enumerate(others, 2):
            lines.append(f"    {i}. " + problem.describe().replace("\n", "\n    "))
    if env.problems_dropped:
        lines.append(f"  ... and {env.problems_dropped} more problem(s), not kept")
    if test.rule is None or primary.rule is None or primary.rule.id != test.rule.id:
        lines.append(f"  test    : {test.test_id} ({test.level})")
    lines.append(f"  trace   : {env.trace.total} record(s)")
    lines.append(env.trace.format())
    return "\n".join(lines)
