"""Fuzzing with Hypothesis: generated request/cancel/signal orders, shrunk to a replayable scenario.

``publisher_side`` and ``subscriber_side`` generate and interpret scenarios, ``search`` drives
Hypothesis (shrinking, races, the CI profile), ``scenario`` renders and encodes them, and
``verify`` holds the bodies of the fuzz verifications registered with each verification class.
"""
from __future__ import annotations

from typing import Any

from ..errors import NotVerified
from ..results import Verdict


def deselected(settings: Any) -> None:
    """Skip a fuzz verification switched off, before Hypothesis is even imported (a third of
    a second that a run with ``--rs-no-fuzz`` should not pay)."""
    if settings.no_fuzz:
        raise NotVerified("fuzzing is switched off (--rs-no-fuzz)", kind=Verdict.DESELECTED)
