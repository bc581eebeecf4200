"""The process one work unit runs in: ``python -m rstck_plugins.campaign.child FD``.

It reads the unit from stdin, runs the verification through the core's ``Run`` and writes one
JSON line per event to file descriptor FD: the selected tests first, then each result as it
completes, so the parent knows which test was in flight if this process dies or hangs.
"""

from __future__ import annotations

import faulthandler
import json
import os
import random
import signal
import sys
from typing import Any


def load_subject(unit: dict[str, Any], adapter: str | None) -> Any:
    """The unit's subject, resolved exactly as the pytest plugin resolves ``--rs-*`` options.

    A subject declared in a test module (``rstck.pytest``) comes with its own settings and
    skipped rules: ``load_declared`` returns them as well.
    """
    return load_declared(unit, adapter)[0]


def load_declared(unit: dict[str, Any], adapter: str | None) -> tuple[Any, Any]:
    """``(subject, declaration or None)`` of the unit."""
    from rstck import pytest as declared
    from rstck import subjects

    from ..hooks import make_manager
    from ..hooks import make_resolver

    resolve = make_resolver(make_manager(), adapter)
    role, spec = unit["role"], unit["subject"]
    declaration = declared.declaration_of(resolve(spec, role), spec.rpartition(":")[2])
    if declaration is not None:
        declaration.check()
        obj = declaration.subject
        obj = resolve(obj, role) if isinstance(obj, str) else obj
        failed = declaration.failed
        failed = resolve(failed, subjects.FAILED_ROLE) if isinstance(failed, str) else failed
        subject: Any
        if role == "publisher":
            subject = subjects.load_publisher_subject(
                spec, spec if failed is not None else None,
                resolve=lambda _spec, what: failed if what == subjects.FAILED_ROLE else obj)
        else:
            subject = _loader(role)(spec, resolve=lambda _s, _r: obj)
            if failed is not None:
                subject.failed_factory = failed
        return subject, declaration
    return _load_named(resolve, role, spec, unit), None


def _load_named(resolve: Any, role: str, spec: str, unit: dict[str, Any]) -> Any:
    from rstck import subjects

    if role == "publisher":
        return subjects.load_publisher_subject(spec, unit.get("failed"), resolve=resolve)
    return _loader(role)(spec, resolve=resolve)


def _loader(role: str) -> Any:
    """The subject loader of a role (``load_processor_subject`` for ``processor``), from the
    verification whose subject plays it."""
    from rstck.verifications import VERIFICATIONS

    return next(v.load_subject for v in VERIFICATIONS.values() if v.role == role)


def peak_mb() -> float:
    """This process's peak resident memory so far (MiB): the parent holds it to the unit's limit."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main(argv: list[str]) -> int:
    # On SIGUSR1 every thread's stack goes to this process's output, which the parent quotes in
    # the row of a unit it kills (a hang, a leak): the row says where it was.
    faulthandler.register(signal.SIGUSR1, file=sys.stderr, all_threads=True)
    out = os.fdopen(int(argv[1]), "w", buffering=1, encoding="utf-8")

    def send(message: dict[str, Any]) -> None:
        out.write(json.dumps(message) + "\n")
        out.flush()

    request = json.load(sys.stdin)
    unit, task = request["unit"], request["task"]
    for entry in reversed(request.get("sys_path", [])):
        if entry not in sys.path:
            sys.path.insert(0, entry)

    from rstck.errors import SetupError
    from rstck.run_api import Run
    from rstck.settings import Settings

    try:
        subject, declaration = load_declared(unit, task.get("adapter"))
    except SetupError as exc:
        send({"setup_error": str(exc)})
        return 0
    module = sys.modules.get(unit["subject"].partition(":")[0])
    settings = Settings(**task["knobs"], explicit=frozenset(task["knobs"]))
    run = Run(unit["verification"], subject, settings,
              rules=(declaration.rules if declaration is not None and declaration.rules else task["rules"]),
              skip_rules=task["skip_rules"], overrides=declaration.settings if declaration is not None else None,
              skipped=declaration.skip_rules if declaration is not None else None)
    send({"tests": [t.name for t in run.tests], "pid": os.getpid(), "origin": getattr(module, "__file__", None)})
    # The unit's seed drives the subject's own randomness, so a rerun with it takes the same path.
    random.seed(unit["seed"])
    for result in run.results():
        send({"result": result.to_json(), "peak_mb": peak_mb()})
    send({"done": True})
    return 0


if __name__ == "__main__":
    code = main(sys.argv)
    sys.stdout.flush()
    sys.stderr.flush()
    # Threads a hostile subject left behind must not keep this process alive.
    os._exit(code)
