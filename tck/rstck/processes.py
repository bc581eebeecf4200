"""A run's subjects dealt to worker processes, so that a library's many subjects use every core.

In one process the subjects' CPU (the fuzz searches, the long streams) runs on one core, the
interpreter's lock held by one thread at a time; a run of twenty publishers then takes about
twenty times one's CPU on that core. Here whole subjects go to ``N`` worker processes
(``python -m rstck._internal.process_worker``), each running its share as one joint schedule, as the
pytest process would (``rstck.run_api.joint``), and handing each test's result back as JSON
lines, complete but for a passing test's trace when nothing in the run reads those (the hello's
``passing_traces``). The host reports them as its own.

A worker rebuilds each subject as the host loaded it, from a ``Recipe``: the module to import
(with the host's ``sys.path``), the attribute (a declaration, a factory or a subject record), the
failed publisher's ``module:attr``, the tests to run by id. What a worker cannot rebuild it
says so (``unbuilt``), and the host runs that subject itself: no verdict is lost or changed.

Every wait is bounded: a worker that exits, or that says nothing (no heartbeat) for ``hang_s``,
or hands back no result for ``result_s``, is killed and costs only the tests it had not
reported, each an error naming the cause; the shares it had not started go to the others.
Workers are started as ``subprocess``es of ``python -m``: about 0.3 s each, in parallel,
importing what a schedule needs; ``multiprocessing``'s forkserver costs the same once (its
server imports it), and needs the host's ``__main__`` importable in the child, which pytest's is
not; ``fork`` is unsafe in a process with threads, which the host's schedules start.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import asdict
from dataclasses import dataclass
from dataclasses import field
from typing import IO
from typing import Any

from .registry import TckTest
from .results import Level
from .results import Outcome
from .results import TestResult
from .results import Verdict

#: Expected CPU of a whole verification, by kind, relative to a publisher's (about 0.7 s): a
#: processor's feeds two threads and a processor per element, a subscriber's are short.
KIND_COST = {"publisher": 1.0, "subscriber_blackbox": 0.5, "subscriber_whitebox": 0.5, "processor": 4.0}
#: A worker that says nothing (not even its heartbeat, sent every ``BEAT_S``) this long is hung.
HANG_S = 60.0
BEAT_S = 1.0
#: A worker not yet ready (still importing: a cold bytecode cache on a loaded machine takes
#: seconds) is hung only after this long, or ``hang_s`` if that is longer.
START_S = 60.0
#: The module a worker runs as.
WORKER_MODULE = "rstck._internal.process_worker"


@dataclass(frozen=True)
class Recipe:
    """How a worker rebuilds one subject as the host loaded it, and which of its tests to run."""

    key: str
    kind: str
    #: The module to import, and the attribute in it (dotted for one in a class): a declaration
    #: (``declared``), else what a ``MODULE:ATTR`` option names (a factory, a record, a declaration).
    module: str
    attr: str
    declared: bool
    #: What names the subject, as the host loaded it (``SubjectEntry.spec``): its label.
    spec: str
    #: The failed publisher's ``module:attr`` given by an option, if any.
    failed: str | None = None
    #: The test ids to run, in the host's order.
    tests: tuple[str, ...] = ()
    #: Expected cost (see ``KIND_COST``), to cut shares by cost (``shares``).
    cost: float = 1.0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Recipe:
        return cls(**{**data, "tests": tuple(data.get("tests", ()))})


def cost_of(kind: str, selected: int, total: int) -> float:
    """Expected cost of a subject of ``kind`` with ``selected`` of its verification's ``total`` tests."""
    return KIND_COST.get(kind, 1.0) * (selected / total if total else 1.0)


#: Workers per usable CPU under "auto", and one more. A worker's joint schedule computes only
#: about half its time (its race hunts run alone, its fuzz searches wait out settles), so two per
#: core fill the cores on average; the one more fills the moments when several wait at once
#: (five against four on two cores: faster in 18 pairs of 19, docs/benchmarks.md, 2026-11-28).
AUTO_PER_CPU = 2


def processes_for(setting: int, subjects: int) -> int:
    """The worker processes of a run: the setting, or for 0 ("auto") ``AUTO_PER_CPU`` per usable
    CPU and one more; never more than the subjects."""
    wanted = setting or AUTO_PER_CPU * _usable_cpus() + 1
    return max(1, min(wanted, subjects))


def _usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


#: A share is cut to about this fraction of the cost not yet cut, per worker: the first shares
#: large (their subjects' windows overlap in one joint schedule), the next ones smaller, the last
#: ones single subjects, so the workers, dealt shares as they free up, end within about one
#: subject of each other ("guided" dealing; docs/benchmarks.md, "Packing the twenty").
GUIDE = 2


def shares(recipes: Sequence[Recipe], workers: int, at_once: int) -> list[list[Recipe]]:
    """The recipes cut into shares, in the host's order, at most ``at_once`` each, each about the
    cost not yet cut over ``GUIDE * workers``: large first, single subjects last.

    Each share keeps consecutive subjects, so the host, reporting in its own order, meets results
    as they come.
    """
    out: list[list[Recipe]] = []
    left = sum(r.cost for r in recipes)
    current: list[Recipe] = []
    spent = 0.0
    for recipe in recipes:
        # Close the share when it is full, or when this subject would take it past its part.
        if current and (len(current) >= at_once or spent + recipe.cost / 2 > left / (GUIDE * workers)):
            out.append(current)
            left -= spent
            current, spent = [], 0.0
        current.append(recipe)
        spent += recipe.cost
    if current:
        out.append(current)
    return out


def lost(test: TckTest, subject: str, cause: str) -> TestResult:
    """The result of a test whose worker process ended (or was ended) before reporting it."""
    now = time.time()
    return TestResult(
        test=test.name, verification=test.verification, rule=test.rule_id, level=Level(test.level),
        outcome=Outcome.ERROR, verdict=Verdict.ERROR, duration_s=0.0,
        message=f"not verified: {cause}; the subject's other tests that were reported stand, and "
                "--rs-processes=1 runs it in the pytest process",
        trace=[], trace_total=0, subject=subject, started_at=now, finished_at=now,
    )


@dataclass
class _Worker:
    number: int
    proc: subprocess.Popen[bytes]
    heard: float
    share: list[Recipe] | None = None
    #: When the share's last result (or the share itself) arrived.
    progressed: float = 0.0
    #: Why the host ended it, if it did.
    ended_by: str | None = None
    stderr_tail: deque[str] = field(default_factory=lambda: deque(maxlen=20))
    ready: bool = False
    gone: bool = False
    readers: list[threading.Thread] = field(default_factory=list)


@dataclass
class _Slot:
    result: TestResult | None = None
    #: Why it will never come: the worker ended (the host reports it as an error).
    cause: str | None = None
    #: The worker could not rebuild the subject: the host runs it.
    fallback: bool = False
    #: What the subject printed and logged in the worker while the test ran (``stdout``,
    #: ``stderr``, ``log``), as pytest's capture would have given it to the test's item.
    captured: dict[str, str] = field(default_factory=dict)


def spare(env: Mapping[str, str] | None = None) -> subprocess.Popen[bytes]:
    """A worker process started ahead of its work: it imports the kit's schedule meanwhile (about
    0.3 s) and waits for its ``hello``, so the host may start it while it still collects."""
    return subprocess.Popen([sys.executable, "-m", WORKER_MODULE], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=dict(os.environ if env is None else env), close_fds=True)


def end_spare(proc: subprocess.Popen[bytes], timeout: float = 5.0) -> None:
    """End a worker that was never given work: told by the end of its input, killed if it lingers."""
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=timeout)


class Pool:
    """Worker processes running the recipes' subjects; ``result`` hands each test's back.

    ``hello`` is what every worker gets first (the host's ``sys.path``, the run's settings, rule
    selection); ``start`` launches the workers and deals the first shares; ``close`` ends them.
    """

    def __init__(self, recipes: Sequence[Recipe], hello: Mapping[str, Any], workers: int, at_once: int, *,
                 hang_s: float = HANG_S, result_s: float = 120.0, env: Mapping[str, str] | None = None) -> None:
        self._queue: deque[list[Recipe]] = deque(shares(recipes, workers, at_once))
        self.workers = workers
        self.hello = dict(hello)
        self.hang_s = hang_s
        self.result_s = result_s
        self.env = dict(os.environ if env is None else env)
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._slots: dict[tuple[str, str], _Slot] = {
            (r.key, t): _Slot() for r in recipes for t in r.tests}
        self._owner: dict[str, _Worker | None] = {r.key: None for r in recipes}
        self._keys = {r.key for r in recipes}
        #: How many subjects were dealt.
        self.subjects = len(self._keys)
        self._workers: list[_Worker] = []
        self._started = 0
        self._closed = False
        #: How many workers were started in all (replacements included), for the report.
        self.spawned = 0
        #: The subjects a worker could not rebuild, and why: the host runs them.
        self.handed_back: dict[str, str] = {}

    @property
    def keys(self) -> set[str]:
        """The subjects the workers run (those a worker could not rebuild are left out once it says so)."""
        with self._lock:
            return set(self._keys)

    def runs(self, key: str) -> bool:
        """Whether the workers run subject ``key`` (not handed back)."""
        with self._lock:
            return key in self._keys

    def start(self, spares: Sequence[subprocess.Popen[bytes]] = ()) -> None:
        """Start the workers (``spares``: processes ``spare`` started ahead, taken first) and deal."""
        with self._lock:
            ahead = list(spares)
            for _ in range(min(self.workers, len(self._queue))):
                self._spawn(ahead.pop(0) if ahead else None)
        for proc in ahead:
            end_spare(proc)

    def _spawn(self, proc: subprocess.Popen[bytes] | None = None) -> None:
        # Called with the lock held.
        self._started += 1
        self.spawned += 1
        proc = proc or spare(self.env)
        worker = _Worker(self._started, proc, time.monotonic())
        self._workers.append(worker)
        assert proc.stdin is not None
        self._send(worker, {"op": "hello", **self.hello})
        self._deal(worker)
        worker.readers = [
            threading.Thread(target=self._read, args=(worker,), name=f"rs-tck-pool-{worker.number}", daemon=True),
            threading.Thread(target=self._drain_stderr, args=(worker,), name=f"rs-tck-pool-err-{worker.number}",
                             daemon=True)]
        for reader in worker.readers:
            reader.start()

    def _send(self, worker: _Worker, message: Mapping[str, Any]) -> None:
        stdin = worker.proc.stdin
        assert stdin is not None
        try:
            stdin.write(json.dumps(message).encode() + b"\n")
            stdin.flush()
        except (OSError, ValueError):  # it died, or the run closed it: its reader sees the end
            pass

    def _deal(self, worker: _Worker) -> None:
        # Called with the lock held: the next share to a free worker, or stop it.
        if self._queue and not self._closed:
            worker.share = self._queue.popleft()
            worker.progressed = time.monotonic()
            for recipe in worker.share:
                self._owner[recipe.key] = worker
            self._send(worker, {"op": "run", "subjects": [r.to_json() for r in worker.share]})
        else:
            worker.share = None
            self._send(worker, {"op": "stop"})

    def _read(self, worker: _Worker) -> None:
        stdout = worker.proc.stdout
        assert stdout is not None
        with stdout:
            self._lines(worker, stdout)
        self._ended(worker)

    def _lines(self, worker: _Worker, stdout: IO[bytes]) -> None:
        for line in stdout:
            try:
                message = json.loads(line)
            except ValueError:
                continue  # not ours (the protocol has its own descriptor; be safe anyway)
            with self._lock:
                worker.heard = time.monotonic()
                self._take(worker, message)
                self._changed.notify_all()

    def _take(self, worker: _Worker, message: Mapping[str, Any]) -> None:
        # Called with the lock held.
        op = message.get("op")
        if op == "result":
            slot = self._slots.get((message["key"], message["test"]))
            if slot is not None:
                slot.result = TestResult.from_json(message["result"])
                slot.captured = {k: v for k, v in message.get("captured", {}).items() if v}
            worker.progressed = time.monotonic()
        elif op == "unbuilt":
            recipe = next((r for r in worker.share or [] if r.key == message["key"]), None)
            if recipe is not None:
                self._fall_back(recipe)
                self.handed_back[recipe.key] = str(message.get("why", ""))
            worker.progressed = time.monotonic()
        elif op == "done":
            self._deal(worker)
        elif op == "ready":
            worker.ready = True

    def _drain_stderr(self, worker: _Worker) -> None:
        stderr = worker.proc.stderr
        assert stderr is not None
        with stderr:
            for line in stderr:
                with self._lock:
                    worker.stderr_tail.append(line.decode(errors="replace").rstrip())

    def _ended(self, worker: _Worker) -> None:
        try:
            code = worker.proc.wait(timeout=10.0)
        except subprocess.TimeoutExpired:  # closed its output yet lives on: end it
            worker.proc.kill()
            code = worker.proc.wait(timeout=10.0)
        with self._lock:
            worker.gone = True
            share = worker.share or []
            if not worker.ready:
                # It never started (an environment where the kit does not import, say): the host
                # runs its share, and the rest if no worker is left, as without processes.
                for recipe in share:
                    self._fall_back(recipe)
                if all(w.gone for w in self._workers):
                    while self._queue:
                        for recipe in self._queue.popleft():
                            self._fall_back(recipe)
                worker.share = None
            elif share:
                cause = self._cause(worker, code, share)
                for recipe in share:
                    for test in recipe.tests:
                        slot = self._slots[(recipe.key, test)]
                        if slot.result is None and not slot.fallback:
                            slot.cause = cause
                worker.share = None
                if self._queue and not self._closed:
                    self._spawn()  # the shares not started go on
            self._changed.notify_all()

    def _fall_back(self, recipe: Recipe) -> None:
        # Called with the lock held.
        self._owner[recipe.key] = None
        self._keys.discard(recipe.key)
        for test in recipe.tests:
            self._slots[(recipe.key, test)].fallback = True

    def _cause(self, worker: _Worker, code: int, share: Sequence[Recipe]) -> str:
        how = (f"killed by {signal.Signals(-code).name}" if code < 0 and -code in signal.Signals._value2member_map_
               else f"exited with status {code}")
        why = f" ({worker.ended_by})" if worker.ended_by else ""
        tail = "; its last output: " + " | ".join(list(worker.stderr_tail)[-3:]) if worker.stderr_tail else ""
        subjects = ", ".join(r.key for r in share)
        return (f"worker process {worker.number} (pid {worker.proc.pid}), running {subjects}, {how}{why} "
                f"before reporting this test{tail}")

    def result(self, key: str, test: str, timeout: float) -> TestResult | str | None:
        """Test ``test`` of subject ``key``: its result, why it has none (its worker ended: a
        message for an error), or None when the host is to run the subject itself.

        Waits at most ``timeout`` seconds in all, and kills a worker that hangs meanwhile.
        """
        deadline = time.monotonic() + timeout
        with self._lock:
            slot = self._slots[(key, test)]
            while True:
                if slot.fallback:
                    return None
                if slot.result is not None:
                    return slot.result
                if slot.cause is not None:
                    return slot.cause
                now = time.monotonic()
                if now >= deadline:
                    return f"no result from the worker processes within {timeout:.0f} s"
                self._watch(now)
                self._changed.wait(min(BEAT_S, deadline - now))

    def captured(self, key: str, test: str) -> dict[str, str]:
        """What the subject printed and logged in its worker while test ``test`` ran, by stream."""
        with self._lock:
            slot = self._slots.get((key, test))
            return dict(slot.captured) if slot is not None else {}

    def _watch(self, now: float) -> None:
        # Called with the lock held: end a worker that hangs (its reader then reports the rest).
        for worker in self._workers:
            if worker.gone or worker.ended_by:
                continue
            silent = self.hang_s if worker.ready else max(self.hang_s, START_S)
            if now - worker.heard > silent:
                worker.ended_by = f"hung: nothing heard from it for {silent:.0f} s"
            elif worker.share and now - worker.progressed > self.result_s:
                worker.ended_by = f"no result for {self.result_s:.0f} s"
            else:
                continue
            worker.proc.kill()

    def close(self, timeout: float = 5.0) -> None:
        """Stop the workers: an idle one ends when told; one still running a share (the run
        stopped early: ``-x``, Ctrl-C) is killed, as nothing will read its results."""
        with self._lock:
            self._closed = True
            self._queue.clear()
            for slot in self._slots.values():
                if slot.result is None and slot.cause is None:
                    slot.cause = "the run ended before it"
            self._changed.notify_all()
            workers = list(self._workers)
            for worker in workers:
                if worker.share and not worker.gone:
                    worker.ended_by = "the run ended"
                    worker.proc.kill()
        for worker in workers:
            if worker.proc.stdin is not None:
                with contextlib.suppress(OSError):
                    worker.proc.stdin.close()
        end = time.monotonic() + timeout
        for worker in workers:
            try:
                worker.proc.wait(timeout=max(0.0, end - time.monotonic()))
            except subprocess.TimeoutExpired:
                worker.ended_by = worker.ended_by or "the run ended"
                worker.proc.kill()
                worker.proc.wait(timeout=timeout)
        for worker in workers:  # their pipes closed before the run ends
            for reader in worker.readers:
                reader.join(timeout)


def write_message(out: IO[bytes], lock: threading.Lock, message: Mapping[str, Any]) -> None:
    """One protocol line to the host, whole (the heartbeat thread writes too)."""
    data = json.dumps(message).encode() + b"\n"
    with lock:
        out.write(data)
        out.flush()
