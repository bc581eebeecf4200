"""Where a test stands against the JVM TCK (reactive-streams-jvm, ``tck/``): the words a test uses.

Each test declares its ``Parity`` at its registration (``parity=Parity(pub(...), "stricter",
why)``): the JVM TCK test(s) it corresponds to and how the two compare:

- ``same``: it checks what the JVM test checks (in the Python binding's terms);
- ``stricter``: it checks that and more, and ``why`` says what more and which sentence asks it;
- ``looser``: it accepts something the JVM test rejects, and ``why`` says which sentence allows it;
- ``new``: the JVM TCK has no executable test for it (none, or only an ``untested_`` stub), and
  ``why`` says what it catches.

docs/verifications.md shows it under each test; tests/quality checks that every registered
test declares one, and that every difference says why.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Relation = Literal["same", "stricter", "looser", "new"]
RELATIONS: tuple[Relation, ...] = ("same", "stricter", "looser", "new")
JVM_TCK_URL = "https://github.com/reactive-streams/reactive-streams-jvm/tree/master/tck/src/main/java/org/reactivestreams/tck"


@dataclass(frozen=True)
class Parity:
    """One test's JVM counterparts (``Class.method``), its relation to them, and why."""

    jvm: tuple[str, ...]
    relation: Relation
    why: str = ""


def pub(*methods: str) -> tuple[str, ...]:
    """The named tests of the JVM's ``PublisherVerification``."""
    return tuple(f"PublisherVerification.{m}" for m in methods)


def bb(*methods: str) -> tuple[str, ...]:
    """The named tests of the JVM's ``SubscriberBlackboxVerification``."""
    return tuple(f"SubscriberBlackboxVerification.{m}" for m in methods)


def wb(*methods: str) -> tuple[str, ...]:
    """The named tests of the JVM's ``SubscriberWhiteboxVerification``."""
    return tuple(f"SubscriberWhiteboxVerification.{m}" for m in methods)


def proc(*methods: str) -> tuple[str, ...]:
    """The named tests of the JVM's ``IdentityProcessorVerification``."""
    return tuple(f"IdentityProcessorVerification.{m}" for m in methods)


#: The why of a test neither kit can observe.
SAME_UNTESTED = "neither kit can observe it; both report it as untested"
#: The why of a subscriber test that, unlike the JVM's, watches a quiet window after the signal.
WAITS_TOO_WHY = (
    "the JVM test ends once the signal has returned; this one then watches a quiet window in which "
    "an exception on one of the subscriber's own threads (its asynchronous handling of the signal) "
    "fails it too (a subscriber without a thread of its own has none to watch: the window ends at "
    "once): the rule asks the subscriber to be prepared, not only to return."
)


def missing(names_and_parities: list[tuple[str, Parity | None]]) -> list[str]:
    """The names of the tests that declare no parity."""
    return [name for name, parity in names_and_parities if parity is None]
