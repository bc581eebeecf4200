"""pytest front end: ``pytest --rs-publisher=module:factory`` runs one test per rule.

Thin by design: it resolves options into a subject and settings, turns each ``TckTest`` of
the core into a pytest item, and maps the engine's verdicts onto pytest outcomes. All rule
logic lives in the core, which never imports pytest.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import importlib
import os
import random
import shlex
import sys
from collections.abc import Callable
from typing import Any
from typing import Literal

import pluggy
import pytest
from _pytest import runner
from _pytest._code.code import ReprEntryNative
from _pytest._code.code import ReprExceptionInfo
from _pytest._code.code import ReprFileLocation
from _pytest._code.code import ReprTraceback
from _pytest._code.code import TerminalRepr
from rstck import editions
from rstck.editions import DEFAULT as DEFAULT_EDITION
from rstck.errors import SetupError
from rstck.fuzz import check_replay
from rstck.registry import TckTest
from rstck.results import FAILING
from rstck.results import Outcome
from rstck.results import TestResult
from rstck.results import Verdict
from rstck.rules import RULES
from rstck.rules import VALID_IDS
from rstck.run_api import Run
from rstck.run_api import Schedule
from rstck.run_api import declared_run
from rstck.run_api import joinable
from rstck.run_api import joint
from rstck.settings import KNOBS
from rstck.settings import Settings
from rstck.settings import metavar
from rstck.settings import parse_value
from rstck.verifications import VERIFICATIONS

from .. import reports
from ..hooks import defines_hooks
from ..hooks import make_manager
from ..hooks import make_resolver
from ..hookspecs import Reporter
from ..state import ResultCollector
from ..state import RsTckState
from ..state import SubjectEntry
from ..state import resolver_key
from ..state import result_key
from ..state import state_key
from ..state import state_of
from ..state import threads_key
from . import process_host
from . import subject_specs
from . import threads as rs_threads

PUBLISHER_OPTION = VERIFICATIONS["publisher"].option
FAILED_PUBLISHER_OPTION = subject_specs.FAILED_OPTION
RULES_OPTION = "--rs-rules"
SKIP_RULES_OPTION = "--rs-skip-rules"
ADAPTER_OPTION = "--rs-adapter"

#: Where a subject named by an option comes from, but the ini (whose subjects run only when selected).
OPTION_SOURCES = ("command line", "environment")
#: Extra seconds pytest-timeout allows beyond the TCK's own limit: it is only the backstop.
BACKSTOP_MARGIN_S = 30.0
#: The TCK's own reporters, registered in the run's ``rstck`` plugin manager as anyone's are, and
#: set up (``rstck_configure``) in this order: the files, then the gate, then the table.
BUILTIN_REPORTERS: tuple[tuple[str, Reporter], ...] = reports.builtin_reporters()


def subject_env(dest: str) -> str:
    """The environment variable of a subject option: ``rs_publisher`` -> ``RS_TCK_PUBLISHER``."""
    return subject_specs.env_name(dest)


def _add_subject_options(parser: pytest.Parser, group: pytest.OptionGroup) -> None:
    for verification in VERIFICATIONS.values():
        if verification.name != "publisher":  # added first, beside --rs-failed-publisher
            group.addoption(verification.option, dest=verification.dest, metavar="[ID=]MODULE:ATTR",
                            action="append", help=_where_else(verification.help, verification.dest))
    for dest, help_ in [(v.dest, v.help) for v in VERIFICATIONS.values()] + [("rs_failed_publisher", FAILED_HELP)]:
        parser.addini(dest, help_, default=None)


def _where_else(help_: str, dest: str) -> str:
    return f"{help_}; repeat it for several, each as ID=MODULE:ATTR (env {subject_env(dest)}, ini {dest})"


FAILED_HELP = "Factory f() -> Publisher that signals on_subscribe then on_error (ID= pairs it with that publisher)"


def add_options(parser: pytest.Parser) -> None:
    """Every option and ini key of the kit. Not a hook: ``pytest_entry`` registers them in every
    run from its table, kept equal to this by a test, and loads this module only for a run that
    uses the kit."""
    group = parser.getgroup("rs-tck", "Reactive Streams TCK")
    group.addoption(
        PUBLISHER_OPTION, dest=VERIFICATIONS["publisher"].dest, metavar="[ID=]MODULE:ATTR", action="append",
        help=_where_else(VERIFICATIONS["publisher"].help, "rs_publisher"),
    )
    group.addoption(
        FAILED_PUBLISHER_OPTION, dest="rs_failed_publisher", metavar="[ID=]MODULE:ATTR", action="append",
        help=_where_else(FAILED_HELP, "rs_failed_publisher"),
    )
    group.addoption(
        RULES_OPTION, dest="rs_rules", metavar="IDS",
        help="Comma-separated rule ids to verify, e.g. 1.9,3.9 ('sanity' for the factory checks)",
    )
    group.addoption(
        SKIP_RULES_OPTION, dest="rs_skip_rules", metavar="IDS",
        help="Comma-separated rule ids not to verify",
    )
    group.addoption(
        ADAPTER_OPTION, dest="rs_adapter", metavar="NAME",
        help="Adapt subjects of a foreign API to the binding: camelcase, rsocket, or a plugin's "
        "(env RS_TCK_ADAPTER, ini rs_adapter)",
    )
    parser.addini("rs_adapter", "Adapter applied to every subject (see --rs-adapter)", default=None)
    _add_subject_options(parser, group)
    reports.add_options(group)
    for knob in KNOBS:
        if knob.kind == "bool":
            group.addoption(knob.option, dest=knob.ini, action="store_true", default=None,
                            help=f"{knob.help} (env {knob.env}, ini {knob.ini})")
        else:
            group.addoption(knob.option, dest=knob.ini, metavar=metavar(knob),
                            help=f"{knob.help} (env {knob.env}, ini {knob.ini})")
        parser.addini(knob.ini, knob.help, default=None)


def resolve_settings(config: pytest.Config) -> Settings:
    """Settings from command line > environment > ini > defaults, naming the source of a bad value."""
    values: dict[str, Any] = {}
    explicit = set()
    for knob in KNOBS:
        sources = [
            (config.getoption(knob.ini), f"command line {knob.option}"),
            (os.environ.get(knob.env), f"environment variable {knob.env}"),
            (config.getini(knob.ini), f"ini setting {knob.ini}"),
        ]
        for raw, where in sources:
            if raw is None or raw == "" or raw == []:
                continue
            if isinstance(raw, bool):
                values[knob.name] = raw
            else:
                try:
                    values[knob.name] = parse_value(knob, str(raw), where)
                except ValueError as exc:
                    raise pytest.UsageError(str(exc)) from None
            explicit.add(knob.name)
            break
    try:
        settings = Settings(**values, explicit=frozenset(explicit))
        check_replay(settings)
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None
    return settings


def _rule_list(config: pytest.Config, dest: str, option: str, edition: str = DEFAULT_EDITION) -> list[str]:
    raw = config.getoption(dest)
    if not raw:
        return []
    ids = [part.strip() for part in raw.split(",") if part.strip()]
    if edition != DEFAULT_EDITION:
        editions.rule_ids(edition, ids, option)  # checked here; the run selects by the edition's ids
        return ids
    unknown = [i for i in ids if i not in RULES and i not in ("sanity", "fuzz")]
    if unknown or not ids:
        raise pytest.UsageError(
            f"{option}: unknown rule id(s) {', '.join(unknown) or repr(raw)}; valid ids are "
            f"{VALID_IDS}, 'sanity' and 'fuzz'"
        )
    return ids


_frozen = False


def _freeze_startup_objects(config: pytest.Config) -> None:
    """Keep what the process holds as a kit run starts out of every later garbage collection.

    pytest, its plugins and the kit are some 35,000 objects made at import that live as long as
    the process: each full collection walked them all, and pytest makes three at its end (two
    ``gc.collect()`` looking for unraisable exceptions, one as the interpreter exits), tens of
    milliseconds of CPU, a tenth of a publisher run's. ``gc.freeze`` moves them to the permanent
    generation; what is made from here on (subjects, probes, results) is collected as before.
    A frozen object that turns to garbage holding a subscriber would keep it: rule 3.13's check
    thaws everything when a second collection leaves its cancelled probe alive. Frozen cycles
    are left as they are at exit (Python promises no finalizer of an object still alive then;
    modules' globals are cleared as before). Only a run of the kit's tests alone freezes: the
    library's own tests, run beside them, may judge what the collector frees of what a conftest
    made. Once per process: of the runs a pytester session makes inside itself, only the first.
    """
    global _frozen
    if not _frozen and _only_kit_tests(config):
        _frozen = True
        gc.freeze()


def _only_kit_tests(config: pytest.Config) -> bool:
    """Whether the run will hold the kit's tests alone: subjects on the command line or in the
    environment and no test paths, as ``_takes_over`` decides once the subjects are loaded."""
    if config.args_source == pytest.Config.ArgsSource.ARGS:
        return False
    try:
        named, _failed, _source = subject_specs.named_subjects(config)
    except SetupError:
        return False  # refused as the subjects load
    return any(n.source in OPTION_SOURCES for n in named)


def pytest_configure(config: pytest.Config) -> None:
    _freeze_startup_objects(config)
    settings = resolve_settings(config)
    try:
        rules = _rule_list(config, "rs_rules", RULES_OPTION, settings.edition)
        skip_rules = _rule_list(config, "rs_skip_rules", SKIP_RULES_OPTION, settings.edition)
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None
    _seed_from_environment()
    hooks = make_manager()
    for name, reporter in reversed(BUILTIN_REPORTERS):  # pluggy calls the last registered first
        hooks.register(reporter, name)
    for _name, plugin in config.pluginmanager.list_name_plugin():
        _register_conftest(hooks, plugin)
    config.stash[resolver_key] = _resolver(config, hooks)
    # Before the start-up checks: a thread their factory calls or their one subscription leave
    # running is the subject's as much as one a test leaves (named, and not waited for at exit).
    config.stash[threads_key] = rs_threads.snapshot()
    unsupported = editions.unsupported_kinds(
        settings.edition, [v.name for v in VERIFICATIONS.values() if config.getoption(v.dest)])
    if unsupported:
        raise pytest.UsageError(unsupported)
    try:
        entries = subject_specs.load_named(config, settings, config.stash[resolver_key])
    except SetupError as exc:
        raise pytest.UsageError(str(exc)) from None
    if settings.concurrency > 1 and (hasattr(config, "workerinput") or config.getoption("numprocesses", None)):
        raise pytest.UsageError(
            "--rs-concurrency cannot be combined with pytest-xdist (-n): both run tests in "
            "parallel; use one of them"
        )
    count = getattr(config.option, "count", None)  # pytest-repeat's option, when installed
    if entries and isinstance(count, int) and count > 1:
        raise pytest.UsageError(
            f"--count={count} (pytest-repeat) does not repeat the TCK's verifications: hunt a race with "
            "--rs-stochastic-iterations=N, or rerun the command in a loop (docs/ci.md, gating a release on races)"
        )
    state = RsTckState({}, settings, rules, skip_rules, hooks)
    for entry in entries:
        state.add(entry)
    config.stash[state_key] = state
    config.pluginmanager.register(ResultCollector(state, lambda item: isinstance(item, RsTckItem)),
                                  "rs-tck-results")
    config.pluginmanager.register(process_host.ProcessHost(state, config), "rs-tck-processes")  # worker processes
    if entries:
        _show_skip_reasons(config)
    hooks.hook.rstck_configure(config=config, state=state)


def _seed_from_environment() -> None:
    """``RS_TCK_SEED=N`` seeds ``random`` before any subject is made, as a campaign unit does, so
    a subject whose behaviour depends on randomness takes that unit's path again (its repro)."""
    raw = os.environ.get("RS_TCK_SEED")
    if not raw:
        return
    try:
        seed = int(raw)
    except ValueError:
        raise pytest.UsageError(f"environment variable RS_TCK_SEED must be an integer, got {raw!r}") from None
    random.seed(seed)


def _show_skip_reasons(config: pytest.Config) -> None:
    """Untested and not-applicable rules are verdicts: list their reasons as ``-rs`` would.

    Unless the user chose what to list with ``-r`` letters that include ``N`` (none) or ``s``.
    """
    chars = str(getattr(config.option, "reportchars", "") or "")
    if any(c in chars for c in "sNaA"):
        return
    config.option.reportchars = chars + "s"
    tr = config.pluginmanager.get_plugin("terminalreporter")
    if tr is not None and "s" not in tr.reportchars:
        tr.reportchars += "s"


def _resolver(config: pytest.Config, hooks: pluggy.PluginManager) -> Callable[[str, str], Any]:
    """Subject lookup through the ``rstck`` hooks, then the chosen adapter, if any."""
    adapter = (
        config.getoption("rs_adapter") or os.environ.get("RS_TCK_ADAPTER") or config.getini("rs_adapter")
    )

    return make_resolver(hooks, adapter)


def _register_conftest(hooks: pluggy.PluginManager, plugin: object) -> None:
    """Give a conftest module that implements ``rstck_*`` hooks to our own manager, once."""
    if (getattr(plugin, "__file__", None) or "").endswith("conftest.py") and defines_hooks(plugin) \
            and not hooks.is_registered(plugin):
        hooks.register(plugin)


def pytest_plugin_registered(plugin: object, manager: pytest.PytestPluginManager) -> None:
    """Conftests found after configure (in test directories) join the ``rstck`` hooks too.

    The ones pytest loaded before configure are taken from its plugin list there.
    """
    config = manager.get_plugin("pytestconfig")
    state = state_of(config) if isinstance(config, pytest.Config) else None
    if state is not None:
        _register_conftest(state.hooks, plugin)


def pytest_report_header(config: pytest.Config) -> list[str] | None:
    state = config.stash.get(state_key, None)
    if state is None or not state.active:
        return None
    s = state.settings
    subjects = ", ".join(f"{role.replace('_', ' ')} {label}" for role, label in state.labels().items())
    return [
        f"rs-tck: {subjects}" + ("" if s.edition == DEFAULT_EDITION else f" (edition {s.edition})"),
        (
            f"rs-tck: timeout {s.timeout * 1000:.0f} ms, no-signal window "
            f"{s.no_signal_window * 1000:.0f} ms, gc window {s.gc_window * 1000:.0f} ms, "
            f"test limit {s.test_limit:.0f} s"
        ),
    ]


class RsTckCollector(pytest.Collector):
    """One node per subject (``publisher``, ``map``, ``tests/test_rs.py::test_map``), one item per rule test."""

    def __init__(self, *, tests: list[TckTest], key: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.tests = tests
        self.key = key

    def collect(self) -> list[pytest.Item]:
        # The id is given whole, as a string, so that it parses back to the same node id that
        # pytest prints, stores in .pytest_cache and reads from the command line
        # (``publisher::name[3.9]``, its rule as the parameter): --lf, --sw and a copied id match.
        # Under ``--dist loadgroup`` each id carries its subject's group, as xdist's own suffix for
        # an ``xdist_group`` mark: the subjects that share a schedule stay on one worker.
        loadgroup = getattr(self.config.option, "loadgroup", False)
        group = f"@rs-tck-{_bucket(self.config.stash[state_key], self.key)}" if loadgroup else ""
        return [RsTckItem.from_parent(self, name=t.test_id, nodeid=f"{self.nodeid}::{t.test_id}{group}", test=t,
                                      key=self.key)
                for t in self.tests]


class RsTckItem(pytest.Item):
    """One rule test of the TCK, run by the core's engine."""

    def __init__(self, *, test: TckTest, key: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.test = test
        #: The subject's key: its run in ``state.runs``, its results' ``subject_id`` when named.
        self.key = key
        state = self.config.stash[state_key]
        rule = getattr(test, "own_rule", None) or test.rule_id or "sanity"  # an edition's own id
        level = str(test.level)
        self.user_properties += [
            ("rs_rule", rule), ("rs_level", level), ("rs_verification", test.verification), ("rs_subject", key),
        ]
        self.add_marker(_mark("rs_tck", rule=rule, level=level, verification=test.verification))
        if self.config.pluginmanager.hasplugin("timeout"):  # absent under `-p no:timeout`
            limit = state.runs[key].settings.test_limit
            self.add_marker(_mark("timeout", limit + BACKSTOP_MARGIN_S, method="signal"))

    def runtest(self) -> None:
        result = _with_replay_command(self, _scheduled(self))
        self.stash[result_key] = result
        if result.outcome == Outcome.SKIPPED:
            pytest.skip(result.message)
        if result.outcome in FAILING:
            raise RsTckFailure(result)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException],
                     style: Any = None) -> str | TerminalRepr:
        if isinstance(excinfo.value, RsTckFailure):
            return _failure_repr(self.test, excinfo.value.result.message)
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[str, int, str]:
        """A declared subject's file and its declaration's line (0-based, as pytest counts), else
        the subject's key and line 0: pytest places a skip or xfail mark's report there and
        requires a line."""
        entry = self.config.stash[state_key].entries.get(self.key)
        where = getattr(getattr(entry, "declaration", None), "where", None)
        if where is not None and where[0] != "?":
            return where[0], max(where[1] - 1, 0), f"{self.key}::{self.test.test_id}"
        return self.key, 0, f"{self.key}::{self.test.test_id}"


#: The marks items carry, made once for each set of arguments: items share them, as a module's
#: ``pytestmark`` is shared by its tests (a run of twenty subjects makes 1,320 items).
_marks: dict[tuple[Any, ...], pytest.MarkDecorator] = {}


def _mark(name: str, *args: Any, **kwargs: Any) -> pytest.MarkDecorator:
    key = (name, args, tuple(sorted(kwargs.items())))
    mark = _marks.get(key)
    if mark is None:
        mark = _marks[key] = getattr(pytest.mark, name)(*args, **kwargs)
    return mark


#: Per verification: its schedule, and each not yet reported item's index in it.
schedules_key = pytest.StashKey[dict[str, tuple[Schedule, dict[str, int]]]]()


def _scheduled(item: RsTckItem) -> TestResult:
    """Run the item's test through its verification's schedule, so windows overlap.

    The schedule covers this item and the items of the same verification after it, in session
    order; each item still reports its own test's result. Under xdist each worker runs the
    items it is given, one at a time.
    """
    config, name = item.config, item.key
    state = config.stash[state_key]
    run = state.runs[name]
    dealt = item.stash.get(dealt_key, None)  # taken as its protocol started
    if dealt is None:
        dealt = process_host.result_of(item)  # run by a worker process (see process_host), or None
    else:
        del item.stash[dealt_key]
    if dealt is not None:
        process_host.add_captured(item)
        return _identified(state, name, dealt, owned=True)
    if hasattr(config, "workerinput") and not getattr(config.option, "loadgroup", False):
        return _identified(state, name, run.run_one(item.test))
    schedules = config.stash.setdefault(schedules_key, {})
    entry = schedules.get(name)
    if entry is None or item.nodeid not in entry[1]:
        group = _group(item, state, set(schedules) | process_host.in_workers(config))
        peers = [p for _key, mine in group for p in mine]
        parts = [(state.runs[key], [p.test for p in mine]) for key, mine in group]
        schedule = joint(parts) if len(parts) > 1 else run.schedule(parts[0][1])
        entry = (schedule, {p.nodeid: k for k, p in enumerate(peers)})
        for key, _mine in group:
            schedules[key] = entry
    schedule, index = entry
    return _identified(state, name, run.present(schedule.result(index.pop(item.nodeid))))


def _group(item: RsTckItem, state: RsTckState, scheduled: set[str]) -> list[tuple[str, list[RsTckItem]]]:
    """The subjects whose tests share a schedule with ``item``'s, each with its items from here on.

    ``item``'s subject, then the next ones in session order that have no schedule yet, up to
    ``--rs-subjects-at-once``; a subject on an event loop runs alone (``joinable``). Under xdist
    (``--dist loadgroup``) a worker holds whole buckets of subjects (``_bucket``): it joins the
    subjects of the item's bucket only.
    """
    items = [i for i in item.session.items if isinstance(i, RsTckItem)]
    after = items[items.index(item):] if item in items else [item]
    by_key: dict[str, list[RsTckItem]] = {}
    for i in after:
        by_key.setdefault(i.key, []).append(i)
    worker = hasattr(item.config, "workerinput")
    group = [(item.key, by_key.pop(item.key, [item]))]
    if not joinable(state.runs[item.key]):
        return group
    for key, mine in by_key.items():
        if len(group) >= state.settings.subjects_at_once:
            break
        if key not in scheduled and joinable(state.runs[key]) and (
                not worker or _bucket(state, key) == _bucket(state, item.key)):
            group.append((key, mine))
    return group


def _bucket(state: RsTckState, key: str) -> str:
    """The subjects that run on one xdist worker (``--dist loadgroup``): ``--rs-subjects-at-once``
    joinable subjects in collection order share a bucket, so a worker runs them as one schedule;
    one on an event loop has its own. Every worker collects the same subjects in the same order,
    so each computes the same buckets."""
    if not joinable(state.runs[key]):
        return key
    joinables = [k for k in state.entries if k in state.runs and joinable(state.runs[k])]
    return f"{joinables.index(key) // state.settings.subjects_at_once}"


def _identified(state: RsTckState, key: str, result: TestResult, owned: bool = False) -> TestResult:
    """The result with its subject's id, when the subject has one (see ``SubjectEntry.named``).

    A result read from a worker's message (``owned``) is this item's alone: it takes the id in
    place, without the copy a shared result needs.
    """
    entry = state.entries.get(key)
    if entry is None or not entry.named or result.subject_id == key:
        return result
    if owned:
        result.subject_id = key
        return result
    return dataclasses.replace(result, subject_id=key)


def replay_prefix(config: pytest.Config, key: str | None = None) -> list[str]:
    """``pytest`` and the options that make this run's subjects (or subject ``key``) and
    command-line settings again.

    Settings given in the environment or the ini file hold for a command pasted in the same
    project and shell, so only the command line's are repeated; the subjects always are, but for
    those declared in test files, which the node id collects.
    """
    words = ["pytest"]
    state = config.stash[state_key]
    for entry in state.entries.values():
        if entry.source == "declared" or (key is not None and entry.key != key):
            continue
        named = f"{entry.key}=" if entry.named else ""
        words.append(f"{VERIFICATIONS[entry.kind].option}={named}{entry.spec}")
        if entry.failed_spec:
            words.append(f"{FAILED_PUBLISHER_OPTION}={named}{entry.failed_spec}")
    adapter = config.getoption("rs_adapter")
    if adapter:
        words.append(f"{ADAPTER_OPTION}={adapter}")
    for knob in KNOBS:
        value = config.getoption(knob.ini)
        if value is None or value is False or knob.name == "fuzz_replay":
            continue
        words.append(knob.option if value is True else f"{knob.option}={value}")
    return words


def _with_replay_command(item: RsTckItem, result: TestResult) -> TestResult:
    """A fuzz failure's replay line as a whole command: this test only, its subjects, the token.

    The core renders ``pytest ... --rs-fuzz-replay=TOKEN``; only the host knows the command
    line that reruns exactly this scenario and fails the same way, as Hypothesis prints
    ``@reproduce_failure``.
    """
    fuzz = result.fuzz
    if not fuzz or not fuzz.get("replay_option"):
        return result
    command = shlex.join([*replay_prefix(item.config, item.key), item.nodeid, str(fuzz["replay_option"])])
    fuzz = {**fuzz, "replay_command": command}
    message = result.message.replace(f"pytest ... {fuzz['replay_option']}", command, 1)
    return dataclasses.replace(result, fuzz=fuzz, message=message)


def _failure_repr(test: TckTest, message: str) -> TerminalRepr:
    """The whole report for the failure section, its first line alone as the crash message.

    pytest puts the crash message on the short summary line, uncut when it runs in CI (``CI``
    set) or under ``-vv``; a plain string there would repeat the whole report, trace included,
    on every summary line. The native-entry form survives xdist's serialization and gives
    JUnit's ``message`` attribute the one line.
    """
    code = getattr(test.func, "__code__", None)
    path = code.co_filename if code is not None else test.verification
    lineno = code.co_firstlineno if code is not None else 0
    head = message.split("\n", 1)[0]
    text = message if message.endswith("\n") else message + "\n"
    return ReprExceptionInfo(
        reprtraceback=ReprTraceback([ReprEntryNative([text])], None, "native"),
        reprcrash=ReprFileLocation(path, lineno, head),
    )


class RsTckFailure(Exception):
    """Carries a failed result from ``runtest`` to ``repr_failure``."""

    def __init__(self, result: TestResult) -> None:
        super().__init__(result.message)
        self.result = result


def _run_of(state: RsTckState, entry: SubjectEntry) -> tuple[Run, list[TckTest]]:
    """The subject's ``Run`` (kept in ``state.runs``) and its tests, as the hooks leave them."""
    try:  # as a worker process makes it (rstck.processes)
        run = declared_run(entry.kind, entry.subject, state.settings, entry.declaration, rules=state.rules,
                           skip_rules=state.skip_rules)
    except SetupError as exc:
        raise pytest.UsageError(str(exc)) from None
    state.runs[entry.key] = run
    tests = list(run.tests)
    state.hooks.hook.rstck_modify_tests(verification=entry.kind, tests=tests, settings=run.settings)
    return run, tests


def _make_items(session: pytest.Session, selectors: list[str] | None = None,
                sources: tuple[str, ...] = OPTION_SOURCES) -> list[pytest.Item]:
    """The items of the subjects options name (of ``sources``), or of those ``selectors`` name."""
    state = session.config.stash[state_key]
    items: list[pytest.Item] = []
    for name, entry in list(state.entries.items()):
        if entry.source == "declared":
            continue
        if selectors:
            if not any(_selector_parts(s)[0] == name for s in selectors):
                continue
        elif entry.source not in sources:
            continue
        _, tests = _run_of(state, entry)
        collector = RsTckCollector.from_parent(session, name=name, nodeid=name, tests=tests, key=name)
        collected = collector.collect()
        if selectors:
            collected = _selected(collected, [s for s in selectors if _selector_parts(s)[0] == name])
        session.config.hook.pytest_collectreport(
            report=pytest.CollectReport(collector.nodeid, "passed", None, list[Any](collected))
        )
        items += collected
    return items


def _selector_parts(arg: str) -> tuple[str, list[str], str | None]:
    """``publisher::name[3.9]`` as ``("publisher", ["name"], "[3.9]")``, as pytest splits an argument."""
    base, bracket, rest = arg.partition("[")
    head, *names = base.split("::")
    return head, names, f"{bracket}{rest}" if bracket else None


def _is_selector(config: pytest.Config, arg: str) -> bool:
    """Whether a command-line argument names TCK tests (a node id pytest printed), not a path.

    A subject's key that is also a file or folder of the project stays a path, unless it
    carries ``::`` parts, which a folder cannot take.
    """
    head, names, _ = _selector_parts(arg)
    state = config.stash[state_key]
    optional = {k for k, e in state.entries.items() if e.source != "declared"}
    if head not in VERIFICATIONS and head not in optional:
        return False
    return bool(names) or not (config.invocation_params.dir / head).exists()


def _selected(items: list[pytest.Item], selectors: list[str]) -> list[pytest.Item]:
    """The items the selectors name, matched as pytest matches ``file.py::test[param]``.

    A name without a parameter matches the test whatever its parameter (its rule); each
    selector must match at least one test, else it is a usage error naming it.
    """
    chosen: dict[str, pytest.Item] = {}
    for selector in selectors:
        head, names, params = _selector_parts(selector)
        matched = []
        for item in items:
            assert isinstance(item, RsTckItem)
            if item.key != head or len(names) > 1:
                continue
            if names and (item.name != names[0] + params if params is not None
                          else item.name.split("[")[0] != names[0]):
                continue
            matched.append(item)
        if not matched:
            raise pytest.UsageError(
                f"not found: {selector}: no test of that name in this run of the {head} subject "
                "(list them with --co -q; --rs-rules and --rs-skip-rules apply too)"
            )
        chosen.update((item.nodeid, item) for item in matched)
    return [item for item in items if item.nodeid in chosen]


def _split_arguments(session: pytest.Session) -> tuple[list[str], list[str]] | None:
    """The command line's TCK node ids and its other arguments, or None when it names no TCK test."""
    config = session.config
    if config.args_source != pytest.Config.ArgsSource.ARGS:
        return None
    selectors = [a for a in config.args if _is_selector(config, a)]
    if not selectors:
        return None
    state = config.stash[state_key]
    for selector in selectors:
        head = _selector_parts(selector)[0]
        if head not in state.entries:
            raise pytest.UsageError(
                f"{selector}: a test of the {head} verification, but no {VERIFICATIONS[head].option} "
                f"subject was given; add {VERIFICATIONS[head].option}=MODULE:ATTR (the option that "
                "ran it)"
            )
    return selectors, [a for a in config.args if a not in selectors]


def _takes_over(state: RsTckState, config: pytest.Config) -> bool:
    """A run with subjects on its command line (or environment) and no test paths runs only them.

    Subjects of the ini file never take a run over: the library's own tests run as before, and
    the ini's subjects with them in a run of the whole suite (see ``pytest_collection_modifyitems``).
    """
    return (config.args_source != pytest.Config.ArgsSource.ARGS
            and any(e.source in OPTION_SOURCES for e in state.entries.values()))


@pytest.hookimpl(tryfirst=True)
def pytest_collection(session: pytest.Session) -> bool | None:
    """With --rs-* options and no test paths, collect exactly the TCK's verifications."""
    state = session.config.stash.get(state_key, None)
    if state is None:
        return None
    split = _split_arguments(session)
    if split is not None:
        state.selectors, others = split
        if others:  # test paths as well: pytest collects them, the selected TCK tests follow
            session.perform_collect(others)
            return True
    elif not _takes_over(state, session.config):
        return None
    session.config.hook.pytest_collectstart(collector=session)
    items = _make_items(session, state.selectors)
    session.items = items
    session.config.hook.pytest_collection_modifyitems(session=session, config=session.config, items=session.items)
    session.config.hook.pytest_collection_finish(session=session)
    session.testscollected = len(session.items)
    return True


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """Bad declarations stop the run; the subjects options name join the collected tests.

    With test paths on the command line, the command line's subjects run after the collected
    tests and the ini's only when named (``pytest map``); in a run of the whole suite (no
    paths), the ini's subjects run after it.
    """
    state = config.stash.get(state_key, None)
    if state is None:
        return
    if state.problems:
        raise pytest.UsageError("\n".join(state.problems))
    if any(isinstance(item, RsTckItem) and item.parent is not None and item.parent.parent is session
           for item in items):
        return  # the run was taken over: the items are the subjects'
    if config.args_source == pytest.Config.ArgsSource.ARGS:
        items.extend(_make_items(session, state.selectors))
    else:
        items.extend(_make_items(session, None, sources=("ini",)))


# -- subjects declared in test files (rstck.pytest) -------------------------------------------


def _relative(config: pytest.Config, where: tuple[str, int]) -> str:
    """``file:line`` of a declaration, the file relative to where pytest was started when inside it."""
    path, line = where
    with contextlib.suppress(ValueError):  # another drive
        path = os.path.relpath(path, config.invocation_params.dir)
    return f"{path if not path.startswith('..') else where[0]}:{line}"


def declared_module() -> Any:
    """``rstck.pytest`` as the test modules imported it (a run in the same process, as pytester's,
    may have imported it anew), so that its classes are the declarations' own."""
    return sys.modules.get("rstck.pytest") or importlib.import_module("rstck.pytest")


def collect_declaration(collector: pytest.Collector, name: str, obj: Any) -> RsTckCollector | list[Any] | None:
    """The node of a subject declared in a test module (``test_map = publisher_verification(...)``).

    Named as pytest names tests (``python_functions``, ``python_classes``); a bad declaration is
    kept as a one-line problem, naming its file and line, that stops the run before any test.
    """
    if not isinstance(collector, pytest.Module | pytest.Class):
        return None
    is_class = isinstance(obj, type)
    if not (collector.classnamefilter(name) if is_class else collector.funcnamefilter(name)):
        return None
    config = collector.config
    state = config.stash[state_key]
    declaration = declared_module().declaration_of(obj, name)
    if declaration is None:
        return None
    where = _relative(config, declaration.where)
    if declaration.problem:
        state.problems.append(f"{where}: {declaration.problem}")
        return []
    key = declaration.subject_id(name)
    spec = f"{collector.nodeid}::{name}"
    other = state.entries.get(key)
    if other is not None:
        state.problems.append(f"{where}: two subjects with the id {key!r}: {spec} and "
                              f"{other.spec}; give each its own id")
        return []
    if not key.isidentifier():
        state.problems.append(f"{where}: subject id {key!r} is not a valid identifier")
        return []
    resolve = config.stash[resolver_key]
    try:
        subject = declaration.subject
        if isinstance(subject, str):
            subject = resolve(subject, declaration.kind)
        failed = declaration.failed
        if isinstance(failed, str):
            failed = resolve(failed, "failed_publisher")
        entry = subject_specs.build(key, declaration.kind, subject, failed, spec=spec, failed_spec=None,
                                    source="declared", declaration=declaration, settings=state.settings)
    except SetupError as exc:
        state.problems.append(f"{where}: {exc}")
        return []
    editions_problem = editions.unsupported_kinds(state.settings.edition, [declaration.kind])
    if editions_problem:
        state.problems.append(f"{where}: {editions_problem}")
        return []
    state.add(entry)
    _, tests = _run_of(state, entry)
    return RsTckCollector.from_parent(collector, name=name, tests=tests, key=key)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if isinstance(item, RsTckItem) and call.when != "call":
        # Nothing of the test runs in its setup or teardown: their time is pytest's own (its
        # garbage collection at teardown, tens of ms on a loaded machine), not the test's, and
        # JUnit's time sums all three phases.
        report.duration = 0.0
    if isinstance(item, RsTckItem) and call.when == "call":
        result = item.stash.get(result_key, None)
        if result is not None:
            report.rs_tck_result = result  # the object; JSON only on the hop to xdist's controller
            # The test's own duration: tests of a verification overlap, so the time this call
            # waited for its result is not it (JUnit's time, --durations rank by this).
            report.duration = result.duration_s
        if report.skipped and isinstance(report.longrepr, tuple) and len(report.longrepr) == 3:
            # pytest places a skip where pytest.skip was called (this module); the reader
            # wants the rule's test: its node id, which carries the rule, in place of a path.
            where = item.config.invocation_params.dir / _skip_anchor(item.nodeid, result)
            report.longrepr = (str(where), None, report.longrepr[2])
    return report


#: A worker process's result for the item, taken as its protocol starts (``pytest_runtest_protocol``).
dealt_key = pytest.StashKey[TestResult]()
#: The phase hooks of pytest's protocol, and the phase each one runs.
PHASES = (("setup", "pytest_runtest_setup"), ("call", "pytest_runtest_call"), ("teardown", "pytest_runtest_teardown"))
#: The plugins whose phase hooks capture what the pytest process prints and logs during a phase.
CAPTURING = ("capturemanager", "logging-plugin")
#: The plugins known to implement the phase hooks: pytest's own, pytest-timeout and Hypothesis.
KNOWN_PHASE_PLUGINS = frozenset({"runner", "skipping", "threadexception", "unraisableexception", "timeout",
                                 "hypothesispytest", *CAPTURING})
#: The phase hooks without the capturing plugins, or None when the run keeps pytest's whole protocol.
phase_hooks_key = pytest.StashKey[tuple[Any, ...] | None]()


def _uncaptured_phases(config: pytest.Config) -> tuple[Any, ...] | None:
    """The three phase hooks without capture, when nothing else is lost by leaving it out.

    Only pytest's own plugins (and pytest-timeout's, Hypothesis') may implement the phase hooks:
    a conftest's or another plugin's could print or log, which capture would have kept out of
    the terminal. Another plugin's ``pytest_runtest_protocol`` (pytest-rerunfailures), pdb and
    ``--setup-show``/``--setup-only`` keep the whole protocol too.
    """
    if phase_hooks_key in config.stash:
        return config.stash[phase_hooks_key]
    pm = config.pluginmanager
    option = config.option
    plain = not any(getattr(option, name, False) for name in ("usepdb", "setupshow", "setuponly", "setupplan"))
    for _when, name in PHASES:
        plain = plain and all(i.plugin_name in KNOWN_PHASE_PLUGINS for i in getattr(pm.hook, name).get_hookimpls())
    plain = plain and all(i.wrapper or i.hookwrapper or i.plugin_name == "runner" or i.function is pytest_runtest_protocol
                          for i in pm.hook.pytest_runtest_protocol.get_hookimpls())
    capturing = [p for p in (pm.get_plugin(n) for n in CAPTURING) if p is not None]
    hooks = tuple(pm.subset_hook_caller(name, capturing) for _when, name in PHASES) if plain else None
    config.stash[phase_hooks_key] = hooks
    return hooks


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> bool | None:
    """An item whose result a worker process sent runs pytest's protocol without capture.

    The pytest process runs none of its test: capturing its output and logs for each of the
    three phases (global capture suspended and resumed, a logging handler entered and left) only
    costs time, for 1,320 items of twenty subjects a third of what this process spends. Every
    phase still runs its hooks but those two plugins' (a user's skip and xfail marks, the setup
    and teardown of the item's nodes), and reports through ``pytest_runtest_makereport`` and
    ``pytest_runtest_logreport`` as ``runtestprotocol`` does: the terminal, ``-x``, ``--lf``,
    JUnit and the kit's results read the same reports. A result made here (a subject the worker
    handed back) takes the whole protocol.
    """
    if not isinstance(item, RsTckItem):
        return None
    hooks = _uncaptured_phases(item.config)
    if hooks is None:
        return None
    dealt = process_host.result_of(item)
    if dealt is None:
        return None
    item.stash[dealt_key] = dealt
    ihook = item.ihook
    ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    reraise = _reraised(item.config)
    setup, call, teardown = hooks
    if _phase(item, ihook, "setup", setup, reraise):
        _phase(item, ihook, "call", call, reraise)
    if item.session.shouldfail or item.session.shouldstop:
        nextitem = None  # as runtestprotocol: tear everything down to report its errors
    _phase(item, ihook, "teardown", teardown, reraise, nextitem=nextitem)
    ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    return True


def _reraised(config: pytest.Config) -> tuple[type[BaseException], ...]:
    """What a phase lets through, as ``_pytest.runner`` decides it (its helper is pytest 9's; 8.4
    computes the same in ``call_and_report``)."""
    helper = getattr(runner, "get_reraise_exceptions", None)
    if helper is not None:
        return tuple(helper(config))
    if config.getoption("usepdb", False):
        return (pytest.exit.Exception,)
    return (pytest.exit.Exception, KeyboardInterrupt)


def _phase(item: pytest.Item, ihook: Any, when: Literal["setup", "call", "teardown"], hook: Any,
           reraise: tuple[type[BaseException], ...], **kwds: Any) -> bool:
    """One phase as ``_pytest.runner.call_and_report`` runs it, through ``hook``; whether it passed."""
    call = pytest.CallInfo.from_call(lambda: hook(item=item, **kwds), when=when, reraise=reraise)
    report: pytest.TestReport = ihook.pytest_runtest_makereport(item=item, call=call)
    ihook.pytest_runtest_logreport(report=report)
    if runner.check_interactive_exception(call, report):
        ihook.pytest_exception_interact(node=item, call=call, report=report)
    return report.passed


@pytest.hookimpl(wrapper=True)
def pytest_report_to_serializable(config: pytest.Config, report: pytest.TestReport) -> Any:
    """An xdist worker sends a report to the controller as JSON: its result goes as the result's JSON."""
    data = yield
    result = getattr(report, "rs_tck_result", None)
    if isinstance(data, dict) and isinstance(result, TestResult):
        data["rs_tck_result"] = result.to_json()
    return data


@pytest.hookimpl(wrapper=True)
def pytest_report_from_serializable(config: pytest.Config, data: dict[str, Any]) -> Any:
    """The controller reads a worker's report back: its result becomes a ``TestResult`` again."""
    report = yield
    raw = getattr(report, "rs_tck_result", None)
    if isinstance(raw, dict):
        report.rs_tck_result = TestResult.from_json(raw)
    return report


def _skip_anchor(nodeid: str, result: TestResult | None) -> str:
    """Where a skip is listed: its test; for the tests not run after a subject blocked, their
    verification, so pytest folds them into one line (their reason is the same)."""
    if result is not None and result.verdict == Verdict.NOT_RUN:
        return nodeid.split("::", 1)[0]
    return nodeid


def runs_a_subject(config: pytest.Config) -> bool:
    """Whether the run named a subject or saw results: else the entry point's ``pytest_terminal_summary``
    says how to name one (the hint lives there, for the runs that never load this module)."""
    state = config.stash.get(state_key, None)
    return state is not None and state.active


def pytest_unconfigure(config: pytest.Config) -> None:
    state = config.stash.get(state_key, None)
    if state is not None and state.subjects:
        tr = config.pluginmanager.get_plugin("terminalreporter")
        rs_threads.release_leaked(config.stash.get(threads_key, set()),
                                  tr.write_line if tr is not None else print)
    contexts = sys.modules.get("rstck._internal.contexts.base")
    if contexts is not None:
        contexts.YOUNG.restore()  # the collector's threshold as the session found it
    for name in ("rs-tck-results", "rs-tck-processes"):
        plugin = config.pluginmanager.get_plugin(name)
        if plugin is not None:
            config.pluginmanager.unregister(plugin)
