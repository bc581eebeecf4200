"""Sanity checks of the factory: it makes streams of exactly the sizes the tests ask for."""

from __future__ import annotations

from ....contexts import PublisherContext
from ....registry import Registry
from ...parity import Parity
from ...parity import pub
from ._common import VERIFICATION

tck_test = Registry(VERIFICATION)
TESTS = tck_test.tests


@tck_test(
    None, "required",
    parity=Parity(pub("required_createPublisher1MustProduceAStreamOfExactly1Element"), "same"),
)
def required_sanity_factory_1_produces_exactly_1_element(ctx: PublisherContext) -> None:
    """factory(1) must give one element, then on_complete.

    If this fails, check that the factory honours its contract: ``factory(n)`` returns a
    publisher of exactly n elements followed by on_complete.
    """
    probe = ctx.subscribed(1, completes=True)
    probe.request(1)
    probe.next_element(what="the only element")
    probe.request(1)
    probe.expect_completion()


@tck_test(
    None, "required",
    parity=Parity(pub("required_createPublisher3MustProduceAStreamOfExactly3Elements"), "same"),
)
def required_sanity_factory_3_produces_exactly_3_elements(ctx: PublisherContext) -> None:
    """factory(3) must give three elements, one per request(1), then on_complete."""
    probe = ctx.subscribed(3, completes=True)
    for i in range(3):
        probe.request(1)
        probe.next_element(what=f"element {i + 1} of 3")
    probe.request(1)
    probe.expect_completion()


#: Stream sizes the verification drains to their end: those of the tests below and of the fuzz
#: verification (its ``_SIZES``); larger ones are cancelled early, so only their start is used.
#: Not 0: the empty stream is optional (``optional_spec105_empty_stream_...``), as in the JVM TCK.
_DRAINED_SIZES = (1, 2, 3, 4, 5, 6, 7, 10, 11, 12, 16, 20, 64, 310)


def _kit_sizes(ctx: PublisherContext) -> list[int]:
    from ...fuzz.publisher_side import _SIZES

    bound = ctx.settings.recursion_depth
    sizes = set(_DRAINED_SIZES) | set(_SIZES) | {bound + 10, 3 * (bound + 10)}
    return sorted(n for n in sizes if 1 <= n <= min(ctx.settings.max_elements, 10_000))


@tck_test(
    None, "required", busy=True,
    parity=Parity(
        (), "new",
        "every factory size the kit uses is checked up front, asked for one more element than "
        "n, so that a factory ignoring n is reported as such, not as the rule (1.5, 3.8) a "
        "later test trips."),
)
def required_sanity_factory_n_produces_exactly_n_elements_for_every_size_used(ctx: PublisherContext) -> None:
    """factory(n) must give exactly n elements, then on_complete, for every n >= 1 the TCK uses.

    Each is asked for one element more than n at once, so an extra one shows. A factory that
    ignores n (a fixed-size stream, one element too many) would otherwise be reported as the
    rule some later test happens to trip (1.5, 3.8). If this fails, check the factory:
    ``factory(n)`` returns a publisher of exactly n elements followed by on_complete, or raises
    for an n it cannot produce (then declare max_elements). factory(0) is not held to it: the
    empty stream is optional, as in the JVM TCK (the optional 1.5 test reports it; the required
    tests only subscribe to factory(0), without requesting).
    """
    ctx.factory_contract(_kit_sizes(ctx))
