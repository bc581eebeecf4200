"""The ``rstck`` hook namespace: how other packages extend the TCK.

Implement these in a module and expose it through the ``rstck`` entry-point group of your
distribution::

    [project.entry-points.rstck]
    myadapter = "mypackage.rstck_hooks"

or define them in a ``conftest.py`` of the project under test. Mark implementations with
``rstck_plugins.hookimpl``. Always accept the arguments by name; you may omit the ones you
do not need.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from typing import Protocol

import pluggy

if TYPE_CHECKING:  # names for the signatures only: loading the hooks loads nothing of the core
    import pytest
    from rstck.results import ResultsDocument
    from rstck.results import RunResults
    from rstck.results import TestResult
    from rstck.settings import Settings
    from rstck.verifications import TckTest

    from .state import RsTckState

hookspec = pluggy.HookspecMarker("rstck")


@hookspec(firstresult=True)
def rstck_resolve_subject(spec: str, role: str) -> object | None:
    """Turn the text of a subject option into the object it names.

    :param spec: the option's value, e.g. ``"mylib.streams:range_publisher"``.
    :param role: ``"publisher"``, ``"failed_publisher"``, ``"subscriber"``,
        ``"whitebox_subscriber"`` or ``"processor"``.

    Return the object (usually a factory), or ``None`` to let the next implementation try.
    The built-in implementation, tried last, imports ``module:attribute``. Raise
    ``rstck.SetupError`` with a message for the user when ``spec`` is yours but wrong.

    Stops at the first non-None result.
    """


@hookspec(firstresult=True)
def rstck_adapt_subject(subject: object, role: str, adapter: str) -> object | None:
    """Wrap a subject of a foreign API so it speaks the binding (``on_next``, ``request``...).

    :param subject: what ``rstck_resolve_subject`` returned: for a publisher, the factory.
    :param role: as for ``rstck_resolve_subject``.
    :param adapter: the name the user chose with ``--rs-adapter``.

    Return the adapted subject if ``adapter`` names yours, else ``None``. An adapter converts
    calls and signals one to one; it must never repair a behaviour, or the verdicts would be
    about the adapter instead of the subject.

    Stops at the first non-None result.
    """


@hookspec
def rstck_adapter_names() -> list[str]:
    """The adapter names this plugin handles, listed when the user picks an unknown one."""
    return []


@hookspec
def rstck_modify_tests(verification: str, tests: list[TckTest], settings: Settings) -> None:
    """Add or veto verifications before they are collected.

    :param verification: ``"publisher"``, ``"subscriber_blackbox"``, ...
    :param tests: the ``TckTest`` objects that will run, in order; remove one to veto it,
        append your own ``TckTest`` to add a check.
    :param settings: the run's ``rstck.Settings``.
    """


@hookspec
def rstck_result(result: TestResult) -> None:
    """Receive each verification's ``rstck.TestResult`` as soon as it is known (reporters).

    Read ``result.failures`` (``rstck.results.Failure``: rule, expected, observed, hint,
    evidence, setting), not ``result.message``, which is text for people.
    """


@hookspec
def rstck_run_finished(results: RunResults, document: ResultsDocument) -> None:
    """Receive the whole run at the end: ``results``, an ``rstck.results.RunResults`` (its
    ``TestResult`` objects, subjects, settings, edition, and whether it was interrupted).

    :param document: the same run as the results file's JSON (schema ``rs-tck-results/1``), as
        this hook gave it before ``results`` existed; built only when an implementation takes
        it. Prefer ``results``; write ``results.to_json()`` where the run leaves the process.
    """


@hookspec
def rstck_configure(config: pytest.Config, state: RsTckState) -> None:
    """The pytest host has resolved the run's settings and subjects: set up a ``Reporter``.

    :param config: the pytest config: read your options here (add them with pytest's own
        ``pytest_addoption``, in your ``conftest.py`` or ``pytest11`` plugin).
    :param state: the run's ``rstck_plugins.state.RsTckState``: its settings, subjects, and
        ``state.hooks``, the manager to register more ``rstck`` implementations in.

    Called once per pytest process (the controller and each xdist worker), before collection.
    Raise ``pytest.UsageError`` for a bad option: the run stops before any test runs.
    """


class Reporter(Protocol):
    """A report of a run, registered as any ``rstck`` plugin is (entry point or ``conftest.py``).

    It sets itself up in ``rstck_configure``, and takes the results from ``rstck_result`` (each
    as it is known) and ``rstck_run_finished`` (the whole ``RunResults``), which it implements as it
    needs. The TCK's own reporters (JSON and HTML files, baseline gate, terminal table) are
    registered this way too.
    """

    def rstck_configure(self, config: pytest.Config, state: RsTckState) -> None: ...
