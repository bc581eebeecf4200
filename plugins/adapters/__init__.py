"""First-party adapters: thin translations of foreign reactive APIs to the binding.

An adapter converts names and call shapes one to one and nothing else. It never buffers,
reorders, checks or repairs, so every verdict is about the adapted library, not the adapter.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Callable
from typing import Any

from rstck.subjects import PublisherSubject


def wrap_factory(factory: Callable[..., Any], wrap: Callable[[Any], Any]) -> Callable[..., Any]:
    """``factory`` with ``wrap`` applied to what it returns, keeping ``async def`` factories async."""
    if inspect.iscoroutinefunction(factory):

        @functools.wraps(factory)
        async def async_wrapped(*args: Any) -> Any:
            return wrap(await factory(*args))

        return async_wrapped

    @functools.wraps(factory)
    def wrapped(*args: Any) -> Any:
        return wrap(factory(*args))

    return wrapped


def adapt_factory_subject(subject: Any, wrap: Callable[[Any], Any]) -> Any:
    """A subscriber/processor factory, or a subject dataclass holding one, with ``wrap`` applied."""
    if dataclasses.is_dataclass(subject) and not isinstance(subject, type) and hasattr(subject, "factory"):
        return dataclasses.replace(subject, factory=wrap_factory(subject.factory, wrap))
    return wrap_factory(subject, wrap)


def adapt_publisher_subject(
    subject: Any, wrap: Callable[[Any], Any], *, loop: str | None = None
) -> PublisherSubject:
    """A publisher factory or ``PublisherSubject`` whose publishers are wrapped by ``wrap``."""
    if isinstance(subject, PublisherSubject):
        failed = subject.failed_factory
        return PublisherSubject(
            wrap_factory(subject.factory, wrap),
            wrap_factory(failed, wrap) if failed is not None else None,
            max_elements=subject.max_elements,
            recursion_depth=subject.recursion_depth,
            max_subscribers=subject.max_subscribers,
            skip_stochastic=subject.skip_stochastic,
            loop=subject.loop or loop,
            label=subject.label,
        )
    return PublisherSubject(wrap_factory(subject, wrap), loop=loop, label=getattr(subject, "__qualname__", ""))
