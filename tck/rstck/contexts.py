"""The language test bodies are written in: one context per kind of subject under test.

A rule's test receives one of these and speaks to the subject only through it (fresh
publishers and subscribed probes, TCK-driven upstreams, whitebox stages), so that every call
is watched, traced and cleaned up the same way.
"""

from __future__ import annotations

from ._internal.contexts.base import Context
from ._internal.contexts.base import TckFailure
from ._internal.contexts.processor import ProcessorContext
from ._internal.contexts.publisher import PublisherContext
from ._internal.contexts.subscriber import BlackboxContext
from ._internal.contexts.subscriber import SubscriberContext
from ._internal.contexts.subscriber import WhiteboxContext
from ._internal.contexts.subscriber import WhiteboxStage
from ._internal.contexts.subscriber import WhiteboxStages

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
