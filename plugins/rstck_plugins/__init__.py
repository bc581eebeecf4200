"""Integrations of the Reactive Streams TCK: the pytest plugin, the ``rstck`` hooks, reports
and adapters.

Importing this package costs nothing beyond pluggy (which pytest has loaded already): the
pytest entry point (``pytest_entry``) lives in it and runs in every pytest session of an
environment that has the kit installed.
"""

from __future__ import annotations

import pluggy

#: Marks an implementation of an ``rstck_*`` hook (see ``hookspecs``).
hookimpl = pluggy.HookimplMarker("rstck")

__all__ = ["hookimpl"]
