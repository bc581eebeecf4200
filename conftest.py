"""Repository-level test configuration: only pytester; the TCK plugin loads via its entry point."""

from __future__ import annotations

pytest_plugins = ["pytester"]
