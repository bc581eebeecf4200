"""Output files of a run: checked before any test runs, replaced whole when written.

Report and baseline paths are checked at configure time, so a typo costs a usage error and not
the results of a long run; files are replaced atomically, so a CI step or a browser reading one
never sees half of it.
"""

from __future__ import annotations

import tempfile
from pathlib import Path


def check_writable(option: str, path: Path) -> str | None:
    """Why ``path`` cannot be written (for a usage error before any test runs), or None.

    Missing folders are created, as pytest's ``--junitxml`` does.

    Permission bits do not tell (root ignores them; read-only mounts, ``/sys`` or a network
    file system refuse anyway), so a file is actually created and removed in the directory.
    """
    parent = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        return f"{option}={path}: is a directory; give a file path"
    if not parent.is_dir():
        try:  # as --junitxml does: the folders of a report path are made
            parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            return f"{option}={path}: cannot create directory {parent} ({exc.strerror or exc})"
    try:
        with tempfile.NamedTemporaryFile(dir=parent, prefix=".rs-tck-", suffix=".probe"):
            pass
    except OSError as exc:
        return f"{option}={path}: directory {parent} is not writable ({exc.strerror or exc})"
    return None


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a sibling temporary file and a rename."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
