"""Reference implementations that conform to the spec, used to check the TCK itself.

Every verification must pass against these; a failure here means a bug in the TCK, not in
the subject. They double as worked examples for people writing their own publishers,
subscribers and processors.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from typing import Any

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

if TYPE_CHECKING:
    from .asyncio_publishers import LoopRangePublisher
    from .asyncio_publishers import asyncio_range_publisher
    from .asyncio_publishers import loop_range_publisher

#: Imported when first asked for: they import asyncio, which no other reference subject needs.
_ON_A_LOOP = ("LoopRangePublisher", "asyncio_range_publisher", "loop_range_publisher")


def __getattr__(name: str) -> Any:
    if name in _ON_A_LOOP:
        from . import asyncio_publishers

        return getattr(asyncio_publishers, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
