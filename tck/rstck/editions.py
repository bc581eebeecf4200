"""Editions of the specification: their own rule numbering, mapped to the JVM 1.0.1 ids both ways.

The kit's probes and verifications speak the JVM 1.0.1 rule ids (the normative edition). An
edition is one record here, ``Edition``, as a verification kind is one ``Verification``: its
rule table (each row one rule of the edition with the JVM rule it restates, or ``None`` for a
rule of its own), the JVM rules it has no counterpart for and those it keeps only in part, with
the reasons, and the verification kinds it runs. Everything else is derived from the records:
the translation of results, the rule listings, the terminal and HTML labels and the rule map of
docs/editions.md. Which tests an edition leaves out each test declares (``left_out_of``);
docs/architecture.md has the recipe for adding one.

Inside a run, a rule of the edition's own (``rs`` 1.11) has the internal id ``rs:1.11`` so it can
never be confused with the JVM rule of the same number; results show the edition's own ids, with
the JVM id beside them (``jvm_rule``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from dataclasses import field
from dataclasses import replace
from pathlib import Path

from .results import Failure
from .results import TestResult
from .rules import RULES
from .rules import SPEC_URL
from .rules import Rule
from .rules import Strength
from .rules import add_edition_rules
from .rules import rule as lookup_rule

#: The edition the kit verifies unless told otherwise: the normative one.
DEFAULT = "jvm-1.0.1"
RS_SPEC_URL = "https://github.com/per-gron/rs/blob/master/doc/specification.md"

S = Strength

#: One rule of an edition: (its id, the JVM 1.0.1 id it restates or None, keyword, what it asks
#: in our words for the Python binding).
Row = tuple[str, str | None, Strength, str]

#: The ``rs`` (C++) edition, rule by rule.
_RS_TABLE: tuple[Row, ...] = (
    ("1.1", "1.1", S.MUST, "a publisher never signals more on_next than the subscriber requested in total"),
    ("1.2", "1.2", S.MAY, "a publisher may signal fewer elements than requested and then terminate"),
    ("1.3", "1.3", S.MUST, "signals to a subscriber are serial: never concurrent, even across threads"),
    ("1.4", "1.4", S.MUST, "a publisher that fails signals on_error"),
    ("1.5", "1.5", S.MUST, "a publisher whose finite stream ends signals on_complete"),
    ("1.6", "1.6", S.MUST, "after on_error or on_complete the subscription counts as cancelled"),
    ("1.7", "1.7", S.REQUIRED, "no signal follows a terminal on_error or on_complete"),
    ("1.8", "1.8", S.MUST, "once a subscription is cancelled (or dropped), its subscriber eventually stops being signalled"),
    ("1.9", "1.9", S.MUST, "subscribe returns (the subscription) normally; rejection is signalled with on_error"),
    ("1.10", "1.11", S.MAY, "a publisher may support several subscribers, unicast or multicast as it decides"),
    ("1.11", None, S.MUST, "subscriptions keep working after the publisher object is dropped"),
    ("2.1", "2.1", S.MUST, "a subscriber signals demand with request(n) to receive on_next"),
    ("2.2", "2.2", S.RECOMMENDED, "a subscriber whose processing would slow its publisher dispatches signals asynchronously"),
    ("2.3", "2.3", S.MUST_NOT, "on_complete and on_error call no method of the subscription or the publisher"),
    ("2.4", "2.4", S.MUST, "after on_complete or on_error the subscriber considers its subscription cancelled"),
    ("2.5", "2.6", S.MUST, "a subscriber cancels (or drops) a subscription it no longer needs"),
    ("2.6", "2.7", S.MUST, "calls on a subscription come from one thread or are externally synchronised"),
    ("2.7", "2.8", S.MUST, "a subscriber is prepared for on_next after cancelling or dropping, while demand was pending"),
    ("2.8", "2.9", S.MUST, "a subscriber is prepared for on_complete with or without a preceding request"),
    ("2.9", "2.10", S.MUST, "a subscriber is prepared for on_error with or without a preceding request"),
    ("2.10", "2.11", S.MUST, "calls to a subscriber's signal methods happen-before the processing of those signals"),
    ("2.11", "2.13", S.MUST, "on_* methods return normally"),
    ("3.1", "3.1", S.MUST, "request, cancel and dropping the subscription only happen inside the subscriber's context"),
    ("3.2", "3.2", S.MUST, "a subscription allows request to be called synchronously from on_next"),
    ("3.3", "3.3", S.MUST, "request places an upper bound on synchronous recursion between publisher and subscriber"),
    ("3.4", "3.4", S.SHOULD, "request returns in a timely manner"),
    ("3.5", "3.5", S.MUST, "cancel and dropping the subscription return in a timely manner"),
    ("3.6", "3.6", S.MUST, "after cancel, further request calls are no-ops"),
    ("3.7", "3.7", S.MUST, "after cancel, further cancel calls are no-ops"),
    ("3.8", "3.8", S.MUST, "while not cancelled, request(n) registers n more elements to be produced"),
    ("3.9", "3.10", S.MAY, "while not cancelled, request may call on_next synchronously"),
    ("3.10", "3.11", S.MAY, "while not cancelled, request may call on_complete or on_error synchronously"),
    ("3.11", "3.12", S.MUST, "cancel, or dropping the subscription, asks the publisher to eventually stop signalling"),
    ("3.12", "3.13", S.MUST, "cancel, or dropping the subscription, makes the publisher eventually drop its references to the subscriber"),
    ("3.13", "3.14", S.MAY, "cancel may shut a stateful publisher down when no other subscription exists"),
    ("3.14", "3.15", S.MUST, "cancel returns normally"),
    ("3.15", "3.16", S.MUST, "request returns normally"),
    ("3.16", "3.17", S.MUST, "a subscription supports unbounded request calls and a total demand up to 2**63-1"),
)

#: JVM 1.0.1 rules the ``rs`` edition has no counterpart for, and why.
_RS_NOT_APPLICABLE: dict[str, str] = {
    "1.10": "the publisher takes the subscriber over (C++: moved in), so the same subscriber is never subscribed twice",
    "2.5": "there is no on_subscribe: a subscriber is never handed a second subscription",
    "2.12": "there is no on_subscribe",
    "3.9": "no rule for request(n) with n <= 0: the binding takes n >= 1 (and n >= 2**63-1 as unbounded)",
    "4.1": "the edition has no processor concept",
    "4.2": "the edition has no processor concept",
}

#: JVM rules whose counterpart keeps only part of them, and which part is dropped.
_RS_PARTLY: dict[str, str] = {
    "1.9": "there is no on_subscribe to call first, and no None subscriber to refuse",
    "2.13": "there is no None argument to refuse",
    "3.2": "there is no on_subscribe to request from",
}


@dataclass(frozen=True)
class EditionRule(Rule):
    """A rule of an edition: its own id, and the JVM rule it restates (None if its own)."""

    own_id: str = ""
    jvm_id: str | None = None
    edition: str = ""
    link: str = ""

    @property
    def section(self) -> int:
        return int(self.own_id.split(".")[0])

    @property
    def url(self) -> str:
        return self.link

    @property
    def sort_key(self) -> tuple[int, int]:
        major, minor = self.own_id.split(".")
        return int(major), int(minor)

    def label(self) -> str:
        """``3.11 (JVM 3.12)``, ``1.11 (rs only)``: the edition's id with the JVM id beside it."""
        return f"{self.own_id} (JVM {self.jvm_id})" if self.jvm_id else f"{self.own_id} ({self.edition} only)"


@dataclass(frozen=True)
class Edition:
    """One edition of the specification, as the kit runs and reports it: one record each."""

    #: The ``--rs-edition`` value, and the ``edition`` field of results.
    name: str
    title: str
    #: Where its text is: a rule's link is ``{spec_url}#{its id}``.
    spec_url: str
    #: Its rules, in its order (``Row``).
    table: tuple[Row, ...]
    #: JVM id -> why the edition has no counterpart.
    not_applicable: dict[str, str] = field(default_factory=dict)
    #: JVM id -> the part of it the edition leaves out.
    partly: dict[str, str] = field(default_factory=dict)
    #: The verification kinds the kit runs in this edition (``rstck.verifications.for_edition``).
    kinds: tuple[str, ...] = ()
    #: Its rules by its own id, in its order, derived from ``table``.
    rules: dict[str, EditionRule] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        rules = {}
        for own, jvm, strength, summary in self.table:
            internal = jvm if jvm is not None else f"{self.name}:{own}"
            rules[own] = EditionRule(internal, strength, summary, own_id=own, jvm_id=jvm, edition=self.name,
                                     link=f"{self.spec_url}#{own}")
        object.__setattr__(self, "rules", rules)

    def check(self) -> None:
        """Every JVM rule is mapped by the table or listed as not applicable, exactly once."""
        mapped = [jvm for _, jvm, _, _ in self.table if jvm is not None]
        dupes = {j for j in mapped if mapped.count(j) > 1}
        both = set(mapped) & set(self.not_applicable)
        missing = set(RULES) - set(mapped) - set(self.not_applicable)
        unknown = (set(mapped) | set(self.not_applicable) | set(self.partly)) - set(RULES)
        if dupes or both or missing or unknown:
            raise AssertionError(f"{self.name} rule map: duplicated {sorted(dupes)}, both {sorted(both)}, "
                                 f"missing {sorted(missing)}, unknown {sorted(unknown)}")

    @property
    def is_jvm(self) -> bool:
        return self.name == DEFAULT

    def internal_id(self, own_id: str) -> str:
        """The id the kit runs the rule under: the JVM id, or ``rs:1.11`` for a rule of its own."""
        jvm = self.rules[own_id].jvm_id
        return jvm if jvm is not None else f"{self.name}:{own_id}"

    def own_id(self, internal: str | None) -> str | None:
        """The edition's id of a rule the kit cites by JVM (or internal) id; None if it has none."""
        if internal is None:
            return None
        return _OWN[self.name].get(internal)

    def jvm_id(self, own_id: str) -> str | None:
        return self.rules[own_id].jvm_id

    def present(self, result: TestResult) -> TestResult:
        """``result`` with the edition's own rule ids, the JVM id kept beside each (``jvm_rule``)."""
        if self.is_jvm:
            return result
        failures = [self._failure(f) for f in result.failures]
        message = result.message
        for old, new in zip(result.failures, failures, strict=True):
            message = message.replace(old.headline(), new.headline(), 1)
            if old.rule is not None:
                message = message.replace(_rule_lines(lookup_rule(old.rule)), self._rule_lines(new), 1)
        return replace(result, rule=self.own_id(result.rule), jvm_rule=_jvm_part(result.rule),
                       failures=failures, message=message)

    def _failure(self, failure: Failure) -> Failure:
        return replace(failure, rule=self.own_id(failure.rule), jvm_rule=_jvm_part(failure.rule))

    def _rule_lines(self, failure: Failure) -> str:
        if failure.rule is None:
            jvm = RULES.get(failure.jvm_rule or "")
            why = self.not_applicable.get(failure.jvm_rule or "", "")
            return (f"rule    : JVM {failure.jvm_rule}, which the {self.name} edition does not have"
                    + (f" ({why})" if why else "") + (f"\n  spec    : {jvm.url}" if jvm else ""))
        own = self.rules[failure.rule]
        return (f"rule    : {own.label()} ({own.strength.value}) {own.summary}\n"
                f"  spec    : {own.url}" + (f" (JVM: {RULES[own.jvm_id].url})" if own.jvm_id else ""))


def _rule_lines(rule: Rule) -> str:
    """The rule lines of a failure message as the runner writes them (``one_rule._failure_lines``)."""
    return f"rule    : {rule.id} ({rule.strength.value}) {rule.summary}\n  spec    : {rule.url}"


def _jvm_part(internal: str | None) -> str | None:
    return internal if internal in RULES else None


#: Every edition the kit verifies against, by name: the normative one first.
EDITIONS: dict[str, Edition] = {
    e.name: e
    for e in (
        Edition(DEFAULT, "Reactive Streams for the JVM 1.0.1 (normative)", SPEC_URL,
                tuple((rid, rid, r.strength, r.summary) for rid, r in RULES.items()),
                kinds=("publisher", "subscriber_blackbox", "subscriber_whitebox", "processor")),
        Edition("rs", "the C++ rs edition (subscribe returns the subscription)", RS_SPEC_URL, _RS_TABLE,
                not_applicable=_RS_NOT_APPLICABLE, partly=_RS_PARTLY, kinds=("publisher",)),
    )
}
NAMES: tuple[str, ...] = tuple(EDITIONS)

#: Per edition: internal id -> the edition's own id.
_OWN: dict[str, dict[str, str]] = {
    name: {r.id: own for own, r in edition.rules.items()} for name, edition in EDITIONS.items()
}
#: The rules of the editions' own, by internal id (``rs:1.11``), for ``rules.rule``.
EDITION_ONLY: dict[str, Rule] = {
    r.id: r for e in EDITIONS.values() for r in e.rules.values() if r.jvm_id is None
}
add_edition_rules(EDITION_ONLY)


def edition(name: str) -> Edition:
    """The edition named ``name``, with a one-line error listing the valid names on a miss."""
    try:
        return EDITIONS[name]
    except KeyError:
        raise ValueError(f"unknown edition {name!r}; valid editions are {', '.join(NAMES)}") from None


def check_tables() -> None:
    """Every edition's table maps each JVM rule, or lists it as not applicable, exactly once."""
    for ed in EDITIONS.values():
        ed.check()


MAP_BEGIN = "<!-- rs-rule-map:begin (generated by `python -m rstck rules --update-map docs/editions.md`) -->"
MAP_END = "<!-- rs-rule-map:end -->"


def update_doc(path: Path) -> bool:
    """Rewrite the rule map between the markers of ``path``; True if it changed."""
    text = path.read_text(encoding="utf-8")
    start, end = text.index(MAP_BEGIN), text.index(MAP_END) + len(MAP_END)
    updated = text[:start] + f"{MAP_BEGIN}\n{rule_map_markdown()}\n{MAP_END}" + text[end:]
    if updated != text:
        path.write_text(updated, encoding="utf-8")
    return updated != text


def rule_map_markdown(name: str = "rs") -> str:
    """Edition ``name``'s rule map to JVM 1.0.1, both directions, as docs/editions.md shows it."""
    rs = EDITIONS[name]
    lines = [f"| {name} rule | keyword | JVM 1.0.1 rule | what it asks (our words) |", "|---|---|---|---|"]
    for own, r in rs.rules.items():
        jvm = f"[{r.jvm_id}]({RULES[r.jvm_id].url})" if r.jvm_id else "- (rs only)"
        note = f" (the JVM rule's other part does not apply: {rs.partly[r.jvm_id]})" if r.jvm_id in rs.partly else ""
        lines.append(f"| [{own}]({r.url}) | {r.strength.value} | {jvm} | {r.summary}{note} |")
    lines += ["", f"| JVM 1.0.1 rule | {name} rule |", "|---|---|"]
    for rid in RULES:
        mapped = rs.own_id(rid)
        lines.append(f"| [{rid}]({RULES[rid].url}) | {mapped or 'not applicable: ' + rs.not_applicable[rid]} |")
    return "\n".join(lines)


def rule_ids(name: str, ids: list[str], option: str) -> list[str]:
    """``--rs-rules`` ids of edition ``name`` as the kit runs them; ValueError naming the bad ones."""
    ed = edition(name)
    unknown = [i for i in ids if i not in ed.rules and i not in ("sanity", "fuzz")]
    if unknown or not ids:
        raise ValueError(
            f"{option}: unknown {name} rule id(s) {', '.join(unknown) or repr(ids)}; valid ids are "
            f"{', '.join(ed.rules)}, 'sanity' and 'fuzz'"
        )
    return [i if i in ("sanity", "fuzz") else ed.internal_id(i) for i in ids]


def unsupported_kinds(name: str, subjects: Iterable[str]) -> str:
    """The one-line error for subjects edition ``name`` has no verification for, or ""."""
    ed = edition(name)
    extra = [kind for kind in subjects if kind not in ed.kinds]
    if not extra:
        return ""
    return (f"--rs-edition={name} verifies {', '.join(ed.kinds)} subjects only; "
            f"got {', '.join(extra)} (docs/editions.md)")


def display_rules(name: str) -> dict[str, Rule]:
    """The rules of edition ``name`` as reports list them: keyed and shown by the edition's own id,
    the JVM id beside it in the summary, linked to the edition's text."""
    ed = edition(name)
    if ed.is_jvm:
        return dict(RULES)
    out: dict[str, Rule] = {}
    for own, r in ed.rules.items():
        beside = f"JVM {r.jvm_id}" if r.jvm_id else f"{ed.name} only"
        out[own] = EditionRule(own, r.strength, f"[{beside}] {r.summary}", own_id=own, jvm_id=r.jvm_id,
                               edition=ed.name, link=r.link)
    return out
