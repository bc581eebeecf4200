"""The HTML report: one self-contained page rendered from a results document.

``page`` lays out the page from the results contract alone, ``failure`` one failure's article,
``timeline`` the signal trace as SVG, ``markup`` the escaping all of them use; ``options``
wires ``--rs-report-html`` into a pytest run. Rendering needs no pytest, and a run that writes
no page imports none of its modules: ``render`` and ``write`` are loaded when first asked for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from typing import Any

if TYPE_CHECKING:
    from .page import render
    from .page import write


def __getattr__(name: str) -> Any:
    if name not in ("render", "write"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from . import page

    return getattr(page, name)

__all__ = ["render", "write"]
