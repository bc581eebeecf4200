"""Integrations of the Reactive Streams TCK: the pytest plugin, the ``rstck`` hooks, reports
and adapters."""

from __future__ import annotations

from .hooks import hookimpl

__all__ = ["hookimpl"]
