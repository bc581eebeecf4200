"""Adapters: thin translations of foreign reactive APIs to the binding, one ``Adapter`` record each.

An adapter converts names and call shapes one to one and nothing else. It never buffers,
reorders, checks or repairs, so every verdict is about the adapted library, not the adapter.

The TCK's own adapters (``camelcase``, ``rsocket``) are records registered through the ``rstck``
entry-point group of this distribution, exactly as a third party registers one; nothing else in
the TCK names them.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from typing import ClassVar

from rstck.subjects import PublisherSubject

from .. import hookimpl


class Wrapper:
    """A view of one foreign object (``_inner``) in the other API's shape."""

    #: How traces show the wrapper: ``label(inner)``.
    label: ClassVar[str] = "adapted"

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __repr__(self) -> str:
        return f"{self.label}({self._inner!r})"


class PublisherWrapper(Wrapper):
    """A foreign publisher: each of our subscribers is shown to it through ``view``."""

    #: Wraps one of our subscribers in the foreign API's shape.
    view: ClassVar[type[Wrapper]]

    def subscribe(self, subscriber: Any) -> None:
        self._inner.subscribe(None if subscriber is None else type(self).view(subscriber))



@dataclass(frozen=True, eq=False)
class Adapter:
    """One adapter: its name, a wrapper per side of the binding, and the loop it needs.

    Each wrapper takes one object of the foreign API and returns it speaking the binding. The
    record is itself an ``rstck`` plugin: it answers ``rstck_adapt_subject`` for its own name and
    lists that name in ``rstck_adapter_names``; expose it through the ``rstck`` entry-point group
    (``myadapter = "mypackage.adapter:ADAPTER"``).
    """

    name: str
    #: Wraps a publisher (and a failed publisher).
    publisher: Callable[[Any], Any]
    #: Wraps a subscriber, blackbox or whitebox.
    subscriber: Callable[[Any], Any]
    #: Wraps a processor; None: the subscriber wrapper serves.
    processor: Callable[[Any], Any] | None = None
    #: The loop publishers must be called on ("asyncio"), unless the subject or ``--rs-loop`` says.
    loop: str | None = None

    def adapt(self, subject: Any, role: str) -> Any:
        """``subject`` (a factory or a subject record) whose objects are wrapped for ``role``."""
        if role == "publisher":
            return adapt_publisher_subject(subject, self.publisher, loop=self.loop)
        if role == "failed_publisher":
            return wrap_factory(subject, self.publisher)
        if role == "processor" and self.processor is not None:
            return adapt_factory_subject(subject, self.processor)
        return adapt_factory_subject(subject, self.subscriber)

    @hookimpl
    def rstck_adapter_names(self) -> list[str]:
        return [self.name]

    @hookimpl
    def rstck_adapt_subject(self, subject: Any, role: str, adapter: str) -> Any:
        return self.adapt(subject, role) if adapter == self.name else None


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
