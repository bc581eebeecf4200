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

    ``CI`` changes what the kit and pytest do (the fuzz search is derandomised, pytest writes
    crash messages uncut on the summary line), so a test that depends on it would pass on one
    machine and fail on another. Tests of the CI behaviour set it themselves.
    """
    monkeypatch.delenv("CI", raising=False)
