"""One failure, as the report's article: what was expected, what was seen, and the trace."""

from __future__ import annotations

import re
from dataclasses import dataclass

from rstck.results import TestResult
from rstck.rules import RULES

from ..verdicts import verdict as _verdict
from .markup import badge
from .markup import esc
from .timeline import LEGEND
from .timeline import trace_svg

_REASON_PREFIXES = ("optional, not supported: ", "not applicable: ", "untested: ", "deselected: ",
                    "optional unsupported: ")
_DETAIL_KEY = re.compile(r"\n  (check|rule|spec|subject|raised|also|test|trace) *: ")
_HEADLINE = re.compile(r"^\[(?:rule (?P<rule>\d+\.\d+)|sanity|setup)\] (?:expected (?P<expected>.*?); observed "
                       r"(?P<observed>.*))?", re.DOTALL)


@dataclass
class _Failure:
    """A failure message split into the parts the report shows separately."""

    headline: str
    cited_rule: str | None
    expected: str
    observed: str
    hint: str
    details: str  # the message without its trace listing
    trace_text: str


def _parse_message(message: str) -> _Failure:
    match = _DETAIL_KEY.search(message)
    headline = message[: match.start()] if match else message
    parsed = _HEADLINE.match(headline)
    cited = parsed.group("rule") if parsed else None
    expected = (parsed.group("expected") or "") if parsed else ""
    observed = (parsed.group("observed") or "") if parsed else ""
    hint = ""
    hint_match = re.search(r"\n  check   : (.*)", message)
    if hint_match:
        hint = hint_match.group(1)
    trace_at = message.find("\n  trace   : ")
    details = message if trace_at < 0 else message[:trace_at]
    trace_text = "" if trace_at < 0 else message[trace_at + 1:]
    return _Failure(headline, cited, expected, observed, hint, details, trace_text)


def cited_rule(message: str) -> str | None:
    """The rule a failure message says was broken (``[rule 1.1] ...``), or None."""
    return _parse_message(message).cited_rule if message.startswith("[") else None


def reason_line(r: TestResult) -> str:
    """The one line a table cell shows: the skip reason or the failure's headline."""
    text = r.message
    for prefix in _REASON_PREFIXES:
        if text.startswith(prefix):
            text = text[len(prefix):]
            break
    head = _parse_message(text).headline if text.startswith("[") else text.split("\n", 1)[0]
    return head if len(head) <= 400 else head[:399] + "…"


def failure_article(r: TestResult, anchor: str) -> str:
    parsed = _parse_message(r.message)
    rule = RULES.get(r.rule or "")
    known = r.baseline == "known"
    kind = "error" if _verdict(r) == "error" else "failed"
    facts: list[tuple[str, str, str]] = []
    if rule is not None:
        facts.append(("rule", "", (f'<a href="{esc(rule.url)}">{esc(rule.id)}</a> '
                                   f"({esc(rule.strength.value)}) {esc(rule.summary)}")))
    else:
        facts.append(("rule", "", "sanity check of the factory"))
    cited = RULES.get(parsed.cited_rule or "")
    if cited is not None and (rule is None or cited.id != rule.id):
        facts.append(("broke rule", "observed",
                      (f'<a href="{esc(cited.url)}">{esc(cited.id)}</a> ({esc(cited.strength.value)}) '
                      f"{esc(cited.summary)}, while verifying the rule above")))
    facts.append(("test", "", (f'<code>{esc(r.verification)}::{esc(r.test)}</code> ({esc(r.level)}, '
                              f"{r.duration_s * 1000:.1f} ms)")))
    if r.subject:
        facts.append(("subject", "", esc(r.subject)))
    if parsed.expected:
        facts.append(("expected", "expected", esc(parsed.expected)))
        facts.append(("observed", "observed", esc(parsed.observed)))
    else:
        facts.append(("problem", "observed", esc(parsed.headline)))
    if parsed.hint:
        facts.append(("check", "", esc(parsed.hint)))
    if known:
        facts.append(("baseline", "", "a known deviation, listed in the baseline: it does not fail the run"))
    dl = "".join(f'<dt>{esc(k)}</dt><dd class="{cls}">{v}</dd>' for k, cls, v in facts)
    title = f"rule {r.rule}" if r.rule else "sanity"
    total = f"{r.trace_total:,} record{'s' if r.trace_total != 1 else ''}"
    if r.trace_total > len(r.trace):
        total += f", {len(r.trace):,} kept"
    raw = (f"<details><summary>the trace as text</summary><pre>{esc(parsed.trace_text)}</pre></details>"
           if parsed.trace_text else "")
    return (
        f'<article class="failure {kind}{" known" if known else ""}" id="{anchor}">'
        f"<header>{badge(_verdict(r), known)}<h3>{esc(title)} · {esc(r.verification)} · "
        f'<span class="mono">{esc(r.test)}</span></h3></header>'
        f'<dl class="facts">{dl}</dl>'
        f"<details><summary>the full message</summary><pre>{esc(parsed.details)}</pre></details>"
        f'<h4>Signal trace <span class="muted">({esc(total)})</span></h4>{LEGEND}'
        f'<div class="tracebox">{trace_svg(r.trace, r.trace_total, f"{r.verification}::{r.test}")}</div>'
        f"{raw}</article>"
    )
