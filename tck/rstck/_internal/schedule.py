"""The scheduler: one verification's tests (or several subjects' at once) on threads, their waits
overlapping while the TCK calls one subject at a time.

Tests call their subjects one at a time, but their waits overlap: while a test waits out a
no-signal window (a claim that nothing more arrives) it only watches its subject, and the next
test works meanwhile on a fresh subject of its own (see ``Schedule``). With ``concurrency=N``
up to N tests call their subjects at once; that changes what a subject sees (calls from several
threads at once), so it is opt-in. Each verdict still belongs to its test: errors are routed by
the thread they happen on.
"""

from __future__ import annotations

import concurrent.futures
import importlib
import threading
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Sequence
from functools import partial
from typing import TYPE_CHECKING

from ..registry import TckTest
from ..results import Level
from ..results import TestResult
from ..settings import Settings
from .environment import Environment
from .one_rule import not_run
from .one_rule import run_test
from .reach import waiting_for_results
from .worker import spawn

if TYPE_CHECKING:
    from ..contexts import Context

#: Tests that found the subject blocking its caller after which the rest are not run.
BLOCKS_TO_STOP = 3

#: How often a caller waiting for a result checks that the schedule is not stalled.
_STALL_CHECK_S = 5.0

#: How many tests past the last one asked for may start (most of them only waiting), and how
#: many may be in flight beyond those calling their subjects.
LOOKAHEAD = 256

#: The order tests start in: the fuzz searches (CPU work that fills the rule tests' windows), the
#: rule tests, the busy ones (``TckTest.busy``), then the race hunts, each alone once no test calls
#: its subject or waits to (see ``_pump``).
_START_RANK: dict[str, int] = {Level.STOCHASTIC: 4, Level.FUZZ: 1}


class Schedule:
    """Runs a sequence of tests, overlapping their waits; results come back per test.

    At most ``concurrency`` tests call into their subjects at any moment: each such test holds a
    slot. A test gives its slot up while it only waits (a no-signal window: nothing the TCK
    does then calls its subject) and takes one back before it calls again, waiting if none is
    free; once only its closing waits remain it gives the slot up for good. So with the default
    of one slot, the TCK never calls two subjects at once, yet one test's windows overlap
    another's work. Tests start ahead of the one whose result is asked for (by at most
    ``concurrency`` + ``LOOKAHEAD``: a whole verification, so its windows all overlap), a test
    back from a window takes the slot before a new test starts (its subject may not wait
    long), and a new test starts in every window; a test marked ``busy`` (mostly the TCK's own
    work) starts after those, its work filling their windows, and a race hunt last, alone, in
    their windows (see ``_pump``). A consumer that stops asking
    (``pytest -x``) leaves the tests already started to run out on daemon threads. Once a sanity
    check, or ``BLOCKS_TO_STOP`` tests, found the subject blocking its caller, the tests not yet
    started are not run: each gets the verdict ``not_run`` at once, naming the test whose failure
    shows the blocked stack.

    A fuzz search starts before the rule tests and runs beside them: it computes while they
    wait out their windows. Meanwhile no result is handed back (``result`` waits until every
    search has ended, and tests keep starting without a consumer asking): Hypothesis may parse
    source on the search's thread, pytest does on the consumer's to report, and CPython 3.11's
    AST work is not safe from two threads at once.
    """

    def __init__(
        self,
        tests: Sequence[TckTest],
        make_context: Callable[[Environment], Context],
        settings: Settings,
        *,
        subject_label: str = "",
        concurrency: int | None = None,
        jobs: Sequence[tuple[Callable[[Environment], Context], Settings, str]] | None = None,
    ) -> None:
        """``jobs``: per test, its own ``(make_context, settings, subject_label)``, for a schedule
        of several subjects' tests (``joint``); ``settings`` then says how the schedule runs."""
        self.tests = list(tests)
        self.make_context = make_context
        self.settings = settings
        self.subject_label = subject_label
        self._jobs = list(jobs) if jobs is not None else [(make_context, settings, subject_label)] * len(self.tests)
        # Tests start in rank order across every subject of a joint schedule: the one asked for
        # may come after all the others' (a busy sanity check), so all of them may start.
        self._lookahead = LOOKAHEAD if jobs is None else max(LOOKAHEAD, len(self.tests))
        limit = settings.concurrency if concurrency is None else concurrency
        if limit < 1:
            raise ValueError(f"concurrency must be >= 1, got {limit}")
        # Under --rs-loop=asyncio every test shares one event loop, whose diagnostics name no
        # test: there, tests never overlap.
        self.overlap = settings.loop != "asyncio"
        self.concurrency = limit if self.overlap else 1
        self._futures: list[concurrent.futures.Future[TestResult]] = [
            concurrent.futures.Future() for _ in self.tests
        ]
        # Race-hunting tests run alone (see ``_pump``), in the others' windows.
        self._order = sorted(range(len(self.tests)), key=lambda i: _START_RANK.get(
            self.tests[i].level, 3 if self.tests[i].busy else 2))
        self._searches = not settings.no_fuzz
        _preload(settings, self.tests)
        self._lock = threading.Lock()
        self._turn = threading.Condition(self._lock)
        self._started = 0
        self._running = 0  # started, not finished
        self._active = 0  # holding a slot
        self._parked = 0  # in a window, to take a slot back after it
        self._waiting = 0  # back from a window, waiting for a slot
        self._alone = False  # a race-hunting test is running, with nothing beside it
        self._searching = 0  # fuzz searches running: no result is handed back meanwhile
        self._search_waiting = 0  # fuzz searches back from a window, waiting for a slot: first
        self._wanted = 0
        #: Per subject (its label): ``(test id, call)`` of the first test that found it blocking
        #: its caller, how many did, and, once its tests not started yet are left out, the
        #: ``(test id, call)`` they name (see ``_blocked_in``). One subject's block leaves the
        #: other subjects of a joint schedule their tests.
        self._first_block: dict[str, tuple[str, str]] = {}
        self._blocks: dict[str, int] = {}
        self._blocked: dict[str, tuple[str, str]] = {}

    def result(self, index: int) -> TestResult:
        """The result of test ``index``, starting it (and what may run with it) if needed."""
        with self._lock:
            self._wanted = max(self._wanted, index + 1)
            self._pump()
        future = self._futures[index]
        with waiting_for_results():
            return self._wait(index, future)

    def _wait(self, index: int, future: concurrent.futures.Future[TestResult]) -> TestResult:
        while True:
            with self._lock:
                if self._turn.wait_for(lambda: future.done() and not self._searching, _STALL_CHECK_S):
                    return future.result()
                if future.done() or self._running:
                    continue
                self._pump()  # nothing runs: start what may start
                if not self._running and not future.done():
                    # Never wait forever on a test nobody will run: say what the schedule holds.
                    raise RuntimeError(
                        f"the schedule stalled: {self.tests[index].name} never started (started "
                        f"{self._started} of {len(self.tests)}, active {self._active}, parked "
                        f"{self._parked}, waiting {self._waiting}, alone {self._alone})")

    def results(self) -> Iterable[TestResult]:
        """Every result, in test order, as each becomes final."""
        with self._lock:
            self._wanted = len(self.tests)
        for index in range(len(self.tests)):
            yield self.result(index)

    def _startable(self) -> bool:
        # Called with the lock held: a test may start once the slot is free.
        return (self._started < len(self.tests) and not self._alone
                and self._running < self.concurrency + self._lookahead
                and (self._searching > 0 or self._started < self._wanted + self.concurrency + self._lookahead))

    def _pump(self) -> None:
        # Called with the lock held. A test back from a window goes before a new one (a fuzz
        # search back from a settle goes first of all): a test that made its subject waits for
        # its next call only behind the calls of those already under way, never behind every
        # test yet to start. A subject may give up on a subscriber that does not ask in time
        # (RxJava's TCK harnesses stop producing a second after the factory call); started
        # first, the new tests held a test back from its window for over a second. The new
        # ones still start in every window, so the windows of a verification overlap.
        while (self._active < self.concurrency and not self._search_waiting and self._startable()
               and not self._waiting):
            index = self._order[self._started]
            if self._jobs[index][2] in self._blocked and self.tests[index].level != Level.UNTESTED:
                self._leave_out(index)  # an untested rule calls nothing: its reason still stands
                continue
            # A stochastic test hunts races with tight timing over many rounds: it runs alone
            # (no other test calls, nor will until it ends), so tests beside it neither slow it
            # past its timeout nor change what it can see. It starts once every test started
            # before it waits out a window (none calls or waits to): those windows then overlap it.
            alone = self.tests[index].level == Level.STOCHASTIC
            if alone and (self._active or self._waiting):
                return
            self._alone = alone
            search = self._searches and self.tests[index].level == Level.FUZZ
            self._searching += search
            self._started += 1
            self._running += 1
            self._active += 1
            try:
                spawn(partial(self._run, index), f"rs-tck-runner-{index}")
            except BaseException as exc:  # no thread to be had: this test's error, not a hang
                self._running -= 1
                self._active -= 1
                self._alone = False
                self._searching -= search
                self._futures[index].set_exception(exc)
                self._turn.notify_all()
                return

    def _leave_out(self, index: int) -> None:
        # Called with the lock held: the subject blocked a caller in an earlier test; each test
        # left would wait out the stall limit on it in turn (a minute for a verification).
        label = self._jobs[index][2]
        self._started += 1
        self._futures[index].set_result(not_run(self.tests[index], *self._blocked[label], label))
        self._turn.notify_all()

    def _blocked_in(self, index: int, call: str) -> None:
        """Test ``index`` found the subject blocking its caller in ``call``. The tests not started
        yet are left out once the block is one every test will meet: in a sanity check (the
        factory's basic path), or in ``BLOCKS_TO_STOP`` tests. A block on one path only (a cancel()
        under unbounded demand, say) leaves the other tests their verdicts."""
        test, label = self.tests[index], self._jobs[index][2]
        here = (f"{test.verification}::{test.test_id}", call)
        with self._lock:
            self._blocks[label] = self._blocks.get(label, 0) + 1
            first = self._first_block.setdefault(label, here)
            sanity = test.rule_id is None and test.level == Level.REQUIRED
            if label not in self._blocked and (sanity or self._blocks[label] >= BLOCKS_TO_STOP):
                self._blocked[label] = here if sanity else first

    def _run(self, index: int) -> None:
        slot = _Slot(self, alone=self.tests[index].level == Level.STOCHASTIC,
                     search=self._searches and self.tests[index].level == Level.FUZZ)
        future = self._futures[index]
        outcome: TestResult | BaseException
        make_context, settings, label = self._jobs[index]
        try:
            outcome = run_test(self.tests[index], make_context, settings,
                               subject_label=label, slot=slot if self.overlap else None,
                               on_blocked=partial(self._blocked_in, index))
        except BaseException as exc:  # a TCK defect: surface it to whoever waits, not the thread
            outcome = exc
        try:
            slot.close()
        finally:
            # Whatever happens here, the test is over for the schedule and its waiter is told.
            with self._lock:
                self._running -= 1
            if isinstance(outcome, BaseException):
                future.set_exception(outcome)
            else:
                future.set_result(outcome)
            with self._lock:
                self._searching -= self._searches and self.tests[index].level == Level.FUZZ
                self._turn.notify_all()  # its waiter, and any waiting for the searches to end
                self._pump()


def _preload(settings: Settings, tests: Sequence[TckTest]) -> None:
    """Import, on the caller's thread and before any test runs, what tests import lazily.

    Under pytest this project's modules and Hypothesis's are assertion-rewritten on import
    (both are pytest plugins), and CPython 3.11's AST work is not safe from two threads at once
    (pytest's main thread parses source to report a failure meanwhile): "SystemError: AST
    constructor recursion depth mismatch". Hypothesis also takes a while to import.
    """
    names = ["..fuzz"]
    if settings.loop == "asyncio":
        names.append(".loop")
    if not settings.no_fuzz and any(t.level == Level.FUZZ for t in tests):
        names.append(".fuzz.verify")
    for name in names:
        importlib.import_module(name, __package__)


class _Slot:
    """One test's right to call its subject (see ``Schedule``); every method is idempotent."""

    def __init__(self, schedule: Schedule, *, alone: bool, search: bool = False) -> None:
        self.schedule = schedule
        self.alone = alone  # a race-hunting test keeps its slot through its windows
        # A fuzz search takes a free slot before rule tests waiting for one: it is the longest
        # test, and every wait behind a rule test's calls lengthens the run.
        self.search = search
        self.held = True
        self.closed = False

    def release(self) -> None:
        """Only waiting from now on, until ``acquire``: another test may call meanwhile."""
        s = self.schedule
        with s._lock:
            if self.alone or self.closed or not self.held:
                return
            self.held = False
            s._active -= 1
            s._parked += 1
            s._turn.notify_all()
            s._pump()

    def acquire(self) -> None:
        """About to call the subject again: wait for a free slot."""
        s = self.schedule
        with s._lock:
            if self.closed or self.held:
                return
            s._waiting += 1
            s._search_waiting += self.search
            # An abandoned test (the watchdog gave up on it) is closed meanwhile: it takes nothing.
            s._turn.wait_for(lambda: self.closed or (
                s._active < s.concurrency and not s._alone and (self.search or not s._search_waiting)))
            s._waiting -= 1
            if self.search:
                s._search_waiting -= 1
                s._turn.notify_all()  # rule tests held back for it look again
            if self.closed:
                return
            s._parked -= 1
            s._active += 1
            self.held = True

    def close(self) -> None:
        """Only closing waits remain (or the test ended): the slot is free for good."""
        s = self.schedule
        with s._lock:
            if self.closed:
                return
            self.closed = True
            if self.held:
                s._active -= 1
            else:
                s._parked -= 1
            self.held = False
            if self.alone:
                s._alone = False
            s._turn.notify_all()
            s._pump()

