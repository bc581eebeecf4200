"""The probe environment every probe test runs in."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from rstck._internal import reach
from rstck._internal.environment import Environment
from rstck.settings import Settings


@pytest.fixture
def env() -> Any:
    with Environment(Settings(timeout=0.2, no_signal_window=0.02)) as environment:
        yield environment


@pytest.fixture
def only_this_tests_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    """Threads the host runs (xdist's, say) are not this test's: only those started here count.
    Told apart as objects, not by ident: a thread started here may get the ident of one that ended."""
    me = threading.current_thread()
    before = {t for t in threading.enumerate() if t is not me}
    monkeypatch.setattr(reach, "_threads", lambda: [t for t in threading.enumerate() if t not in before])
