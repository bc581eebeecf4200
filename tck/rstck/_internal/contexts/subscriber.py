"""The subscriber tests' view of the subscriber under test: TCK-driven upstreams around it.

``BlackboxContext`` sees only what a subscriber does to its subscription; ``WhiteboxStages``
also gets the subscriber's own account of its processing through a ``WhiteboxProbe``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from typing import cast

from ...errors import NotVerified
from ...errors import RuleViolation
from ...errors import SetupError
from ...manual import ManualPublisher
from ...manual import ManualSubscription
from ...subjects import SubscriberSubject
from ...subjects import WhiteboxSubject
from ...whitebox import Puppet
from ...whitebox import WhiteboxProbe
from ..environment import Environment
from ..evidence import cite
from ..trace import short_repr
from ..worker import Worker
from .base import Context

_SUBSCRIBER_METHODS = ("on_subscribe", "on_next", "on_error", "on_complete")

#: Why a test that needs the subscriber's demand is skipped for one declared never to request.
NEVER_REQUESTS = ("needs the subscriber to request, and it is declared never to (never_requests, "
                  "--rs-never-requests)")


def _identity(index: int) -> Any:
    return index


class SubscriberContext(Context):
    """What every verification of a subscriber shares: TCK-driven upstreams, closed at the end."""

    def __init__(self, env: Environment, element: Callable[[int], Any] | None = None) -> None:
        super().__init__(env)
        self.element = element or _identity
        self._upstreams: list[ManualPublisher] = []

    def needs_demand(self) -> None:
        """Rules judged on what the subscriber does with demand do not apply to one that, by
        design, never asks (``never_requests``): the test is not applicable, not failed."""
        if self.settings.never_requests:
            raise NotVerified(NEVER_REQUESTS)

    def no_demand(self, violation: RuleViolation) -> NotVerified | RuleViolation:
        """What a missing request means: not applicable for a declared ``never_requests``."""
        return NotVerified(NEVER_REQUESTS) if self.settings.never_requests else violation

    def upstream(self, name: str = "upstream", **options: Any) -> ManualPublisher:
        """A fresh ManualPublisher whose elements come from the element hook."""
        taken = {u.name for u in self._upstreams}
        unique, n = name, 2
        while unique in taken:
            unique, n = f"{name}{n}", n + 1
        upstream = ManualPublisher(self.env, unique, element=self.element, **options)
        self._upstreams.append(upstream)
        return upstream

    def attach(self, upstream: ManualPublisher, subscriber: Any, *,
               must_reject: str | None = None) -> ManualSubscription:
        """Subscribe ``subscriber`` to ``upstream``; on_subscribe runs here, on this thread."""
        return upstream.attach(subscriber, must_reject=must_reject)

    def checked_subscriber(self, value: Any, made_by: str) -> Any:
        missing = [m for m in _SUBSCRIBER_METHODS if not callable(getattr(value, m, None))]
        if missing:
            raise SetupError(
                f"{made_by} returned {short_repr(value)}, which is not a Subscriber "
                f"(it lacks {', '.join(missing)})"
            )
        return value

    def expect_type_error(self, label: str, fn: Callable[..., Any], *args: Any) -> None:
        """Rule 2.13: a None argument must be refused with TypeError, raised to the caller."""
        call = (self.env.trace.add("tck", label.split("(")[0], "None").seq,)
        try:
            self.call(label, fn, *args)
        except TypeError:
            return
        except Exception as exc:
            raise RuleViolation("2.13", f"{label} to raise TypeError",
                                f"it raised {type(exc).__name__}: {short_repr(exc)}", evidence=call) from exc
        raise RuleViolation("2.13", f"{label} to raise TypeError", "it returned normally",
                            hint="check arguments for None first and raise TypeError", evidence=call)

    def second_subscription(self, subscriber: Any, upstream: ManualPublisher,
                            other: ManualPublisher, rule: str, *, elsewhere: bool = False,
                            settle: bool = True) -> bool:
        """Offer ``subscriber`` a second subscription from ``other``: it must cancel that one and
        never request on it. Returns whether the subscriber still keeps its first one.

        Rules 2.5 and 2.12 apply to a subscriber whose first subscription is active; one that
        already gave it up (rule 2.6) is not judged by them. Rule 2.5 asks only that the second be
        cancelled: a subscriber that also cancels its first, taking the violation as fatal (fail
        fast), is within its rights (it may cancel its own subscription at any time), and the
        trace says so. One that cancels its first and keeps the second has adopted it, and that
        failure cites both records. ``elsewhere``: the second on_subscribe is made on a fresh TCK
        thread once the earlier signals returned (serial, as rule 1.3 allows), so that a
        subscriber keeping its subscription per thread is seen adopting it. ``settle``: a quiet
        window follows, so that a first subscription cancelled a moment later counts as given up;
        without it (a caller whose next step is legal either way, and ends on a closing window of
        its own) only a cancel seen by then does.
        """
        first = upstream.subscription
        if first.cancelled:
            raise NotVerified(f"the subscriber cancelled its subscription before a second one could be "
                              f"offered; rule {rule} concerns an active one")
        second = self._offer(subscriber, other, rule, elsewhere)
        self.env.check()
        what = ("cancel() of the second subscription" if other is not upstream
                else "cancel() of the second subscription of the same subscriber")
        try:
            other.expect_cancel(subscription=second, rule=rule, what=what)
        except RuleViolation as violation:
            gave_up = first.cancelled_after(second.subscribed_seq)
            if gave_up is None:
                raise
            raise RuleViolation(rule, violation.expected,
                                f"the subscriber cancelled its first subscription (#{gave_up}) after the "
                                f"second on_subscribe (#{second.subscribed_seq}) and kept the second: it "
                                "adopted it", evidence=cite(second.subscribed_seq, gave_up),
                                setting="timeout") from None
        if settle:
            upstream.settle()
        gave_up = first.cancelled_after(second.subscribed_seq)
        if gave_up is None:
            return True
        self.env.trace.note(
            f"the subscriber cancelled its first subscription too (#{gave_up}) after the second "
            f"on_subscribe (#{second.subscribed_seq}): legal, a subscriber offered a second subscription "
            "must cancel that one (rule 2.5) and may cancel its own at any time"
        )
        return False

    def _offer(self, subscriber: Any, other: ManualPublisher, rule: str, elsewhere: bool) -> ManualSubscription:
        """``other`` subscribes ``subscriber`` (``must_reject``), here or on a fresh TCK thread."""
        if not elsewhere:
            return other.attach(subscriber, must_reject=rule)
        self.env.trace.note(f"{other.name}: the next on_subscribe is made on another TCK thread")
        sender = Worker(lambda: other.attach(subscriber, must_reject=rule), "rs-tck:other-thread")
        limit = 2 * self.settings.timeout + 1.0
        with self.env.calling("on_subscribe() (made on another thread)"):
            returned = sender.wait(limit)
        if not returned:
            raise RuleViolation(None, "a signal to return promptly",
                                "on_subscribe did not return (made on another thread)", setting="timeout")
        return cast(ManualSubscription, sender.result())

    def close(self) -> None:
        for upstream in self._upstreams:
            upstream.close()
        super().close()


class BlackboxContext(SubscriberContext):
    """A test body's view of the blackbox subscriber under test."""

    def __init__(self, env: Environment, subject: SubscriberSubject) -> None:
        super().__init__(env, subject.element)
        self.subject = subject

    def subscriber(self) -> Any:
        """A fresh subscriber from the user's factory."""
        value = self.made("factory()", f"the subscriber factory {self.subject.label}", self.subject.factory)
        return self.checked_subscriber(value, "factory()")

    def stage(self, name: str = "upstream", **options: Any) -> tuple[Any, ManualPublisher]:
        """A fresh subscriber subscribed to a fresh upstream; on_subscribe has returned."""
        subscriber = self.subscriber()
        upstream = self.upstream(name, **options)
        self.attach(upstream, subscriber)
        self.env.check()
        return subscriber, upstream

    def trigger(self, subscriber: Any) -> None:
        """The user's trigger_request hook, for subscribers that request on an outside event."""
        if self.subject.trigger_request is not None:
            self.env.trace.add("tck", "trigger_request")
            self.call("trigger_request()", self.subject.trigger_request, subscriber)

    def requested(self, subscriber: Any, upstream: ManualPublisher, rule: str | None = None) -> int:
        """Trigger, then wait for the demand the subscriber must signal (rule 2.1)."""
        self.needs_demand()
        self.trigger(subscriber)
        return upstream.expect_demand(
            rule=rule or "2.1", what="a request(n) after on_subscribe",
            hint="a subscriber signals demand with request(n); one that waits for an outside "
            "event can be started by a SubscriberSubject's trigger_request hook",
        )

    def warm_up(self, subscriber: Any, upstream: ManualPublisher, most: int = 1) -> int:
        """Trigger; if demand comes, send up to ``most`` elements. Returns how many were sent."""
        self.trigger(subscriber)
        demand = 0 if self.settings.never_requests else upstream.wait_demand(until_cancelled=True)
        sent = 0
        while sent < min(demand, most):
            upstream.send_next()
            self.env.check()
            sent += 1
        return sent


class WhiteboxStage:
    """One subscriber under test, its probe and puppet, and the upstream it is subscribed to."""

    def __init__(self, ctx: WhiteboxStages, probe: WhiteboxProbe, subscriber: Any,
                 upstream: ManualPublisher, puppet: Puppet, sent: list[Any]) -> None:
        self.ctx = ctx
        self.probe = probe
        self.subscriber = subscriber
        self.upstream = upstream
        self.puppet = puppet
        #: Every element the upstream delivered, in order (inline delivery included).
        self.sent = sent

    @property
    def subscription(self) -> ManualSubscription:
        return self.upstream.subscription

    def request(self, n: int) -> None:
        """Pull the puppet: the subscriber should request ``n`` more, possibly in parts."""
        self._excuse(n)
        self.ctx.env.trace.add("tck", "puppet.request", str(n))
        self.ctx.call(f"puppet.request({n})", self.puppet.request, n)
        self.ctx.env.check()

    def cancel(self) -> None:
        """Pull the puppet: the subscriber should cancel its subscription."""
        self._excuse(0)
        self.ctx.env.trace.add("tck", "puppet.cancel")
        self.ctx.call("puppet.cancel()", self.puppet.cancel)
        self.ctx.env.check()

    def _excuse(self, demand: int | None) -> None:
        """The puppet gives the subscriber work (``demand``: what a pull asks for), and what it
        does on the puppet's orders after the end is not its own doing (2.4)."""
        subscription = self.upstream.subscriptions[0] if self.upstream.subscriptions else None
        if subscription is None:
            return
        subscription.stir(demand if isinstance(demand, int) and demand > 0 else 0)
        if subscription.terminal is not None:
            subscription.excuse()

    def expect_demand(self, *, rule: str | None = None) -> int:
        try:
            return self.upstream.expect_demand(
                rule=rule, what="a request(n) after puppet.request(n)",
                hint="puppet.request(n) must make the subscriber call request on its subscription",
            )
        except RuleViolation as violation:
            raise self.ctx.no_demand(violation) from None

    def send_next(self, *, rule: str | None = None) -> Any:
        element = self.upstream.send_next(rule=rule)
        self.ctx.env.check()
        return element

    def send_complete(self, *, rule: str | None = None) -> None:
        self.upstream.send_complete(rule=rule)
        self.ctx.env.check()

    def send_error(self, error: BaseException, *, rule: str | None = None) -> None:
        self.upstream.send_error(error, rule=rule)
        self.ctx.env.check()

    def expect_upstream_cancel(self, *, rule: str | None = None, needed: bool = True) -> bool:
        """After puppet.cancel(): the subscription must see cancel().

        A processor is not obliged to cancel its upstream when its only subscriber cancels
        (the spec only advises it), so there a missing cancel makes a test that needs it not
        applicable instead of failing it.
        """
        if not self.ctx.relays_cancel:
            if self.upstream.wait_cancel():
                return True
            if needed:
                raise NotVerified("needs the processor to cancel its upstream when its only "
                                  "subscriber cancels, which it does not do")
            self.ctx.env.trace.note("the processor did not cancel its upstream (advised, not required)")
            return False
        self.upstream.expect_cancel(rule=rule, what="cancel() after puppet.cancel()",
                                    hint="puppet.cancel() must make the subscriber cancel its subscription")
        return True


class WhiteboxStages(SubscriberContext):
    """Builds whitebox stages around ``subscriber(probe)``: the whitebox tests' context.

    A processor's context gives it its own ``subscriber``: a processor with a TCK downstream.
    """

    def __init__(
        self,
        env: Environment,
        element: Callable[[int], Any] | None,
        subscriber: Callable[[WhiteboxProbe], Any],
        *,
        relays_cancel: bool = True,
    ) -> None:
        super().__init__(env, element)
        self.whitebox_subscriber = subscriber
        #: Whether the puppet's cancel must reach the upstream (false for processors, see above).
        self.relays_cancel = relays_cancel

    def stage(self, name: str = "upstream", **options: Any) -> WhiteboxStage:
        """A fresh subscriber subscribed to a fresh upstream, its puppet registered."""
        probe = WhiteboxProbe(self.env)
        subscriber = self.whitebox_subscriber(probe)
        upstream = self.upstream(name, **options)
        sent: list[Any] = []
        upstream.listen(probe.signalled)
        upstream.listen(lambda signal, value: sent.append(value) if signal == "on_next" else None)
        self.attach(upstream, subscriber)
        self.env.check()
        puppet = probe.expect_puppet()
        return WhiteboxStage(self, probe, subscriber, upstream, puppet, sent)


class WhiteboxContext(WhiteboxStages):
    """A test body's view of the whitebox subscriber under test."""

    def __init__(self, env: Environment, subject: WhiteboxSubject) -> None:
        super().__init__(env, subject.element, self._from_factory)
        self.subject = subject

    def _from_factory(self, probe: WhiteboxProbe) -> Any:
        value = self.made("factory(probe)", f"the whitebox subscriber factory {self.subject.label}",
                          self.subject.factory, probe)
        return self.checked_subscriber(value, "factory(probe)")
