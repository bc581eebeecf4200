"""The rules: every rule of Reactive Streams 1.0.1 as data.

Verifications cite rules by id; reports, the rule table in the README and the coverage checks
of the test suite are all generated from this one list.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from ._internal.rule_text import RULE_TEXT

SPEC_URL = "https://github.com/reactive-streams/reactive-streams-jvm/blob/v1.0.1/README.md"


class Strength(enum.Enum):
    """The RFC 2119 keyword a rule is written with."""

    MUST = "MUST"
    MUST_NOT = "MUST NOT"
    REQUIRED = "REQUIRED"
    SHOULD = "SHOULD"
    RECOMMENDED = "RECOMMENDED"
    MAY = "MAY"


@dataclass(frozen=True)
class Rule:
    """One numbered rule of the specification."""

    id: str
    strength: Strength
    summary: str

    @property
    def section(self) -> int:
        return int(self.id.split(".")[0])

    @property
    def url(self) -> str:
        return f"{SPEC_URL}#{self.id}"

    @property
    def text(self) -> str:
        """The rule as the specification words it (empty for an edition's own rules)."""
        return RULE_TEXT.get(self.id, "")

    @property
    def sort_key(self) -> tuple[int, int]:
        major, minor = self.id.split(".")
        return int(major), int(minor)


S = Strength
_RULES = [
    Rule("1.1", S.MUST, "a publisher never signals more on_next than the subscriber requested in total"),
    Rule("1.2", S.MAY, "a publisher may signal fewer elements than requested and then terminate"),
    Rule("1.3", S.MUST, "signals to a subscriber are serial: never concurrent, even across threads"),
    Rule("1.4", S.MUST, "a publisher that fails signals on_error"),
    Rule("1.5", S.MUST, "a publisher whose finite stream ends signals on_complete"),
    Rule("1.6", S.MUST, "after on_error or on_complete the subscription counts as cancelled"),
    Rule("1.7", S.REQUIRED, "no signal follows a terminal on_error or on_complete"),
    Rule("1.8", S.MUST, "once a subscription is cancelled, its subscriber eventually stops being signalled"),
    Rule("1.9", S.MUST, "subscribe calls on_subscribe first, returns normally, and raises TypeError only for None"),
    Rule("1.10", S.MUST, "subscribe may be called many times, but each time with a different subscriber"),
    Rule("1.11", S.MAY, "a publisher may support several subscribers, unicast or multicast as it decides"),
    Rule("2.1", S.MUST, "a subscriber signals demand with request(n) to receive on_next"),
    Rule("2.2", S.RECOMMENDED, "a subscriber whose processing would slow its publisher dispatches signals asynchronously"),
    Rule("2.3", S.MUST_NOT, "on_complete and on_error call no method of the subscription or the publisher"),
    Rule("2.4", S.MUST, "after on_complete or on_error the subscriber considers its subscription cancelled"),
    Rule("2.5", S.MUST, "a subscriber that already has an active subscription cancels any new one it is given"),
    Rule("2.6", S.MUST, "a subscriber cancels a subscription it no longer needs"),
    Rule("2.7", S.MUST, "calls on a subscription come from one thread or are externally synchronised"),
    Rule("2.8", S.MUST, "a subscriber is prepared for on_next after it called cancel, while demand was pending"),
    Rule("2.9", S.MUST, "a subscriber is prepared for on_complete with or without a preceding request"),
    Rule("2.10", S.MUST, "a subscriber is prepared for on_error with or without a preceding request"),
    Rule("2.11", S.MUST, "calls to a subscriber's signal methods happen-before the processing of those signals"),
    Rule("2.12", S.MUST, "on_subscribe is called at most once for a given subscriber"),
    Rule("2.13", S.MUST, "on_* methods return normally, raising TypeError only for a None argument"),
    Rule("3.1", S.MUST, "request and cancel are only called inside the subscriber's context"),
    Rule("3.2", S.MUST, "a subscription allows request to be called synchronously from on_next and on_subscribe"),
    Rule("3.3", S.MUST, "request places an upper bound on synchronous recursion between publisher and subscriber"),
    Rule("3.4", S.SHOULD, "request returns in a timely manner"),
    Rule("3.5", S.MUST, "cancel returns in a timely manner, is idempotent and is thread-safe"),
    Rule("3.6", S.MUST, "after cancel, further request calls are no-ops"),
    Rule("3.7", S.MUST, "after cancel, further cancel calls are no-ops"),
    Rule("3.8", S.MUST, "while not cancelled, request(n) registers n more elements to be produced"),
    Rule("3.9", S.MUST, "while not cancelled, request(n) with n <= 0 signals on_error with a ValueError"),
    Rule("3.10", S.MAY, "while not cancelled, request may call on_next synchronously"),
    Rule("3.11", S.MAY, "while not cancelled, request may call on_complete or on_error synchronously"),
    Rule("3.12", S.MUST, "while not cancelled, cancel asks the publisher to eventually stop signalling"),
    Rule("3.13", S.MUST, "while not cancelled, cancel makes the publisher eventually drop its references to the subscriber"),
    Rule("3.14", S.MAY, "cancel may shut a stateful publisher down when no other subscription exists"),
    Rule("3.15", S.MUST, "cancel returns normally"),
    Rule("3.16", S.MUST, "request returns normally"),
    Rule("3.17", S.MUST, "a subscription supports unbounded request calls and a total demand up to 2**63-1"),
    Rule("4.1", S.MUST, "a processor obeys the contracts of both subscriber and publisher"),
    Rule("4.2", S.MAY, "a processor may recover from on_error (then its subscription counts as cancelled) or must propagate it at once"),
]

#: Every rule, keyed by id, in specification order.
RULES: dict[str, Rule] = {r.id: r for r in _RULES}


def _ranges() -> str:
    sections: dict[int, list[str]] = {}
    for rid in RULES:
        sections.setdefault(int(rid.split(".")[0]), []).append(rid)
    return ", ".join(f"{ids[0]}-{ids[-1]}" for ids in sections.values())


#: The valid rule ids as every message that rejects one says them: "1.1-1.11, 2.1-2.13, ...".
VALID_IDS: str = _ranges()

#: The rules of other editions' own (``rs:1.11``), added by ``rstck.editions`` as it loads: such
#: an id exists only once that module has made it, and this table stays free of imports.
_EDITION_ONLY: dict[str, Rule] = {}


def add_edition_rules(rules: dict[str, Rule]) -> None:
    """Let ``rule`` find an edition's own rules by their internal ids."""
    _EDITION_ONLY.update(rules)


def rule(rule_id: str) -> Rule:
    """Look a rule up by its id ("3.9"), with a message listing the valid ids on a miss."""
    try:
        return RULES[rule_id]
    except KeyError:
        if rule_id in _EDITION_ONLY:  # an edition's own rule, cited as "rs:1.11"
            return _EDITION_ONLY[rule_id]
        raise KeyError(f"unknown rule id {rule_id!r}; valid ids are {VALID_IDS}") from None
