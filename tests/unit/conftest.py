"""The probe environment every probe test runs in."""

from __future__ import annotations

from typing import Any

import pytest
from rstck._internal.environment import Environment
from rstck.settings import Settings


@pytest.fixture
def env() -> Any:
    with Environment(Settings(timeout=0.2, no_signal_window=0.02)) as environment:
        yield environment
