"""The rule text and the JVM parity table shown in docs/verifications.md keep their promises.

The rule text must be the specification's, word for word: the table below is a copy of each
rule's opening words and of a phrase only that rule has, taken from the 1.0.1 specification, so
that an entry pasted under the wrong id, cut short or reworded fails here. Every registered test
must declare where it stands against the JVM TCK, and every one that differs must say why.
"""

from __future__ import annotations

import re

from rstck._internal.parity import RELATIONS
from rstck._internal.parity import Parity
from rstck._internal.parity import missing
from rstck.generated_docs import verifications_markdown
from rstck.rules import RULES
from rstck.verifications import VERIFICATIONS

#: rule id -> (its first words, a phrase of its own), both verbatim from the specification.
SPEC_WORDS: dict[str, tuple[str, str]] = {
    "1.1": ("The total number of `onNext`", "MUST be less than or equal to the total number of elements requested"),
    "1.2": ("A `Publisher` MAY signal fewer `onNext` than requested", "by calling `onComplete` or `onError`."),
    "1.3": ("`onSubscribe`, `onNext`, `onError` and `onComplete` signaled", "use external synchronization."),
    "1.4": ("If a `Publisher` fails", "it MUST signal an `onError`."),
    "1.5": ("If a `Publisher` terminates successfully", "(finite stream) it MUST signal an `onComplete`."),
    "1.6": ("If a `Publisher` signals either", "MUST be considered cancelled."),
    "1.7": ("Once a terminal state has been signaled", "it is REQUIRED that no further signals occur."),
    "1.8": ("If a `Subscription` is cancelled", "MUST eventually stop being signaled."),
    "1.9": ("`Publisher.subscribe` MUST call `onSubscribe`", "it MUST throw a `java.lang.NullPointerException`"),
    "1.10": ("`Publisher.subscribe` MAY be called", "MUST be with a different `Subscriber` each time"),
    "1.11": ("A `Publisher` MAY support multiple", "decides whether each `Subscription` is unicast or multicast."),
    "2.1": ("A `Subscriber` MUST signal demand", "to receive `onNext` signals."),
    "2.2": ("If a `Subscriber` suspects", "it is RECOMMENDED that it asynchronously dispatches its signals."),
    "2.3": ("`Subscriber.onComplete()` and", "MUST NOT call any methods on the `Subscription` or the `Publisher`."),
    "2.4": ("`Subscriber.onComplete()` and", "MUST consider the Subscription cancelled after having received"),
    "2.5": ("A `Subscriber` MUST call `Subscription.cancel()`", "if it already has an active `Subscription`."),
    "2.6": ("A `Subscriber` MUST call `Subscription.cancel()`", "if the `Subscription` is no longer needed."),
    "2.7": ("A `Subscriber` MUST ensure", "take place from the same thread or provide for"),
    "2.8": ("A `Subscriber` MUST be prepared", "after having called `Subscription.cancel()`"),
    "2.9": ("A `Subscriber` MUST be prepared", "to receive an `onComplete` signal with or without"),
    "2.10": ("A `Subscriber` MUST be prepared", "to receive an `onError` signal with or without"),
    "2.11": ("A `Subscriber` MUST make sure", "happen-before the processing of the respective signals."),
    "2.12": ("`Subscriber.onSubscribe` MUST be called", "at most once for a given `Subscriber`"),
    "2.13": ("Calling `onSubscribe`, `onNext`, `onError` or `onComplete`",
             "the caller MUST raise this error condition"),
    "3.1": ("`Subscription.request` and `Subscription.cancel`", "MUST only be called inside of its `Subscriber` context."),
    "3.2": ("The `Subscription` MUST allow", "synchronously from within `onNext` or `onSubscribe`."),
    "3.3": ("`Subscription.request` MUST place", "an upper bound on possible synchronous recursion"),
    "3.4": ("`Subscription.request` SHOULD respect", "by returning in a timely manner."),
    "3.5": ("`Subscription.cancel` MUST respect", "MUST be idempotent and MUST be thread-safe."),
    "3.6": ("After the `Subscription` is cancelled", "additional `Subscription.request(long n)` MUST be NOPs."),
    "3.7": ("After the `Subscription` is cancelled", "additional `Subscription.cancel()` MUST be NOPs."),
    "3.8": ("While the `Subscription` is not cancelled", "MUST register the given number of additional elements"),
    "3.9": ("While the `Subscription` is not cancelled", "if the argument is <= 0."),
    "3.10": ("While the `Subscription` is not cancelled", "MAY synchronously call `onNext` on this (or other)"),
    "3.11": ("While the `Subscription` is not cancelled", "MAY synchronously call `onComplete` or `onError`"),
    "3.12": ("While the `Subscription` is not cancelled", "to eventually stop signaling its `Subscriber`."),
    "3.13": ("While the `Subscription` is not cancelled", "to eventually drop any references to the corresponding"),
    "3.14": ("While the `Subscription` is not cancelled", "to transition into the `shut-down` state"),
    "3.15": ("Calling `Subscription.cancel`", "MUST return normally."),
    "3.16": ("Calling `Subscription.request`", "MUST return normally."),
    "3.17": ("A `Subscription` MUST support", "MAY be considered by the `Publisher` as “effectively unbounded”."),
    "4.1": ("A `Processor` represents a processing stage", "MUST obey the contracts of both."),
    "4.2": ("A `Processor` MAY choose to recover", "MUST propagate the `onError` signal to its Subscribers immediately."),
}

_JVM_NAME = re.compile(
    r"^(Publisher|SubscriberBlackbox|SubscriberWhitebox|IdentityProcessor)Verification\."
    r"((required|optional|stochastic|untested)_[A-Za-z0-9_]+|mustImmediatelyPassOnOnErrorEventsReceived"
    r"FromItsUpstreamToItsDownstream)$"
)


def _registered() -> dict[str, Parity | None]:
    """Each registered test's name and the parity it declares (a test included elsewhere once)."""
    return {t.name: t.parity for v in VERIFICATIONS.values() for t in v.tests}


def test_every_rule_quotes_the_specification() -> None:
    assert set(SPEC_WORDS) == set(RULES)
    for rid, rule in RULES.items():
        opening, phrase = SPEC_WORDS[rid]
        assert rule.text.startswith(opening), f"rule {rid}'s text does not open as the specification's: {rule.text!r}"
        assert phrase in rule.text, f"rule {rid}'s text lacks the specification's {phrase!r}: {rule.text!r}"
        assert rule.strength.value in rule.text, f"rule {rid}'s text lacks its keyword {rule.strength.value}"
        assert "](#" not in rule.text, f"rule {rid}'s text keeps an in-page link"


def test_every_registered_test_declares_its_parity() -> None:
    lacking = missing(list(_registered().items()))
    assert not lacking, ("tests registered without parity=Parity(JVM counterpart, relation, why): "
                         + ", ".join(lacking))


def test_an_included_test_keeps_the_parity_it_declared() -> None:
    declared: dict[str, set[Parity | None]] = {}
    for verification in VERIFICATIONS.values():
        for test in verification.tests:
            declared.setdefault(test.name, set()).add(test.parity)
    assert {name: p for name, p in declared.items() if len(p) > 1} == {}


def test_every_difference_says_why_and_names_real_jvm_tests() -> None:
    problems = []
    for name, parity in _registered().items():
        if parity is None:
            continue  # test_every_registered_test_declares_its_parity
        if parity.relation not in RELATIONS:
            problems.append(f"{name}: unknown relation {parity.relation!r}")
        if parity.relation != "same" and not parity.why.strip():
            problems.append(f"{name}: {parity.relation} without a why")
        if parity.relation in ("stricter", "looser") and not parity.jvm:
            problems.append(f"{name}: {parity.relation} than nothing (name the JVM test, or say new)")
        if parity.relation == "new" and any(".untested_" not in j for j in parity.jvm):
            problems.append(f"{name}: new, yet the JVM test it names runs (say stricter or same)")
        if "|" in parity.why:
            problems.append(f"{name}: '|' in the why breaks the summary table")
        problems += [f"{name}: {j!r} is not a JVM TCK test name" for j in parity.jvm if not _JVM_NAME.match(j)]
    assert not problems, "\n".join(problems)


def test_the_doc_shows_rule_text_and_parity_under_each_test() -> None:
    doc = verifications_markdown()
    for verification in VERIFICATIONS.values():
        for test in verification.tests:
            section = doc.split(f"### `{test.test_id}`", 1)[1].split("\n### ", 1)[0]
            if test.rule is not None:
                assert f"> Rule {test.rule.id}: {test.rule.text}" in section, test.test_id
            assert test.parity is not None, test.test_id
            assert "JVM TCK: *" + test.parity.relation + "*" in section, test.test_id
