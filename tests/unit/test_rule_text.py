"""A few rules word for word: the text docs/verifications.md quotes is the specification's."""

from __future__ import annotations

from rstck.rules import RULES


def test_rule_3_9_verbatim() -> None:
    assert RULES["3.9"].text == (
        "While the `Subscription` is not cancelled, `Subscription.request(long n)` MUST signal `onError` with a "
        "`java.lang.IllegalArgumentException` if the argument is <= 0. The cause message SHOULD explain that "
        "non-positive request signals are illegal."
    )


def test_rule_1_9_verbatim_with_its_links_reduced_to_text() -> None:
    assert RULES["1.9"].text == (
        "`Publisher.subscribe` MUST call `onSubscribe` on the provided `Subscriber` prior to any other signals to "
        "that `Subscriber` and MUST return normally, except when the provided `Subscriber` is `null` in which case "
        "it MUST throw a `java.lang.NullPointerException` to the caller, for all other situations the only legal "
        "way to signal failure (or reject the `Subscriber`) is by calling `onError` (after calling `onSubscribe`)."
    )


def test_rule_1_10_keeps_its_cross_reference() -> None:
    assert RULES["1.10"].text == (
        "`Publisher.subscribe` MAY be called as many times as wanted but MUST be with a different `Subscriber` "
        "each time [see 2.12]."
    )


def test_rule_3_15_verbatim() -> None:
    assert RULES["3.15"].text == "Calling `Subscription.cancel` MUST return normally."
