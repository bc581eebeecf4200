"""Repository-level test configuration: only pytester; the TCK plugin loads via its entry point."""

from __future__ import annotations

from typing import Any

import pytest

pytest_plugins = ["pytester"]


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Keep ``--dist loadgroup`` grouping on pytest 9.2, where node ids are structured.

    pytest-xdist marks a grouped test by appending ``@group`` to ``item._nodeid``, which pytest
    9.2 no longer reads (pytest-xdist issue 1386), so the Spark tests were spread over every
    worker, each starting a JVM. This sets the same suffix on the structured id; once xdist
    does it itself the ids already carry it and this does nothing.
    """
    if not getattr(config.option, "loadgroup", False):
        return
    try:
        from _pytest.nodeid import NodeId
    except ImportError:  # an older pytest: xdist's own suffix works there
        return
    for item in items:
        names = sorted({str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                        for m in item.iter_markers("xdist_group")})
        node: Any = item
        if names and "@" not in item.nodeid and hasattr(node, "_id"):
            node._id = NodeId.parse(f"{item.nodeid}@{'_'.join(names)}")


@pytest.fixture(autouse=True)
def _same_environment_as_a_developer(monkeypatch: pytest.MonkeyPatch) -> None:
    """Run every test as outside CI, whether or not the suite itself runs in CI.

    ``CI`` changes what pytest does (it writes crash messages uncut on the summary line), so a test that depends on it would pass on one
    machine and fail on another. Tests of the CI behaviour set it themselves.
    """
    monkeypatch.delenv("CI", raising=False)


@pytest.fixture(autouse=True)
def _results_files_follow_the_shipped_schema(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Every results file a test makes the kit write must match ``rstck/schemas``, in both checkers.

    ``rs-tck ingest`` rejects a file its schema does not allow, so a field or a test name the
    schema leaves out would make every such file useless to a campaign; checking each file the
    suite's in-process runs write catches it the day it appears, whatever the test looked at.
    """
    import json
    from importlib import resources

    import jsonschema
    from rstck_plugins.campaign import schema as own_schema
    from rstck_plugins.reports import json_report

    render = json_report.render
    problems: list[str] = []
    shipped = json.loads(resources.files("rstck").joinpath("schemas", own_schema.SCHEMA_FILE).read_text())
    validator = jsonschema.Draft202012Validator(shipped)

    def checked(results: Any) -> str:
        text = render(results)
        data = json.loads(text)
        problems.extend(f"jsonschema: {e.message}" for e in validator.iter_errors(data))
        problems.extend(f"ingest: {e}" for e in own_schema.errors(data))
        return text

    monkeypatch.setattr(json_report, "render", checked)
    yield
    assert not problems, "a results file the kit wrote does not match its shipped schema:\n" + "\n".join(problems[:5])
