"""Rule 2.13 seen from the publisher: a subscriber that raises from a signal method.

Rule 2.13 makes a subscriber that raises from a signal method the one at fault, and says what
its caller then does: "any associated Subscription to the Subscriber MUST be considered as
cancelled, and the caller MUST raise this error condition in a fashion that is adequate for
the runtime environment". So the verdicts are required, and cite:
 - 2.13 for elements after the raise (the subscription counts as cancelled: as after cancel(),
   a terminal signal telling the subscriber of its own failure is tolerated, elements are not);
 - 3.16 for request(), 1.9 for subscribe(), raising anything else (a NameError of the
   publisher's own, say): they MUST return normally. Passing the subscriber's own exception on
   (as it is, or wrapped with it as the cause) is the "adequate" report 2.13 asks for, and is
   not held against a synchronous publisher; neither is it escaping a publisher's own thread.
"""

from __future__ import annotations

import time
from typing import Any

from ....contexts import PublisherContext
from ....errors import NotVerified
from ....errors import RuleViolation
from ....probe import RaisingProbe
from ....registry import Registry
from ...evidence import cite
from ...evidence import last_seq
from ...matrix import EVERY_PUBLISHER_TEST
from ...matrix import Cover
from ...parity import Parity
from ...parity import wb
from ._common import VERIFICATION

tck_test = Registry(VERIFICATION)
TESTS = tck_test.tests


def _raising(ctx: PublisherContext, name: str, signal: str, at: int = 1, **options: Any) -> RaisingProbe:
    probe = RaisingProbe(ctx.env, name, raise_on=signal, at=at, **options)
    ctx.keep(probe)
    return probe


def _raised(ctx: PublisherContext, probe: RaisingProbe, signal: str) -> None:
    """The probe must have raised from ``signal``; closing: no element may follow the raise."""
    # The signal may have arrived with its hook still running (an actor's thread, under load).
    if not probe.raised:
        with ctx.env.aside():
            probe._wait(lambda: bool(probe.raised), ctx.settings.timeout)
    if not probe.raised:
        raise RuleViolation(None, f"{signal} to reach the subscriber, which then raises", f"it did not "
                            f"({probe._seen()})", setting="timeout")

    # A claim about a no-signal window from now, waited out with the test's other closing claims.
    deadline = time.monotonic() + ctx.settings.no_signal_window
    before = probe.received_at_raise or 0

    def check() -> None:
        remaining = deadline - time.monotonic()
        if remaining > 0:
            with ctx.env.aside():
                probe._wait(lambda: probe.received > before, remaining)
        extra = probe.received - before
        if extra > 0:
            raise RuleViolation(
                "2.13", f"no element after {probe.raised} raised (the subscription counts as cancelled)",
                f"{extra} element(s) followed ({probe._seen()})",
                hint="when a subscriber's signal method raises, stop signalling it: treat the "
                "exception as cancel()",
                evidence=cite(probe.raised_seq, last_seq(ctx.env.trace, probe.name, "on_next")))

    ctx.at_close(check)


@tck_test(
    "2.13", "required",
    parity=Parity(
        wb("untested_spec213_failingOnSignalInvocation"), "new",
        "2.13's last sentence binds the caller: once on_next raises, its subscription counts "
        "as cancelled, so no element may follow and request() must still return normally."),
    covers=(
        Cover("2.13", "on_next", 
            "from the publisher's side: the subscriber raises from on_next, no element may "
            "follow"),
        Cover("3.16", "on_next", 
            EVERY_PUBLISHER_TEST + (" (a request() that raises, from wherever the probe calls it); and request() "
            "after the subscriber's own signal method raised")),
    ),
)
def required_spec213_publisher_must_consider_the_subscription_cancelled_when_on_next_raises(
    ctx: PublisherContext,
) -> None:
    """request(10) on a stream of 20, the second on_next raises: no element may follow, and
    request() must still return normally.

    Then request(5) again: it must return normally and deliver nothing. If this fails, check
    the delivery loop's handling of a subscriber's exception: it must mark the subscription
    cancelled (and may log or re-raise the exception), and code after it must still run
    (a name bound only on the normal path raises NameError there).
    """
    elements = min(20, ctx.settings.max_elements)
    if elements < 3:
        raise NotVerified("needs a publisher of at least 3 elements (max_elements)")
    probe = _raising(ctx, "raising", "on_next", 2)
    ctx.subscribe(ctx.publisher(elements), probe)
    probe.expect_subscription()
    probe.request(10)
    probe.wait_progress(lambda: bool(probe.raised) or probe.terminal is not None, ctx.settings.timeout)
    _raised(ctx, probe, "on_next #2")
    probe.request(5)


@tck_test(
    "2.13", "required",
    parity=Parity(
        wb("untested_spec213_failingOnSignalInvocation"), "new",
        "the same for a raising on_subscribe, on_complete and on_error: subscribe() and "
        "request() return normally and no element follows."),
    covers=(
        Cover("2.13", "terminal", "from the publisher's side: on_subscribe, on_complete and on_error raise"),
        Cover("3.16", "on_next"),
    ),
)
def required_spec213_publisher_must_consider_the_subscription_cancelled_when_a_terminal_or_on_subscribe_raises(
    ctx: PublisherContext,
) -> None:
    """on_subscribe, on_complete and on_error (answering request(0), and from the failed
    publisher) each raise: subscribe() and request() must return normally, no element may follow.

    After a raising on_subscribe nothing is requested: the JVM's own RangePublisher only logs
    such a failure and would serve a request made afterwards, and a subscriber requesting after
    its own on_subscribe failed is at fault twice; what is judged there is that subscribe()
    returns (1.9) and signals nothing unasked. A second on_subscribe requests 3 and then
    raises: what request() delivered before the raise is fine, an element after it is not (the
    demand belongs to a subscription that now counts as cancelled). If this fails, check that
    every call of a subscriber's method is guarded: a raise from on_subscribe cancels what it
    requested, one from on_complete or on_error ends the stream as it was ending anyway, and
    none turns into an exception of the publisher's own.
    """
    probes = []
    subscribing = _raising(ctx, "raising-on-subscribe", "on_subscribe")
    ctx.subscribe(ctx.publisher(min(3, ctx.settings.max_elements)), subscribing)
    subscribing.expect_subscription()
    probes.append((subscribing, "on_subscribe"))
    if ctx.settings.max_elements >= 1 and ctx.has_on_subscribe:
        asking = _raising(ctx, "requesting-then-raising-on-subscribe", "on_subscribe",
                          on_subscribe=lambda p, s: p.request(3))
        ctx.subscribe(ctx.publisher(min(6, ctx.settings.max_elements)), asking)
        asking.expect_subscription()
        probes.append((asking, "on_subscribe"))
    if ctx.settings.can_complete and ctx.settings.max_elements >= 1:
        completing = _raising(ctx, "raising-on-complete", "on_complete")
        ctx.subscribe(ctx.publisher(1, completes=True), completing)
        completing.expect_subscription()
        completing.request(2)
        if completing.wait_progress(lambda: bool(completing.raised), ctx.settings.timeout):
            completing.request(1)
            probes.append((completing, "on_complete"))  # 1.5's own test judges one that never ends
    erring = _raising(ctx, "raising-on-error", "on_error")
    ctx.subscribe(ctx.publisher(min(3, ctx.settings.max_elements)), erring)
    erring.expect_subscription()
    erring.request(0)
    if erring.wait_progress(lambda: bool(erring.raised), ctx.settings.timeout):
        erring.request(1)
        probes.append((erring, "on_error"))  # 3.9's own test judges a publisher that does not answer
    if ctx.subject.failed_factory is not None:
        failing = _raising(ctx, "failed-raising-on-error", "on_error")
        ctx.subscribe(ctx.failed_publisher(), failing)
        failing.expect_subscription()
        if not failing.wait_progress(lambda: bool(failing.raised), ctx.settings.timeout):
            failing.request(1)  # a publisher that fails lazily, on the first request (see 1.4)
            failing.wait_progress(lambda: bool(failing.raised), ctx.settings.timeout)
        probes.append((failing, "on_error"))
    for probe, signal in probes:
        _raised(ctx, probe, signal)
