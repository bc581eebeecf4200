"""Fuzzing: generated request/cancel/signal orders, shrunk to a replayable scenario.

``publisher_side`` and ``subscriber_side`` generate and interpret scenarios, ``search`` drives
the search (seeds, shrinking, races; Hypothesis only for an example database), ``scenario`` renders and encodes them, and
``verify`` holds the bodies of the fuzz verifications registered with each verification class.
"""
from __future__ import annotations

from typing import Any

from ._internal.fuzz.scenario import ReplayError
from ._internal.fuzz.scenario import decode
from .errors import NotVerified
from .results import Verdict


def deselected(settings: Any) -> None:
    """Skip a fuzz verification switched off, before any of the search is imported (what a run
    with ``--rs-no-fuzz`` should not pay)."""
    if settings.no_fuzz:
        raise NotVerified("fuzzing is switched off (--rs-no-fuzz)", kind=Verdict.DESELECTED)


def check_replay(settings: Any) -> None:
    """Raise ``ReplayError`` (a ValueError naming the problem) for a damaged replay token.

    Every front door calls it before any test runs, so a bad token is a one-line usage error;
    ``Settings`` keeps the token as text, since the token's format is the fuzzer's.
    """
    if settings.fuzz_replay:
        decode(settings.fuzz_replay)


__all__ = ["ReplayError", "check_replay", "decode", "deselected"]
