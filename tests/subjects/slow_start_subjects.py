"""A subject whose module takes seconds to import, as on a loaded machine or with heavy imports."""

from __future__ import annotations

import time

from rstck.reference import range_publisher

time.sleep(4.0)

__all__ = ["range_publisher"]
