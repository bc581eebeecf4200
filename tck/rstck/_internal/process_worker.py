"""A worker process of a run of several subjects: ``python -m rstck._internal.process_worker``.

It reads the host's messages on stdin, one JSON object a line (``rstck.processes``): first
``hello`` (the host's ``sys.path``, the run's settings and rule selection, whether it reads the
traces of passing results), then ``run`` with a
share of subjects (``Recipe``s), which it rebuilds and runs as one joint schedule, writing each
test's result back as its verdict is final, then ``done``; ``stop`` (or the end of stdin) ends it.

The protocol has a descriptor of its own: what a subject prints goes to stderr, not into the
results. What it prints through ``sys.stdout`` and ``sys.stderr``, and what it logs, is also kept
and sent with the next result, as pytest's capture gives a test what was printed while it ran
(``Captured``): a failing subject's own prints reach its report. A heartbeat line every second
tells the host the process is alive while a long test (a fuzz search) holds results back.
"""

from __future__ import annotations

import importlib
import io
import json
import logging
import os
import random
import sys
import threading
import traceback
from collections.abc import Mapping
from typing import IO
from typing import Any
from typing import TextIO

from ..processes import BEAT_S
from ..processes import Recipe
from ..processes import write_message
from ..results import Outcome
from ..subjects import subject_record


def main() -> int:
    # The protocol's own descriptor: fd 1 then points at stderr, so a subject's prints (and a
    # library's logging to stdout) cannot break a line of it.
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    log = _KeptLog()
    kept = {"stdout": _Kept("<stdout>", sys.stderr), "stderr": _Kept("<stderr>", sys.stderr), "log": log.kept}
    sys.stdout, sys.stderr = kept["stdout"], kept["stderr"]
    logging.getLogger().addHandler(log)
    # What every share needs, imported before the host's first word: a worker started ahead
    # (``rstck.processes.spare``) does it while the host still collects; every kind's tests, not
    # knowing yet which it will run. Nothing is frozen out of the collector (``gc.freeze``): a
    # frozen object that turns to garbage holding a subscriber would never let it go, and rule
    # 3.13 would accuse a publisher of keeping what only the kit kept (tests/e2e/test_processes.py).
    importlib.import_module("..run_api", __package__)
    importlib.import_module(".fuzz.verify", __package__)
    from ..verifications import VERIFICATIONS

    for verification in VERIFICATIONS.values():
        verification.load()  # imports its tests and context
    lock = threading.Lock()
    stop = threading.Event()
    threading.Thread(target=_beat, args=(out, lock, stop), name="rs-tck-heartbeat", daemon=True).start()
    state: dict[str, Any] = {}
    try:
        for line in sys.stdin.buffer:
            message = json.loads(line)
            op = message.get("op")
            if op == "hello":
                state = _hello(message) | {"kept": kept}
                write_message(out, lock, {"op": "ready"})
            elif op == "run":
                _run_share(state, [Recipe.from_json(r) for r in message["subjects"]], out, lock)
                write_message(out, lock, {"op": "done"})
            elif op == "stop":
                break
    finally:
        stop.set()
        out.flush()
    return 0


def _beat(out: IO[bytes], lock: threading.Lock, stop: threading.Event) -> None:
    while not stop.wait(BEAT_S):
        try:
            write_message(out, lock, {"op": "beat"})
        except (OSError, ValueError):  # the host went away
            os._exit(0)


def _hello(message: Mapping[str, Any]) -> dict[str, Any]:
    """The run as the host has it: its import path, settings, rule selection, seed, and whether
    it reads passing results' traces (a host that does not say does)."""
    from ..settings import from_json

    for entry in reversed(message.get("sys_path", [])):
        if entry not in sys.path:
            sys.path.insert(0, entry)
    if message.get("seed") is not None:  # RS_TCK_SEED: a subject's randomness takes the host's path
        random.seed(int(message["seed"]))
    settings = from_json(message["settings"], frozenset(message.get("explicit", ())))
    return {"settings": settings, "rules": list(message.get("rules", ())),
            "skip_rules": list(message.get("skip_rules", ())),
            "passing_traces": bool(message.get("passing_traces", True)),
            "passing_output": bool(message.get("passing_output", True))}


#: What is kept of each stream between two results: the tail, as a terminal shows the end.
KEPT_CHARS = 64 * 1024


class _Kept(io.TextIOBase):
    """``sys.stdout`` or ``sys.stderr`` of a worker: text written is kept for the next result
    and passed on to fd 2 (``sink``), where the host keeps a dying worker's last lines."""

    def __init__(self, name: str, sink: TextIO | None) -> None:
        super().__init__()
        self.name = name
        self._sink = sink
        self._lock = threading.Lock()
        self._parts: list[str] = []
        self._size = 0
        self._dropped = 0

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return self._sink.encoding if self._sink is not None else "utf-8"

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        if self._sink is None:
            raise io.UnsupportedOperation("fileno")
        return self._sink.fileno()

    def write(self, text: str) -> int:
        with self._lock:
            self._parts.append(text)
            self._size += len(text)
            if self._size > 2 * KEPT_CHARS:
                self._trim()
        if self._sink is not None:
            self._sink.write(text)
        return len(text)

    def flush(self) -> None:
        if self._sink is not None:
            self._sink.flush()

    def _trim(self) -> None:
        whole = "".join(self._parts)
        self._dropped += len(whole) - KEPT_CHARS
        self._parts, self._size = [whole[-KEPT_CHARS:]], KEPT_CHARS

    def take(self) -> str:
        """What was written since the last take (its last ``KEPT_CHARS``, saying how much went)."""
        with self._lock:
            if self._size > KEPT_CHARS:
                self._trim()
            text, dropped = "".join(self._parts), self._dropped
            self._parts, self._size, self._dropped = [], 0, 0
        return f"[{dropped} characters before these were dropped]\n{text}" if dropped else text


class _KeptLog(logging.Handler):
    """Log records, formatted as pytest's log capture shows them, kept for the next result. The
    root logger's level is left as it is, as pytest's capture leaves it (WARNING by default)."""

    def __init__(self) -> None:
        super().__init__()
        self.setFormatter(logging.Formatter("%(levelname)-8s %(name)s:%(filename)s:%(lineno)d %(message)s"))
        self.kept = _Kept("<log>", None)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.kept.write(self.format(record) + "\n")
        except Exception:  # as logging does: a record that cannot be formatted is not a crash
            self.handleError(record)


def _run_share(state: Mapping[str, Any], recipes: list[Recipe], out: IO[bytes], lock: threading.Lock) -> None:
    """Rebuild each subject; run those rebuilt as one joint schedule, each result written back."""
    from ..run_api import Run
    from ..run_api import joint

    parts: list[tuple[Run, list[Any]]] = []
    keys: list[tuple[str, str]] = []
    for recipe in recipes:
        try:
            run = rebuild(recipe, state["settings"], state["rules"], state["skip_rules"])
            by_id = {t.test_id: t for t in run.tests}
            missing = [t for t in recipe.tests if t not in by_id]
            if missing:
                raise LookupError(f"no test {missing[0]} in its verification here")
        except BaseException as exc:  # the host runs it itself
            why = "".join(traceback.format_exception_only(type(exc), exc)).strip()
            write_message(out, lock, {"op": "unbuilt", "key": recipe.key, "why": why})
            continue
        parts.append((run, [by_id[t] for t in recipe.tests]))
        keys += [(recipe.key, t) for t in recipe.tests]
    if not parts:
        return
    runs = [run for run, tests in parts for _t in tests]
    schedule = joint(parts) if len(parts) > 1 else parts[0][0].schedule(parts[0][1])
    traces = state["passing_traces"]  # the default is _hello's: a host that does not say reads them
    output = state["passing_output"]
    for (key, test), run, result in zip(keys, runs, schedule.results(), strict=True):
        shown = run.present(result)
        data = shown.to_json()
        passed = shown.outcome == Outcome.PASSED
        if not traces and passed:
            data["trace"] = []  # nothing reads it there; its length stays in trace_total
        message = {"op": "result", "key": key, "test": test, "result": data}
        # by the section pytest would name it under (``Captured stdout call``). Tests overlap, so
        # a test's prints may come before its neighbour's result: what is not sent stays for the
        # next result that is (a failure then shows all that was printed since the last one sent).
        if output or not passed:
            captured = {name: stream.take() for name, stream in state["kept"].items()}
            if any(captured.values()):
                message["captured"] = captured
        write_message(out, lock, message)


def rebuild(recipe: Recipe, settings: Any, rules: list[str], skip_rules: list[str]) -> Any:
    """The subject's ``Run``, made here as the host made it: the same module, attribute, declaration."""
    from .. import pytest as declarations
    from ..run_api import declared_run
    from ..subjects import default_resolve
    from ..verifications import VERIFICATIONS

    obj: Any = importlib.import_module(recipe.module)
    for part in recipe.attr.split("."):
        obj = getattr(obj, part)
    declaration = declarations.declaration_of(obj, recipe.attr.rpartition(".")[2] if recipe.declared else None)
    failed: Any = default_resolve(recipe.failed, "failed_publisher") if recipe.failed else None
    if declaration is not None:
        declaration.check()
        obj = declaration.subject
        if isinstance(obj, str):
            obj = default_resolve(obj, recipe.kind)
        if failed is None and declaration.failed is not None:
            failed = declaration.failed
            if isinstance(failed, str):
                failed = default_resolve(failed, "failed_publisher")
    subject = subject_record(recipe.kind, obj, failed, recipe.spec, VERIFICATIONS[recipe.kind].load_subject)
    return declared_run(recipe.kind, subject, settings, declaration, rules=rules, skip_rules=skip_rules)

if __name__ == "__main__":
    code = main()
    sys.stderr.flush()
    # Threads a subject leaked must not keep the worker alive once the host is done with it.
    os._exit(code)
