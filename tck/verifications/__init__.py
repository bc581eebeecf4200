"""The verification classes, each a registry of rule tests with a context factory."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..environment import Environment
from . import processor
from . import publisher
from . import subscriber_blackbox
from . import subscriber_whitebox
from ._base import Context
from ._base import Registry
from ._base import TckTest


@dataclass(frozen=True)
class Verification:
    """One verification class: its tests, and how a test body gets its context."""

    name: str
    tests: list[TckTest]
    make_context: Callable[[Environment, Any], Context]


#: Every verification, in run order, by name (the ``verification`` field of results).
VERIFICATIONS: dict[str, Verification] = {
    v.name: v
    for v in (
        Verification(publisher.VERIFICATION, publisher.TESTS, publisher.make_context),
        Verification(subscriber_blackbox.VERIFICATION, subscriber_blackbox.TESTS,
                     subscriber_blackbox.make_context),
        Verification(subscriber_whitebox.VERIFICATION, subscriber_whitebox.TESTS,
                     subscriber_whitebox.make_context),
        Verification(processor.VERIFICATION, processor.TESTS, processor.make_context),
    )
}

__all__ = [
    "VERIFICATIONS",
    "Context",
    "Registry",
    "TckTest",
    "Verification",
    "processor",
    "publisher",
    "subscriber_blackbox",
    "subscriber_whitebox",
]
