"""Rule x context: for each rule, the calling contexts in which it can be broken and what covers each.

A rule an implementation keeps when called one way can break when called another: from the
test thread or from inside a signal, on another thread, with one element or many at once,
before or after a terminal signal, for the first subscriber or a later one, in a few calls or
in hundreds. Each row names the tests that create that context, as each test declares at its
registration (``covers=(Cover("3.8", "on_next"), ...)``); ``fuzz`` marks a context only the
randomised fuzzer reaches, and ``gap`` one nothing can observe, with the reason: those, which
name no test, are this module's ``RULE_CELLS``. Rendered into ``docs/verifications.md``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from dataclasses import replace

#: The contexts, in the order the table lists them.
CONTEXTS: dict[str, str] = {
    "test": "a call from the test thread, one at a time",
    "on_subscribe": "a call made re-entrantly from inside on_subscribe",
    "on_next": "a call made re-entrantly from inside on_next",
    "thread": "signals or calls on another thread, or racing one",
    "bulk": "several elements at once, or unbounded demand",
    "terminal": "around a terminal signal (before it, after it, or instead of elements)",
    "later": "a later subscriber or a second subscription",
    "many": "hundreds of calls in a row",
}

#: Shared phrases for the checks the probes and the TCK's upstream make in every test.
EVERY_PUBLISHER_TEST = ("every publisher test: the probe checks each signal as it arrives, on the thread "
                        "that delivers it")
EVERY_SUBSCRIBER_TEST = ("every subscriber test: the TCK's upstream checks each call as it is made, on the "
                         "caller's thread")


@dataclass(frozen=True)
class Cover:
    """One calling context of one rule that a test creates, as the test declares it (``covers=``)."""

    rule: str
    context: str
    #: How the test creates it, when its name does not say.
    note: str = ""

    def __post_init__(self) -> None:
        if self.context not in CONTEXTS:
            raise ValueError(f"unknown context {self.context!r}; valid contexts are {', '.join(CONTEXTS)}")


@dataclass(frozen=True)
class Cell:
    """What covers one rule in one context: tests (``verification:name``), or a reason."""

    rule: str
    context: str
    tests: tuple[str, ...] = ()
    fuzz: str = ""
    gap: str = ""
    note: str = ""


#: What is known of a rule's context apart from the tests that create it: a context only the
#: fuzzer reaches, one nothing can observe (a gap, with the reason), or the checks every test
#: makes. The tests declare their own contexts (``Cover``); ``cells`` merges the two.
RULE_CELLS: tuple[Cell, ...] = (
    Cell("1.3", "terminal", fuzz="an on_complete racing the last on_next at a random moment"),
    Cell("1.7", "thread", note=EVERY_PUBLISHER_TEST),
    Cell("1.8", "bulk", gap="a finite stream shorter than after_cancel_limit that ignores cancel() ends with "
         "on_complete in time, like a conforming batch in flight; with bounded demand rule 3.12's "
         "test still catches it"),
    Cell("1.10", "later", gap="an obligation of whoever calls subscribe(); the TCK never subscribes a "
         "subscriber twice"),
    Cell("2.2", "thread", gap="a recommendation judged by the subscriber itself; a signal method that "
         "blocks is failed in every test by the watchdog"),
    Cell("2.3", "thread", note=EVERY_SUBSCRIBER_TEST + "; the flag is per thread, so a worker's call is not "
         "mistaken for one inside the signal"),
    Cell("3.1", "thread", gap="who holds a subscription cannot be seen from outside; overlapping calls are "
         "rule 2.7's"),
    Cell("3.4", "test", gap="timeliness cannot be told apart from the synchronous delivery rule 3.10 allows; "
         "a request() that blocks is failed by the watchdog"),
    Cell("3.9", "thread", note=EVERY_SUBSCRIBER_TEST + " (a subscriber's non-positive request)"),
    Cell("3.14", "test", gap="a permission: whether a publisher shuts down is its own choice"),
)


def cells(tests: Iterable[tuple[str, str, tuple[Cover, ...]]]) -> list[Cell]:
    """The table's cells: each (verification, test name, its covers) merged with ``RULE_CELLS``."""
    merged: dict[tuple[str, str], Cell] = {}
    for verification, name, covers in tests:
        for cover in covers:
            cell = merged.get((cover.rule, cover.context), Cell(cover.rule, cover.context))
            merged[(cover.rule, cover.context)] = replace(
                cell, tests=(*cell.tests, f"{verification}:{name}"), note=_joined(cell.note, cover.note))
    for extra in RULE_CELLS:
        cell = merged.get((extra.rule, extra.context), Cell(extra.rule, extra.context))
        merged[(extra.rule, extra.context)] = replace(
            cell, fuzz=extra.fuzz, gap=extra.gap, note=_joined(cell.note, extra.note))
    return list(merged.values())


def _joined(note: str, more: str) -> str:
    return "; ".join(n for n in (note, more) if n)


def _cover(cell: Cell) -> str:
    parts = [f"`{t.split(':', 1)[1]}` ({t.split(':', 1)[0]})" for t in cell.tests]
    if cell.note:
        parts.append(cell.note)
    if cell.fuzz:
        parts.append(f"**fuzz**: {cell.fuzz}")
    if cell.gap:
        parts.append(f"**gap**: {cell.gap}")
    return "; ".join(parts)


def markdown(cells: list[Cell]) -> str:
    """The rule x context table of ``cells`` (see ``cells``), and the gaps with their reasons."""
    from ..rules import RULES

    out = [
        "## Rule x context",
        "",
        "Where each rule can be broken, and what creates that context. Contexts: "
        + "; ".join(f"*{k}*: {v}" for k, v in CONTEXTS.items()) + ".",
        "**fuzz** marks a context only the randomised fuzzer reaches; **gap** one no test can",
        "observe, with the reason. Generated from what each test declares it covers, and `rstck._internal.matrix`.",
        "",
        "| rule | context | covered by |",
        "|---|---|---|",
    ]
    rules, contexts = list(RULES), list(CONTEXTS)
    ordered = sorted(cells, key=lambda c: (rules.index(c.rule), contexts.index(c.context)))
    out += [f"| {cell.rule} | {cell.context} | {_cover(cell)} |" for cell in ordered]
    gaps = [c for c in ordered if c.gap or (c.fuzz and not c.tests)]
    out += ["", "### Gaps", ""]
    for cell in gaps:
        reason = cell.gap or f"reached only by the fuzzer: {cell.fuzz}"
        out.append(f"- {cell.rule}, {cell.context}: {reason}")
    return "\n".join(out)
