"""Entry file for ``spark-submit``: ``spark-submit [--master URL] <this file> campaign ...``.

spark-submit runs a file, not a module; this one only calls the ``rs-tck`` command line. The
master and settings spark-submit was given are kept (no ``--master`` needed after ``campaign``).
"""

from __future__ import annotations

import sys

from rstck_plugins.campaign.cli import main

if __name__ == "__main__":
    sys.exit(main())
