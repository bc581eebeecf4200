"""Reference implementations that conform to the spec, used to check the TCK itself.

Every verification must pass against these; a failure here means a bug in the TCK, not in
the subject. They double as worked examples for people writing their own publishers.
"""

from __future__ import annotations

from .publishers import AsyncRangePublisher
from .publishers import FailedPublisher
from .publishers import RangePublisher
from .publishers import async_range_publisher
from .publishers import failed_publisher
from .publishers import range_publisher

__all__ = [
    "AsyncRangePublisher",
    "FailedPublisher",
    "RangePublisher",
    "async_range_publisher",
    "failed_publisher",
    "range_publisher",
]
