"""Reference implementations that conform to the spec, used to check the TCK itself.

Every verification must pass against these; a failure here means a bug in the TCK, not in
the subject. They double as worked examples for people writing their own publishers,
subscribers and processors.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._internal.lazy import lazy_names

if TYPE_CHECKING:
    from .asyncio_publishers import LoopRangePublisher
    from .asyncio_publishers import asyncio_range_publisher
    from .asyncio_publishers import loop_range_publisher
    from .processors import IdentityProcessor
    from .processors import identity_processor
    from .publishers import AsyncRangePublisher
    from .publishers import FailedPublisher
    from .publishers import RangePublisher
    from .publishers import async_range_publisher
    from .publishers import failed_publisher
    from .publishers import range_publisher
    from .subscribers import AsyncSubscriber
    from .subscribers import SerialSubscription
    from .subscribers import SyncSubscriber
    from .subscribers import async_subscriber
    from .subscribers import async_whitebox_subscriber
    from .subscribers import sync_subscriber
    from .subscribers import sync_whitebox_subscriber

#: Each name's module, imported when the name is first asked for: a run of one reference subject
#: loads its module only (and those on a loop import asyncio, which no other one needs).
_MODULES = {
    "IdentityProcessor": "processors",
    "identity_processor": "processors",
    "AsyncRangePublisher": "publishers",
    "FailedPublisher": "publishers",
    "RangePublisher": "publishers",
    "async_range_publisher": "publishers",
    "failed_publisher": "publishers",
    "range_publisher": "publishers",
    "AsyncSubscriber": "subscribers",
    "SerialSubscription": "subscribers",
    "SyncSubscriber": "subscribers",
    "async_subscriber": "subscribers",
    "async_whitebox_subscriber": "subscribers",
    "sync_subscriber": "subscribers",
    "sync_whitebox_subscriber": "subscribers",
    "LoopRangePublisher": "asyncio_publishers",
    "asyncio_range_publisher": "asyncio_publishers",
    "loop_range_publisher": "asyncio_publishers",
}


__getattr__ = lazy_names(globals(), {name: f".{module}" for name, module in _MODULES.items()})


def __dir__() -> list[str]:
    return sorted({*globals(), *_MODULES})


__all__ = [
    "AsyncRangePublisher",
    "AsyncSubscriber",
    "FailedPublisher",
    "IdentityProcessor",
    "LoopRangePublisher",
    "RangePublisher",
    "SerialSubscription",
    "SyncSubscriber",
    "async_range_publisher",
    "async_subscriber",
    "async_whitebox_subscriber",
    "asyncio_range_publisher",
    "failed_publisher",
    "identity_processor",
    "loop_range_publisher",
    "range_publisher",
    "sync_subscriber",
    "sync_whitebox_subscriber",
]
