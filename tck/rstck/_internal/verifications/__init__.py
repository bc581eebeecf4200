"""The private modules behind ``rstck.verifications``, its front door."""

from __future__ import annotations
