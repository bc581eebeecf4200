"""The verification kinds: one record each, from which everything that lists them is derived.

The results' ``verification`` names, the subject options of the pytest plugin (``--rs-*``,
spelled from the role the record's subject class declares, as the subject loaders spell it),
their help, and the schema's enum all come from ``VERIFICATIONS``; tests keep the schema file
and the pytest entry point's option table in step. Adding a kind means a module of rule tests, a context, and a record here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from types import ModuleType
from typing import TYPE_CHECKING
from typing import Any

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

if TYPE_CHECKING:
    from ._internal.environment import Environment
    from ._internal.verifications import processor
    from ._internal.verifications import publisher
    from ._internal.verifications import subscriber_blackbox
    from ._internal.verifications import subscriber_whitebox
    from .contexts import Context

#: What a kind's ``load`` returns: its tests, and the class of context its bodies receive.
Loaded = tuple[list[TckTest], "Callable[[Environment, Any], Context]"]


@dataclass(frozen=True)
class Verification:
    """One verification kind: its tests, the context they run in, and how its subject is named.

    Its tests and context are imported when first asked for (``load``): a run, a listing of the
    options or a report that names a kind needs none of another kind's modules, so a run of one
    subscriber imports neither the publisher's nor the processor's tests.
    """

    #: The ``verification`` field of results, and the subject's role in the results' ``subjects``.
    name: str
    #: The subject's class (``PublisherSubject``): its ``ROLE`` names the option.
    subject: type[Any]
    #: What the option expects, for ``--help``.
    help: str
    #: ``load()``: imports the kind's module of rule tests and its context, and returns both.
    load: Callable[[], Loaded]
    #: ``load_subject(spec, *, resolve)``: the subject the option names, checked.
    load_subject: Callable[..., Any]

    @cached_property
    def _loaded(self) -> Loaded:
        return self.load()

    @property
    def tests(self) -> list[TckTest]:
        """The kind's rule tests, in rule order (its module's ``TESTS``)."""
        return self._loaded[0]

    @property
    def make_context(self) -> Callable[[Environment, Any], Context]:
        """``make_context(env, subject)``: what a test body gets."""
        return self._loaded[1]

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


def _publisher() -> Loaded:
    from ._internal.contexts.publisher import PublisherContext
    from ._internal.verifications import publisher

    return publisher.TESTS, PublisherContext


def _blackbox() -> Loaded:
    from ._internal.contexts.subscriber import BlackboxContext
    from ._internal.verifications import subscriber_blackbox

    return subscriber_blackbox.TESTS, BlackboxContext


def _whitebox() -> Loaded:
    from ._internal.contexts.subscriber import WhiteboxContext
    from ._internal.verifications import subscriber_whitebox

    return subscriber_whitebox.TESTS, WhiteboxContext


def _processor() -> Loaded:
    from ._internal.contexts.processor import ProcessorContext
    from ._internal.verifications import processor

    return processor.TESTS, ProcessorContext


#: Every verification kind, in run order, by name (each name its module's ``VERIFICATION``).
VERIFICATIONS: dict[str, Verification] = {
    v.name: v
    for v in (
        Verification(
            "publisher", PublisherSubject,
            "Publisher factory f(n) -> Publisher (or a PublisherSubject) to verify",
            _publisher, load_publisher_subject,
        ),
        Verification(
            "subscriber_blackbox", SubscriberSubject,
            "Subscriber factory f() -> Subscriber (or a SubscriberSubject) to verify as a blackbox",
            _blackbox, load_subscriber_subject,
        ),
        Verification(
            "subscriber_whitebox", WhiteboxSubject,
            "Subscriber factory f(probe) -> Subscriber (or a WhiteboxSubject) reporting to the probe",
            _whitebox, load_whitebox_subject,
        ),
        Verification(
            "processor", ProcessorSubject,
            "Identity processor factory f() -> Processor (or a ProcessorSubject) to verify",
            _processor, load_processor_subject,
        ),
    )
}

#: The verification names, in run order.
NAMES: tuple[str, ...] = tuple(VERIFICATIONS)


def _rs_publisher() -> Loaded:
    from ._internal.contexts.rs_publisher import RsPublisherContext
    from ._internal.verifications import rs_publisher

    return rs_publisher.TESTS, RsPublisherContext


def _rs_verifications() -> dict[str, Verification]:
    base = VERIFICATIONS["publisher"]
    return {"publisher": Verification(
        base.name, base.subject,
        "rs-edition publisher factory f(n) -> Publisher whose subscribe() returns the subscription",
        _rs_publisher, base.load_subject,
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

def __getattr__(name: str) -> ModuleType:
    """A kind's module of rule tests (``rstck.verifications.processor``), imported when first asked for."""
    if name not in NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    return import_module(f"._internal.verifications.{name}", __package__)


__all__ = [
    "EDITION_VERIFICATIONS",
    "NAMES",
    "VERIFICATIONS",
    "Registry",
    "TckTest",
    "Verification",
    "for_edition",
    "processor",
    "publisher",
    "subscriber_blackbox",
    "subscriber_whitebox",
]
