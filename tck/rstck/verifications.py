"""The verification kinds: one record each, from which everything that lists them is derived.

The results' ``verification`` names, the subject options of the pytest plugin (``--rs-*``,
spelled from the role the record's subject class declares, as the subject loaders spell it),
their help, and the schema's enum all come from ``VERIFICATIONS``; tests keep the schema file
and the pytest entry point's option table in step. Adding a kind means a module of rule tests, a context, and a record here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ._internal.environment import Environment
from ._internal.verifications import processor
from ._internal.verifications import publisher
from ._internal.verifications import subscriber_blackbox
from ._internal.verifications import subscriber_whitebox
from .contexts import BlackboxContext
from .contexts import Context
from .contexts import ProcessorContext
from .contexts import PublisherContext
from .contexts import WhiteboxContext
from .registry import Registry
from .registry import TckTest
from .subjects import ProcessorSubject
from .subjects import PublisherSubject
from .subjects import SubscriberSubject
from .subjects import WhiteboxSubject
from .subjects import load_processor_subject
from .subjects import load_publisher_subject
from .subjects import load_subscriber_subject
from .subjects import load_whitebox_subject
from .subjects import subject_option


@dataclass(frozen=True)
class Verification:
    """One verification kind: its tests, the context they run in, and how its subject is named."""

    #: The ``verification`` field of results, and the subject's role in the results' ``subjects``.
    name: str
    #: The subject's class (``PublisherSubject``): its ``ROLE`` names the option.
    subject: type[Any]
    #: What the option expects, for ``--help``.
    help: str
    tests: list[TckTest]
    #: ``make_context(env, subject)``: what a test body gets.
    make_context: Callable[[Environment, Any], Context]
    #: ``load_subject(spec, *, resolve)``: the subject the option names, checked.
    load_subject: Callable[..., Any]

    @property
    def role(self) -> str:
        """What the subject is to a resolver and a campaign (``whitebox_subscriber``)."""
        return str(self.subject.ROLE)

    @property
    def option(self) -> str:
        """The command-line option naming the subject (``--rs-publisher``); its value is MODULE:ATTR."""
        return subject_option(self.role)

    @property
    def dest(self) -> str:
        """The option's attribute name (``rs_publisher``), also its ini-style key."""
        return self.option.removeprefix("--").replace("-", "_")


#: Every verification kind, in run order, by name.
VERIFICATIONS: dict[str, Verification] = {
    v.name: v
    for v in (
        Verification(
            publisher.VERIFICATION, PublisherSubject,
            "Publisher factory f(n) -> Publisher (or a PublisherSubject) to verify",
            publisher.TESTS, PublisherContext, load_publisher_subject,
        ),
        Verification(
            subscriber_blackbox.VERIFICATION, SubscriberSubject,
            "Subscriber factory f() -> Subscriber (or a SubscriberSubject) to verify as a blackbox",
            subscriber_blackbox.TESTS, BlackboxContext, load_subscriber_subject,
        ),
        Verification(
            subscriber_whitebox.VERIFICATION, WhiteboxSubject,
            "Subscriber factory f(probe) -> Subscriber (or a WhiteboxSubject) reporting to the probe",
            subscriber_whitebox.TESTS, WhiteboxContext, load_whitebox_subject,
        ),
        Verification(
            processor.VERIFICATION, ProcessorSubject,
            "Identity processor factory f() -> Processor (or a ProcessorSubject) to verify",
            processor.TESTS, ProcessorContext, load_processor_subject,
        ),
    )
}

#: The verification names, in run order.
NAMES: tuple[str, ...] = tuple(VERIFICATIONS)


def _rs_verifications() -> dict[str, Verification]:
    from ._internal.contexts.rs_publisher import RsPublisherContext
    from ._internal.verifications import rs_publisher

    base = VERIFICATIONS["publisher"]
    return {"publisher": Verification(
        base.name, base.subject,
        "rs-edition publisher factory f(n) -> Publisher whose subscribe() returns the subscription",
        rs_publisher.TESTS, RsPublisherContext, base.load_subject,
    )}


#: The verification kinds of each edition but the normative one (whose kinds are
#: ``VERIFICATIONS``), built when first asked for: the edition's ``kinds``, each a record whose
#: tests and context speak its shape.
EDITION_VERIFICATIONS: dict[str, Callable[[], dict[str, Verification]]] = {
    "rs": _rs_verifications,
}


def for_edition(edition: str) -> dict[str, Verification]:
    """The verification kinds of an edition (docs/editions.md), the JVM ones by default."""
    build = EDITION_VERIFICATIONS.get(edition)
    return build() if build is not None else VERIFICATIONS

__all__ = [
    "EDITION_VERIFICATIONS",
    "NAMES",
    "VERIFICATIONS",
    "Context",
    "Registry",
    "TckTest",
    "Verification",
    "for_edition",
    "processor",
    "publisher",
    "subscriber_blackbox",
    "subscriber_whitebox",
]
