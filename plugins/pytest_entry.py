"""The kit's pytest entry point: its options in every run, the kit itself only in a run that uses it.

pytest loads every ``pytest11`` entry point of an environment in every run, so what this module
imports, every project that has the kit installed pays for: the kit is some fifty modules and,
through fuzzing, Hypothesis. Like Hypothesis' own ``_hypothesis_pytestplugin``, it imports
nothing of the kit. It registers the options from a table (``OPTIONS``, ``INI``: a test keeps them
equal to what ``pytest_plugin.add_options`` registers, so ``pytest --help`` cannot drift from the
settings), and registers ``pytest_plugin`` once the run names an ``--rs-*`` option, an ``rs_*``
ini key or an ``RS_TCK_*`` environment variable.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import pytest

#: The name the kit's plugin is registered under (``-p no:rstck`` disables the entry point).
PLUGIN_NAME = "rstck-plugin"
ENV_PREFIX = "RS_TCK_"
MARKER = "rs_tck(rule, level, verification): a Reactive Streams TCK verification"

# fmt: off
#: ``(option, attributes)`` of every option, as ``pytest_plugin.add_options`` registers them.
OPTIONS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("--rs-publisher", {"dest": "rs_publisher", "metavar": "MODULE:ATTR",
        "help": "Publisher factory f(n) -> Publisher (or a PublisherSubject) to verify"}),
    ("--rs-failed-publisher", {"dest": "rs_failed_publisher", "metavar": "MODULE:ATTR",
        "help": "Factory f() -> Publisher that signals on_subscribe then on_error"}),
    ("--rs-rules", {"dest": "rs_rules", "metavar": "IDS",
        "help": "Comma-separated rule ids to verify, e.g. 1.9,3.9 ('sanity' for the factory checks)"}),
    ("--rs-skip-rules", {"dest": "rs_skip_rules", "metavar": "IDS",
        "help": "Comma-separated rule ids not to verify"}),
    ("--rs-adapter", {"dest": "rs_adapter", "metavar": "NAME",
        "help": "Adapt subjects of a foreign API to the binding: camelcase, rsocket, or a plugin's (env RS_TCK_ADAPTER, ini rs_adapter)"}),
    ("--rs-subscriber", {"dest": "rs_subscriber", "metavar": "MODULE:ATTR",
        "help": "Subscriber factory f() -> Subscriber (or a SubscriberSubject) to verify as a blackbox"}),
    ("--rs-whitebox-subscriber", {"dest": "rs_whitebox_subscriber", "metavar": "MODULE:ATTR",
        "help": "Subscriber factory f(probe) -> Subscriber (or a WhiteboxSubject) reporting to the probe"}),
    ("--rs-processor", {"dest": "rs_processor", "metavar": "MODULE:ATTR",
        "help": "Identity processor factory f() -> Processor (or a ProcessorSubject) to verify"}),
    ("--rs-report-json", {"dest": "rs_report_json", "metavar": "PATH",
        "help": "Write the results (schema rs-tck-results/1) to PATH"}),
    ("--rs-report-html", {"dest": "rs_report_html", "metavar": "PATH",
        "help": "Write a self-contained HTML report (conformance table, failures, signal traces) to PATH"}),
    ("--rs-baseline", {"dest": "rs_baseline", "metavar": "PATH",
        "help": "Known deviations (rule ids or tests, one per line): listed failures do not fail the run; unlisted failures and entries that pass now do"}),
    ("--rs-baseline-write", {"dest": "rs_baseline_write", "metavar": "PATH",
        "help": "Write a baseline listing every failure of this run to PATH"}),
    ("--rs-timeout-ms", {"dest": "rs_timeout_ms", "metavar": "MS",
        "help": "Longest wait for a signal that must arrive (ends as soon as it arrives) (env RS_TCK_TIMEOUT_MS, ini rs_timeout_ms)"}),
    ("--rs-no-signal-ms", {"dest": "rs_no_signal_ms", "metavar": "MS",
        "help": "Quiet period that shows nothing else arrives; the main cost of a run (env RS_TCK_NO_SIGNAL_MS, ini rs_no_signal_ms)"}),
    ("--rs-gc-ms", {"dest": "rs_gc_ms", "metavar": "MS",
        "help": "Longest wait for a publisher to drop a cancelled subscriber (rule 3.13) (env RS_TCK_GC_MS, ini rs_gc_ms)"}),
    ("--rs-test-limit-ms", {"dest": "rs_test_limit_ms", "metavar": "MS",
        "help": "Hard limit on one verification, after which it fails and its thread is abandoned (env RS_TCK_TEST_LIMIT_MS, ini rs_test_limit_ms)"}),
    ("--rs-after-cancel-limit", {"dest": "rs_after_cancel_limit", "metavar": "N",
        "help": "Elements a publisher may still deliver after cancel() (a batch in progress, a mailbox ahead of the cancel) before rule 1.8 counts it as not stopping (env RS_TCK_AFTER_CANCEL_LIMIT, ini rs_after_cancel_limit)"}),
    ("--rs-max-elements", {"dest": "rs_max_elements", "metavar": "N",
        "help": "Largest n the publisher factory supports; 2**63-1 means it can never complete (env RS_TCK_MAX_ELEMENTS, ini rs_max_elements)"}),
    ("--rs-recursion-depth", {"dest": "rs_recursion_depth", "metavar": "N",
        "help": "Allowed depth of synchronous on_next -> request -> on_next recursion (rule 3.3) (env RS_TCK_RECURSION_DEPTH, ini rs_recursion_depth)"}),
    ("--rs-max-subscribers", {"dest": "rs_max_subscribers", "metavar": "N",
        "help": "How many concurrent subscribers the subject supports (env RS_TCK_MAX_SUBSCRIBERS, ini rs_max_subscribers)"}),
    ("--rs-skip-stochastic", {"dest": "rs_skip_stochastic", "action": "store_true", "default": None,
        "help": "Skip the stochastic (repeated, race-hunting) verifications (env RS_TCK_SKIP_STOCHASTIC, ini rs_skip_stochastic)"}),
    ("--rs-stochastic-iterations", {"dest": "rs_stochastic_iterations", "metavar": "N",
        "help": "Iterations of each stochastic verification (env RS_TCK_STOCHASTIC_ITERATIONS, ini rs_stochastic_iterations)"}),
    ("--rs-coordinated-emission", {"dest": "rs_coordinated_emission", "action": "store_true", "default": None,
        "help": "The processor emits an element only once every subscriber has demand for it (env RS_TCK_COORDINATED_EMISSION, ini rs_coordinated_emission)"}),
    ("--rs-concurrency", {"dest": "rs_concurrency", "metavar": "N",
        "help": "Tests that may call their subjects at once, each against its own fresh subject (1: one at a time, their no-signal windows overlapping) (env RS_TCK_CONCURRENCY, ini rs_concurrency)"}),
    ("--rs-loop", {"dest": "rs_loop", "metavar": "thread|asyncio",
        "help": "Where calls into the subject run: 'thread' (the TCK's own) or 'asyncio' (a TCK event loop) (env RS_TCK_LOOP, ini rs_loop)"}),
    ("--rs-no-fuzz", {"dest": "rs_no_fuzz", "action": "store_true", "default": None,
        "help": "Skip the fuzz verifications (generated request/cancel/signal orders) (env RS_TCK_NO_FUZZ, ini rs_no_fuzz)"}),
    ("--rs-fuzz-examples", {"dest": "rs_fuzz_examples", "metavar": "N",
        "help": "Scenarios each fuzz verification generates before it passes (env RS_TCK_FUZZ_EXAMPLES, ini rs_fuzz_examples)"}),
    ("--rs-fuzz-replay", {"dest": "rs_fuzz_replay", "metavar": "VALUE",
        "help": "Replay the scenario of this token (from a fuzz failure) instead of generating scenarios (env RS_TCK_FUZZ_REPLAY, ini rs_fuzz_replay)"}),
    ("--rs-fuzz-db", {"dest": "rs_fuzz_db", "metavar": "VALUE",
        "help": "Directory for Hypothesis's example database (default: none is written) (env RS_TCK_FUZZ_DB, ini rs_fuzz_db)"}),
)
#: ``(key, help, default)`` of every ini key, as ``pytest_plugin.add_options`` registers them.
INI: tuple[tuple[str, str, Any], ...] = (
    ("rs_adapter", "Adapter applied to every subject (see --rs-adapter)", None),
    ("rs_timeout_ms", "Longest wait for a signal that must arrive (ends as soon as it arrives)", None),
    ("rs_no_signal_ms", "Quiet period that shows nothing else arrives; the main cost of a run", None),
    ("rs_gc_ms", "Longest wait for a publisher to drop a cancelled subscriber (rule 3.13)", None),
    ("rs_test_limit_ms", "Hard limit on one verification, after which it fails and its thread is abandoned", None),
    ("rs_after_cancel_limit", "Elements a publisher may still deliver after cancel() (a batch in progress, a mailbox ahead of the cancel) before rule 1.8 counts it as not stopping", None),
    ("rs_max_elements", "Largest n the publisher factory supports; 2**63-1 means it can never complete", None),
    ("rs_recursion_depth", "Allowed depth of synchronous on_next -> request -> on_next recursion (rule 3.3)", None),
    ("rs_max_subscribers", "How many concurrent subscribers the subject supports", None),
    ("rs_skip_stochastic", "Skip the stochastic (repeated, race-hunting) verifications", None),
    ("rs_stochastic_iterations", "Iterations of each stochastic verification", None),
    ("rs_coordinated_emission", "The processor emits an element only once every subscriber has demand for it", None),
    ("rs_concurrency", "Tests that may call their subjects at once, each against its own fresh subject (1: one at a time, their no-signal windows overlapping)", None),
    ("rs_loop", "Where calls into the subject run: 'thread' (the TCK's own) or 'asyncio' (a TCK event loop)", None),
    ("rs_no_fuzz", "Skip the fuzz verifications (generated request/cancel/signal orders)", None),
    ("rs_fuzz_examples", "Scenarios each fuzz verification generates before it passes", None),
    ("rs_fuzz_replay", "Replay the scenario of this token (from a fuzz failure) instead of generating scenarios", None),
    ("rs_fuzz_db", "Directory for Hypothesis's example database (default: none is written)", None),
)
# fmt: on


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("rs-tck", "Reactive Streams TCK")
    for option, attrs in OPTIONS:
        group.addoption(option, **attrs)
    for key, help_text, default in INI:
        parser.addini(key, help_text, default=default)


def in_use(config: pytest.Config) -> bool:
    """Whether the run asks for the kit: an ``--rs-*`` option, ``rs_*`` ini key or ``RS_TCK_*`` variable."""
    for _option, attrs in OPTIONS:
        value = getattr(config.option, attrs["dest"], None)
        if value is not None and value is not False:
            return True
    if any(name.startswith(ENV_PREFIX) for name in os.environ):
        return True
    return any(config.getini(key) not in (None, "", []) for key, _help, _default in INI)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER)
    spare_hypothesis_import(config)
    if not in_use(config):
        return
    skip_rewriting(config)
    from . import pytest_plugin

    if not config.pluginmanager.is_registered(pytest_plugin):
        # pytest_configure is historic: the plugin's own runs as it is registered.
        config.pluginmanager.register(pytest_plugin, PLUGIN_NAME)


#: Packages whose asserts pytest need not rewrite in a run of the kit (see ``skip_rewriting``).
NOT_REWRITTEN = ("hypothesis", "rstck", "rstck_plugins")


def skip_rewriting(config: pytest.Config) -> None:
    """Import the kit and Hypothesis as Python does, not assertion-rewritten by pytest.

    pytest rewrites the asserts of every package whose distribution has a ``pytest11`` entry
    point, Hypothesis' and the kit's included. Where bytecode is not written
    (``PYTHONDONTWRITEBYTECODE``) that parses and compiles some 80 Hypothesis modules from source
    in every run, about a second; neither package's own asserts are a user's test. A private
    part of pytest: if it changes, the run is only slower.
    """
    hook = getattr(config.pluginmanager, "rewrite_hook", None)
    marked = getattr(hook, "_must_rewrite", None)
    cache = getattr(hook, "_marked_for_rewrite_cache", None)
    if isinstance(marked, set) and isinstance(cache, dict):
        marked.difference_update(NOT_REWRITTEN)
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
