"""The ``rstck`` hook namespace: conftest and entry-point plugins, and the first-party adapters."""

from __future__ import annotations

import json
import textwrap

import pytest

CAMEL = '''
from rstck.reference import range_publisher, sync_subscriber

class CamelRange:
    """A conforming publisher written with Java's method names for its subscriber."""
    def __init__(self, n):
        self._inner = range_publisher(n)
    def subscribe(self, subscriber):
        if subscriber is None:
            raise TypeError("subscriber is None")
        class Snake:
            def on_subscribe(self, s): subscriber.onSubscribe(s)
            def on_next(self, e): subscriber.onNext(e)
            def on_error(self, e): subscriber.onError(e)
            def on_complete(self): subscriber.onComplete()
        self._inner.subscribe(Snake())

def camel_range(n):
    return CamelRange(n)

class CamelSubscriber:
    def __init__(self):
        self._inner = sync_subscriber()
    def onSubscribe(self, s): self._inner.on_subscribe(s)
    def onNext(self, e): self._inner.on_next(e)
    def onError(self, e): self._inner.on_error(e)
    def onComplete(self): self._inner.on_complete()

def camel_subscriber():
    return CamelSubscriber()
'''


def test_conftest_hooks_veto_report_and_finish(pytester: pytest.Pytester) -> None:
    pytester.makeconftest('''
        import json
        SEEN = []

        def rstck_modify_tests(verification, tests, settings):
            tests[:] = [t for t in tests if t.rule_id != "1.3"]

        def rstck_result(result):
            SEEN.append((result.rule, result.outcome))

        def rstck_run_finished(document):
            with open("finished.json", "w") as out:
                json.dump({"seen": SEEN, "total": document["summary"]["total"]}, out)
    ''')
    result = pytester.runpytest("--rs-publisher=rstck.reference:range_publisher", "--rs-rules=1.3,3.9")
    result.assert_outcomes(passed=4)
    finished = json.loads((pytester.path / "finished.json").read_text())
    assert finished["total"] == 4
    assert sorted(map(tuple, finished["seen"])) == [("3.9", "passed")] * 4


def test_conftest_found_during_collection_joins_the_hooks(pytester: pytest.Pytester) -> None:
    # A conftest below the given path is loaded after configure, when its directory is collected.
    pytester.mkdir("suite")
    sub = pytester.mkdir("suite/deeper")
    (sub / "conftest.py").write_text(textwrap.dedent('''
        import json

        def rstck_result(result):
            with open("late.jsonl", "a") as out:
                out.write(json.dumps([result.rule, result.outcome]) + "\\n")
    '''))
    (sub / "test_nothing.py").write_text("def test_nothing():\n    pass\n")
    result = pytester.runpytest("suite", "--rs-publisher=rstck.reference:range_publisher", "--rs-rules=3.9")
    result.assert_outcomes(passed=5)
    lines = (pytester.path / "late.jsonl").read_text().splitlines()
    assert sorted(json.loads(line)[1] for line in lines) == ["passed"] * 4


def test_entry_point_plugin_resolves_its_own_specs(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(myext=textwrap.dedent('''
        from rstck_plugins import hookimpl

        @hookimpl
        def rstck_resolve_subject(spec, role):
            if spec.startswith("ref:") and role == "publisher":
                import rstck.reference
                return getattr(rstck.reference, spec[4:])
            return None
    '''))
    dist = pytester.path / "myext-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: myext\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[rstck]\nmyext = myext\n")
    pytester.syspathinsert()
    result = pytester.runpytest("--rs-publisher=ref:async_range_publisher", "--rs-rules=3.9")
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(["rs-tck: publisher ref:async_range_publisher*"])


def test_camelcase_adapter_for_publishers_and_subscribers(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(camel=CAMEL)
    pytester.syspathinsert()
    result = pytester.runpytest(
        "--rs-publisher=camel:camel_range", "--rs-subscriber=camel:camel_subscriber", "--rs-adapter=camelcase"
    )
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed", 0) == 0, result.stdout.str()[-3000:]
    assert outcomes["passed"] >= 50


def test_unknown_adapter_is_a_usage_error(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--rs-publisher=rstck.reference:range_publisher", "--rs-adapter=kotlin")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--rs-adapter=kotlin: no adapter of that name handles a publisher; available: camelcase, rsocket" in (
        result.stderr.str()
    )


def test_third_party_adapter_record_from_an_entry_point(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(tagged=textwrap.dedent('''
        from rstck_plugins.adapters import Adapter

        SEEN = []

        def tag(obj):
            SEEN.append(type(obj).__name__)
            return obj

        ADAPTER = Adapter("tagged", publisher=tag, subscriber=tag)
    '''))
    pytester.makeconftest('''
        def rstck_run_finished(document):
            import tagged
            with open("tagged.txt", "w") as out:
                out.write(",".join(sorted(set(tagged.SEEN))))
    ''')
    dist = pytester.path / "tagged-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: tagged\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[rstck]\ntagged = tagged:ADAPTER\n")
    pytester.syspathinsert()
    result = pytester.runpytest("--rs-publisher=rstck.reference:range_publisher", "--rs-rules=3.9",
                                "--rs-adapter=tagged")
    result.assert_outcomes(passed=4)
    assert (pytester.path / "tagged.txt").read_text() == "RangePublisher"
    unknown = pytester.runpytest("--rs-publisher=rstck.reference:range_publisher", "--rs-adapter=kotlin")
    assert "available: camelcase, rsocket, tagged" in unknown.stderr.str()


def test_builtin_adapters_come_from_the_entry_point_group() -> None:
    # Registered as any third party's adapter is: hooks.py names none of them.
    import tomllib
    from importlib.metadata import entry_points
    from pathlib import Path

    from rstck_plugins import hooks
    from rstck_plugins.adapters import Adapter

    root = Path(__file__).resolve().parents[2]
    declared = tomllib.loads((root / "pyproject.toml").read_text())["project"]["entry-points"]["rstck"]
    installed = {ep.name: ep.value for ep in entry_points(group="rstck") if ep.name in declared}
    assert installed == declared, "the installed metadata is stale: run `pip install -e .`"
    for name, ep in ((ep.name, ep) for ep in entry_points(group="rstck") if ep.name in declared):
        adapter = ep.load()
        assert isinstance(adapter, Adapter)
        assert adapter.name == name
    source = Path(hooks.__file__).read_text()
    assert not any(name in source for name in declared), "hooks.py must not name the built-in adapters"


def test_hookspecs_are_typed() -> None:
    # Implementations and reporters read the contract from the signatures: none is left Any.
    import inspect

    from rstck_plugins import hookspecs

    specs = {name: fn for name, fn in vars(hookspecs).items() if name.startswith("rstck_")}
    assert "rstck_configure" in specs
    for name, fn in specs.items():
        annotations = [p.annotation for p in inspect.signature(fn).parameters.values()]
        annotations.append(inspect.signature(fn).return_annotation)
        assert not any("Any" in str(a) for a in annotations), (name, annotations)


TALLY = '''
import json

import pytest
from rstck.results import Verdict


class Tally:
    """One run's counts of each verdict, written where --tally says when the run ends."""

    def __init__(self, path):
        self.path = path
        self.verdicts = {}

    def rstck_result(self, result):
        self.verdicts[result.verdict] = self.verdicts.get(result.verdict, 0) + 1

    def rstck_run_finished(self, document):
        with open(self.path, "w") as out:
            json.dump({"verdicts": self.verdicts, "total": document["summary"]["total"],
                       "passed": self.verdicts.get(Verdict.PASSED, 0)}, out)


class TallyReporter:
    def rstck_configure(self, config, state):
        path = config.getoption("tally")
        if path == "-":
            raise pytest.UsageError("--tally: give a file")
        if path:
            state.hooks.register(Tally(path), "tally-run")


REPORTER = TallyReporter()
'''


def test_third_party_reporter_from_an_entry_point(pytester: pytest.Pytester) -> None:
    # Registered as an adapter is, with its own option; the TCK's reporters keep working beside it.
    pytester.makepyfile(tally=TALLY)
    pytester.makeconftest('''
        def pytest_addoption(parser):
            parser.addoption("--tally", dest="tally")
    ''')
    dist = pytester.path / "tally-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: tally\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[rstck]\ntally = tally:REPORTER\n")
    pytester.syspathinsert()
    args = ["--rs-publisher=rstck.reference:range_publisher", "--rs-rules=3.9,1.11"]
    result = pytester.runpytest(*args, "--tally=tally.json", "--rs-report-json=results.json")
    outcomes = result.parseoutcomes()
    tally = json.loads((pytester.path / "tally.json").read_text())
    document = json.loads((pytester.path / "results.json").read_text())
    assert tally["total"] == document["summary"]["total"] == sum(tally["verdicts"].values()) > 4
    assert tally["verdicts"] == {v: n for v, n in document["summary"]["verdicts"].items() if n}
    assert tally["passed"] == outcomes["passed"] >= 4
    result.stdout.fnmatch_lines(["*rs-tck: results file written to results.json*"])
    refused = pytester.runpytest(*args, "--tally=-")
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    assert "--tally: give a file" in refused.stderr.str()


def test_the_hooks_doc_example_of_a_test_of_ones_own_runs_beside_the_kits(pytester: pytest.Pytester) -> None:
    """docs/hooks.md's test written by a user imports only public modules, runs, and can fail."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "hooks.md").read_text()
    block = re.search(r"A test of your own.*?```python\n(.*?)```", text, re.DOTALL)
    assert block is not None, "docs/hooks.md lost its example of a test of one's own"
    imported = re.findall(r"^from (rstck[\w.]*) import", block.group(1), re.MULTILINE)
    assert imported, imported
    assert not [m for m in imported if any(part.startswith("_") for part in m.split("."))], imported
    pytester.makeconftest(block.group(1))
    pytester.makepyfile(deaf='''
        class _Subscription:
            def __init__(self, subscriber, n):
                self.subscriber, self.left, self.done = subscriber, n, False

            def request(self, k):
                if k <= 0 or self.done:
                    return  # no on_error(ValueError) for request(0): rule 3.9 broken
                for _ in range(k):
                    if self.left == 0:
                        self.done = True
                        self.subscriber.on_complete()
                        return
                    self.left -= 1
                    self.subscriber.on_next(self.left)

            def cancel(self):
                self.done = True

        class Deaf:
            def __init__(self, n):
                self.n = n

            def subscribe(self, subscriber):
                subscriber.on_subscribe(_Subscription(subscriber, self.n))

        def factory(n):
            return Deaf(n)
    ''')
    name = "required_spec309_request_zero_after_an_element_must_signal_value_error"
    ok = pytester.runpytest("--rs-publisher=rstck.reference:range_publisher", "--rs-rules=3.9", "-v")
    ok.stdout.fnmatch_lines([f"*{name}*PASSED*"])
    bad = pytester.runpytest("--rs-publisher=deaf:factory", "--rs-rules=3.9", "-v")
    bad.stdout.fnmatch_lines([f"*{name}*FAILED*"])
