"""The HTML report: one self-contained page rendered from a results document.

``page`` lays out the page from the results contract alone, ``failure`` one failure's article,
``timeline`` the signal trace as SVG, ``markup`` the escaping all of them use; ``options``
wires ``--rs-report-html`` into a pytest run. Rendering needs no pytest.
"""

from __future__ import annotations

from .page import render
from .page import write

__all__ = ["render", "write"]
