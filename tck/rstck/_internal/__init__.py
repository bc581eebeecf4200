"""The core's private modules: nothing outside ``rstck`` imports them, and they may change in any
release. The public modules are the ones outside this package, named in ``rstck``'s docstring.
"""

from __future__ import annotations
