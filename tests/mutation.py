"""First-order mutants of the reference implementations, and the verdict of the kit on each one.

The kit is measured the way it measures subjects: every reference module (``rstck.reference``)
is conforming, so a one-token change to it that alters what a rule governs must make some
required test fail. A mutant is built from the module's AST (no mutation tool: the operators
are few and must be stable across runs), loaded under a module name of its own (the installed
source is never touched) and run through ``rstck.run_api.run_verification`` for the kinds the
module's factories are subjects of. Each mutant runs in a process of its own with a deadline,
because a mutant may hang or crash.

    python tests/mutation.py   # reads one request (JSON) on stdin, writes its result

A tool that measures the kit, not part of it: it lives with the tests, outside the installed
distribution, and imports only the core, so that a process can run this file by its path.

Operators (``Mutant.operator``): ``relational`` (``<`` -> ``<=``/``>=``, ``==`` -> ``!=``, ``is``
-> ``is not``, ...), ``arithmetic`` (``+``/``-``, ``*``/``//``), ``constant`` (ints n -> n+1 and
n-1, ``True``/``False``, ``None`` -> ``0``), ``boolean`` (``and``/``or``, ``not x`` -> ``x``),
``statement`` (a simple statement -> ``pass``) and ``lock`` (``with ..lock..:`` -> its body
unlocked, ``acquire()``/``release()`` -> ``pass``). Not mutated, because no rule governs them:
docstrings, imports, annotations, f-strings, ``TYPE_CHECKING`` blocks, ``__repr__`` and the
``logger`` calls.
"""

from __future__ import annotations

import ast
import contextlib
import importlib.machinery
import importlib.util
import json
import linecache
import os
import select
import sys
import time
import types
import warnings
from collections.abc import Callable
from collections.abc import Iterator
from dataclasses import asdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rstck.results import FAILING
from rstck.results import Level
from rstck.results import Outcome as TestOutcome

#: The mutated modules, as file names under ``rstck/reference/``.
REFERENCE_FILES = ("publishers.py", "subscribers.py", "processors.py", "asyncio_publishers.py")
OPERATORS = ("relational", "arithmetic", "constant", "boolean", "statement", "lock")
#: Levels whose failure kills a mutant: what a conforming subject must always pass.
KILLING_LEVELS = (Level.REQUIRED, Level.STOCHASTIC, Level.FUZZ)


@dataclass(frozen=True)
class Mutant:
    """One first-order change; ``id`` stays the same as long as the original line does not move."""

    file: str
    index: int  # position among the file's mutants, in source order
    line: int
    col: int
    operator: str
    original: str
    replacement: str

    @property
    def id(self) -> str:
        return f"{self.file}:{self.line}:{self.col}:{self.operator}:{self.original}->{self.replacement}"


_COMPARE: dict[type[ast.cmpop], tuple[type[ast.cmpop], ...]] = {
    ast.Lt: (ast.LtE, ast.GtE), ast.LtE: (ast.Lt, ast.Gt), ast.Gt: (ast.GtE, ast.LtE),
    ast.GtE: (ast.Gt, ast.Lt), ast.Eq: (ast.NotEq,), ast.NotEq: (ast.Eq,), ast.Is: (ast.IsNot,),
    ast.IsNot: (ast.Is,), ast.In: (ast.NotIn,), ast.NotIn: (ast.In,),
}
_ARITH: dict[type[ast.operator], type[ast.operator]] = {
    ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.FloorDiv, ast.FloorDiv: ast.Mult,
    ast.Div: ast.Mult, ast.Mod: ast.FloorDiv,
}
_SYMBOL: dict[type[ast.AST], str] = {
    ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!=",
    ast.Is: "is", ast.IsNot: "is not", ast.In: "in", ast.NotIn: "not in", ast.Add: "+",
    ast.Sub: "-", ast.Mult: "*", ast.FloorDiv: "//", ast.Div: "/", ast.Mod: "%",
    ast.And: "and", ast.Or: "or",
}
_SIMPLE = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr, ast.Return, ast.Raise, ast.Break,
           ast.Continue, ast.Delete)


@dataclass
class _Point:
    mutant: Mutant
    apply: Callable[[], None]


def _short(node: ast.AST, limit: int = 60) -> str:
    text = " ".join(ast.unparse(node).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _is_logger_call(node: ast.stmt) -> bool:
    if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)):
        return False
    func = node.value.func
    return isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "logger"


def _is_lock(expr: ast.expr) -> bool:
    return "lock" in ast.unparse(expr).lower()


class _Collector:
    """Walks one freshly parsed module and lists every mutation point, in source order."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.points: list[_Point] = []

    def add(self, node: ast.AST, operator: str, original: str, replacement: str,
            apply: Callable[[], None]) -> None:
        mutant = Mutant(self.file, len(self.points), getattr(node, "lineno", 0), getattr(node, "col_offset", 0),
                        operator, original, replacement)
        self.points.append(_Point(mutant, apply))

    # -- statements --------------------------------------------------------------------------

    def body(self, stmts: list[ast.stmt], *, in_function: bool) -> None:
        for position, stmt in enumerate(list(stmts)):
            self.statement(stmts, position, stmt, in_function=in_function)

    def statement(self, stmts: list[ast.stmt], position: int, stmt: ast.stmt, *, in_function: bool) -> None:
        if isinstance(stmt, (ast.Import, ast.ImportFrom, ast.Pass, ast.Global, ast.Nonlocal)):
            return
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str):
            return  # a docstring
        if _is_logger_call(stmt):
            return
        if isinstance(stmt, ast.If) and isinstance(stmt.test, ast.Name) and stmt.test.id == "TYPE_CHECKING":
            return
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if stmt.name != "__repr__":
                for default in [*stmt.args.defaults, *(d for d in stmt.args.kw_defaults if d is not None)]:
                    self.expression(default)
                self.body(stmt.body, in_function=True)
            return
        if isinstance(stmt, ast.ClassDef):
            self.body(stmt.body, in_function=False)
            return
        if in_function and isinstance(stmt, _SIMPLE):
            call = stmt.value if isinstance(stmt, ast.Expr) else None
            if (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                    and call.func.attr in ("acquire", "release") and _is_lock(call.func.value)):
                self.add(stmt, "lock", _short(stmt), "pass", _replace_stmt(stmts, stmt, [ast.Pass()]))
            self.add(stmt, "statement", _short(stmt), "pass", _replace_stmt(stmts, stmt, [ast.Pass()]))
        if in_function and isinstance(stmt, (ast.With, ast.AsyncWith)) and any(_is_lock(i.context_expr) for i in stmt.items):
            self.add(stmt, "lock", _short(stmt.items[0].context_expr), "(no lock)",
                     _replace_stmt(stmts, stmt, stmt.body))
        # Expressions of this statement, then nested bodies, in source order.
        for field, value in ast.iter_fields(stmt):
            if field in ("annotation", "returns", "type_comment"):
                continue
            if isinstance(value, list):
                if value and isinstance(value[0], ast.stmt):
                    self.body(value, in_function=in_function)
                elif value and isinstance(value[0], ast.excepthandler):
                    for handler in value:
                        self.body(handler.body, in_function=in_function)
                else:
                    for item in value:
                        if isinstance(item, ast.expr):
                            self.expression(item)
                        elif isinstance(item, ast.withitem):
                            self.expression(item.context_expr)
            elif isinstance(value, ast.expr):
                self.expression(value)

    # -- expressions -------------------------------------------------------------------------

    def expression(self, node: ast.expr) -> None:
        """Mutation points of ``node`` and its sub-expressions, outermost first."""
        if isinstance(node, ast.JoinedStr):
            return
        if isinstance(node, ast.Compare):
            for i, op in enumerate(node.ops):
                for new in _COMPARE.get(type(op), ()):
                    self.add(node, "relational", _SYMBOL[type(op)] + (f"#{i}" if i else ""), _SYMBOL[new],
                             _set_item(node.ops, i, new()))
        elif isinstance(node, ast.BinOp) and type(node.op) in _ARITH:
            new_op = _ARITH[type(node.op)]
            self.add(node, "arithmetic", _SYMBOL[type(node.op)], _SYMBOL[new_op], _set_attr(node, "op", new_op()))
        elif isinstance(node, ast.BoolOp):
            flipped: type[ast.boolop] = ast.Or if isinstance(node.op, ast.And) else ast.And
            self.add(node, "boolean", _SYMBOL[type(node.op)], _SYMBOL[flipped], _set_attr(node, "op", flipped()))
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            self.add(node, "boolean", "not " + _short(node.operand, 30), _short(node.operand, 30),
                     _become(node, node.operand))
        elif isinstance(node, ast.Constant):
            self.constant(node)
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                if isinstance(node, ast.Compare) and isinstance(child, ast.Constant) and child.value is None \
                        and any(isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops):
                    continue  # `x is None`: the relational operator already negates it
                self.expression(child)
            elif isinstance(child, ast.keyword):
                self.expression(child.value)
            elif isinstance(child, ast.comprehension):
                self.expression(child.iter)
                for cond in child.ifs:
                    self.expression(cond)

    def constant(self, node: ast.Constant) -> None:
        value = node.value
        if isinstance(value, bool):
            self.add(node, "constant", repr(value), repr(not value), _set_attr(node, "value", not value))
        elif isinstance(value, int):
            for new in (value + 1, value - 1):
                self.add(node, "constant", repr(value), repr(new), _set_attr(node, "value", new))
        elif value is None:
            self.add(node, "constant", "None", "0", _set_attr(node, "value", 0))


def _replace_stmt(stmts: list[ast.stmt], old: ast.stmt, new: list[ast.stmt]) -> Callable[[], None]:
    def apply() -> None:
        position = next(i for i, s in enumerate(stmts) if s is old)
        stmts[position:position + 1] = new
    return apply


def _set_item(items: list[Any], index: int, value: Any) -> Callable[[], None]:
    def apply() -> None:
        items[index] = value
    return apply


def _set_attr(node: ast.AST, name: str, value: Any) -> Callable[[], None]:
    def apply() -> None:
        setattr(node, name, value)
    return apply


def _become(node: ast.AST, other: ast.AST) -> Callable[[], None]:
    """Turn ``node`` into a copy of ``other`` in place (parents keep pointing at ``node``)."""
    def apply() -> None:
        node.__class__ = other.__class__
        node.__dict__.clear()
        node.__dict__.update(other.__dict__)
    return apply


def _points(source: str, file: str) -> list[_Point]:
    collector = _Collector(file)
    collector.body(ast.parse(source).body, in_function=False)
    return collector.points


def reference_source(file: str) -> str:
    """The installed source of ``rstck/reference/<file>``."""
    spec = importlib.util.find_spec("rstck.reference." + file.removesuffix(".py"))
    assert spec is not None
    assert spec.origin is not None
    return Path(spec.origin).read_text(encoding="utf-8")


def mutants(source: str, file: str) -> list[Mutant]:
    """Every first-order mutant of ``source`` (a module named ``file``) that changes its code."""
    baseline = ast.unparse(ast.parse(source))
    out: list[Mutant] = []
    seen: set[str] = set()
    for point in _points(source, file):
        text = mutate(source, point.mutant)
        if text == baseline or text in seen:
            continue  # no change, or the same program as an earlier mutant
        seen.add(text)
        out.append(point.mutant)
    return out


def mutate(source: str, mutant: Mutant) -> str:
    """The source of ``mutant`` (formatting and comments are not kept)."""
    tree = ast.parse(source)
    collector = _Collector(mutant.file)
    collector.body(tree.body, in_function=False)
    point = collector.points[mutant.index]
    if (point.mutant.line, point.mutant.operator, point.mutant.original, point.mutant.replacement) != (
            mutant.line, mutant.operator, mutant.original, mutant.replacement):
        raise ValueError(f"{mutant.id} does not match this source (found {point.mutant.id})")
    point.apply()
    return ast.unparse(ast.fix_missing_locations(tree))


_loaded = 0


def load(source: str, label: str) -> types.ModuleType:
    """Execute ``source`` as a fresh module beside ``rstck.reference`` (relative imports work)."""
    global _loaded
    _loaded += 1
    name = f"rstck.reference._mutant_{_loaded}"
    filename = f"<mutant {label}>"
    module = importlib.util.module_from_spec(importlib.machinery.ModuleSpec(name, None))
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    sys.modules[name] = module
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)  # `x is 0` and the like
        code = compile(source, filename, "exec")
    exec(code, module.__dict__)  # noqa: S102 - the mutant is our own reference, mutated
    return module


def subjects(file: str, module: types.ModuleType) -> list[tuple[str, Any]]:
    """(verification, subject) pairs whose subject is built from ``module``'s factories."""
    from rstck.subjects import ProcessorSubject
    from rstck.subjects import PublisherSubject
    from rstck.subjects import SubscriberSubject
    from rstck.subjects import WhiteboxSubject

    m = module
    if file == "publishers.py":
        return [("publisher", PublisherSubject(m.range_publisher, failed_factory=m.failed_publisher)),
                ("publisher", PublisherSubject(m.async_range_publisher, failed_factory=m.failed_publisher))]
    if file == "subscribers.py":
        # Their puppets are serialised with their own calls (SerialSubscription, the mailbox).
        return [("subscriber_whitebox", WhiteboxSubject(m.sync_whitebox_subscriber, any_thread_puppet=True)),
                ("subscriber_whitebox", WhiteboxSubject(m.async_whitebox_subscriber, any_thread_puppet=True)),
                ("subscriber_blackbox", SubscriberSubject(m.sync_subscriber)),
                ("subscriber_blackbox", SubscriberSubject(m.async_subscriber))]
    if file == "processors.py":
        return [("processor", ProcessorSubject(m.identity_processor))]
    if file == "asyncio_publishers.py":
        return [("publisher", PublisherSubject(m.asyncio_range_publisher)),
                ("publisher", PublisherSubject(m.loop_range_publisher, loop="asyncio"))]
    raise ValueError(f"not a reference module: {file}")


def _kill(result: Any) -> dict[str, Any] | None:
    if result.outcome in FAILING and result.level in KILLING_LEVELS:
        first = result.failures[0] if result.failures else None
        return {"verification": result.verification, "test": result.test,
                "rule": first.rule if first is not None else result.rule, "outcome": result.outcome,
                "message": (result.message.splitlines() or [""])[0][:300]}
    return None


def verdict(file: str, source: str, *, fuzz: bool, label: str = "") -> Iterator[dict[str, Any]]:
    """Run ``source`` (a version of reference ``file``) in this process; yields the first kill, if any.

    Stops at the first killing result: the kit has caught the mutant, the rest would be waste.
    """
    from rstck.run_api import run_verification
    from rstck.settings import Settings

    try:
        module = load(source, label or file)
    except Exception as exc:
        yield {"verification": "(load)", "test": "(import)", "rule": None, "outcome": TestOutcome.ERROR,
               "message": f"{type(exc).__name__}: {exc}"[:300]}
        return
    settings = Settings(no_fuzz=not fuzz)
    for verification, subject in subjects(file, module):
        killed: list[dict[str, Any]] = []

        class _Stop(Exception):
            pass

        def on_result(result: Any, killed: list[dict[str, Any]] = killed) -> None:
            kill = _kill(result)
            if kill is not None:
                killed.append(kill)
                raise _Stop

        with contextlib.suppress(_Stop):
            run_verification(verification, subject, settings, on_result=on_result)
        if killed:
            yield killed[0]
            return


@dataclass(frozen=True)
class Outcome:
    """What became of one mutant in one mode."""

    status: str  # killed, survived, timeout (no verdict within the deadline), crashed
    seconds: float
    by: dict[str, Any] | None = None  # the killing test, for killed

    @property
    def killed(self) -> bool:
        return self.status != "survived"


def _child_main(file: str, source: str, fuzz: bool, label: str, fd: int) -> None:
    """Body of the mutant's process: one JSON line on ``fd``, then exit without cleanup."""
    code = 0
    try:
        kill = next(verdict(file, source, fuzz=fuzz, label=label), None)
        line = json.dumps({"by": kill}) + "\n"
        os.write(fd, line.encode())
    except BaseException:
        code = 3
    finally:
        os._exit(code)  # threads a mutant left behind must not keep this process alive


def _fork(file: str, text: str, fuzz: bool, label: str) -> tuple[int, int]:
    """Start a process running ``text`` from this one; (pid, read end of its result pipe).

    Cheap once the kit is imported here; only safe while this process has no other thread.
    """
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.close(read_fd)
        quiet = os.open(os.devnull, os.O_WRONLY)
        os.dup2(quiet, 1)
        os.dup2(quiet, 2)
        _child_main(file, text, fuzz, label, write_fd)
    os.close(write_fd)
    return pid, read_fd


def _parse(buffer: bytes, seconds: float) -> Outcome:
    try:
        by = json.loads(buffer)["by"]
    except (ValueError, KeyError, TypeError):
        return Outcome("crashed", seconds, {"message": buffer.decode("utf-8", "replace")[-300:]})
    return Outcome("survived", seconds) if by is None else Outcome("killed", seconds, by)


@dataclass(frozen=True)
class Job:
    """One version of a reference file to run in one mode; ``mutant`` None: the original."""

    file: str
    source: str  # the original source; the mutant is applied in ``run``
    mutant: Mutant | None
    fuzz: bool

    @property
    def label(self) -> str:
        return self.mutant.id if self.mutant is not None else f"{self.file} (original)"


def run(jobs: list[Job], *, parallel: int, deadline: float,
        on_done: Callable[[Job, Outcome], None]) -> None:
    """Run every job in a forked process, at most ``parallel`` at once, each within ``deadline`` s.

    This process stays single-threaded (it only forks and waits on pipes), so forking is safe.
    """
    queue = list(reversed(jobs))
    running: dict[int, tuple[Job, int, float, list[bytes]]] = {}  # fd -> job, pid, started, chunks
    while queue or running:
        while queue and len(running) < parallel:
            job = queue.pop()
            text = mutate(job.source, job.mutant) if job.mutant is not None else job.source
            pid, fd = _fork(job.file, text, job.fuzz, job.label)
            running[fd] = (job, pid, time.monotonic(), [])
        now = time.monotonic()
        for fd, (job, pid, started, _chunks) in list(running.items()):
            if now - started >= deadline:
                _reap(pid, kill=True)
                os.close(fd)
                del running[fd]
                on_done(job, Outcome("timeout", now - started))
        if not running:
            continue
        wait = max(0.0, min(started + deadline for _, _, started, _ in running.values()) - now)
        ready, _, _ = select.select(list(running), [], [], min(wait, 1.0))
        for fd in ready:
            job, pid, started, chunks = running[fd]
            chunk = os.read(fd, 65536)
            if chunk:
                chunks.append(chunk)
                continue
            _reap(pid, kill=False)
            os.close(fd)
            del running[fd]
            on_done(job, _parse(b"".join(chunks), time.monotonic() - started))


def evaluate(job: Job, *, deadline: float) -> Outcome:
    """Run one job in a fresh interpreter (this file as a script) within ``deadline`` s.

    For hosts whose process may have threads (a Spark worker), where forking is not safe.
    """
    import subprocess

    text = mutate(job.source, job.mutant) if job.mutant is not None else job.source
    started = time.monotonic()
    child = subprocess.Popen([sys.executable, str(Path(__file__).resolve())], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    request = json.dumps({"file": job.file, "source": text, "fuzz": job.fuzz, "label": job.label}).encode()
    try:
        out, _ = child.communicate(request, timeout=deadline)
    except subprocess.TimeoutExpired:
        child.kill()
        child.communicate()
        return Outcome("timeout", time.monotonic() - started)
    return _parse(out, time.monotonic() - started)


def _reap(pid: int, *, kill: bool) -> int:
    if kill:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, 9)
    return os.waitpid(pid, 0)[1]


def final_status(record: dict[str, Any]) -> str:
    """A recorded mutant's status in the default mode: fuzzing on when it ran, else fuzzing off.

    A mutant killed with fuzzing off is killed in the default mode too (it runs the same tests
    and more), so only the survivors of the cheap pass are run again.
    """
    last = record.get("fuzz_on") or record.get("fuzz_off") or {}
    return str(last.get("status", "not run"))


def outcome_json(outcome: Outcome) -> dict[str, Any]:
    return {k: v for k, v in asdict(outcome).items() if v is not None}


def main() -> int:
    """Child of ``evaluate(fork=False)``: a request on stdin, one JSON line on stdout."""
    request = json.load(sys.stdin)
    sys.stdout.flush()
    result_fd = os.dup(1)  # stray prints of a mutant go nowhere, not into the result
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    _child_main(request["file"], request["source"], bool(request["fuzz"]), request.get("label", ""), result_fd)
    return 0


if __name__ == "__main__":
    sys.exit(main())
