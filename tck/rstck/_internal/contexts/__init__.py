"""The private modules behind ``rstck.contexts``, its front door."""

from __future__ import annotations
