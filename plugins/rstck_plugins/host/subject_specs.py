"""The run's subjects: named by options (several each, ``ID=MODULE:ATTR``) or declared in tests.

A library verifies many subjects in one run, so a subject option may be given several times,
and the environment and the ini take several values (separated by spaces, commas or lines).
Each subject gets a key: its id, or, for the one unnamed subject of a kind, the kind's name
(``publisher``), as runs of one subject always had. Whatever names a subject, it is loaded the
same way (``build``): its record made, its declaration's settings applied, its factory called
once before any test, so bad input stops the run with one line naming it.
"""

from __future__ import annotations

import importlib
import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING
from typing import Any

import pytest
from rstck.errors import SetupError
from rstck.run_api import settings_for
from rstck.settings import Settings
from rstck.subjects import FAILED_ROLE
from rstck.subjects import smoke_check
from rstck.subjects import smoke_check_subject
from rstck.subjects import subject_option
from rstck.subjects import subject_record
from rstck.verifications import VERIFICATIONS

from ..state import SubjectEntry

if TYPE_CHECKING:
    from rstck.pytest import Declaration

FAILED_DEST = "rs_failed_publisher"
FAILED_OPTION = subject_option(FAILED_ROLE)
_SPLIT = re.compile(r"[\s,]+")


@dataclass(frozen=True)
class Named:
    """One subject an option, the environment or the ini names."""

    kind: str
    id: str | None
    spec: str
    source: str


def env_name(dest: str) -> str:
    """The environment variable of a subject option: ``rs_publisher`` -> ``RS_TCK_PUBLISHER``."""
    return "RS_TCK_" + dest.removeprefix("rs_").upper()


def given(config: pytest.Config, dest: str) -> tuple[list[str], str]:
    """The values one subject option has, and where from: command line > environment > ini."""
    raw = config.getoption(dest, None)
    if raw:
        values = raw if isinstance(raw, list) else [raw]
        return [str(v).strip() for v in values if str(v).strip()], "command line"
    env = os.environ.get(env_name(dest))
    if env and env.strip():
        return [v for v in _SPLIT.split(env.strip()) if v], "environment"
    ini = config.getini(dest)
    if ini:
        text = "\n".join(ini) if isinstance(ini, list) else str(ini)
        return [v for v in _SPLIT.split(text.strip()) if v], "ini"
    return [], ""


def split_id(value: str, option: str) -> tuple[str | None, str]:
    """``ID=MODULE:ATTR`` as ``(ID, MODULE:ATTR)``; a bare ``MODULE:ATTR`` has no id."""
    head, eq, rest = value.partition("=")
    if not eq:
        return None, value
    if not head.isidentifier():
        raise SetupError(f"{option}={value}: subject id {head!r} is not a valid identifier "
                         "(letters, digits and _, not first a digit)")
    return head, rest


def named_subjects(config: pytest.Config) -> tuple[list[Named], dict[str | None, str], str]:
    """Every subject the options name, the failed publishers by subject id (None: unnamed), and
    where the failed publishers came from."""
    out: list[Named] = []
    for verification in VERIFICATIONS.values():
        values, source = given(config, verification.dest)
        unnamed = [v for v in values if "=" not in v]
        for value in values:
            ident, spec = split_id(value, verification.option)
            if ident is None and len(unnamed) > 1:
                ident = _default_id(spec, verification.option)
            out.append(Named(verification.name, ident, spec, source))
    failed: dict[str | None, str] = {}
    values, failed_source = given(config, FAILED_DEST)
    for value in values:
        ident, spec = split_id(value, FAILED_OPTION)
        if ident in failed:
            raise SetupError(f"{FAILED_OPTION} given twice for {ident or 'the publisher'}: "
                             f"{failed[ident]} and {spec}")
        failed[ident] = spec
    return out, failed, failed_source


def _default_id(spec: str, option: str) -> str:
    """The id of one of several unnamed subjects of a kind: its attribute's last name."""
    name = spec.rpartition(":")[2].rpartition(".")[2]
    if not name.isidentifier():
        raise SetupError(f"{option}={spec}: several subjects of this kind need ids: give it as ID={spec}")
    return name


def declaration_of(obj: Any) -> Declaration | None:
    """``obj`` as a ``rstck.pytest`` declaration, or None; ``rstck.pytest`` as the test modules
    imported it (see ``pytest_plugin.declared_module``). Only a declaration (marked) or a class can
    be one, so a run naming a factory does not import that module."""
    module: Any = sys.modules.get("rstck.pytest")
    if module is None:
        if not (getattr(obj, "__rstck_declaration__", None) is True or isinstance(obj, type)):
            return None
        module = importlib.import_module("rstck.pytest")
    declared: Declaration | None = module.declaration_of(obj)
    return declared


def load_named(config: pytest.Config, settings: Settings, resolve: Callable[[str, str], Any]) -> list[SubjectEntry]:
    """Load every subject the options name, checked; SetupError on the first bad one."""
    named, failed, _ = named_subjects(config)
    publishers = [n for n in named if n.kind == "publisher"]
    for ident, spec in failed.items():
        if not publishers:
            raise SetupError(f"{FAILED_OPTION} needs --rs-publisher as well")
        if ident is None and len(publishers) > 1:
            raise SetupError(f"{FAILED_OPTION}={spec}: several publishers are given; name the one it "
                             f"belongs to: {FAILED_OPTION}=ID={spec}")
        if ident is not None and not any(p.id == ident for p in publishers):
            raise SetupError(f"{FAILED_OPTION}={ident}={spec}: no --rs-publisher has the id {ident!r}")
    entries: list[SubjectEntry] = []
    seen: dict[str, Named] = {}
    for n in named:
        key = n.id or n.kind
        if key in seen:
            raise SetupError(f"two subjects with the id {key!r}: {seen[key].spec} and {n.spec}; "
                             "give each its own, as ID=MODULE:ATTR")
        seen[key] = n
        option = VERIFICATIONS[n.kind].option
        obj = resolve(n.spec, n.kind if n.kind == "publisher" else option.removeprefix("--rs-").replace("-", "_"))
        declaration = declaration_of(obj)
        if declaration is not None:
            declaration.check()
            if declaration.kind != n.kind:
                raise SetupError(f"{option}={n.spec}: declares a {declaration.kind} verification, not {n.kind}")
            obj = declaration.subject if not isinstance(declaration.subject, str) else \
                resolve(declaration.subject, n.kind)
        failed_spec = failed.get(n.id) if n.id in failed else (failed.get(None) if n.kind == "publisher" else None)
        failed_obj = resolve(failed_spec, "failed_publisher") if failed_spec else None
        entries.append(build(key, n.kind, obj, failed_obj, spec=n.spec, failed_spec=failed_spec,
                             source=n.source, declaration=declaration, settings=settings))
    return entries


def build(key: str, kind: str, obj: Any, failed: Any, *, spec: str, failed_spec: str | None, source: str,
          declaration: Declaration | None, settings: Settings) -> SubjectEntry:
    """The subject record of ``obj`` (a factory or a record), checked by calling its factory once."""
    verification = VERIFICATIONS[kind]
    if declaration is not None and declaration.failed is not None and failed is None:
        failed = declaration.failed
    subject = subject_record(kind, obj, failed, spec, verification.load_subject)  # as a worker process makes it
    applied = run_settings(subject, declaration, settings)
    if kind == "publisher":
        smoke_check(subject, timeout=max(5.0, applied.timeout), elements=min(1, applied.max_elements),
                    loop=applied.loop)
    else:
        smoke_check_subject(subject, verification.option, timeout=max(5.0, applied.timeout), loop=applied.loop)
    return SubjectEntry(key, kind, subject, source, spec, failed_spec, declaration)


def run_settings(subject: Any, declaration: Declaration | None, settings: Settings) -> Settings:
    """The settings one subject runs with: the run's, what its record declares, its declaration's own."""
    applied = settings_for(subject, settings)
    return declaration.apply(applied) if declaration is not None else applied
