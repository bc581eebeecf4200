"""The pytest entry point: the kit's options in every run, the kit itself only where it is used."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import pytest
from rstck_plugins.host import pytest_entry
from rstck_plugins.host import pytest_plugin


class Recorder:
    """Stands in for pytest's parser and option group, keeping what is registered."""

    def __init__(self) -> None:
        self.options: list[tuple[str, dict[str, Any]]] = []
        self.ini: list[tuple[str, str, Any]] = []

    def getgroup(self, name: str, description: str = "") -> Recorder:
        return self

    def addoption(self, *names: str, **attrs: Any) -> None:
        assert len(names) == 1, names
        self.options.append((names[0], attrs))

    def addini(self, name: str, help: str, type: Any = None, default: Any = None) -> None:
        assert type is None, (name, type)
        self.ini.append((name, help, default))


def render(options: list[tuple[str, dict[str, Any]]], ini: list[tuple[str, str, Any]],
           subjects: list[tuple[str, str]]) -> str:
    """The text ``plugins/rstck_plugins/host/options.json`` should have: one option, ini key or
    verification's subject option a line."""
    def block(rows: list[Any]) -> list[str]:
        return [f"  {json.dumps(list(row))}," for row in rows[:-1]] + [f"  {json.dumps(list(rows[-1]))}"]

    return "\n".join(["{", ' "options": [', *block(options), " ],", ' "ini": [', *block(ini), " ],",
                      ' "subjects": [', *block(subjects), " ]", "}", ""])


def test_the_entry_points_option_table_is_what_the_plugin_registers() -> None:
    from rstck.verifications import VERIFICATIONS

    recorder = Recorder()
    pytest_plugin.add_options(recorder)  # type: ignore[arg-type]
    subjects = [(name, v.option) for name, v in VERIFICATIONS.items()]
    expected = (recorder.options, recorder.ini, subjects)
    assert (*pytest_entry.table(), list(pytest_entry.subject_options().items())) == expected, (
        "plugins/rstck_plugins/host/options.json differs from what pytest_plugin.add_options registers "
        "and the verifications' subject options; replace it with:\n" + render(*expected))
    with open(pytest_entry.TABLE, encoding="utf-8") as fh:
        assert fh.read() == render(*expected)


def _no_kit_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith(pytest_entry.ENV_PREFIX):
            monkeypatch.delenv(name)


#: A conftest that writes, once the run is over, which modules of the kit and Hypothesis it loaded.
MODULES_CONFTEST = """
import json, sys

def pytest_unconfigure(config):
    loaded = sorted(n for n in sys.modules if n.split(".")[0] in ("rstck", "rstck_plugins", "hypothesis"))
    with open("modules.json", "w") as fh:
        json.dump({"loaded": loaded, "plugin": config.pluginmanager.has_plugin("rstck-plugin")}, fh)
"""


def _loaded(pytester: pytest.Pytester) -> dict[str, Any]:
    with open(pytester.path / "modules.json") as fh:
        data: dict[str, Any] = json.load(fh)
    return data


def test_an_unrelated_run_imports_nothing_of_the_kit_nor_hypothesis(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every project with the kit installed runs its entry point: it must cost that project nothing.

    Hypothesis, which the kit brings, is not imported either: its pytest plugin would import it at
    the terminal summary to list observation files no test wrote.
    """
    _no_kit_environment(monkeypatch)
    pytester.makeconftest(MODULES_CONFTEST)
    pytester.makepyfile(test_mine="def test_mine():\n    assert 1 + 1 == 2\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    loaded = _loaded(pytester)
    assert loaded == {"loaded": ["rstck_plugins", "rstck_plugins.host", "rstck_plugins.host.pytest_entry"],
                      "plugin": False}


def test_a_run_with_hypothesis_tests_still_gets_hypothesis_statistics(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hypothesis' summary is skipped only where it has nothing to show."""
    _no_kit_environment(monkeypatch)
    pytester.makepyfile(test_prop="""
        from hypothesis import given, strategies as st

        @given(st.integers())
        def test_prop(x):
            assert x == x
    """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--hypothesis-show-statistics")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*Hypothesis Statistics*", "*test_prop*"])


def test_help_lists_the_options_without_loading_the_kit(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    _no_kit_environment(monkeypatch)
    pytester.makeconftest(MODULES_CONFTEST)
    result = pytester.runpytest_subprocess("--help")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["*Reactive Streams TCK*", "*--rs-publisher=[[]ID=[]]MODULE:ATTR*",
                                 "*--rs-no-fuzz*", "*rs_timeout_ms*"])
    assert _loaded(pytester)["loaded"] == ["rstck_plugins", "rstck_plugins.host", "rstck_plugins.host.pytest_entry"]


@pytest.mark.parametrize(("args", "ini", "env"), [
    (["--rs-no-fuzz"], "", {}),
    (["--rs-report-json=out.json"], "", {}),
    ([], "rs_timeout_ms = 300", {}),
    ([], "", {"RS_TCK_TIMEOUT_MS": "300"}),
])
def test_the_kit_is_loaded_by_an_option_an_ini_key_or_an_environment_variable(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, args: list[str], ini: str,
    env: dict[str, str],
) -> None:
    _no_kit_environment(monkeypatch)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    pytester.makeini(f"[pytest]\n{ini}\n")
    config = pytester.parseconfigure(*args)
    assert config.pluginmanager.has_plugin(pytest_entry.PLUGIN_NAME)


def test_without_any_the_kit_is_not_loaded(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    _no_kit_environment(monkeypatch)
    config = pytester.parseconfigure()
    assert not config.pluginmanager.has_plugin(pytest_entry.PLUGIN_NAME)


def test_a_run_without_fuzzing_never_imports_hypothesis(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    _no_kit_environment(monkeypatch)
    pytester.makeconftest(MODULES_CONFTEST)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--rs-publisher=rstck.reference:range_publisher",
                                           "--rs-rules=1.1,fuzz", "--rs-no-fuzz")
    result.assert_outcomes(passed=2, skipped=1)
    loaded = _loaded(pytester)
    assert loaded["plugin"]
    assert not [name for name in loaded["loaded"] if name.startswith("hypothesis")]


#: Each kind's run (a subject, a rule), and the one verification and context module it imports.
OTHER_KINDS = {
    "--rs-subscriber=rstck.reference:sync_subscriber": ("2.13", "subscriber_blackbox", "subscriber"),
    "--rs-whitebox-subscriber=rstck.reference:sync_whitebox_subscriber": ("2.13", "subscriber_whitebox", "subscriber"),
    "--rs-publisher=rstck.reference:range_publisher": ("1.1", "publisher", "publisher"),
}


@pytest.mark.parametrize("option", list(OTHER_KINDS))
def test_a_run_of_one_kind_imports_no_other_kinds_tests_nor_the_unused_reports(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, option: str
) -> None:
    """The fixed cost of a run is what it imports: one kind's run, through to its table at the end,
    loads its own verification and context only, not the HTML page it was not asked for, nor the
    worker processes a run of one subject never starts."""
    _no_kit_environment(monkeypatch)
    pytester.makeconftest(MODULES_CONFTEST)
    rule, own, context = OTHER_KINDS[option]
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", option, f"--rs-rules={rule}", "--rs-no-fuzz")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["*rule*keyword*"])  # the rule table was drawn
    loaded = _loaded(pytester)["loaded"]
    kinds = {"publisher", "subscriber_blackbox", "subscriber_whitebox", "processor"}
    verifications = {name.split(".")[3] for name in loaded if name.startswith("rstck._internal.verifications.")}
    contexts = {name.split(".")[3] for name in loaded if name.startswith("rstck._internal.contexts.")}
    assert verifications & kinds == {own}
    assert contexts == {"base", context}
    assert "rstck_plugins.reports.html_report.page" not in loaded
    assert "rstck.processes" not in loaded


def test_a_run_leaves_the_collectors_thresholds_as_it_found_them(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each test's young collection raises the last threshold while the kit's tests run (so it does
    not bring full collections nearer); the user's code after the session gets the collector back."""
    _no_kit_environment(monkeypatch)
    pytester.makeconftest("""
import gc, json

def pytest_configure(config):
    config._thresholds = [gc.get_threshold()]

def pytest_runtest_teardown(item):
    item.config._thresholds.append(gc.get_threshold())

def pytest_unconfigure(config):
    config._thresholds.append(gc.get_threshold())
    with open("thresholds.json", "w") as fh:
        json.dump(config._thresholds, fh)
""")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--rs-subscriber=rstck.reference:sync_subscriber",
                                           "--rs-no-fuzz")
    assert result.ret == 0
    with open(pytester.path / "thresholds.json") as fh:
        seen = [tuple(t) for t in json.load(fh)]
    first, during, last = seen[0], seen[1:-1], seen[-1]
    if sys.version_info < (3, 14):
        assert max(t[2] for t in during) > first[2]  # raised while the kit's tests ran
    assert last == first


def test_a_run_of_the_kits_tests_alone_freezes_what_lives_as_it_starts(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pytest's closing full collections walk only what a kit run made: what the process held as
    the run configured is frozen (``gc.freeze``). A run without the kit, or one that runs the
    library's own tests beside the kit's (a test path given), freezes nothing."""
    _no_kit_environment(monkeypatch)
    pytester.makeconftest("""
import gc

def pytest_unconfigure(config):
    with open("frozen.txt", "w") as fh:
        fh.write(str(gc.get_freeze_count()))
""")
    pytester.makepyfile(test_plain="def test_plain():\n    pass\n")
    assert pytester.runpytest_subprocess("-p", "no:cacheprovider", "test_plain.py").ret == 0
    assert (pytester.path / "frozen.txt").read_text() == "0"
    kit = ("-p", "no:cacheprovider", "--rs-subscriber=rstck.reference:sync_subscriber", "--rs-no-fuzz")
    assert pytester.runpytest_subprocess(*kit, "test_plain.py").ret == 0
    assert (pytester.path / "frozen.txt").read_text() == "0"
    assert pytester.runpytest_subprocess(*kit).ret == 0
    assert int((pytester.path / "frozen.txt").read_text()) > 1000
