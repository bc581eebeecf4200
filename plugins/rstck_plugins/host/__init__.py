"""The pytest host: the ``pytest11`` entry point (``pytest_entry``) and the plugin it loads.

``pytest_entry`` is loaded in every pytest run of an environment that has the kit installed,
so this package imports nothing: the entry point loads ``pytest_plugin`` (options -> settings
and subjects, one item per rule test, the results to the ``rstck`` hooks) only for a run that
uses the kit. Nothing else of ``rstck_plugins`` imports the host; it imports the reports.
"""

from __future__ import annotations

__all__: list[str] = []
