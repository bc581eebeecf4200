"""``python -m rstck_plugins``: the same command as ``rs-tck`` (report, rules, replay, campaign,
ingest, summary); see ``rstck_plugins.cli``."""

from __future__ import annotations

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main(prog="python -m rstck_plugins"))
