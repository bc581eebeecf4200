"""``--rs-adapter=rsocket``: rsocket-py's local streams and subscribers.

rsocket-py folds completion into ``on_next(value, is_complete)``; the binding has separate
``on_next`` and ``on_complete``. Its streams also only work on their asyncio loop, so this
adapter asks for ``--rs-loop=asyncio`` (an explicit ``--rs-loop`` still wins).
"""

from __future__ import annotations

from typing import Any

from . import Adapter
from . import PublisherWrapper
from . import Wrapper


class RSocketView(Wrapper):
    """One of our subscribers, in rsocket-py's shape: ``on_next(value, is_complete)``."""

    label = "rsocket-view"

    def on_subscribe(self, subscription: Any) -> None:
        self._inner.on_subscribe(subscription)

    def on_next(self, value: Any, is_complete: bool = False) -> None:
        self._inner.on_next(value)
        if is_complete:
            self._inner.on_complete()

    def on_error(self, exception: BaseException) -> None:
        self._inner.on_error(exception)

    def on_complete(self) -> None:
        self._inner.on_complete()


class RSocketPublisher(PublisherWrapper):
    """An rsocket-py publisher seen through the binding."""

    label = "rsocket"
    view = RSocketView


class RSocketSubscriber(Wrapper):
    """An rsocket-py subscriber seen through the binding: every element is "not the last"."""

    label = "rsocket"

    def on_subscribe(self, subscription: Any) -> None:
        self._inner.on_subscribe(subscription)

    def on_next(self, element: Any) -> None:
        self._inner.on_next(element, False)

    def on_error(self, exc: BaseException) -> None:
        self._inner.on_error(exc)

    def on_complete(self) -> None:
        self._inner.on_complete()

    def __getattr__(self, name: str) -> Any:
        # The subscriber's own API (a collector's request(), say) stays reachable, e.g. from
        # a SubscriberSubject's trigger_request hook.
        return getattr(self._inner, name)


#: rsocket-py's processors are subscribers on the consuming side: one wrapper serves both.
ADAPTER = Adapter("rsocket", publisher=RSocketPublisher, subscriber=RSocketSubscriber, loop="asyncio")
