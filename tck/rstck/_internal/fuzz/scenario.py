"""Scenarios: what the fuzzer generates, shrinks, shows as numbered steps and replays.

A scenario is plain data (nested tuples of str and int), so Hypothesis can shrink it, it can be
compared and hashed, and it round-trips through the replay token the user passes back with
``--rs-fuzz-replay``. The token is the scenario itself, not a random seed: it replays the same
steps on any Hypothesis version and any machine.
"""

from __future__ import annotations

import base64
import json
import zlib
from typing import Any

from ...api import MAX_DEMAND

#: Prefix of every replay token, with the format version.
TOKEN_PREFIX = "rsfz1"
#: The side a scenario exercises, as spelled in its token.
SIDES = ("publisher", "subscriber")

Scenario = tuple[Any, ...]


class ReplayError(ValueError):
    """A replay token that cannot be decoded; the message says what is wrong with it."""


def encode(side: str, scenario: Scenario) -> str:
    """The replay token of ``scenario``: ``rsfz1-<side>-<base64 of the compressed steps>``."""
    raw = json.dumps(scenario, separators=(",", ":")).encode()
    body = base64.urlsafe_b64encode(zlib.compress(raw, 9)).decode().rstrip("=")
    return f"{TOKEN_PREFIX}-{side}-{body}"


def decode(token: str) -> tuple[str, Scenario]:
    """``(side, scenario)`` from a replay token; ``ReplayError`` naming the problem otherwise."""
    text = token.strip()
    parts = text.split("-", 2)
    if len(parts) != 3 or parts[0] != TOKEN_PREFIX:
        raise ReplayError(f"--rs-fuzz-replay: {short(text)} is not a replay token (they start with "
                          f"'{TOKEN_PREFIX}-publisher-' or '{TOKEN_PREFIX}-subscriber-')")
    side, body = parts[1], parts[2]
    if side not in SIDES:
        raise ReplayError(f"--rs-fuzz-replay: unknown side {side!r} in the token (publisher or subscriber)")
    try:
        raw = zlib.decompress(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
        data = json.loads(raw)
    except (ValueError, zlib.error) as exc:
        raise ReplayError(f"--rs-fuzz-replay: the token is damaged ({type(exc).__name__}); copy it "
                          "whole from the failure message or the results JSON") from None
    if not isinstance(data, list):
        raise ReplayError("--rs-fuzz-replay: the token does not hold a scenario")
    return side, _tuples(data)


def short(text: str, limit: int = 40) -> str:
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")


def _tuples(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_tuples(v) for v in value)
    return value


def demand_text(n: int) -> str:
    """``request(n)`` arguments as a person reads them: boundaries named, not spelled out."""
    named = {MAX_DEMAND: "2**63-1", MAX_DEMAND - 1: "2**63-2", MAX_DEMAND + 1: "2**63",
             2**62: "2**62", 2**64: "2**64", -MAX_DEMAND: "-(2**63-1)"}
    return named.get(n, str(n))


def elements_text(n: int) -> str:
    return "an endless stream" if n >= MAX_DEMAND - 1 else f"{n} element{'s' if n != 1 else ''}"
