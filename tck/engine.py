"""Running whole verifications without a test framework (campaigns, scripts, other runners).

Tests run one after another, except that a test's closing quiet windows (claims that nothing
more arrives, made last; see ``Context.closing_quiet``) overlap the start of the next test:
that test works on a fresh subject while the previous one's subject is only being watched.
With ``concurrency=N`` up to N tests run at once, each against its own fresh subject; that
changes what a subject sees (calls from several threads at once), so it is opt-in. Each
verdict still belongs to its test: errors are routed by the thread they happen on.
"""

from __future__ import annotations

import concurrent.futures
import threading
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Sequence
from typing import Any

from .contexts import Context
from .environment import Environment
from .results import TestResult
from .runner import run_test
from .settings import Settings
from .subjects import PublisherSubject
from .verifications import VERIFICATIONS
from .verifications import publisher
from .verifications._base import TckTest


def select(
    tests: Iterable[TckTest], *, rules: Iterable[str] = (), skip_rules: Iterable[str] = ()
) -> list[TckTest]:
    """Tests whose rule is in ``rules`` (all if empty) and not in ``skip_rules``.

    ``"sanity"`` names the tests that check the factory itself rather than a rule, ``"fuzz"``
    the fuzz tests (they check every rule they can observe).
    """
    wanted, unwanted = set(rules), set(skip_rules)

    def key(test: TckTest) -> str:
        return "fuzz" if test.level == "fuzz" else test.rule_id or "sanity"

    return [t for t in tests if (not wanted or key(t) in wanted) and key(t) not in unwanted]


#: How many tests past the last one asked for may start (most of them only closing).
LOOKAHEAD = 16


class Schedule:
    """Runs a sequence of tests, overlapping where allowed; results come back per test.

    Tests start ahead of the one whose result is asked for (by at most ``concurrency`` +
    ``LOOKAHEAD``), so a consumer that stops asking (``pytest -x``) stops the run soon.
    """

    def __init__(
        self,
        tests: Sequence[TckTest],
        make_context: Callable[[Environment], Context],
        settings: Settings,
        *,
        subject_label: str = "",
        concurrency: int | None = None,
    ) -> None:
        self.tests = list(tests)
        self.make_context = make_context
        self.settings = settings
        self.subject_label = subject_label
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
        self._lock = threading.Lock()
        self._started = 0
        self._active = 0
        self._alone = False  # a race-hunting test is running, with nothing beside it
        self._wanted = 0

    def result(self, index: int) -> TestResult:
        """The result of test ``index``, starting it (and what may run with it) if needed."""
        with self._lock:
            self._wanted = max(self._wanted, index + 1)
            self._pump()
        return self._futures[index].result()

    def results(self) -> Iterable[TestResult]:
        """Every result, in test order, as each becomes final."""
        with self._lock:
            self._wanted = len(self.tests)
        for index in range(len(self.tests)):
            yield self.result(index)

    def _pump(self) -> None:
        # Called with the lock held.
        while (self._started < len(self.tests) and self._active < self.concurrency
               and self._started < self._wanted + self.concurrency + LOOKAHEAD and not self._alone):
            index = self._started
            # A stochastic test hunts races with tight timing over many rounds: it runs alone,
            # so tests beside it neither slow it past its timeout nor change what it can see.
            alone = self.tests[index].level == "stochastic"
            if alone and self._active:
                return
            self._alone = alone
            self._started += 1
            self._active += 1
            threading.Thread(target=self._run, args=(index,), name=f"rs-tck-runner-{index}",
                             daemon=True).start()

    def _run(self, index: int) -> None:
        released = False

        def release() -> None:
            nonlocal released
            with self._lock:
                if not released:
                    released = True
                    self._active -= 1
                    if self.tests[index].level == "stochastic":
                        self._alone = False
                    self._pump()

        future = self._futures[index]
        try:
            result = run_test(self.tests[index], self.make_context, self.settings,
                              subject_label=self.subject_label,
                              on_closing=release if self.overlap else None)
        except BaseException as exc:  # a TCK defect: surface it to whoever waits, not the thread
            release()
            future.set_exception(exc)
            return
        release()
        future.set_result(result)


def run_verification(
    name: str,
    subject: Any,
    settings: Settings | None = None,
    *,
    rules: Iterable[str] = (),
    skip_rules: Iterable[str] = (),
    on_result: Callable[[TestResult], None] | None = None,
    concurrency: int | None = None,
) -> list[TestResult]:
    """Run every selected test of verification ``name`` against ``subject``.

    ``concurrency`` (default: the ``concurrency`` setting) is how many tests may run at once.
    """
    verification = VERIFICATIONS[name]
    settings = settings or Settings()
    apply = getattr(subject, "apply", None)
    if callable(apply):
        settings = apply(settings)
    label = str(getattr(subject, "label", "") or subject)
    schedule = Schedule(
        select(verification.tests, rules=rules, skip_rules=skip_rules),
        lambda env: verification.make_context(env, subject),
        settings,
        subject_label=label,
        concurrency=concurrency,
    )
    results = []
    for result in schedule.results():
        results.append(result)
        if on_result is not None:
            on_result(result)
    return results


def run_publisher_verification(
    subject: PublisherSubject,
    settings: Settings | None = None,
    *,
    rules: Iterable[str] = (),
    skip_rules: Iterable[str] = (),
    on_result: Callable[[TestResult], None] | None = None,
    concurrency: int | None = None,
) -> list[TestResult]:
    """Run every selected publisher test against ``subject`` and return the results."""
    return run_verification(
        publisher.VERIFICATION, subject, settings, rules=rules, skip_rules=skip_rules, on_result=on_result,
        concurrency=concurrency,
    )
