"""The results contract: what every report, the CI gate and the campaign pipeline read.

One ``TestResult`` per verification run; a ``RunResults`` wraps them with the run's subjects
and settings. Inside a process every stage passes these objects (the runner to the pytest host,
the host to every reporter); JSON is their form only where they leave a process: a file
(``RunResults.to_json``, ``load``) and the hop from a pytest-xdist worker or a campaign unit's
process (``TestResult.to_json``/``from_json``). The JSON shape is versioned by ``SCHEMA`` and
described by ``schemas/rs-tck-results-1.schema.json``; reading validates the fields that later
stages rely on and names what is wrong, never skipping an entry.
"""

from __future__ import annotations

import contextlib
import json
import platform
from dataclasses import dataclass
from dataclasses import field
from enum import StrEnum
from pathlib import Path
from typing import Any
from typing import NotRequired
from typing import TypedDict
from typing import TypeVar

SCHEMA = "rs-tck-results/1"
TCK_VERSION = "0.1.0"


class Outcome(StrEnum):
    """How a test ended, in pytest's words: what a CI gate counts."""

    PASSED = "passed"
    FAILED = "failed"
    SKIPPED = "skipped"
    ERROR = "error"


class Verdict(StrEnum):
    """Finer than the outcome: why a test was skipped, or that an optional one is unsupported."""

    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"
    OPTIONAL_UNSUPPORTED = "optional_unsupported"
    NOT_APPLICABLE = "not_applicable"
    UNTESTED = "untested"
    DESELECTED = "deselected"
    #: Not run because an earlier test of the same subject found it blocking its caller: each
    #: would wait out the stall limit in turn, on a subject already known to hang.
    NOT_RUN = "not_run"


class Level(StrEnum):
    """What a test's failure means: the first word of its name (``required_spec309_...``)."""

    REQUIRED = "required"
    OPTIONAL = "optional"
    STOCHASTIC = "stochastic"
    UNTESTED = "untested"
    FUZZ = "fuzz"


# StrEnum members are their words: JSON, reports and comparisons with text read them unchanged.
OUTCOMES = tuple(Outcome)
VERDICTS = tuple(Verdict)
LEVELS = tuple(Level)
#: The outcomes (and the verdicts: the same words) that fail a run, unless a baseline lists them.
FAILING: frozenset[str] = frozenset({Outcome.FAILED, Outcome.ERROR})


@dataclass(frozen=True)
class Failure:
    """One problem a test found, as data: reports, Spark rows and fuzz reports read these fields.

    ``evidence`` names the trace records (by ``seq``) that show the problem; ``setting`` the
    heuristic setting (a ``Settings`` field, e.g. ``timeout``) the verdict rests on, if any.
    """

    rule: str | None  # cited rule id ("3.9"); None for a sanity failure
    expected: str
    observed: str
    hint: str = ""
    evidence: tuple[int, ...] = ()
    setting: str | None = None
    #: In an edition other than JVM 1.0.1 (``rule`` is then the edition's own id): the JVM id.
    jvm_rule: str | None = None

    def headline(self) -> str:
        where = f"rule {self.rule}" if self.rule else f"JVM rule {self.jvm_rule}" if self.jvm_rule else "sanity"
        if self.rule and self.jvm_rule:
            where += f" (JVM {self.jvm_rule})"
        return f"[{where}] expected {self.expected}; observed {self.observed}"

    def to_json(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "expected": self.expected,
            "observed": self.observed,
            "hint": self.hint,
            "evidence": list(self.evidence),
            "setting": self.setting,
            **({"jvm_rule": self.jvm_rule} if self.jvm_rule is not None else {}),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Failure:
        return cls(
            rule=data["rule"],
            expected=data["expected"],
            observed=data["observed"],
            hint=data.get("hint", ""),
            evidence=tuple(int(seq) for seq in data.get("evidence", [])),
            setting=data.get("setting"),
            jvm_rule=data.get("jvm_rule"),
        )


@dataclass
class TestResult:
    """The outcome of one verification of one rule against one subject."""

    __test__ = False  # not a pytest test class

    test: str
    verification: str
    rule: str | None
    level: Level
    outcome: Outcome
    #: An ``Outcome`` only when read from a file written without verdicts.
    verdict: Verdict | Outcome
    duration_s: float
    message: str = ""
    trace: list[dict[str, Any]] = field(default_factory=list)
    trace_total: int = 0
    subject: str = ""
    #: ``"known"`` when a baseline lists this failure as a known deviation; absent otherwise.
    baseline: str | None = None
    #: For a failed fuzz test: the shrunk scenario as steps, its replay token, what finding it took.
    fuzz: dict[str, Any] | None = None
    #: What the test found, headline first; empty when it passed or did not apply.
    failures: list[Failure] = field(default_factory=list)
    #: Epoch seconds: when the test started, and when its verdict was final.
    started_at: float = 0.0
    finished_at: float = 0.0
    #: For a test that repeats a race: ``{"ran": N, "showed": M}`` (rounds run, rounds that showed it).
    iterations: dict[str, int] | None = None
    #: In an edition other than JVM 1.0.1 (``rule`` is then the edition's own id): the JVM id.
    jvm_rule: str | None = None
    #: The subject's id when the run verified several (``map``); None for a kind's one subject.
    subject_id: str | None = None

    @property
    def key(self) -> str:
        """Which subject the result is of, as reports and the baseline name it: its id, else its kind."""
        return self.subject_id or self.verification

    def __post_init__(self) -> None:
        # Words given as plain text become their members, so every consumer reads one type.
        self.level = _member(Level, self.level, "level")
        self.outcome = _member(Outcome, self.outcome, "outcome")
        # A file written without verdicts has its outcome here; "skipped" is the one no verdict has.
        self.verdict = (Outcome.SKIPPED if self.verdict == Outcome.SKIPPED
                        else _member(Verdict, self.verdict, "verdict"))

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "test": self.test,
            "verification": self.verification,
            "rule": self.rule,
            # Plain words, not members: xdist's execnet carries a report's result only as
            # builtin types, and so may any consumer of the document.
            "level": self.level.value,
            "outcome": self.outcome.value,
            "verdict": self.verdict.value,
            "duration_s": round(self.duration_s, 6),
            "message": self.message,
            "trace": self.trace,
            "trace_total": self.trace_total,
            "subject": self.subject,
            "failures": [f.to_json() for f in self.failures],
            "started_at": round(self.started_at, 6),
            "finished_at": round(self.finished_at, 6),
            "iterations": self.iterations,
        }
        if self.baseline is not None:
            data["baseline"] = self.baseline
        if self.fuzz is not None:
            data["fuzz"] = self.fuzz
        if self.jvm_rule is not None:
            data["jvm_rule"] = self.jvm_rule
        if self.subject_id is not None:
            data["subject_id"] = self.subject_id
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TestResult:
        return cls(
            test=data["test"],
            verification=data["verification"],
            rule=data["rule"],
            level=data["level"],
            outcome=data["outcome"],
            verdict=data.get("verdict", data["outcome"]),
            duration_s=float(data["duration_s"]),
            message=data.get("message", ""),
            trace=list(data.get("trace", [])),
            trace_total=int(data.get("trace_total", len(data.get("trace", [])))),
            subject=data.get("subject", ""),
            baseline=data.get("baseline"),
            fuzz=data.get("fuzz"),
            failures=[Failure.from_json(f) for f in data.get("failures", [])],
            started_at=float(data.get("started_at", 0.0)),
            finished_at=float(data.get("finished_at", 0.0)),
            iterations=_iterations(data.get("iterations")),
            jvm_rule=data.get("jvm_rule"),
            subject_id=data.get("subject_id"),
        )


class _NotAWord(ValueError):
    """A field holding a word its enum does not have; says ``field 'value' is not one of (...)``."""


_E = TypeVar("_E", bound=StrEnum)


def _member(kind: type[_E], value: object, name: str) -> _E:
    """``value`` as a member of ``kind``, or an error naming the field and the words it allows."""
    if isinstance(value, str):
        with contextlib.suppress(ValueError):
            return kind(value)
    raise _NotAWord(f"{name} {value!r} is not one of {tuple(m.value for m in kind)}")


def _iterations(value: Any) -> dict[str, int] | None:
    if value is None:
        return None
    return {"ran": int(value["ran"]), "showed": int(value["showed"])}


class Summary(TypedDict):
    """The counts of a results document: by outcome, by verdict, and the summed test time."""

    total: int
    passed: int
    failed: int
    skipped: int
    error: int
    #: Every verdict, zeros included; a file written without verdicts adds its outcomes.
    verdicts: dict[str, int]
    duration_s: float


class ResultsDocument(TypedDict):
    """A results file (schema ``rs-tck-results/1``), as ``document`` builds it and the JSON holds it.

    The three trailing keys are present only when the run stopped before every selected test
    ran: a partial run must not read like a complete one, in the file or in a gate.
    """

    schema: str
    edition: str
    tck_version: str
    python: str
    subjects: dict[str, str]
    settings: dict[str, Any]
    summary: Summary
    #: One ``TestResult.to_json()`` each.
    results: list[dict[str, Any]]
    interrupted: NotRequired[bool]
    #: Why the run stopped early: ``"interrupted (KeyboardInterrupt)"``, ``"stopping after 1 failures"``.
    interrupted_reason: NotRequired[str]
    #: How many selected tests never reached a verdict, when the host knows.
    not_run: NotRequired[int]


def summarize(results: list[TestResult]) -> Summary:
    by_outcome = {o: 0 for o in Outcome}
    by_verdict: dict[str, int] = {v.value: 0 for v in Verdict}
    for r in results:
        by_outcome[r.outcome] += 1
        by_verdict[r.verdict] = by_verdict.get(r.verdict, 0) + 1
    return {
        "total": len(results),
        "passed": by_outcome[Outcome.PASSED],
        "failed": by_outcome[Outcome.FAILED],
        "skipped": by_outcome[Outcome.SKIPPED],
        "error": by_outcome[Outcome.ERROR],
        "verdicts": by_verdict,
        "duration_s": round(sum(r.duration_s for r in results), 6),
    }


@dataclass
class RunResults:
    """A run's results with what they are of: its subjects, its settings, its edition, and whether
    it stopped before every selected test ran. The one object every reporter reads in-process.

    ``interrupted`` says why the run stopped early (None: it did not), ``not_run`` how many
    selected tests it left without a verdict, if known.
    """

    results: list[TestResult]
    subjects: dict[str, str]
    settings: dict[str, Any]
    edition: str = "jvm-1.0.1"
    interrupted: str | None = None
    not_run: int | None = None
    tck_version: str = TCK_VERSION
    python: str = field(default_factory=platform.python_version)

    @property
    def summary(self) -> Summary:
        return summarize(self.results)

    def to_json(self) -> ResultsDocument:
        """The results file (schema ``rs-tck-results/1``): for a file or another process only."""
        data: ResultsDocument = {
            "schema": SCHEMA,
            "edition": self.edition,
            "tck_version": self.tck_version,
            "python": self.python,
            "subjects": self.subjects,
            "settings": self.settings,
            "summary": self.summary,
            "results": [r.to_json() for r in self.results],
        }
        if self.interrupted:
            data["interrupted"] = True
            data["interrupted_reason"] = self.interrupted
            if self.not_run is not None:
                data["not_run"] = self.not_run
        return data

    @classmethod
    def from_json(cls, data: object, source: str = "results") -> RunResults:
        """A results document read back; ``ResultsFileError`` naming ``source`` and the bad field."""
        if not isinstance(data, dict) or data.get("schema") != SCHEMA:
            found = data.get("schema") if isinstance(data, dict) else type(data).__name__
            raise ResultsFileError(f"{source}: expected a results file with schema {SCHEMA!r}, found {found!r}")
        for key, kind in (("results", list), ("subjects", dict), ("settings", dict)):
            if not isinstance(data.get(key, kind()), kind):
                raise ResultsFileError(f"{source}: {key} is {type(data[key]).__name__}, not {kind.__name__}")
        results = [_result_of(item, f"{source}: results[{i}]") for i, item in enumerate(data.get("results", []))]
        interrupted = str(data.get("interrupted_reason") or "interrupted") if data.get("interrupted") else None
        return cls(results, subjects=dict(data.get("subjects", {})), settings=dict(data.get("settings", {})),
                   edition=str(data.get("edition", "jvm-1.0.1")), interrupted=interrupted,
                   not_run=data.get("not_run") if interrupted else None,
                   tck_version=str(data.get("tck_version", TCK_VERSION)),
                   python=str(data.get("python", platform.python_version())))


def document(
    results: list[TestResult], *, subjects: dict[str, str], settings: dict[str, Any],
    edition: str = "jvm-1.0.1", interrupted: str | None = None, not_run: int | None = None,
) -> ResultsDocument:
    """The whole results file of ``results``, as ``RunResults.to_json`` writes it."""
    return RunResults(results, subjects=subjects, settings=settings, edition=edition,
                      interrupted=interrupted, not_run=not_run).to_json()


class ResultsFileError(ValueError):
    """A results file that is missing, not JSON, or not of our schema; says which and where."""


def _result_of(item: object, where: str) -> TestResult:
    """One entry of a document's ``results``, or an error naming it and what is wrong with it."""
    if not isinstance(item, dict):
        raise ResultsFileError(f"{where} is {type(item).__name__}, not an object")
    try:
        result = TestResult.from_json(item)
    except _NotAWord as exc:
        raise ResultsFileError(f"{where}.{exc}") from None
    except (KeyError, TypeError, ValueError) as exc:
        raise ResultsFileError(f"{where} is malformed: missing or bad {exc}") from None
    if result.baseline not in (None, "known"):
        raise ResultsFileError(f"{where}.baseline {result.baseline!r} is not 'known'")
    return result


def read_json(path: str | Path) -> Any:
    """A results file's JSON, or ``ResultsFileError`` saying why it cannot be read."""
    path = Path(path)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ResultsFileError(f"{path}: cannot read results file: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ResultsFileError(f"{path}: not a results file (not UTF-8 text)") from None
    except json.JSONDecodeError as exc:
        raise ResultsFileError(f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}): {exc.msg}") from None


def load(path: str | Path) -> RunResults:
    """Read a results file back, checking the fields every consumer relies on."""
    return RunResults.from_json(read_json(path), str(path))
