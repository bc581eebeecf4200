"""Publisher verification in the ``rs`` edition: the JVM publisher tests, bridged, and its own.

The JVM tests run unchanged through ``RsPublisherContext`` (each rs publisher bridged to the JVM
shape), under the edition's own rule ids; the tests of JVM rules the edition has no counterpart
for (on_subscribe, request(n) with n <= 0, a None subscriber) are left out. The edition's own
rules add: subscriptions keep working once the publisher is dropped (its 1.11), and dropping the
subscription, or leaving its ``with`` block, cancels it (its 1.8, 3.11, 3.12).
"""

from __future__ import annotations

import gc
import inspect
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import replace
from typing import Any

from ...api import MAX_DEMAND
from ...editions import EDITIONS
from ...probe import ProbeSubscriber
from ...registry import TckTest
from ...results import Level
from ...rules import RULES
from ..contexts.rs_publisher import RsPublisherBridge
from ..contexts.rs_publisher import RsPublisherContext
from . import publisher as jvm

EDITION = EDITIONS["rs"]

#: JVM publisher tests with no counterpart in the edition, and why (shown by ``rules``/docs): each
#: declares it at its registration (``left_out_of={"rs": why}``).
LEFT_OUT: dict[str, str] = {
    t.name: why for t in jvm.TESTS if (why := t.left_out_reason(EDITION.name)) is not None
}


@dataclass(frozen=True)
class EditionTest(TckTest):
    """A test run under an edition: ``rule`` is the kit's (JVM) rule, ``own_rule`` the edition's."""

    own_rule: str | None = None

    @property
    def test_id(self) -> str:
        if self.level == Level.FUZZ:
            return f"{self.name}[fuzz]"
        return f"{self.name}[{self.own_rule or 'sanity'}]"


def _renamed(name: str, own: str | None) -> str:
    """``required_spec312_x`` as the edition numbers it (``required_spec311_x``)."""
    if own is None or "_spec" not in name:
        return name
    level, rest = name.split("_spec", 1)
    major, minor = own.split(".")
    return f"{level}_spec{major}{int(minor):02d}{rest[3:]}"


def _bridged(test: TckTest) -> EditionTest:
    own = EDITION.own_id(test.rule_id)
    return EditionTest(_renamed(test.name, own), test.verification, test.rule, test.level, test.func,
                       test.doc, test.untested_reason, own_rule=own)


def _own(name: str, own: str, level: str, func: Callable[[Any], None], doc: str) -> EditionTest:
    rule = EDITION.rules[own]
    return EditionTest(name, jvm.VERIFICATION, rule if rule.jvm_id is None else _jvm_rule(rule.jvm_id),
                       Level(level), func, doc, own_rule=own)


def _jvm_rule(rid: str) -> Any:
    return RULES[rid]


def _in_mode(mode: str, func: Callable[[Any], None]) -> Callable[[Any], None]:
    """``func`` with the probes' cancel() reaching the subscription by ``mode`` (drop, with)."""

    def body(ctx: RsPublisherContext) -> None:
        ctx.cancel_mode = mode
        func(ctx)

    body.__name__ = body.__qualname__ = func.__name__
    return body


# -- the edition's own rules -------------------------------------------------------------------


def subscriptions_keep_working_after_the_publisher_is_dropped(ctx: RsPublisherContext) -> None:
    """Subscribe, take one element, drop every reference to the publisher, then take the rest.

    The TCK keeps only the subscription (and a weak reference to the publisher, to say in the
    trace whether it was collected). The remaining two elements and on_complete must still
    arrive. If this fails, check that the subscription holds what it needs to go on (the
    source, the position) and that the publisher's finaliser does not cancel its subscriptions.
    """
    rule = EDITION.rules["1.11"].id
    probe, gone = _subscribe_then_drop_publisher(ctx)
    gc.collect()
    ctx.env.trace.note("the TCK dropped its references to the publisher; it was "
                       + ("collected" if gone() is None else "kept alive by the subscription"))
    probe.request(2)
    probe.next_elements(2, rule=rule)
    probe.expect_completion(rule=rule)
    ctx.closing_quiet(probe, after="after on_complete")


def _subscribe_then_drop_publisher(ctx: RsPublisherContext) -> tuple[ProbeSubscriber, Callable[[], Any]]:
    # A separate frame: when it returns, nothing of the TCK holds the publisher.
    publisher = ctx.publisher(3, completes=True)
    assert isinstance(publisher, RsPublisherBridge)
    try:
        gone: Callable[[], Any] = weakref.ref(publisher.inner)
    except TypeError:
        gone = lambda: publisher  # no weakref support: say "kept alive"
    probe = ctx.probe()
    ctx.subscribe(publisher, probe)
    probe.expect_subscription()
    probe.request(1)
    probe.next_element(rule=EDITION.rules["1.11"].id)
    return probe, gone


def _check_with_supported(ctx: RsPublisherContext) -> None:
    """Whether leaving a ``with`` block is this subject's form of cancel, before the real test."""
    probe = ctx.probe("with-check")
    ctx.subscribe(ctx.publisher(1), probe)
    probe.expect_subscription()
    probe.cancel()
    probe.wait_quiet()


def _with_form(func: Callable[[Any], None]) -> Callable[[Any], None]:
    def body(ctx: RsPublisherContext) -> None:
        ctx.cancel_mode = "with"
        _check_with_supported(ctx)
        func(ctx)

    body.__name__ = body.__qualname__ = func.__name__
    return body


RETURNS_NORMALLY = "required_spec315_request_must_return_normally"
REQUEST_DOC = """request() returns normally for 1, 2**63-1, after cancel, after dropping and after completion.

The JVM test's request(0) and request(-1) are left out: the edition defines request(n) for
n >= 1 only."""


def request_must_return_normally(ctx: RsPublisherContext) -> None:
    probe = ctx.subscribed(3, name="valid")
    probe.request(1)
    probe.next_element()
    probe.request(MAX_DEMAND)
    probe.next_elements(2)
    cancelled = ctx.subscribed(3, name="cancelled")
    cancelled.cancel()
    cancelled.request(1)
    if ctx.settings.can_complete:
        done = ctx.subscribed(1, completes=True, name="done")
        done.request(5)
        done.next_element()
        done.expect_completion()
        done.request(1)
    ctx.closing_drain(cancelled)


_DROP_3_11 = """request(10) + request(5), take one element, then drop the subscription: the stream must go quiet.

Dropping the last reference stands for cancel(): elements in flight may still arrive, never
more than the 15 requested. If this fails, check what the subscription's finaliser does: it
must cancel, not flush the rest of the stream."""

_DROP_3_12 = """After the subscription is dropped, the subscriber must become garbage.

The TCK drops its only reference to the subscription, collects garbage and waits on a weak
reference to the subscriber, up to the GC window. If this fails, check that finalising the
subscription cancels it and that cancelling clears the publisher's reference to the subscriber."""

_WITH = """

Here the subscription is entered as a context manager right after subscribe and the TCK's
cancel() leaves its ``with`` block; not applicable if the subscription is not a context manager."""

_KEEP_1_11 = subscriptions_keep_working_after_the_publisher_is_dropped.__doc__ or ""


def _tests() -> list[TckTest]:
    out: list[TckTest] = [
        _own(RETURNS_NORMALLY, "3.15", "required", request_must_return_normally, REQUEST_DOC)
        if t.name == "required_spec316_request_must_return_normally" else _bridged(t)
        for t in jvm.TESTS if t.name not in LEFT_OUT
    ]
    out += OWN
    return [replace(t, doc=inspect.cleandoc(t.doc)) if t.doc else t for t in out]


def _own_tests() -> list[TckTest]:
    by_name = {t.name: t for t in jvm.TESTS}
    stop_3_12 = by_name["required_spec312_cancel_must_make_the_publisher_eventually_stop_signalling"].func
    refs_3_13 = by_name[
        "required_spec313_cancel_must_make_the_publisher_eventually_drop_all_references_to_the_subscriber"].func
    return [
        _own("required_spec111_subscriptions_must_keep_working_after_the_publisher_is_dropped", "1.11",
             "required", subscriptions_keep_working_after_the_publisher_is_dropped, _KEEP_1_11),
        _own("required_spec311_dropping_the_subscription_must_make_the_publisher_eventually_stop_signalling",
             "3.11", "required", _in_mode("drop", stop_3_12), _DROP_3_11),
        _own("required_spec312_dropping_the_subscription_must_make_the_publisher_drop_the_subscriber", "3.12",
             "required", _in_mode("drop", refs_3_13), _DROP_3_12),
        _own("required_spec311_leaving_the_with_block_must_make_the_publisher_eventually_stop_signalling",
             "3.11", "required", _with_form(stop_3_12), _DROP_3_11 + _WITH),
        _own("required_spec312_leaving_the_with_block_must_make_the_publisher_drop_the_subscriber", "3.12",
             "required", _with_form(refs_3_13), _DROP_3_12 + _WITH),
    ]


#: The tests of the edition's own (dropping, the with block, the publisher dropped).
OWN: list[TckTest] = _own_tests()
#: The edition's publisher tests, in run order.
TESTS: list[TckTest] = _tests()

__all__ = ["LEFT_OUT", "OWN", "TESTS", "EditionTest"]
