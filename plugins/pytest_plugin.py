"""pytest front end: ``pytest --rs-publisher=module:factory`` runs one test per rule.

Thin by design: it resolves options into a subject and settings, turns each ``TckTest`` of
the core into a pytest item, and maps the engine's verdicts onto pytest outcomes. All rule
logic lives in the core, which never imports pytest.
"""

from __future__ import annotations

import dataclasses
import os
import random
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pluggy
import pytest
from _pytest._code.code import ReprEntryNative
from _pytest._code.code import ReprExceptionInfo
from _pytest._code.code import ReprFileLocation
from _pytest._code.code import ReprTraceback
from _pytest._code.code import TerminalRepr
from rstck import editions
from rstck.editions import DEFAULT as DEFAULT_EDITION
from rstck.engine import Run
from rstck.engine import Schedule
from rstck.engine import settings_for
from rstck.errors import SetupError
from rstck.fuzz import check_replay
from rstck.registry import TckTest
from rstck.results import FAILING
from rstck.results import Outcome
from rstck.results import TestResult
from rstck.results import Verdict
from rstck.rules import RULES
from rstck.settings import KNOBS
from rstck.settings import Settings
from rstck.settings import metavar
from rstck.settings import parse_value
from rstck.subjects import load_publisher_subject
from rstck.subjects import smoke_check
from rstck.subjects import smoke_check_subject
from rstck.verifications import VERIFICATIONS

from . import baseline as rs_baseline
from . import json_report
from . import terminal
from . import threads as rs_threads
from .hooks import defines_hooks
from .hooks import make_manager
from .hooks import make_resolver
from .hookspecs import Reporter
from .html_report import options as html_report
from .pytest_entry import no_subject_hint
from .state import ResultCollector
from .state import RsTckState
from .state import resolver_key
from .state import result_key
from .state import state_key
from .state import state_of
from .state import threads_key

PUBLISHER_OPTION = VERIFICATIONS["publisher"].option
FAILED_PUBLISHER_OPTION = "--rs-failed-publisher"
RULES_OPTION = "--rs-rules"
SKIP_RULES_OPTION = "--rs-skip-rules"
ADAPTER_OPTION = "--rs-adapter"

#: Extra seconds pytest-timeout allows beyond the TCK's own limit: it is only the backstop.
BACKSTOP_MARGIN_S = 30.0
#: The TCK's own reporters, registered in the run's ``rstck`` plugin manager as anyone's are, and
#: set up (``rstck_configure``) in this order: the files, then the gate, then the table.
BUILTIN_REPORTERS: tuple[tuple[str, Reporter], ...] = (
    ("rstck-reporter-json", json_report),
    ("rstck-reporter-html", html_report),
    ("rstck-reporter-baseline", rs_baseline),
    ("rstck-reporter-terminal", terminal),
)


@dataclass(frozen=True)
class SubjectOption:
    """How one verification's subject is named on the command line and loaded."""

    verification: str
    dest: str
    #: Loads and checks the subject from the config; raises SetupError on bad input.
    load: Callable[[pytest.Config, Settings], Any]


def _load_publisher(config: pytest.Config, settings: Settings) -> Any:
    spec = subject_spec(config, "rs_publisher")
    failed_spec = subject_spec(config, "rs_failed_publisher")
    if failed_spec and not spec:
        raise SetupError(f"{FAILED_PUBLISHER_OPTION} needs {PUBLISHER_OPTION} as well")
    if not spec:
        return None
    subject = load_publisher_subject(spec, failed_spec, resolve=config.stash[resolver_key])
    applied = settings_for(subject, settings)
    smoke_check(subject, timeout=max(5.0, applied.timeout), elements=min(1, applied.max_elements),
                loop=applied.loop)
    return subject


def subject_env(dest: str) -> str:
    """The environment variable of a subject option: ``rs_publisher`` -> ``RS_TCK_PUBLISHER``."""
    return "RS_TCK_" + dest.removeprefix("rs_").upper()


def subject_spec(config: pytest.Config, dest: str) -> str | None:
    """The MODULE:ATTR a subject option names: command line > environment > ini, as every setting."""
    for value in (config.getoption(dest, None), os.environ.get(subject_env(dest)), config.getini(dest)):
        if value:
            return str(value).strip()
    return None


def _add_subject_options(parser: pytest.Parser, group: pytest.OptionGroup) -> None:
    for verification in VERIFICATIONS.values():
        if verification.name != "publisher":  # added first, beside --rs-failed-publisher
            group.addoption(verification.option, dest=verification.dest, metavar="MODULE:ATTR",
                            help=_where_else(verification.help, verification.dest))
    for dest, help_ in [(v.dest, v.help) for v in VERIFICATIONS.values()] + [("rs_failed_publisher", FAILED_HELP)]:
        parser.addini(dest, help_, default=None)


def _where_else(help_: str, dest: str) -> str:
    return f"{help_} (env {subject_env(dest)}, ini {dest})"


FAILED_HELP = "Factory f() -> Publisher that signals on_subscribe then on_error"


def _subject_loader(
    dest: str, option: str, load: Callable[..., Any]
) -> Callable[[pytest.Config, Settings], Any]:
    """The loader of a subscriber or processor subject: import, then call the factory once."""

    def loader(config: pytest.Config, settings: Settings) -> Any:
        spec = subject_spec(config, dest)
        if not spec:
            return None
        subject = load(spec, resolve=config.stash[resolver_key])
        applied = settings_for(subject, settings)
        smoke_check_subject(subject, option, timeout=max(5.0, applied.timeout), loop=applied.loop)
        return subject

    return loader


#: The subject options, in the order their verifications run.
SUBJECT_OPTIONS: list[SubjectOption] = [
    SubjectOption(v.name, v.dest, _load_publisher if v.name == "publisher"
                  else _subject_loader(v.dest, v.option, v.load_subject))
    for v in VERIFICATIONS.values()
]


def add_options(parser: pytest.Parser) -> None:
    """Every option and ini key of the kit. Not a hook: ``pytest_entry`` registers them in every
    run from its table, kept equal to this by a test, and loads this module only for a run that
    uses the kit."""
    group = parser.getgroup("rs-tck", "Reactive Streams TCK")
    group.addoption(
        PUBLISHER_OPTION, dest=VERIFICATIONS["publisher"].dest, metavar="MODULE:ATTR",
        help=_where_else(VERIFICATIONS["publisher"].help, "rs_publisher"),
    )
    group.addoption(
        FAILED_PUBLISHER_OPTION, dest="rs_failed_publisher", metavar="MODULE:ATTR",
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
    json_report.add_options(group)
    html_report.add_options(group)
    rs_baseline.add_options(group)
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
            "1.1-1.11, 2.1-2.13, 3.1-3.17, 4.1-4.2, 'sanity' and 'fuzz'"
        )
    return ids


def pytest_configure(config: pytest.Config) -> None:
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
    subjects: dict[str, Any] = {}
    unsupported = editions.unsupported_kinds(
        settings.edition, [o.verification for o in SUBJECT_OPTIONS if config.getoption(o.dest)])
    if unsupported:
        raise pytest.UsageError(unsupported)
    for option in SUBJECT_OPTIONS:
        try:
            subject = option.load(config, settings)
        except SetupError as exc:
            raise pytest.UsageError(str(exc)) from None
        if subject is not None:
            subjects[option.verification] = subject
    if settings.concurrency > 1 and (hasattr(config, "workerinput") or config.getoption("numprocesses", None)):
        raise pytest.UsageError(
            "--rs-concurrency cannot be combined with pytest-xdist (-n): both run tests in "
            "parallel; use one of them"
        )
    count = getattr(config.option, "count", None)  # pytest-repeat's option, when installed
    if subjects and isinstance(count, int) and count > 1:
        raise pytest.UsageError(
            f"--count={count} (pytest-repeat) does not repeat the TCK's verifications: hunt a race with "
            "--rs-stochastic-iterations=N, or rerun the command in a loop (docs/ci.md, gating a release on races)"
        )
    failed_spec = subject_spec(config, "rs_failed_publisher")
    state = RsTckState(subjects, settings, rules, skip_rules, hooks,
                       failed_specs={"publisher": failed_spec} if failed_spec else None)
    config.stash[state_key] = state
    config.pluginmanager.register(ResultCollector(state, lambda item: isinstance(item, RsTckItem)),
                                  "rs-tck-results")
    if subjects:
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
    """One node per verification ("publisher"), holding one item per rule test."""

    def __init__(self, *, tests: list[TckTest], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.tests = tests

    def collect(self) -> list[pytest.Item]:
        # The id is given whole, as a string, so that it parses back to the same node id that
        # pytest prints, stores in .pytest_cache and reads from the command line
        # (``publisher::name[3.9]``, its rule as the parameter): --lf, --sw and a copied id match.
        return [RsTckItem.from_parent(self, name=t.test_id, nodeid=f"{self.nodeid}::{t.test_id}", test=t)
                for t in self.tests]


class RsTckItem(pytest.Item):
    """One rule test of the TCK, run by the core's engine."""

    def __init__(self, *, test: TckTest, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.test = test
        state = self.config.stash[state_key]
        rule = getattr(test, "own_rule", None) or test.rule_id or "sanity"  # an edition's own id
        self.user_properties += [
            ("rs_rule", rule), ("rs_level", str(test.level)), ("rs_verification", test.verification),
        ]
        self.add_marker(pytest.mark.rs_tck(rule=rule, level=str(test.level), verification=test.verification))
        if self.config.pluginmanager.hasplugin("timeout"):  # absent under `-p no:timeout`
            limit = state.runs[test.verification].settings.test_limit
            self.add_marker(pytest.mark.timeout(limit + BACKSTOP_MARGIN_S, method="signal"))

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

    def reportinfo(self) -> tuple[str, int | None, str]:
        return self.test.verification, None, f"{self.test.verification}::{self.test.test_id}"


#: Per verification: its schedule, and each not yet reported item's index in it.
schedules_key = pytest.StashKey[dict[str, tuple[Schedule, dict[str, int]]]]()


def _scheduled(item: RsTckItem) -> TestResult:
    """Run the item's test through its verification's schedule, so windows overlap.

    The schedule covers this item and the items of the same verification after it, in session
    order; each item still reports its own test's result. Under xdist each worker runs the
    items it is given, one at a time.
    """
    config, name = item.config, item.test.verification
    run = config.stash[state_key].runs[name]
    if hasattr(config, "workerinput"):
        return run.run_one(item.test)
    schedules = config.stash.setdefault(schedules_key, {})
    entry = schedules.get(name)
    if entry is None or item.nodeid not in entry[1]:
        peers = [i for i in item.session.items if isinstance(i, RsTckItem) and i.test.verification == name]
        peers = peers[peers.index(item):] if item in peers else [item]
        entry = (run.schedule([p.test for p in peers]), {p.nodeid: k for k, p in enumerate(peers)})
        schedules[name] = entry
    schedule, index = entry
    return run.present(schedule.result(index.pop(item.nodeid)))


def replay_prefix(config: pytest.Config) -> list[str]:
    """``pytest`` and the options that make this run's subjects and command-line settings again.

    Settings given in the environment or the ini file hold for a command pasted in the same
    project and shell, so only the command line's are repeated; the subjects always are.
    """
    words = ["pytest"]
    for verification in VERIFICATIONS.values():
        spec = subject_spec(config, verification.dest)
        if spec:
            words.append(f"{verification.option}={spec}")
        if verification.name == "publisher" and subject_spec(config, "rs_failed_publisher"):
            words.append(f"{FAILED_PUBLISHER_OPTION}={subject_spec(config, 'rs_failed_publisher')}")
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
    command = shlex.join([*replay_prefix(item.config), item.nodeid, str(fuzz["replay_option"])])
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


def _make_items(session: pytest.Session, selectors: list[str] | None = None) -> list[pytest.Item]:
    state = session.config.stash[state_key]
    items: list[pytest.Item] = []
    for name in state.subjects:
        if selectors and not any(_selector_parts(s)[0] == name for s in selectors):
            continue
        run = state.runs[name] = Run(name, state.subjects[name], state.settings, rules=state.rules,
                                     skip_rules=state.skip_rules)
        tests = list(run.tests)
        state.hooks.hook.rstck_modify_tests(verification=name, tests=tests, settings=run.settings)
        collector = RsTckCollector.from_parent(session, name=name, nodeid=name, tests=tests)
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

    A verification's name that is also a file or folder of the project stays a path, unless it
    carries ``::`` parts, which a folder cannot take.
    """
    head, names, _ = _selector_parts(arg)
    if head not in VERIFICATIONS:
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
            if item.test.verification != head or len(names) > 1:
                continue
            if names and (item.name != names[0] + params if params is not None
                          else item.name.split("[")[0] != names[0]):
                continue
            matched.append(item)
        if not matched:
            raise pytest.UsageError(
                f"not found: {selector}: no test of that name in this run of the {head} verification "
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
        if head not in state.subjects:
            raise pytest.UsageError(
                f"{selector}: a test of the {head} verification, but no {VERIFICATIONS[head].option} "
                f"subject was given; add {VERIFICATIONS[head].option}=MODULE:ATTR (the option that "
                "ran it)"
            )
    return selectors, [a for a in config.args if a not in selectors]


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
    elif not state.active or session.config.args_source == pytest.Config.ArgsSource.ARGS:
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
    """With test paths as well, the TCK's verifications run after the collected tests."""
    state = config.stash.get(state_key, None)
    if state is None or not state.active or config.args_source != pytest.Config.ArgsSource.ARGS:
        return
    if any(isinstance(item, RsTckItem) for item in items):
        return
    items.extend(_make_items(session, state.selectors))


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
            report.rs_tck_result = result.to_json()
            # The test's own duration: tests of a verification overlap, so the time this call
            # waited for its result is not it (JUnit's time, --durations rank by this).
            report.duration = result.duration_s
        if report.skipped and isinstance(report.longrepr, tuple) and len(report.longrepr) == 3:
            # pytest places a skip where pytest.skip was called (this module); the reader
            # wants the rule's test: its node id, which carries the rule, in place of a path.
            where = item.config.invocation_params.dir / _skip_anchor(item.nodeid, result)
            report.longrepr = (str(where), None, report.longrepr[2])
    return report


def _skip_anchor(nodeid: str, result: TestResult | None) -> str:
    """Where a skip is listed: its test; for the tests not run after a subject blocked, their
    verification, so pytest folds them into one line (their reason is the same)."""
    if result is not None and result.verdict == Verdict.NOT_RUN:
        return nodeid.split("::", 1)[0]
    return nodeid


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, exitstatus: int,
                            config: pytest.Config) -> None:
    """A run that collected nothing because no subject was named says so, and how to name one."""
    state = config.stash.get(state_key, None)
    if state is None or state.active or exitstatus != pytest.ExitCode.NO_TESTS_COLLECTED:
        return
    no_subject_hint(terminalreporter)


def pytest_unconfigure(config: pytest.Config) -> None:
    state = config.stash.get(state_key, None)
    if state is not None and state.subjects:
        tr = config.pluginmanager.get_plugin("terminalreporter")
        rs_threads.release_leaked(config.stash.get(threads_key, set()),
                                  tr.write_line if tr is not None else print)
    collector = config.pluginmanager.get_plugin("rs-tck-results")
    if collector is not None:
        config.pluginmanager.unregister(collector)
