"""The Python binding of the Reactive Streams interfaces, as structural protocols.

The TCK speaks only these shapes; any object with the right methods conforms, no base class
needed. ``None`` plays Java's ``null``, ``TypeError`` plays ``NullPointerException`` and
``ValueError`` plays ``IllegalArgumentException``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from typing import Protocol
from typing import TypeVar
from typing import runtime_checkable

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)
T_contra = TypeVar("T_contra", contravariant=True)

#: Java's ``Long.MAX_VALUE``: a demand at or above it may be treated as unbounded (rule 3.17).
MAX_DEMAND = 2**63 - 1


@runtime_checkable
class Subscription(Protocol):
    """The link between one publisher and one subscriber (spec section 3)."""

    def request(self, n: int) -> None: ...

    def cancel(self) -> None: ...


@runtime_checkable
class Subscriber(Protocol[T_contra]):
    """Receives signals from a publisher (spec section 2)."""

    def on_subscribe(self, subscription: Subscription) -> None: ...

    def on_next(self, element: T_contra) -> None: ...

    def on_error(self, exc: BaseException) -> None: ...

    def on_complete(self) -> None: ...


@runtime_checkable
class Publisher(Protocol[T_co]):
    """A possibly unbounded source of elements, emitted on demand (spec section 1)."""

    def subscribe(self, subscriber: Subscriber[Any]) -> None: ...


@runtime_checkable
class Processor(Subscriber[T_contra], Publisher[T_co], Protocol[T_contra, T_co]):
    """Both a subscriber and a publisher, obeying both contracts (spec section 4)."""


#: ``factory(n)`` returns a publisher of exactly ``n`` elements followed by ``on_complete``;
#: ``n >= MAX_DEMAND`` asks for an unbounded stream.
PublisherFactory = Callable[[int], Publisher[Any]]

#: ``factory()`` returns a publisher that signals ``on_subscribe`` then ``on_error``.
FailedPublisherFactory = Callable[[], Publisher[Any]]


def missing_methods(obj: object, protocol: type) -> list[str]:
    """Names of the protocol's methods that ``obj`` lacks or has as non-callables.

    Used to turn "the factory returned something that is not a publisher" into a message that
    says which method is missing, rather than a bare ``isinstance`` verdict.
    """
    wanted = [name for name in getattr(protocol, "__protocol_attrs__", ()) if not name.startswith("_")]
    if not wanted:  # Python < 3.12 keeps no __protocol_attrs__
        wanted = [
            name
            for name, value in vars(protocol).items()
            if callable(value) and not name.startswith("_")
        ]
        for base in protocol.__mro__[1:]:
            if base is Protocol or base is object or base is Any:
                continue
            if getattr(base, "_is_protocol", False):
                wanted += [
                    n for n, v in vars(base).items() if callable(v) and not n.startswith("_")
                ]
    return sorted({name for name in wanted if not callable(getattr(obj, name, None))})
