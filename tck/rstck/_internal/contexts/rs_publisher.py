"""The ``rs`` edition's publisher binding, bridged so the JVM-shaped publisher tests drive it.

In the ``rs`` edition ``publisher.subscribe(subscriber)`` returns the subscription and there is
no ``on_subscribe``; dropping the last reference to the subscription, or leaving its ``with``
block, cancels it. The bridge shows each rs publisher to the probes as a JVM-shaped one: it
subscribes, then hands the returned subscription to the probe's ``on_subscribe``. Signals the
publisher sends before that hand-over (an empty stream completing inside ``subscribe``) are
held and delivered right after it, in order, so the probes see the protocol of the edition,
``on_next* (on_error | on_complete)?``, and nothing is reordered or repaired.

How the probe's ``cancel()`` reaches the rs subscription is the test's choice
(``RsPublisherContext.cancel_mode``): ``cancel`` calls ``cancel()``, ``drop`` lets go of the
TCK's only reference (the subscription's finaliser must cancel), ``with`` leaves the ``with``
block the subscription was entered in.
"""

from __future__ import annotations

import gc
import threading
import weakref
from typing import Any

from ...api import Publisher
from ...errors import NotVerified
from ...errors import RuleViolation
from ...probe import ProbeAbort
from ..trace import short_repr
from .publisher import PublisherContext

CANCEL_MODES = ("cancel", "drop", "with")


class NoneElement:
    """``on_next(None)``, shown to the JVM-shaped probes: the ``rs`` edition has no rule against
    a None element (the JVM binding's 2.13 forbids it), so the bridge keeps it from the probe's
    None check."""

    def __repr__(self) -> str:
        return "None"


NONE_ELEMENT = NoneElement()


class _Link:
    """Holds the signals that arrive before the probe has its subscription, then delivers them."""

    def __init__(self, subscriber: Any) -> None:
        self.subscriber = subscriber
        self.lock = threading.Lock()
        self.open = False
        self.held: list[tuple[str, tuple[Any, ...]]] = []

    def deliver(self, method: str, *args: Any) -> None:
        with self.lock:
            if not self.open:
                self.held.append((method, args))
                return
        getattr(self.subscriber, method)(*args)

    def release(self) -> None:
        """Deliver what was held, in order; signals arriving meanwhile queue behind it."""
        while True:
            with self.lock:
                if not self.held:
                    self.open = True
                    return
                method, args = self.held.pop(0)
            getattr(self.subscriber, method)(*args)


class RsSubscriberView:
    """One of the TCK's probes, as the rs publisher sees it: on_next, on_error, on_complete."""

    def __init__(self, link: _Link) -> None:
        self._link = link

    def on_next(self, element: Any) -> None:
        self._link.deliver("on_next", NONE_ELEMENT if element is None else element)

    def on_error(self, error: BaseException) -> None:
        self._link.deliver("on_error", error)

    def on_complete(self) -> None:
        self._link.deliver("on_complete")

    def __repr__(self) -> str:
        return f"rs-view({self._link.subscriber!r})"


class RsSubscriptionView:
    """The subscription ``subscribe`` returned, as the probe holds it (its only strong reference)."""

    def __init__(self, handle: Any, mode: str) -> None:
        self._handle: Any = handle
        self._mode = mode
        self._done = False

    def request(self, n: int) -> None:
        handle = self._handle
        if handle is not None:  # dropped: nothing left to request on, as in the edition
            handle.request(n)

    def cancel(self) -> None:
        if self._mode == "cancel":
            self._handle.cancel()
            return
        if self._done:
            return
        self._done = True
        if self._mode == "with":
            self._handle.__exit__(None, None, None)
            return
        try:
            ref: Any = weakref.ref(self._handle)
        except TypeError:
            ref = None
        self._handle = None  # the last reference: CPython finalises it here
        if ref is not None and ref() is not None:
            gc.collect()  # a handle in a reference cycle is finalised by the collector

    def __repr__(self) -> str:
        return f"rs-subscription({short_repr(self._handle, 60)}, {self._mode})"


class RsPublisherBridge:
    """An rs publisher shown as a JVM-shaped one (``subscribe`` calls ``on_subscribe``)."""

    def __init__(self, inner: Any, context: RsPublisherContext) -> None:
        self._inner = inner
        self._context = context

    @property
    def inner(self) -> Any:
        return self._inner

    def subscribe(self, subscriber: Any) -> None:
        link = _Link(subscriber)
        mode = self._context.cancel_mode
        handle = self._inner.subscribe(RsSubscriberView(link))
        if not (callable(getattr(handle, "request", None)) and callable(getattr(handle, "cancel", None))):
            raise RuleViolation(
                "1.9", "subscribe() to return the subscription (an object with request and cancel)",
                f"it returned {short_repr(handle, 80)}",
                hint="in the rs edition subscribe(subscriber) returns the subscription; there is no "
                "on_subscribe (docs/editions.md)",
            )
        if mode == "with":
            if not (hasattr(handle, "__enter__") and hasattr(handle, "__exit__")):
                raise _NotContextManager(type(handle).__name__)
            handle.__enter__()
        view = RsSubscriptionView(handle, mode)
        del handle
        try:
            subscriber.on_subscribe(view)
        finally:
            link.release()

    def __repr__(self) -> str:
        return f"rs({self._inner!r})"


class _NotContextManager(Exception):
    def __init__(self, kind: str) -> None:
        super().__init__(f"the subscription ({kind}) is not a context manager")


class RsPublisherContext(PublisherContext):
    """The publisher tests' context, with each publisher of the subject bridged from the rs shape."""

    #: How the probes' cancel() reaches the subscription: ``cancel``, ``drop`` or ``with``.
    cancel_mode = "cancel"
    #: The edition has no on_subscribe: the bridge's is the TCK's own, so what a publisher does
    #: after its subscriber's on_subscribe raised is not the publisher's to judge.
    has_on_subscribe = False

    def publisher(self, elements: int, *, completes: bool = False, counted: bool = False) -> Publisher[Any]:
        return RsPublisherBridge(super().publisher(elements, completes=completes, counted=counted), self)

    def failed_publisher(self) -> Publisher[Any]:
        return RsPublisherBridge(super().failed_publisher(), self)

    def subscribe(self, publisher: Publisher[Any], subscriber: Any) -> None:
        """As the JVM context's, but the bridge's own verdict on what subscribe returned stands."""
        try:
            super().subscribe(publisher, subscriber)
        except RuleViolation as exc:
            cause = exc.__cause__
            if isinstance(cause, RuleViolation):
                raise cause from None
            if isinstance(cause, _NotContextManager):
                raise NotVerified(f"{cause}: the with-block form of cancellation does not apply") from None
            raise
        except ProbeAbort:
            pass
