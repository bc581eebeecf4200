"""The language test bodies are written in: one context per kind of subject under test.

A rule's test receives one of these and speaks to the subject only through it (fresh
publishers and subscribed probes, TCK-driven upstreams, whitebox stages), so that every call
is watched, traced and cleaned up the same way.

Each name is imported from its private module when first asked for: a run of one kind of
subject (a verification module importing its own context from here) loads no other kind's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._internal.lazy import lazy_names

if TYPE_CHECKING:
    from ._internal.contexts.base import Context
    from ._internal.contexts.base import TckFailure
    from ._internal.contexts.processor import ProcessorContext
    from ._internal.contexts.publisher import PublisherContext
    from ._internal.contexts.subscriber import BlackboxContext
    from ._internal.contexts.subscriber import SubscriberContext
    from ._internal.contexts.subscriber import WhiteboxContext
    from ._internal.contexts.subscriber import WhiteboxStage
    from ._internal.contexts.subscriber import WhiteboxStages

#: Each name's private module, under ``rstck._internal.contexts``.
_MODULES = {
    "BlackboxContext": "subscriber",
    "Context": "base",
    "ProcessorContext": "processor",
    "PublisherContext": "publisher",
    "SubscriberContext": "subscriber",
    "TckFailure": "base",
    "WhiteboxContext": "subscriber",
    "WhiteboxStage": "subscriber",
    "WhiteboxStages": "subscriber",
}


__getattr__ = lazy_names(globals(), {name: f"._internal.contexts.{module}" for name, module in _MODULES.items()})


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
