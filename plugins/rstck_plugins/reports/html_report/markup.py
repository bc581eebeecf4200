"""Escaping for the report: the one door through which subject text enters the page.

Every string that may come from the subject (element reprs, exception texts, thread names,
labels) passes through ``esc``: a subject that emits markup must not be able to inject it into
the page, its attributes or its SVG.
"""

from __future__ import annotations

import html
import re

from ..verdicts import LABELS

_UNSAFE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")


def esc(value: object) -> str:
    """Text or attribute value, escaped; control characters and lone surrogates replaced."""
    return html.escape(_UNSAFE.sub("\ufffd", str(value)), quote=True)


def anchor(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "-", text)


def badge(verdict: str, known: bool = False) -> str:
    label = LABELS.get(verdict, verdict)
    if known:
        return f'<span class="badge v-{esc(verdict)} known" title="listed in the baseline">{esc(label)} · known</span>'
    return f'<span class="badge v-{esc(verdict)}">{esc(label)}</span>'


def clip(text: str, chars: int) -> str:
    chars = max(chars, 4)
    return text if len(text) <= chars else text[: chars - 1] + "…"
