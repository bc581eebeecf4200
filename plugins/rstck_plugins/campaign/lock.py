"""One writer per campaign directory: a lock file naming its owner, taken over when stale.

Two commands writing the same dataset at once would each run every unit and append its rows,
doubling them. ``claim(out)`` takes ``out/.rs-tck.lock`` with an exclusive ``flock`` and writes
the owner's pid, host and command into it; while the owner lives, another claim is refused with
one line naming it. The kernel drops the ``flock`` when the owner dies (even by ``kill -9``),
so a lock left behind by a dead owner is stale and the next claim takes it over; for a file
whose ``flock`` cannot be checked (another host on a filesystem without locks), a pid on this
host that no longer runs also counts as stale.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from typing import Self

from .plan import UsageError

LOCK_NAME = ".rs-tck.lock"


@dataclass
class Claim:
    """A held claim on a campaign directory; ``previous``: the stale owner it replaced, if any."""

    path: Path
    fd: int
    previous: dict[str, Any] | None

    def release(self) -> None:
        if self.fd < 0:
            return
        try:
            os.ftruncate(self.fd, 0)
            fcntl.flock(self.fd, fcntl.LOCK_UN)
        finally:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _owner_text(owner: dict[str, Any]) -> str:
    since = owner.get("since")
    when = time.strftime(" since %H:%M:%S UTC", time.gmtime(since)) if isinstance(since, int | float) else ""
    command = f" ({owner['command']})" if owner.get("command") else ""
    return f"pid {owner.get('pid')} on {owner.get('host')}{when}{command}"


def _read(fd: int) -> dict[str, Any] | None:
    os.lseek(fd, 0, os.SEEK_SET)
    raw = b""
    while chunk := os.read(fd, 65536):
        raw += chunk
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    return data if isinstance(data, dict) else None


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def claim(out: Path, what: str) -> Claim:
    """Claim ``out`` for this process, or raise UsageError naming the live owner."""
    path = out / LOCK_NAME
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise UsageError(f"--out {out}: cannot create its lock file {path}: {exc.strerror or exc}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = _read(fd) or {}
        os.close(fd)
        raise UsageError(f"{out} is in use by another {what}, {_owner_text(holder)}: wait for it to end "
                         f"(or stop it), then run this again; it will resume") from None
    except OSError as exc:  # a filesystem without flock: fall back on the pid alone
        owner = _read(fd)
        if owner and owner.get("host") == socket.gethostname() and isinstance(owner.get("pid"), int) \
                and owner["pid"] != os.getpid() and pid_alive(owner["pid"]):
            os.close(fd)
            raise UsageError(f"{out} is in use by another {what}, {_owner_text(owner)}") from None
        if owner and owner.get("host") != socket.gethostname():
            os.close(fd)
            raise UsageError(f"{out}: cannot lock it ({exc.strerror or exc}) and {path} names "
                             f"{_owner_text(owner)}; remove {path} if that run has ended") from None
    previous = _read(fd)
    me = {"pid": os.getpid(), "host": socket.gethostname(), "since": time.time(),
          "command": " ".join(["rs-tck", *sys.argv[1:]]) if sys.argv else what}
    os.ftruncate(fd, 0)
    os.lseek(fd, 0, os.SEEK_SET)
    os.write(fd, (json.dumps(me) + "\n").encode("utf-8"))
    os.fsync(fd)
    return Claim(path, fd, previous if previous and previous.get("pid") else None)
