"""The language test bodies are written in: one context per kind of subject under test.

A rule's test receives one of these and speaks to the subject only through it (fresh
publishers and subscribed probes, TCK-driven upstreams, whitebox stages), so that every call
is watched, traced and cleaned up the same way.
"""

from __future__ import annotations

from .base import Context
from .base import TckFailure
from .processor import ProcessorContext
from .publisher import PublisherContext
from .subscriber import BlackboxContext
from .subscriber import SubscriberContext
from .subscriber import WhiteboxContext
from .subscriber import WhiteboxStage
from .subscriber import WhiteboxStages

__all__ = [
    "BlackboxContext",
    "Context",
    "ProcessorContext",
    "PublisherContext",
    "SubscriberContext",
    "TckFailure",
    "WhiteboxContext",
    "WhiteboxStage",
    "WhiteboxStages",
]
