"""Timeouts and capability knobs of a run, with their defaults and documented names.

Every setting has one name used for the command-line option, the ini key and the environment
variable, so the documentation, the plugin and the error messages cannot drift apart.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from dataclasses import field

from .api import MAX_DEMAND
from .editions import NAMES as EDITION_NAMES


@dataclass(frozen=True)
class Knob:
    """How one setting is spelled and parsed, and what it means."""

    name: str  # attribute of Settings
    option: str  # command-line option
    ini: str  # ini key
    env: str  # environment variable
    kind: str  # "ms", "int", "count" ("auto" or an int), "bool", "choice" or "text"
    help: str
    choices: tuple[str, ...] = ()


KNOBS: tuple[Knob, ...] = (
    Knob("timeout", "--rs-timeout-ms", "rs_timeout_ms", "RS_TCK_TIMEOUT_MS", "ms",
         "Longest wait for a signal that must arrive (ends as soon as it arrives)"),
    Knob("no_signal_window", "--rs-no-signal-ms", "rs_no_signal_ms", "RS_TCK_NO_SIGNAL_MS", "ms",
         "Quiet period that shows nothing else arrives; the main cost of a run"),
    Knob("gc_window", "--rs-gc-ms", "rs_gc_ms", "RS_TCK_GC_MS", "ms",
         "Longest wait for a publisher to drop a cancelled subscriber (rule 3.13)"),
    Knob("test_limit", "--rs-test-limit-ms", "rs_test_limit_ms", "RS_TCK_TEST_LIMIT_MS", "ms",
         "Hard limit on one verification, after which its thread is abandoned and it ends "
         "inconclusive (an error) unless a rule was seen broken"),
    Knob("after_cancel_limit", "--rs-after-cancel-limit", "rs_after_cancel_limit",
         "RS_TCK_AFTER_CANCEL_LIMIT", "int",
         "Elements a publisher may still deliver after cancel() (a batch in progress, a mailbox "
         "ahead of the cancel) before rule 1.8 counts it as not stopping"),
    Knob("max_elements", "--rs-max-elements", "rs_max_elements", "RS_TCK_MAX_ELEMENTS", "int",
         "Largest n the publisher factory supports; 2**63-1 means it can never complete"),
    Knob("recursion_depth", "--rs-recursion-depth", "rs_recursion_depth", "RS_TCK_RECURSION_DEPTH",
         "int", "Allowed depth of synchronous on_next -> request -> on_next recursion (rule 3.3)"),
    Knob("max_subscribers", "--rs-max-subscribers", "rs_max_subscribers", "RS_TCK_MAX_SUBSCRIBERS",
         "int", "How many concurrent subscribers the subject supports"),
    Knob("skip_stochastic", "--rs-skip-stochastic", "rs_skip_stochastic", "RS_TCK_SKIP_STOCHASTIC",
         "bool", "Skip the stochastic (repeated, race-hunting) verifications"),
    Knob("stochastic_iterations", "--rs-stochastic-iterations", "rs_stochastic_iterations",
         "RS_TCK_STOCHASTIC_ITERATIONS", "int", "Iterations of each stochastic verification"),
    Knob("coordinated_emission", "--rs-coordinated-emission", "rs_coordinated_emission",
         "RS_TCK_COORDINATED_EMISSION", "bool",
         "The processor emits an element only once every subscriber has demand for it"),
    Knob("deterministic_sequence", "--rs-deterministic-sequence", "rs_deterministic_sequence",
         "RS_TCK_DETERMINISTIC_SEQUENCE", "bool",
         "factory(n) gives every subscriber the same elements in the same order, whatever it "
         "requests when: the fuzz verification then checks that none is lost, duplicated or reordered"),
    Knob("never_requests", "--rs-never-requests", "rs_never_requests", "RS_TCK_NEVER_REQUESTS",
         "bool", "The subscriber never requests, by design (a sink that cancels at once or ignores "
         "its input): the tests that need its demand are not applicable"),
    Knob("takes_at_most", "--rs-takes-at-most", "rs_takes_at_most", "RS_TCK_TAKES_AT_MOST", "int",
         "The subscriber needs at most this many elements, by design (a first() or take(n)): once it "
         "has them it must cancel (rule 2.6); 0 (the default) declares nothing"),
    Knob("any_thread_puppet", "--rs-any-thread-puppet", "rs_any_thread_puppet",
         "RS_TCK_ANY_THREAD_PUPPET", "bool",
         "The whitebox subscriber's puppet may be pulled from any thread, even while a signal is "
         "being delivered (its request/cancel are serialised with its own calls, like a cancel() "
         "offered to users): a 2.7 hunt then pulls it beside signals"),
    Knob("concurrency", "--rs-concurrency", "rs_concurrency", "RS_TCK_CONCURRENCY", "int",
         "Tests that may call their subjects at once, each against its own fresh subject (1: one "
         "at a time, their no-signal windows overlapping)"),
    Knob("subjects_at_once", "--rs-subjects-at-once", "rs_subjects_at_once", "RS_TCK_SUBJECTS_AT_ONCE", "int",
         "In a run of several subjects, how many share one schedule, their waits overlapping (the TCK "
         "still calls one subject at a time; 1: each subject after the other)"),
    Knob("processes", "--rs-processes", "rs_processes", "RS_TCK_PROCESSES", "count",
         "In a run of several subjects, worker processes they are dealt to, each running its share as one "
         "schedule ('auto': two per usable CPU and one more, at most one per subject; 1: all in this process)"),
    Knob("loop", "--rs-loop", "rs_loop", "RS_TCK_LOOP", "choice",
         "Where calls into the subject run: 'thread' (the TCK's own) or 'asyncio' (a TCK event loop)",
         choices=("thread", "asyncio")),
    Knob("no_fuzz", "--rs-no-fuzz", "rs_no_fuzz", "RS_TCK_NO_FUZZ", "bool",
         "Skip the fuzz verifications (generated request/cancel/signal orders)"),
    Knob("fuzz_examples", "--rs-fuzz-examples", "rs_fuzz_examples", "RS_TCK_FUZZ_EXAMPLES", "int",
         "Scenarios each fuzz verification generates before it passes"),
    Knob("fuzz_steps", "--rs-fuzz-steps", "rs_fuzz_steps", "RS_TCK_FUZZ_STEPS", "int",
         "Before the random scenarios, run every scenario of up to this many steps from a small "
         "alphabet (2 by default; 3 is a thorough level for CI; 0 switches it off)"),
    Knob("fuzz_replay", "--rs-fuzz-replay", "rs_fuzz_replay", "RS_TCK_FUZZ_REPLAY", "text",
         "Replay the scenario of this token (from a fuzz failure) instead of generating scenarios"),
    Knob("fuzz_random", "--rs-fuzz-random", "rs_fuzz_random", "RS_TCK_FUZZ_RANDOM", "bool",
         "Draw new random fuzz scenarios on every run (default: the same ones on every run, "
         "locally and in CI, so a verdict depends on the code alone)"),
    Knob("fuzz_db", "--rs-fuzz-db", "rs_fuzz_db", "RS_TCK_FUZZ_DB", "text",
         "Directory for Hypothesis's example database (default: none is written)"),
    Knob("edition", "--rs-edition", "rs_edition", "RS_TCK_EDITION", "choice",
         "Edition of the specification to verify against: 'jvm-1.0.1' (normative) or 'rs' "
         "(subscribe returns the subscription; docs/editions.md)",
         choices=EDITION_NAMES),
)

KNOBS_BY_NAME = {k.name: k for k in KNOBS}
#: Longest systematic scenarios: 3 steps take tens of seconds, 4 would take hours.
MAX_FUZZ_STEPS = 3
CAPABILITY_KNOBS = (
    "max_elements", "recursion_depth", "max_subscribers", "skip_stochastic", "coordinated_emission",
    "loop", "never_requests", "any_thread_puppet", "deterministic_sequence", "takes_at_most",
)


@dataclass(frozen=True)
class Settings:
    """The resolved settings of one run. Durations are float seconds."""

    timeout: float = 1.0
    no_signal_window: float = 0.1
    gc_window: float = 2.0
    test_limit: float = 30.0
    after_cancel_limit: int = 100_000
    max_elements: int = MAX_DEMAND - 1
    recursion_depth: int = 1
    max_subscribers: int = MAX_DEMAND
    skip_stochastic: bool = False
    stochastic_iterations: int = 100
    coordinated_emission: bool = False
    deterministic_sequence: bool = False
    never_requests: bool = False
    any_thread_puppet: bool = False
    takes_at_most: int = 0
    loop: str = "thread"
    no_fuzz: bool = False
    fuzz_examples: int = 100
    fuzz_steps: int = 2
    #: A replay token, kept as given: ``rstck.fuzz.check_replay`` decodes it, where fuzzing is known.
    fuzz_replay: str = ""
    fuzz_db: str = ""
    #: False: the random phase draws the same scenarios on every run (a function of the tree).
    fuzz_random: bool = False
    concurrency: int = 1
    subjects_at_once: int = 4
    #: Worker processes for a run of several subjects; 0: "auto" (two per usable CPU and one more, see ``processes_for``).
    processes: int = 0
    edition: str = "jvm-1.0.1"
    #: Signals kept in a trace: this many from the start and as many from the end.
    trace_keep: int = 100
    #: Knob names that were set explicitly (not defaults), for the report.
    explicit: frozenset[str] = field(default=frozenset(), compare=False)

    def __post_init__(self) -> None:
        for name in ("timeout", "no_signal_window", "gc_window", "test_limit"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{KNOBS_BY_NAME[name].option} must be > 0, got {getattr(self, name)}")
        if self.max_elements < 0:
            raise ValueError(f"--rs-max-elements must be >= 0, got {self.max_elements}")
        if self.after_cancel_limit < 1:
            raise ValueError(f"--rs-after-cancel-limit must be >= 1, got {self.after_cancel_limit}")
        if self.recursion_depth < 1:
            raise ValueError(f"--rs-recursion-depth must be >= 1, got {self.recursion_depth}")
        if self.takes_at_most < 0:
            raise ValueError(f"--rs-takes-at-most must be >= 0, got {self.takes_at_most}")
        if self.max_subscribers < 1:
            raise ValueError(f"--rs-max-subscribers must be >= 1, got {self.max_subscribers}")
        if self.loop not in KNOBS_BY_NAME["loop"].choices:
            raise ValueError(f"--rs-loop must be one of thread, asyncio, got {self.loop!r}")
        if self.edition not in KNOBS_BY_NAME["edition"].choices:
            raise ValueError(f"--rs-edition must be one of {', '.join(EDITION_NAMES)}, got {self.edition!r}")
        if self.fuzz_examples < 1:
            raise ValueError(f"--rs-fuzz-examples must be >= 1, got {self.fuzz_examples}")
        if not 0 <= self.fuzz_steps <= MAX_FUZZ_STEPS:
            raise ValueError(f"--rs-fuzz-steps must be 0 to {MAX_FUZZ_STEPS} (each step more multiplies the "
                             f"scenarios by about 50), got {self.fuzz_steps}")
        if self.concurrency < 1:
            raise ValueError(f"--rs-concurrency must be >= 1, got {self.concurrency}")
        if self.subjects_at_once < 1:
            raise ValueError(f"--rs-subjects-at-once must be >= 1, got {self.subjects_at_once}")
        if self.processes < 0:
            raise ValueError(f"--rs-processes must be auto or >= 1, got {self.processes}")
        if self.stochastic_iterations < 1:
            raise ValueError(f"--rs-stochastic-iterations must be >= 1, got {self.stochastic_iterations}")

    @property
    def can_complete(self) -> bool:
        return self.max_elements < MAX_DEMAND

    def replace(self, **changes: object) -> Settings:
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {}
        for knob in KNOBS:
            value = getattr(self, knob.name)
            out[knob.name + ("_ms" if knob.kind == "ms" else "")] = (
                round(value * 1000, 3) if knob.kind == "ms" else value
            )
        return out


def parse_value(knob: Knob, raw: str, where: str) -> float | int | bool | str:
    """Parse one raw setting, naming its source and the accepted form on a bad value."""
    text = raw.strip()
    try:
        if knob.kind == "bool":
            low = text.lower()
            if low in ("1", "true", "yes", "on", ""):
                return True
            if low in ("0", "false", "no", "off"):
                return False
            raise ValueError(text)
        if knob.kind == "text":
            if not text:
                raise ValueError(text)
            return text
        if knob.kind == "choice":
            if text not in knob.choices:
                raise ValueError(text)
            return text
        if knob.kind == "count":
            if text.lower() == "auto":
                return 0
            count = int(text)
            if count < 1:
                raise ValueError(text)
            return count
        if knob.kind == "ms":
            value = float(text)
            if value <= 0:
                raise ValueError(text)
            return value / 1000.0
        number = int(text.replace("_", ""), 0) if not text.startswith("2**") else _power(text)
        return number
    except ValueError:
        accepted = {
            "ms": "a positive number of milliseconds",
            "int": "an integer (2**63-1 is accepted)",
            "count": "auto or a positive integer",
            "bool": "true or false",
            "choice": "one of " + ", ".join(knob.choices),
            "text": "a non-empty value",
        }[knob.kind]
        raise ValueError(f"{where}: {knob.option.lstrip('-')} must be {accepted}, got {raw!r}") from None


def from_json(data: dict[str, object], explicit: frozenset[str] = frozenset()) -> Settings:
    """The settings ``Settings.to_json`` wrote (durations in ms): how a worker process gets its run's."""
    values: dict[str, object] = {}
    for knob in KNOBS:
        key = knob.name + ("_ms" if knob.kind == "ms" else "")
        if key in data:
            value = data[key]
            values[knob.name] = float(value) / 1000.0 if knob.kind == "ms" else value  # type: ignore[arg-type]
    return Settings(**values, explicit=explicit)  # type: ignore[arg-type]


def _power(text: str) -> int:
    # Accept the spelling users copy from the spec: "2**63-1".
    base, _, rest = text.partition("**")
    exp, minus, sub = rest.partition("-")
    value: int = pow(int(base), int(exp))
    return value - int(sub) if minus else value


def metavar(knob: Knob) -> str:
    """What a knob's option takes, for --help: MS, N, a choice, TOKEN, PATH (a bool takes nothing)."""
    named = {"fuzz_replay": "TOKEN", "fuzz_db": "PATH"}
    return named.get(knob.name) or {"ms": "MS", "choice": "|".join(knob.choices), "text": "VALUE",
                                    "count": "auto|N"}.get(knob.kind, "N")
