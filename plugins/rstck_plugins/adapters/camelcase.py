"""``--rs-adapter=camelcase``: subjects written with Java's names (``onNext``, ``onSubscribe``...).

``subscribe``, ``request`` and ``cancel`` are spelled the same in both styles; only the
subscriber's four methods differ, so only they are translated, in both directions.
"""

from __future__ import annotations

from typing import Any

from . import Adapter
from . import PublisherWrapper
from . import Wrapper


class CamelCaseView(Wrapper):
    """One of our subscribers, with camelCase method names for a camelCase publisher."""

    label = "camelcase-view"

    def onSubscribe(self, subscription: Any) -> None:
        self._inner.on_subscribe(subscription)

    def onNext(self, element: Any) -> None:
        self._inner.on_next(element)

    def onError(self, exc: BaseException) -> None:
        self._inner.on_error(exc)

    def onComplete(self) -> None:
        self._inner.on_complete()


class CamelCasePublisher(PublisherWrapper):
    """A camelCase publisher seen through the binding: our subscribers are shown in camelCase."""

    label = "camelcase"
    view = CamelCaseView


class CamelCaseSubscriber(Wrapper):
    """A camelCase subscriber (or the subscriber side of a processor) seen through the binding."""

    label = "camelcase"

    def on_subscribe(self, subscription: Any) -> None:
        self._inner.onSubscribe(subscription)

    def on_next(self, element: Any) -> None:
        self._inner.onNext(element)

    def on_error(self, exc: BaseException) -> None:
        self._inner.onError(exc)

    def on_complete(self) -> None:
        self._inner.onComplete()


class CamelCaseProcessor(CamelCaseSubscriber, CamelCasePublisher):
    """Both sides of a camelCase processor."""


ADAPTER = Adapter("camelcase", publisher=CamelCasePublisher, subscriber=CamelCaseSubscriber,
                  processor=CamelCaseProcessor)
