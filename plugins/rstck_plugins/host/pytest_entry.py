"""The kit's pytest entry point: its options in every run, the kit itself only in a run that uses it.

pytest loads every ``pytest11`` entry point of an environment in every run, so what this module
imports, every project that has the kit installed pays for: the kit is some fifty modules and,
through fuzzing, Hypothesis. Like Hypothesis' own ``_hypothesis_pytestplugin``, it imports
nothing of the kit. It registers the options from a table (``options.json``: a test keeps it equal to
what ``pytest_plugin.add_options`` registers and to the verifications' subject options, so
``pytest --help`` cannot drift from the settings), and registers ``pytest_plugin`` once the run names an ``--rs-*`` option, an ``rs_*``
ini key or an ``RS_TCK_*`` environment variable.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import pytest

#: The name the kit's plugin is registered under (``-p no:rstck`` disables the entry point).
PLUGIN_NAME = "rstck-plugin"
ENV_PREFIX = "RS_TCK_"
MARKER = "rs_tck(rule, level, verification): a Reactive Streams TCK verification"

#: Every option and ini key, as ``pytest_plugin.add_options`` registers them: data, not code,
#: so that a run where pytest compiles this module from source (no bytecode written, assertions
#: rewritten) pays for the few lines of the module only.
TABLE = os.path.join(os.path.dirname(__file__), "options.json")
_table: tuple[list[tuple[str, dict[str, Any]]], list[tuple[str, str, Any]]] | None = None
_subjects: dict[str, str] = {}


def table() -> tuple[list[tuple[str, dict[str, Any]]], list[tuple[str, str, Any]]]:
    """``(options, ini)``: each option as ``(name, attributes)``, each ini key as ``(key, help, default)``."""
    global _table
    if _table is None:
        with open(TABLE, encoding="utf-8") as fh:
            data = json.load(fh)
        _table = ([(name, attrs) for name, attrs in data["options"]],
                  [(key, help_text, default) for key, help_text, default in data["ini"]])
        _subjects.update((name, option) for name, option in data["subjects"])
    return _table


def subject_options() -> dict[str, str]:
    """The first part of a TCK test id (``publisher::required_spec309_...``), a verification, and
    the option that names its subject: the verifications' own, through the table."""
    table()
    return _subjects


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("rs-tck", "Reactive Streams TCK")
    options, ini = table()
    for option, attrs in options:
        group.addoption(option, **attrs)
    for key, help_text, default in ini:
        parser.addini(key, help_text, default=default)


def in_use(config: pytest.Config) -> bool:
    """Whether the run asks for the kit: an ``--rs-*`` option, ``rs_*`` ini key or ``RS_TCK_*`` variable."""
    options, ini = table()
    for _option, attrs in options:
        value = getattr(config.option, attrs["dest"], None)
        if value is not None and value is not False:
            return True
    if any(name.startswith(ENV_PREFIX) for name in os.environ):
        return True
    return any(config.getini(key) not in (None, "", []) for key, _help, _default in ini)


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser, args: list[str]) -> None:
    """A misspelled ``--rs-*`` option is refused with the option it was probably meant to be
    (argparse's "unrecognized arguments" names none)."""
    import difflib

    known = [option for option, _attrs in table()[0]]
    for arg in args:
        if arg == "--":
            break
        name = arg.split("=", 1)[0]
        if name.startswith("--rs-") and name not in known:
            close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
            guess = f"; did you mean {close[0]}?" if close else ""
            raise pytest.UsageError(f"unknown option {name}{guess} (pytest --help lists every --rs-* option)")


def _tck_ids_without_subject(config: pytest.Config) -> None:
    """A TCK test id pasted from a report (``publisher::...[3.9]``) in a run naming no subject:
    say which option ran it, rather than pytest's "file or directory not found"."""
    options = subject_options()
    for arg in config.args:
        head = arg.split("::", 1)[0].split("[", 1)[0]
        if head in options and not os.path.exists(os.path.join(config.invocation_params.dir, head)):
            option = options[head]
            raise pytest.UsageError(f"{arg}: a test of the TCK's {head} verification, but no {option} subject "
                                    f"was given; add {option}=MODULE:ATTR (the option that ran it) and the "
                                    "other --rs-* options of that run")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER)
    spare_hypothesis_import(config)
    skip_rewriting(config, OWN)  # a test module may import the kit (rstck.pytest) in any run
    if not in_use(config):
        _tck_ids_without_subject(config)
        return
    skip_rewriting(config, NOT_REWRITTEN)
    from . import pytest_plugin

    if not config.pluginmanager.is_registered(pytest_plugin):
        # pytest_configure is historic: the plugin's own runs as it is registered.
        config.pluginmanager.register(pytest_plugin, PLUGIN_NAME)


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makeitem(collector: pytest.Collector, name: str, obj: object) -> Any:
    """A subject declared in a test module (``rstck.pytest``) is collected as a node of its own.

    Free for a run that declares none: a test module that declares one has imported
    ``rstck.pytest``, so until then nothing is looked at. The first declaration loads the plugin
    into a run that named no ``--rs-*`` option.
    """
    declared = sys.modules.get("rstck.pytest")
    if declared is None or not (getattr(obj, "__rstck_declaration__", None) is True
                                or (isinstance(obj, type) and issubclass(obj, declared._Verification))):
        return None
    config = collector.config
    from . import pytest_plugin

    if not config.pluginmanager.is_registered(pytest_plugin):
        skip_rewriting(config, NOT_REWRITTEN)
        config.pluginmanager.register(pytest_plugin, PLUGIN_NAME)
    return pytest_plugin.collect_declaration(collector, name, obj)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, exitstatus: int,
                            config: pytest.Config) -> None:
    """A run that collected nothing and named no subject says how to name one.

    Here rather than in the plugin, which such a run never loads; from the table, so it costs
    nothing more. A run that loaded the plugin (an ``--rs-*`` setting but no subject) is asked
    through it, by name, so that neither module imports the other at the top.
    """
    if exitstatus != pytest.ExitCode.NO_TESTS_COLLECTED:
        return
    plugin = config.pluginmanager.get_plugin(PLUGIN_NAME)
    if plugin is not None and plugin.runs_a_subject(config):
        return
    no_subject_hint(terminalreporter)


def no_subject_hint(tr: pytest.TerminalReporter) -> None:
    """Say that no subject was named, and every option (with its env and ini forms) that names one."""
    tr.write_line("rs-tck: no --rs-* subject was given, so no TCK verification ran; name what to verify:",
                  yellow=True)
    for option, attrs in table()[0]:
        if attrs.get("metavar") == "[ID=]MODULE:ATTR" and attrs["dest"] != "rs_failed_publisher":
            dest = attrs["dest"]
            tr.write_line(f"  {option}=[ID=]MODULE:ATTR  (env {ENV_PREFIX}{dest.removeprefix('rs_').upper()}, "
                          f"ini {dest})")
    tr.write_line("  e.g. pytest --rs-publisher=rstck.reference:range_publisher; pytest --help lists every "
                  "--rs-* option")
    tr.write_line("  or declare them in a test module: test_map = rstck.pytest.publisher_verification(factory, "
                  "id=\"map\") (docs/library.md)")


#: The kit's own packages: never assertion-rewritten (see ``skip_rewriting``).
OWN = ("rstck", "rstck_plugins")
#: Packages whose asserts pytest need not rewrite in a run of the kit: its own, and Hypothesis.
NOT_REWRITTEN = ("hypothesis", *OWN)


def skip_rewriting(config: pytest.Config, names: tuple[str, ...]) -> None:
    """Import ``names`` (packages) as Python does, not assertion-rewritten by pytest.

    pytest rewrites the asserts of every package whose distribution has a ``pytest11`` entry
    point, Hypothesis' and the kit's included (an installed wheel marks both ``rstck`` and
    ``rstck_plugins``). Such a module is parsed and compiled from source by pytest, not read from
    the bytecode the installer wrote; where pytest cannot cache its own (``PYTHONDONTWRITEBYTECODE``,
    a read-only site-packages) that happens in every run: some 80 Hypothesis modules, about a
    second, and the kit's seventy. Neither package's asserts are a user's test, nor does a verdict
    rest on one (the kit's asserts only narrow types). Only the entry point module and its two
    packages are rewritten, being imported before any hook runs. A private part of pytest: if it
    changes, the run is only slower.
    """
    hook = getattr(config.pluginmanager, "rewrite_hook", None)
    marked = getattr(hook, "_must_rewrite", None)
    cache = getattr(hook, "_marked_for_rewrite_cache", None)
    if isinstance(marked, set) and isinstance(cache, dict):
        marked.difference_update(names)
        cache.clear()


def spare_hypothesis_import(config: pytest.Config) -> None:
    """Keep Hypothesis' pytest plugin from importing Hypothesis at the end of a run that never used it.

    Its ``pytest_terminal_summary`` imports ``hypothesis.internal.observability`` to list the
    observation files written in this process, in every run (0.3 s, over a second where pytest
    rewrites it from source). When Hypothesis was never imported no test wrote any, and when no
    report carries its statistics or failing examples and statistics are not asked for, the
    hook has nothing to show: it is then not called. Any of those present, it runs as before.
    """
    plugin = config.pluginmanager.get_plugin("hypothesispytest")
    keys = tuple(getattr(plugin, name, None) for name in ("STATS_KEY", "FAILING_EXAMPLES_KEY"))
    option = getattr(plugin, "PRINT_STATISTICS_OPTION", None)
    if plugin is None or not all(isinstance(key, str) for key in keys) or not isinstance(option, str):
        return
    for impl in config.pluginmanager.hook.pytest_terminal_summary.get_hookimpls():
        if impl.plugin is not plugin or getattr(impl.function, "_rstck_spared", False):
            continue
        original = impl.function

        def summary(terminalreporter: Any, original: Any = original) -> Any:
            if "hypothesis" in sys.modules or terminalreporter.config.getoption(option) or any(
                key in getattr(report, "__dict__", {})
                for reports in terminalreporter.stats.values() for report in reports for key in keys
            ):
                return original(terminalreporter)
            return None

        summary._rstck_spared = True  # type: ignore[attr-defined]
        impl.function = summary  # type: ignore[misc]  # Final in pluggy's annotations only
