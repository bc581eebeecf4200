"""Running one work unit in a child process with a deadline, as rows of the campaign dataset.

Spark does not time out a hung Python task, ``local[N]`` aborts the job on a crashed one, and
a thread abandoned at a deadline keeps running in a reused worker. So a unit never runs in the
executor's own process: it runs in a child that is killed when a test overruns the engine's
limit by ``grace_s``, and whatever the child did not report becomes rows saying so. This
function never raises for anything the subject does.
"""

from __future__ import annotations

import dataclasses
import json
import os
import platform
import select
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from typing import Any

from rstck.results import TCK_VERSION
from rstck.results import Failure
from rstck.results import Level
from rstck.results import Outcome
from rstck.results import TestResult
from rstck.results import Verdict

#: Columns of the results dataset, in order, with their Spark SQL types.
ROW_FIELDS: tuple[tuple[str, str], ...] = (
    ("campaign_id", "string"), ("unit_id", "string"), ("row_id", "string"), ("source", "string"),
    ("subject", "string"), ("verification", "string"), ("test", "string"), ("rule", "string"),
    ("level", "string"), ("outcome", "string"), ("verdict", "string"), ("duration_s", "double"),
    ("message", "string"), ("failures", "string"), ("failure_rule", "string"),
    ("failure_expected", "string"), ("failure_observed", "string"),
    ("iterations_ran", "bigint"), ("iterations_showed", "bigint"),
    ("repetition", "bigint"), ("seed", "bigint"), ("host", "string"), ("worker_pid", "bigint"),
    ("process_pid", "bigint"), ("python", "string"), ("loop", "string"),
    ("started_at", "double"), ("finished_at", "double"), ("subject_origin", "string"),
    ("tck_version", "string"), ("attempt_id", "string"),
)
COLUMNS = tuple(name for name, _ in ROW_FIELDS)
#: How much of the child's own output an error row quotes (room for every thread's stack).
_TAIL_CHARS = 8000
#: Seconds the child is given to write its threads' stacks before it is killed.
_DUMP_WAIT_S = 2.0
#: Seconds a unit's process may take to start (interpreter, imports, the subject's module),
#: on top of the first test's limit: a machine under load starts processes slowly.
STARTUP_S = 30.0
#: The signal on which the child writes every thread's stack (``faulthandler.register``).
DUMP_SIGNAL = signal.SIGUSR1


def result_row(result: TestResult, base: dict[str, Any]) -> dict[str, Any]:
    """A dataset row from one result, with the unit's columns of ``base``."""
    first = result.failures[0] if result.failures else None
    iterations = result.iterations or {}
    started = result.started_at or base.get("started_at")
    finished = result.finished_at or (started + result.duration_s if started else None)
    row = dict(base)
    row.update({
        "row_id": f"{base['unit_id']}/{result.verification}/{result.test}",
        "verification": result.verification, "test": result.test, "rule": result.rule,
        "level": result.level.value, "outcome": result.outcome.value, "verdict": result.verdict.value,
        "duration_s": result.duration_s, "message": result.message,
        "failures": json.dumps([f.to_json() for f in result.failures]),
        "failure_rule": first.rule if first else None, "failure_expected": first.expected if first else None,
        "failure_observed": first.observed if first else None,
        "iterations_ran": iterations.get("ran"), "iterations_showed": iterations.get("showed"),
        "started_at": started, "finished_at": finished,
    })
    return {name: row.get(name) for name in COLUMNS}


def _rule_of(test: str, verification: str) -> tuple[str | None, str]:
    from rstck.verifications import VERIFICATIONS

    for t in VERIFICATIONS[verification].tests:
        if t.name == test:
            return t.rule_id, str(t.level)
    return None, "required"


def synthetic_row(base: dict[str, Any], test: str, outcome: str, message: str, started: float) -> dict[str, Any]:
    """A row for a test the child did not report: lost with its process, or never reached."""
    rule, level = _rule_of(test, base["verification"])
    now = time.time()
    failure = Failure(None, "the unit's process to report this test", message)
    result = TestResult(
        test, base["verification"], rule, Level(level), Outcome(outcome),
        Verdict.ERROR if outcome == Outcome.ERROR else Verdict.UNTESTED, max(0.0, now - started), message,
        failures=[failure] if outcome == Outcome.ERROR else [], started_at=started, finished_at=now,
    )
    return result_row(result, base)


def _over_memory(result: TestResult, peak: object, memory_mb: int) -> TestResult | None:
    """The result as an error when the process passed the memory limit during its test, else None.

    Over the limit between two polls: this test is where the memory went.
    """
    if not memory_mb or not isinstance(peak, int | float) or peak <= memory_mb:
        return None
    over = (f"the unit's process reached {peak:.0f} MiB during this test, over the unit memory "
            f"limit of {memory_mb} MiB (--memory-mb), and was stopped: a leak, or a subject "
            "that needs a larger limit")
    return dataclasses.replace(
        result, outcome=Outcome.ERROR, verdict=Verdict.ERROR,
        message=over + ("\n" + result.message if result.message else ""),
        failures=[Failure(None, f"at most {memory_mb} MiB resident", over)])


def _describe_exit(code: int | None) -> str:
    if code is None:
        return "did not exit"
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with status {code}"


def _tail(path: str) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - _TAIL_CHARS))
            text = f.read().decode("utf-8", "replace").strip()
    except OSError:
        return ""
    return f"\n  its output ended with:\n    {text.replace(chr(10), chr(10) + '    ')}" if text else ""


def run_unit(unit: dict[str, Any], task: dict[str, Any], *, source: str = "campaign") -> list[dict[str, Any]]:
    """Run one unit in a child process and return its rows; never raises for the subject's doing."""
    started = time.time()
    base: dict[str, Any] = {
        "campaign_id": unit["campaign_id"], "unit_id": unit["unit_id"], "source": source,
        "subject": unit["subject"], "verification": unit["verification"],
        "repetition": unit["repetition"], "seed": unit["seed"], "host": socket.gethostname(),
        "worker_pid": os.getpid(), "process_pid": None, "python": platform.python_version(),
        "loop": task["knobs"].get("loop", "thread"), "subject_origin": None,
        "tck_version": TCK_VERSION, "started_at": started, "attempt_id": uuid.uuid4().hex[:16],
    }
    from rstck.settings import Settings

    limit = Settings(**task["knobs"]).test_limit + float(task["grace_s"])
    memory_mb = int(task.get("memory_mb") or 0)
    read_fd, write_fd = os.pipe()
    log = tempfile.NamedTemporaryFile(prefix="rs-tck-unit-", suffix=".log", delete=False)  # noqa: SIM115
    env = dict(os.environ, RS_TCK_SEED=str(unit["seed"]))
    try:
        child = subprocess.Popen(
            [sys.executable, "-X", "faulthandler", "-m", "rstck_plugins.campaign.child", str(write_fd)],
            stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT, pass_fds=(write_fd,), env=env,
            start_new_session=True,  # a Ctrl-C at the terminal stops the campaign, not the units
        )
    finally:
        os.close(write_fd)
    try:
        assert child.stdin is not None
        child.stdin.write(json.dumps({"unit": unit, "task": task, "sys_path": sys.path}).encode())
        child.stdin.close()
        return _collect(child, read_fd, base, limit, log.name, started, memory_mb)
    finally:
        if child.poll() is None:
            child.kill()
        child.wait()
        os.close(read_fd)
        log.close()
        os.unlink(log.name)


def resident_mb(pid: int) -> float | None:
    """The process's resident memory (Linux ``/proc``; None where it cannot be read)."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _dump_and_kill(child: subprocess.Popen[bytes], log: str) -> None:
    """Have the child write every thread's stack to its output (faulthandler), then kill it.

    The dump is written by a C signal handler, so it works while Python code is wedged; a
    stopped process is continued for it. Waits until the dump stops growing, briefly.
    """
    try:
        before = os.path.getsize(log)
        child.send_signal(DUMP_SIGNAL)
        child.send_signal(signal.SIGCONT)
        deadline = time.monotonic() + _DUMP_WAIT_S
        size = before
        while time.monotonic() < deadline and child.poll() is None:
            time.sleep(0.1)
            now = os.path.getsize(log)
            if now > before and now == size:
                break
            size = now
    except OSError:
        pass
    if child.poll() is None:
        child.kill()
    child.wait()


def _collect(
    child: subprocess.Popen[bytes], fd: int, base: dict[str, Any], limit: float, log: str, started: float,
    memory_mb: int = 0,
) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    tests: list[str] | None = None
    reported: set[str] = set()
    buffer = b""
    # Starting the process (imports, the subject's module) is not a test: it gets its own
    # allowance, so a loaded machine's slow start is not a hang; each test then gets ``limit``.
    deadline = time.monotonic() + limit + STARTUP_S
    in_flight_since = started
    lost: str | None = None
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            _dump_and_kill(child, log)
            lost = (f"the unit's process did not report within {limit:.1f} s (test limit + grace) "
                    f"and was killed; its threads' stacks are below") if tests is not None else (
                    f"the unit's process did not start its tests within {limit + STARTUP_S:.1f} s "
                    f"(test limit + grace + {STARTUP_S:.0f} s to start) and was killed; its threads' stacks "
                    "are below")
            break
        if memory_mb:
            used = resident_mb(child.pid)
            if used is not None and used > memory_mb:
                _dump_and_kill(child, log)
                lost = (f"the unit's process used {used:.0f} MiB, over the unit memory limit of "
                        f"{memory_mb} MiB (--memory-mb), and was killed: a leak, or a subject that "
                        "needs a larger limit; its threads' stacks are below")
                break
        ready, _, _ = select.select([fd], [], [], min(remaining, 0.25 if memory_mb else 1.0))
        if not ready:
            continue
        chunk = os.read(fd, 65536)
        if not chunk:
            code = child.wait()
            lost = None if tests is not None and len(reported) == len(tests) else f"the unit's process {_describe_exit(code)}"
            break
        buffer += chunk
        *lines, buffer = buffer.split(b"\n")
        for line in lines:
            message = json.loads(line)
            if "setup_error" in message:
                return [synthetic_row(base, "(setup)", "error", "[setup] " + message["setup_error"], started)]
            if "tests" in message:
                tests = message["tests"]
                base["process_pid"] = message["pid"]
                base["subject_origin"] = message["origin"]
                in_flight_since = time.time()
                deadline = time.monotonic() + limit
            elif "result" in message:
                result = TestResult.from_json(message["result"])  # the hop from the unit's process
                over = _over_memory(result, message.get("peak_mb"), memory_mb)
                rows.append(result_row(over or result, base))
                reported.add(result.test)
                if over is not None:
                    child.kill()
                    child.wait()
                    stopped = f"the unit's process was stopped at its memory limit ({memory_mb} MiB) after {result.test}"
                    return rows + [synthetic_row(base, t, "skipped", f"not run: {stopped}", time.time())
                                   for t in tests or [] if t not in reported]
                in_flight_since = time.time()
                deadline = time.monotonic() + limit
            elif message.get("done"):
                return rows
    assert lost is not None
    detail = lost + _tail(log)
    if tests is None:
        return [*rows, synthetic_row(base, "(setup)", "error", detail + " before it selected its tests", started)]
    pending = [t for t in tests if t not in reported]
    if pending:
        rows.append(synthetic_row(base, pending[0], "error", f"{detail}\n  while running this test", in_flight_since))
        for test in pending[1:]:
            rows.append(synthetic_row(base, test, "skipped", f"not run: {lost} during {pending[0]}", time.time()))
    return rows
