"""The core's front door: ``Run`` is one verification of one subject, made ready (tests selected,
the subject's declared settings applied) and run through a ``Schedule`` (``rstck._internal.schedule``).
The pytest plugin, the campaign's work units, the worker processes of a run of many subjects
(``rstck.processes``) and scripts all run verifications through it.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Iterator
from collections.abc import Mapping
from collections.abc import Sequence
from typing import TYPE_CHECKING
from typing import Any

from ._internal.one_rule import run_test
from ._internal.schedule import BLOCKS_TO_STOP
from ._internal.schedule import LOOKAHEAD
from ._internal.schedule import Schedule
from ._internal.selection import _key
from ._internal.selection import _not_verified
from ._internal.selection import select
from .editions import EDITIONS
from .editions import rule_ids as rule_ids_of
from .errors import SetupError
from .fuzz import check_replay
from .registry import TckTest
from .results import ResultsDocument
from .results import TestResult
from .results import document
from .settings import Settings
from .subjects import PublisherSubject
from .verifications import for_edition

if TYPE_CHECKING:
    from ._internal.environment import Environment
    from .contexts import Context

#: What the hosts import from here: the one entry point, and the scheduler's names it runs through.
__all__ = ["BLOCKS_TO_STOP", "LOOKAHEAD", "Run", "Schedule", "declared_run", "joinable", "joint", "run_publisher_verification",
           "run_verification", "select", "settings_for"]


def settings_for(subject: Any, settings: Settings) -> Settings:
    """``settings`` with what ``subject`` declares (its capabilities, its loop) applied."""
    apply = getattr(subject, "apply", None)
    return apply(settings) if callable(apply) else settings


class Run:
    """One verification of one subject, ready to run: the core's one front door.

    It checks the settings, applies what the subject declares, selects the tests (rule ids as
    the edition spells them), and runs them through one ``Schedule``, results shown in the
    edition's own ids. The pytest plugin, the campaign's child process and
    ``run_verification`` all go through it, so they cannot differ on what runs or how.
    """

    def __init__(
        self,
        name: str,
        subject: Any,
        settings: Settings | None = None,
        *,
        rules: Iterable[str] = (),
        skip_rules: Iterable[str] = (),
        concurrency: int | None = None,
        overrides: Mapping[str, Any] | None = None,
        skipped: Mapping[str, str] | None = None,
    ) -> None:
        """``overrides``: settings this subject sets for itself, over the run's and what its record
        declares; ``skipped``: rule id -> why it is not verified for this subject (its tests then
        report that reason, deselected)."""
        requested = settings or Settings()
        check_replay(requested)
        self.edition = EDITIONS[requested.edition]
        kinds = for_edition(requested.edition)
        if name not in kinds and not self.edition.is_jvm:
            raise SetupError(f"--rs-edition={requested.edition} verifies {', '.join(kinds)} subjects only, "
                             f"not {name}")
        self.verification = kinds[name]
        self.subject = subject = _as_subject(self.verification.subject, subject)
        #: The settings as given, before the subject's declarations: the results document's.
        self.requested = requested
        #: The settings the tests run with.
        self.settings = settings_for(subject, requested)
        if overrides:
            self.settings = self.settings.replace(**overrides)
        self.label = str(getattr(subject, "label", "") or subject)
        self.concurrency = concurrency
        if not self.edition.is_jvm:  # the edition's own ids, as the kit runs them
            rules = rule_ids_of(requested.edition, list(rules), "rules") if rules else ()
            skip_rules = rule_ids_of(requested.edition, list(skip_rules), "skip_rules") if skip_rules else ()
        #: The selected tests, in the verification's order.
        self.tests = select(self.verification.tests, rules=rules, skip_rules=skip_rules)
        if skipped:
            self.tests = [_not_verified(t, skipped[_key(t)]) if _key(t) in skipped else t for t in self.tests]

    def make_context(self, env: Environment) -> Context:
        """What a test body of this verification receives, for this subject."""
        return self.verification.make_context(env, self.subject)

    def schedule(self, tests: Sequence[TckTest] | None = None) -> Schedule:
        """A schedule of ``tests`` (default: the selected ones); its results are the runner's."""
        return Schedule(self.tests if tests is None else tests, self.make_context, self.settings,
                        subject_label=self.label, concurrency=self.concurrency)

    def run_one(self, test: TckTest) -> TestResult:
        """Run ``test`` alone, now, on this thread's watch (no other test beside it)."""
        return self.present(run_test(test, self.make_context, self.settings, subject_label=self.label))

    def present(self, result: TestResult) -> TestResult:
        """A result as the edition shows it (its own rule ids)."""
        return self.edition.present(result)

    def results(self, on_result: Callable[[TestResult], None] | None = None) -> Iterator[TestResult]:
        """Every selected test's result, in test order, as each becomes final."""
        for result in map(self.present, self.schedule().results()):
            if on_result is not None:
                on_result(result)
            yield result

    def document(self, results: Iterable[TestResult]) -> ResultsDocument:
        """The results document of this run (rstck-results/1, as the JSON report writes)."""
        return document(list(results), subjects={self.verification.name: self.label},
                        settings=self.requested.to_json(), edition=self.requested.edition)


def declared_run(kind: str, subject: Any, settings: Settings, declaration: Any, *, rules: Sequence[str] = (),
                 skip_rules: Sequence[str] = ()) -> Run:
    """The ``Run`` of a subject with its declaration (``rstck.pytest``), if any, in a run selecting
    ``rules`` and ``skip_rules``: the declaration's own settings and skipped rules applied, and its
    rules narrowed by the run's. The pytest host and its worker processes make it alike."""
    own_rules = declaration is not None and bool(declaration.rules)
    run = Run(kind, subject, settings, rules=(declaration.rules if own_rules else rules), skip_rules=skip_rules,
              overrides=declaration.settings if declaration is not None else None,
              skipped=declaration.skip_rules if declaration is not None else None)
    if own_rules and rules:
        run.tests = select(run.tests, rules=rules)
    return run


def _as_subject(cls: type[Any], subject: Any) -> Any:
    """``subject`` as its kind's record: a bare factory is wrapped; anything else is refused here,
    by name, rather than failing every test on a rule."""
    if isinstance(subject, cls):
        return subject
    if callable(subject) and not hasattr(subject, "ROLE"):  # a class is a factory too; a record is not
        return cls(factory=subject)
    raise SetupError(f"expected a {cls.__name__} or its factory (a callable) for this verification, "
                     f"got {type(subject).__name__}: {subject!r:.80}")


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
    run = Run(name, subject, settings, rules=rules, skip_rules=skip_rules, concurrency=concurrency)
    return list(run.results(on_result))


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
        "publisher", subject, settings, rules=rules, skip_rules=skip_rules, on_result=on_result,
        concurrency=concurrency,
    )


def joint(parts: Sequence[tuple[Run, Sequence[TckTest]]]) -> Schedule:
    """One schedule of several subjects' tests: their waits overlap as one subject's do.

    What each subject sees is unchanged: the schedule's slots still let one test at a time call
    (of whichever subject), a race hunt still runs alone, and every test runs with its own
    subject's settings. The first run's settings say how the schedule runs (its concurrency,
    whether fuzz searches go first); subjects on an event loop, whose tests never overlap, are
    not joined (see ``joinable``).
    """
    tests = [t for _run, ts in parts for t in ts]
    jobs = [(run.make_context, run.settings, run.label) for run, ts in parts for _t in ts]
    first = parts[0][0]
    return Schedule(tests, first.make_context, first.settings, subject_label=first.label,
                    concurrency=first.concurrency, jobs=jobs)


def joinable(run: Run) -> bool:
    """Whether a subject's tests may share a schedule with other subjects' (``joint``)."""
    return run.settings.loop != "asyncio"

