"""``--rs-adapter=camelcase``: subjects written with Java's names (``onNext``, ``onSubscribe``...).

``subscribe``, ``request`` and ``cancel`` are spelled the same in both styles; only the
subscriber's four methods differ, so only they are translated, in both directions.
"""

from __future__ import annotations

from typing import Any

from . import Adapter


class CamelCasePublisher:
    """A camelCase publisher seen through the binding: our subscribers are shown in camelCase."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def subscribe(self, subscriber: Any) -> None:
        self._inner.subscribe(None if subscriber is None else CamelCaseView(subscriber))

    def __repr__(self) -> str:
        return f"camelcase({self._inner!r})"


class CamelCaseView:
    """One of our subscribers, with camelCase method names for a camelCase publisher."""

    def __init__(self, subscriber: Any) -> None:
        self._subscriber = subscriber

    def onSubscribe(self, subscription: Any) -> None:
        self._subscriber.on_subscribe(subscription)

    def onNext(self, element: Any) -> None:
        self._subscriber.on_next(element)

    def onError(self, exc: BaseException) -> None:
        self._subscriber.on_error(exc)

    def onComplete(self) -> None:
        self._subscriber.on_complete()

    def __repr__(self) -> str:
        return f"camelcase-view({self._subscriber!r})"


class CamelCaseSubscriber:
    """A camelCase subscriber (or the subscriber side of a processor) seen through the binding."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def on_subscribe(self, subscription: Any) -> None:
        self._inner.onSubscribe(subscription)

    def on_next(self, element: Any) -> None:
        self._inner.onNext(element)

    def on_error(self, exc: BaseException) -> None:
        self._inner.onError(exc)

    def on_complete(self) -> None:
        self._inner.onComplete()

    def __repr__(self) -> str:
        return f"camelcase({self._inner!r})"


class CamelCaseProcessor(CamelCaseSubscriber):
    """Both sides of a camelCase processor."""

    def subscribe(self, subscriber: Any) -> None:
        self._inner.subscribe(None if subscriber is None else CamelCaseView(subscriber))


ADAPTER = Adapter("camelcase", publisher=CamelCasePublisher, subscriber=CamelCaseSubscriber,
                  processor=CamelCaseProcessor)
