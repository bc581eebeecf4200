"""Checking a results file against ``rstck/schemas/rs-tck-results-1.schema.json``, without jsonschema.

Ingest reads files from anyone's CI; one with ``subjects`` a string or ``settings`` a list must
be rejected with its reason, not crash the call. The TCK needs no dependency beyond pytest, so
this checks the keywords that schema uses (type, required, properties, additionalProperties,
items, enum, const, pattern, minimum, $ref); a test keeps it equal to jsonschema on that schema.
"""

from __future__ import annotations

import json
import re
from functools import cache
from importlib import resources
from typing import Any

SCHEMA_FILE = "rs-tck-results-1.schema.json"

_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,), "array": (list,), "string": (str,), "boolean": (bool,), "null": (type(None),),
    "integer": (int,), "number": (int, float),
}


@cache
def results_schema() -> dict[str, Any]:
    text = resources.files("rstck").joinpath("schemas", SCHEMA_FILE).read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


def _is(value: Any, kind: str) -> bool:
    if kind in ("integer", "number") and isinstance(value, bool):
        return False
    if kind == "integer" and isinstance(value, float):
        return value.is_integer()
    return isinstance(value, _TYPES[kind])


def _where(path: str) -> str:
    return path or "the document"


def errors(value: Any, schema: dict[str, Any] | None = None, path: str = "", root: dict[str, Any] | None = None,
           limit: int = 5) -> list[str]:
    """Why ``value`` does not match ``schema`` (the results schema by default); empty when it does."""
    root = root or results_schema()
    schema = root if schema is None else schema
    found: list[str] = []

    def check(v: Any, s: dict[str, Any], p: str) -> None:
        if len(found) >= limit:
            return
        if "$ref" in s:
            ref = s["$ref"]
            target: Any = root
            for part in ref.removeprefix("#/").split("/"):
                target = target[part]
            check(v, target, p)
            return
        kinds = s.get("type")
        if kinds is not None:
            kinds = [kinds] if isinstance(kinds, str) else kinds
            if not any(_is(v, k) for k in kinds):
                found.append(f"{_where(p)} must be {' or '.join(kinds)}, got {type(v).__name__} {_short(v)}")
                return
        if "const" in s and v != s["const"]:
            found.append(f"{_where(p)} must be {s['const']!r}, got {_short(v)}")
        if "enum" in s and v not in s["enum"]:
            found.append(f"{_where(p)} must be one of {', '.join(map(str, s['enum']))}, got {_short(v)}")
        if "pattern" in s and isinstance(v, str) and not re.search(s["pattern"], v):
            found.append(f"{_where(p)} {_short(v)} does not match {s['pattern']}")
        if "minimum" in s and isinstance(v, int | float) and not isinstance(v, bool) and v < s["minimum"]:
            found.append(f"{_where(p)} must be >= {s['minimum']}, got {v}")
        if isinstance(v, dict):
            for key in s.get("required", []):
                if key not in v:
                    found.append(f"{_where(p)} lacks the required field {key!r}")
            props = s.get("properties", {})
            extra = s.get("additionalProperties", True)
            for key, item in v.items():
                sub = f"{p}.{key}" if p else key
                if key in props:
                    check(item, props[key], sub)
                elif extra is False:
                    found.append(f"{_where(p)} has an unknown field {key!r}")
                elif isinstance(extra, dict):
                    check(item, extra, sub)
        if isinstance(v, list) and isinstance(s.get("items"), dict):
            for i, item in enumerate(v):
                check(item, s["items"], f"{p}[{i}]")

    check(value, schema, path)
    return found[:limit]


def _short(value: Any) -> str:
    text = json.dumps(value) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
