"""The private modules behind ``rstck.fuzz``, its front door."""

from __future__ import annotations
