"""The verification classes, each a registry of rule tests."""

from __future__ import annotations

from . import publisher
from ._base import Context
from ._base import Registry
from ._base import TckTest

#: Tests of each verification, in run order.
VERIFICATIONS: dict[str, list[TckTest]] = {
    publisher.VERIFICATION: publisher.TESTS,
}

__all__ = ["VERIFICATIONS", "Context", "Registry", "TckTest", "publisher"]
