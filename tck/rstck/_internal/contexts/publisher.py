"""The publisher tests' view of the publisher under test: fresh publishers, subscribed probes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...api import Publisher
from ...errors import NotVerified
from ...errors import RuleViolation
from ...errors import SetupError
from ...probe import ProbeAbort
from ...probe import ProbeSubscriber
from ...probe import passes_on_failure
from ...subjects import FAILED_ROLE
from ...subjects import PublisherSubject
from ...subjects import subject_option
from ..environment import Environment
from ..trace import short_repr
from .base import Context


class PublisherContext(Context):
    """A test body's view of the publisher under test."""

    #: Whether the subject's subscribers get on_subscribe (the rs edition has none).
    has_on_subscribe = True

    def __init__(self, env: Environment, subject: PublisherSubject) -> None:
        super().__init__(env)
        self.subject = subject
        #: The publisher is a processor fed by the kit's own upstream (``ProcessorContext``):
        #: each element costs the kit an upstream signal, so the longest streams are shortened.
        self.relayed = False
        #: For a relayed publisher: a processor fed by a counting upstream (``rstck._internal.feeder``),
        #: for the long streams of tests that judge only what reaches their probe.
        self.counted_factory: Callable[[int], Any] | None = None

    def publisher(self, elements: int, *, completes: bool = False, counted: bool = False) -> Publisher[Any]:
        """A fresh publisher of ``elements`` elements, or "not applicable" if it cannot be made.

        ``counted``: a test that judges only what reaches its probe; a processor is then fed by
        a counting upstream instead of the checking one (``counted_factory``).
        """
        limit = self.settings.max_elements
        if elements > limit:
            raise NotVerified(
                f"needs a publisher of {elements} elements; the subject supports at most {limit} "
                "(max_elements)"
            )
        if completes and not self.settings.can_complete:
            raise NotVerified(
                "needs a publisher that completes; max_elements=2**63-1 declares it never does"
            )
        factory = self.counted_factory if counted and self.counted_factory is not None else self.subject.factory
        publisher = self.made(
            f"factory({elements})", f"the publisher factory {self.subject.label}", factory,
            elements, advice=f" when called with n={elements}; if it cannot produce {elements} elements, "
            "declare max_elements (--rs-max-elements)",
        )
        return self._checked(publisher, f"factory({elements})")

    def factory_contract(self, sizes: list[int]) -> None:
        """factory(n) gives exactly n elements, then on_complete, for each n of ``sizes``.

        Each is asked for one element more than n at once, so an extra one shows; a breach is a
        sanity failure naming the factory contract, not a rule of the specification. The callers
        pass n >= 1: the empty stream is optional (``empty_stream``).
        """
        for n, probe, seen in self._contract_breaches(sizes):
            raise RuleViolation(
                None, f"exactly {n} element(s) from factory({n}), then on_complete (the factory "
                f"contract), after request({n + 1})", f"{probe.name}: {seen}",
                hint="factory(n) must return a publisher of exactly n elements followed by "
                "on_complete; for an n it cannot produce it may raise (then declare max_elements)",
                setting="timeout" if probe.terminal is None and probe.received <= n else None,
                evidence=probe.evidence())

    def empty_stream(self) -> str | None:
        """None if factory(0) is an empty stream (no element, then on_complete, after request(1));
        else what it gave instead.

        Optional, as in the JVM TCK, which asks for an empty stream only in its optional 1.5 test:
        a design whose factory cannot make one (``Flowable.just(0L)`` for every n) passes there.
        So a breach is not reported; the kit leaves the size 0 out of what it requests from.
        """
        for _, _, seen in self._contract_breaches([0]):
            return seen
        return None

    def _contract_breaches(self, sizes: list[int]) -> list[tuple[int, ProbeSubscriber, str]]:
        probes: list[tuple[int, ProbeSubscriber]] = []
        for n in sizes:
            # Judged by its counts: no pause inside each signal for a second thread to show in
            # (a thread switch an element; rule 1.3 has tests of its own).
            probe = self.subscribed(n, completes=True, name=f"n={n}", keep_elements=False, yield_s=None)
            probe.request(n + 1)
            probes.append((n, probe))
        breaches = []
        for n, probe in probes:
            probe.wait_steady(_drained(probe, n), self.settings.timeout)
            received, terminal = probe.received, probe.terminal
            if received == n and terminal == "on_complete":
                continue
            seen = f"{received} element(s), then " + (probe._terminal_text() if terminal else "no terminal signal")
            breaches.append((n, probe, seen))
            break  # the first breach is the verdict: no waiting out the others
        return breaches

    def failed_publisher(self) -> Publisher[Any]:
        if self.subject.failed_factory is None:
            raise NotVerified(f"needs a failed publisher; none given ({subject_option(FAILED_ROLE)})")
        publisher = self.made("failed_factory()", "the failed-publisher factory", self.subject.failed_factory)
        return self._checked(publisher, "failed_factory()")

    def _checked(self, publisher: Any, made_by: str) -> Publisher[Any]:
        if not callable(getattr(publisher, "subscribe", None)):
            raise SetupError(
                f"{made_by} returned {short_repr(publisher)}, which has no subscribe() method"
            )
        return publisher  # type: ignore[no-any-return]

    def subscribe(self, publisher: Publisher[Any], subscriber: Any) -> None:
        """``publisher.subscribe(subscriber)``, which must return normally (rule 1.9)."""
        call = self.env.trace.add("tck", "subscribe", short_repr(subscriber)).seq
        try:
            self.call("subscribe()", publisher.subscribe, subscriber)
        except ProbeAbort:
            pass
        except Exception as exc:
            if passes_on_failure(exc):
                # A raising probe's own failure from on_subscribe (or a signal inside
                # subscribe), passed on to the caller as rule 2.13 allows.
                self.env.trace.note(f"subscribe() passed on the subscriber's failure: {short_repr(exc)}")
                return
            raise RuleViolation(
                "1.9",
                "subscribe() to return normally (failures are signalled with on_error)",
                f"it raised {type(exc).__name__}: {short_repr(exc, 200)}",
                evidence=(call,),
            ) from exc

    def subscribed(
        self, elements: int, *, completes: bool = False, name: str = "probe", counted: bool = False,
        **options: Any
    ) -> ProbeSubscriber:
        """A probe subscribed to a fresh publisher, with its subscription already received."""
        publisher = self.publisher(elements, completes=completes, counted=counted)
        probe = self.probe(name, **options)
        self.subscribe(publisher, probe)
        probe.expect_subscription()
        return probe

    def subscribers_needed(self, count: int) -> None:
        if self.settings.max_subscribers < count:
            raise NotVerified(
                f"needs {count} concurrent subscribers; the subject supports "
                f"{self.settings.max_subscribers} (max_subscribers)"
            )

    def expect_failure_signal(self, probe: ProbeSubscriber, rule: str) -> BaseException:
        """Wait for on_error from a failed publisher, requesting once if it waits for demand.

        The spec does not say a failed publisher must signal on_error before any request
        (reactive-streams-jvm#559), so a publisher that fails lazily, on the first request,
        passes too.
        """
        if probe.expect_terminal() is None:
            self.env.trace.note("no on_error without demand; requesting 1 in case it fails lazily")
            probe.request(1)
        return probe.expect_error(BaseException, rule=rule)

    def failed_subscription(self, rule: str) -> ProbeSubscriber:
        """A probe subscribed to the failed publisher that has received its on_error."""
        publisher = self.failed_publisher()
        probe = self.probe()
        self.subscribe(publisher, probe)
        probe.expect_subscription()
        self.expect_failure_signal(probe, rule)
        return probe


def _drained(probe: ProbeSubscriber, n: int) -> Callable[[], bool]:
    return lambda: probe.received > n or probe.terminal is not None
