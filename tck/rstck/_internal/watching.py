"""Watching the subject's threads: whose code a thread runs, and pausing one in its own code.

The TCK's upstream (``rstck.manual``) and the race hunts ask two things of the threads of a
subject under test. Whether a subscriber still has work to do (``runs_code_of``,
``all_busy_in_subjects_code``): a request after the end that a worker busy with an element
explains is no late request (2.4). And where a step of the subject's own code begins
(``kits_step``): a hunt pauses a thread a number of the subject's steps after a call
(``Preemption``, and the probes' pauses of ``rstck._internal.verifications._racing``), never in the
kit's code or the standard library's on its behalf.
"""

from __future__ import annotations

import os
import re
import sys
import threading
import weakref
from collections.abc import Iterator
from types import CodeType
from types import FrameType
from typing import Any

from .reach import KIT_PREFIX
from .reach import thread_frames

#: The kit's own source files: their calls are not steps of the subject's code (``Preemption``).
_KIT = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
#: ...except the reference implementations shipped with it, which are subjects like any other.
_REFERENCE = _KIT + "reference" + os.sep
#: The standard library's own folder: its code runs on behalf of whoever called it.
_STDLIB = os.path.dirname(os.path.abspath(threading.__file__)) + os.sep


def _stdlib(filename: str) -> bool:
    # (a user's code installed beside it, in site-packages, is not). "<string>": code the
    # standard library generated, such as a dataclass's __init__, runs for whoever called it too.
    return filename.startswith("<frozen ") or filename == "<string>" or (
        filename.startswith(_STDLIB) and "-packages" not in filename[len(_STDLIB):])


#: Per source file: None for the standard library's, else whether it is the kit's. A hunt's
#: tracer asks at every call or line event of the thread it follows: a look-up, not three
#: prefix tests.
_FILE_KIND: dict[str, bool | None] = {}


def _file_kind(name: str) -> bool | None:
    try:
        return _FILE_KIND[name]
    except KeyError:
        kind = None if _stdlib(name) else name.startswith(_KIT) and not name.startswith(_REFERENCE)
        _FILE_KIND[name] = kind
        return kind


def kits_step(frame: Any) -> bool:
    """Whether ``frame`` runs the kit's code, or the standard library's on the kit's behalf.

    A whitebox probe's report, or the subscription's own exit, calls into ``threading``: those
    events are the kit's, not steps of the subject's code after its call.
    """
    code = getattr(frame, "f_code", None)
    if code is not None:  # the usual case, a file seen before and not the standard library's
        kind = _FILE_KIND.get(code.co_filename)
        if kind is not None:
            return kind
    for step in _stack(frame):
        kind = _file_kind(step.f_code.co_filename)
        if kind is not None:
            return kind
    return False


def _stack(frame: Any) -> Iterator[FrameType]:
    """``frame`` and its callers, innermost first, stopping at anything that is not a frame.

    CPython 3.11 syncs a frame's locals with its ``f_locals`` dict around every trace and
    profile call (PEP 667 ended that in 3.13), so where the kit's hunts trace a thread, a stale
    dict written back has been seen to replace a local of a frame walk with another value (a
    dict, a code object). Walking in a generator keeps the cursor out of the caller's locals,
    and the type check ends a walk that would otherwise raise inside the subject's call.
    """
    while isinstance(frame, FrameType):
        yield frame
        frame = frame.f_back


def _subjects_file(filename: str) -> bool:
    return not _stdlib(filename) and (not filename.startswith(_KIT) or filename.startswith(_REFERENCE))


#: Per subscriber class: the code of its methods, and of the functions nested in them.
_OWN_CODE: weakref.WeakKeyDictionary[type, tuple[frozenset[CodeType], frozenset[CodeType]]] = (
    weakref.WeakKeyDictionary())


def _code_in(value: Any) -> list[CodeType]:
    """The code of a class attribute: a function, a static or class method, a property."""
    try:
        fns = ((value.fget, value.fset, value.fdel) if isinstance(value, property)
               else (getattr(value, "__func__", value),))
        codes = [getattr(fn, "__code__", None) for fn in fns]
    except Exception:  # an odd descriptor: no code of its own
        return []
    return [c for c in codes if isinstance(c, CodeType)]


def _own_code(cls: type) -> tuple[frozenset[CodeType], frozenset[CodeType]]:
    known = _OWN_CODE.get(cls)
    if known is not None:
        return known
    methods: set[CodeType] = set()
    for klass in cls.__mro__:
        for value in list(vars(klass).values()):
            methods.update(c for c in _code_in(value) if _subjects_file(c.co_filename))
    nested: set[CodeType] = set()
    todo = [c for m in methods for c in m.co_consts if isinstance(c, CodeType)]
    while todo:
        code = todo.pop()
        if code not in nested:
            nested.add(code)
            todo.extend(c for c in code.co_consts if isinstance(c, CodeType))
    known = _OWN_CODE[cls] = (frozenset(methods), frozenset(nested - methods))
    return known




def runs_code_of(subscriber: Any) -> bool:
    """Whether a thread other than the caller is inside ``subscriber``'s own code just now.

    Its own code: a method of its class (running for it or for another instance of it; the
    kit's own threads delivering signals left out), or a function nested in one (a worker's
    closure, a lambda). A worker processing an element is (however long that takes, sleeping
    or blocked in a call); a ``threading.Timer`` or an
    executor's thread waiting to run something is not, nor is a coroutine suspended at an
    ``await``. What ``rstck._internal.reach`` is to threads, this is to the subscriber's work: evidence
    that it still has something to work off. One look at every thread's stack: microseconds.
    """
    try:
        methods, nested = _own_code(type(subscriber))
    except TypeError:  # a class that takes no weak reference: no evidence
        return False
    if not methods and not nested:
        return False
    me = threading.get_ident()
    names = {t.ident: t.name for t in threading.enumerate() if t.ident is not None}
    for ident, top in thread_frames().items():
        name = names.get(ident, "")
        if ident == me or (name.startswith(KIT_PREFIX) and "loop" not in name):
            continue  # the kit delivering a signal is not the subscriber's own work
        for step in _stack(top):
            code = step.f_code
            # Which instance a method runs for is not asked (``frame.f_locals`` on another
            # thread's frame is unsafe in CPython 3.11: it can write stale values back into
            # that frame): another instance of the class at work counts too, which only errs
            # towards not accusing.
            if code in nested or code in methods:
                return True
    return False


#: A ``ThreadPoolExecutor``'s worker's name: its prefix, an underscore and its number.
_POOLED = re.compile(r"(.+)_\d+")


def _pool_of(name: str) -> str | None:
    match = _POOLED.fullmatch(name)
    return match.group(1) if match else None


def all_busy_in_subjects_code(idents: set[int]) -> bool:
    """Whether the threads ``idents`` (but the caller's, dead ones and the kit's) all run a
    subject's code now, and there is one at least.

    The threads that called a subscription include a shared pool's workers: while every one of
    them (the pool's others too, told by their names) is busy with some subject's task, the
    subscriber's own next task may be waiting behind them in the pool's queue, not running
    anywhere; once one is free, a task of its would run.
    The kit's own threads (but its event loops) only ever call subjects while a test drives
    them, and are left out.
    """
    frames = thread_frames()
    names = {t.ident: t.name for t in threading.enumerate() if t.ident is not None}
    me = threading.get_ident()
    # An executor's workers are named ``<prefix>_<n>``: the one that called stands for them all.
    pools = {_pool_of(names.get(i, "")) for i in idents} - {None}
    busy = False
    for ident in set(idents) | {i for i, n in names.items() if _pool_of(n) in pools}:
        frame: Any = frames.get(ident)
        name = names.get(ident, "")
        if frame is None or ident == me or (name.startswith(KIT_PREFIX) and "loop" not in name):
            continue
        if not any(_subjects_file(step.f_code.co_filename) for step in _stack(frame)):
            return False  # free: it would take a task of the subscriber's now
        busy = True
    return busy


class Preemption:
    """Pause a subject's thread in its own code, just after it left a request/cancel (rule 2.7).

    Under the interpreter lock, a thread runs the few instructions after a call in one go, so
    a signal from the TCK almost never lands between them: a delivery loop that gives up its
    turn and then makes one more pass hides the moment when a second worker can start beside it.
    Armed with ``k``, the next subject thread to leave the subscription stops at its ``k``-th
    call event outside the kit's own code (a profile hook on that thread only) and
    waits there, bounded, while the TCK delivers a signal; sweeping ``k`` walks the signal across
    the subject's code after the call. The hook removes itself at once after; a thread that
    already has a profiler (the user's) is left alone.
    """

    #: The longest a paused thread waits for the TCK (a signal blocked on a lock the paused
    #: thread holds ends the pause this way).
    PAUSE_S = 0.01

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._target: int | None = None  # armed: pause at this many call events
        self._round = 0
        self._paused = 0  # the round a thread is paused in
        self._resumed = 0  # the last round the TCK is done with

    def arm(self, k: int) -> None:
        with self._cond:
            self._round += 1
            self._target = k

    @property
    def armed(self) -> bool:
        """A thread leaving the subscription now is to be paused: calls hold no longer."""
        return self._target is not None

    def wait_paused(self, timeout: float) -> bool:
        with self._cond:
            return self._cond.wait_for(lambda: self._paused == self._round, timeout)

    def resume(self) -> None:
        with self._cond:
            self._target = None
            self._resumed = self._round
            self._cond.notify_all()

    def install(self) -> None:
        with self._cond:
            target, round_ = self._target, self._round
            if target is None:
                return
            self._target = None  # one thread per round
        if sys.getprofile() is not None:
            return  # a profiler of the user's own is on this thread: leave it alone
        left = [target]

        def hook(frame: Any, event: str, arg: Any) -> None:
            if event not in ("call", "c_call") or kits_step(frame):
                return  # the kit's own code (a whitebox probe's report) is not the subject's step
            left[0] -= 1
            if left[0] > 0:
                return
            sys.setprofile(None)
            with self._cond:
                if self._resumed >= round_:
                    return
                self._paused = round_
                self._cond.notify_all()
                self._cond.wait_for(lambda: self._resumed >= round_, self.PAUSE_S)

        sys.setprofile(hook)


def thread_name(ident: int) -> str:
    """The name of the live thread ``ident``, or its number."""
    for thread in threading.enumerate():
        if thread.ident == ident:
            return thread.name
    return str(ident)
