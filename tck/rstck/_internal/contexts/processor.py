"""The processor tests' view of the processor under test, composed of the two views it must pass.

As a publisher it is ``as_publisher``: every publisher test runs there, where ``publisher(n)``
is a fresh processor subscribed to a TCK upstream that feeds it ``n`` elements on demand. As
a subscriber it is ``as_subscriber``: every whitebox test runs there, the subscriber under
test being a fresh processor with a TCK downstream that reports to the whitebox probe. The
processor's own tests use both at once.
"""

from __future__ import annotations

from typing import Any

from ...api import MAX_DEMAND
from ...errors import SetupError
from ...manual import ManualPublisher
from ...probe import ProbeSubscriber
from ...subjects import ProcessorSubject
from ...subjects import PublisherSubject
from ...whitebox import WhiteboxProbe
from ..environment import Environment
from ..feeder import CountingUpstream
from ..trace import short_repr
from .base import Context
from .base import TckFailure
from .publisher import PublisherContext
from .subscriber import WhiteboxStages

_PROCESSOR_METHODS = ("subscribe", "on_subscribe", "on_next", "on_error", "on_complete")


class _Downstream(ProbeSubscriber):
    """The TCK's subscriber to a processor in whitebox tests: it is the processor's puppet."""

    def __init__(self, env: Environment, probe: WhiteboxProbe) -> None:
        super().__init__(env, "downstream", keep_elements=False,
                         on_subscribe=self._register, on_next=self._report)
        self._whitebox = probe

    def _register(self, _: ProbeSubscriber, subscription: Any) -> None:
        self._whitebox.register(request=self.request, cancel=self.cancel)

    def _report(self, _: ProbeSubscriber, element: Any) -> None:
        with self._whitebox.next(element):
            pass

    def on_complete(self) -> None:
        super().on_complete()
        with self._whitebox.complete():
            pass

    def on_error(self, exc: BaseException) -> None:
        super().on_error(exc)
        if exc is not None and not self._whitebox.relays_sent_error(exc):
            self._whitebox.own_error(exc)  # the processor's own failure, not the TCK's on_error
            return
        with self._whitebox.error(exc):
            pass


class _Upstreams(WhiteboxStages):
    """The processor's upstreams answer a request(n <= 0) as a conforming publisher would.

    A processor may pass its subscriber's request(n) through unchanged (Reactor's ``map``);
    the upstream then owes it on_error(ValueError) (rule 3.9), which the processor relays. So
    here an illegal request is answered, not reported: rule 3.9 is judged downstream, on what
    the probe receives. (A subscriber verification still reports it: there the subject is the
    one that made the illegal request, and no downstream exists to judge it by.)
    """

    def upstream(self, name: str = "upstream", **options: Any) -> ManualPublisher:
        options.setdefault("answers_illegal", True)
        return super().upstream(name, **options)


class ProcessorContext(Context):
    """A test body's view of the processor: as a publisher, as a subscriber, and both at once."""

    def __init__(self, env: Environment, subject: ProcessorSubject) -> None:
        super().__init__(env)
        self.subject = subject
        # Each view owns what it made: the upstreams feeding processors, the probes subscribed
        # to them. A processor need not cancel upstream when its only subscriber cancels.
        self.as_subscriber = _Upstreams(env, subject.element, self._downstreamed, relays_cancel=False)
        self.as_publisher = PublisherContext(env, PublisherSubject(
            self._fed_processor,
            failed_factory=subject.failed_factory or self._failed_processor,
            label=subject.label,
        ))
        self.as_publisher.relayed = True
        self.as_publisher.counted_factory = self._counted_processor
        self._counting: list[CountingUpstream] = []
        self.adopt(self.as_subscriber, self.as_publisher)

    @staticmethod
    def publisher_view(ctx: ProcessorContext) -> PublisherContext:
        return ctx.as_publisher

    @staticmethod
    def subscriber_view(ctx: ProcessorContext) -> WhiteboxStages:
        return ctx.as_subscriber

    # -- building blocks ---------------------------------------------------------------------

    def processor(self) -> Any:
        """A fresh processor from the user's factory, not yet subscribed to anything."""
        value = self.made("factory()", f"the processor factory {self.subject.label}", self.subject.factory)
        missing = [m for m in _PROCESSOR_METHODS if not callable(getattr(value, m, None))]
        if missing:
            raise SetupError(f"factory() returned {short_repr(value)}, which is not a Processor "
                             f"(it lacks {', '.join(missing)})")
        return value

    def _fed_processor(self, elements: int) -> Any:
        """The processor as the publisher tests see it: fed ``elements`` by a TCK upstream."""
        processor = self.processor()
        upstream = self.as_subscriber.upstream("upstream", count=elements, yield_s=None,
                                               end="complete" if elements < MAX_DEMAND else None)
        self.as_subscriber.attach(upstream, processor)
        return processor

    def _counted_processor(self, elements: int) -> Any:
        """``_fed_processor`` for a test that only counts what reaches its probe: the upstream
        counts instead of checking (``rstck._internal.feeder``), at a fraction of the kit's cost."""
        processor = self.processor()
        upstream = CountingUpstream(self.env, f"upstream{len(self._counting) + 1}", elements,
                                    self.subject.element)
        self._counting.append(upstream)
        upstream.subscribe(processor)
        return processor

    def _failed_processor(self) -> Any:
        """The failed publisher: a processor whose upstream fails right after on_subscribe."""
        processor = self.processor()
        upstream = self.as_subscriber.upstream(
            "failed-upstream", fail_on_subscribe=TckFailure("the upstream failed, as the TCK asked"))
        self.as_subscriber.attach(upstream, processor)
        return processor

    def _downstreamed(self, probe: WhiteboxProbe) -> Any:
        """The processor as the whitebox tests see it: a TCK downstream reports to the probe."""
        processor = self.processor()
        downstream = self.as_publisher.keep(_Downstream(self.env, probe))
        self.as_publisher.subscribe(processor, downstream)
        return processor

    def subscribers_needed(self, count: int) -> None:
        self.as_publisher.subscribers_needed(count)

    def relay(self, subscribers: int = 1) -> tuple[ManualPublisher, Any, list[ProbeSubscriber]]:
        """A processor between a hand-driven upstream and ``subscribers`` probes."""
        processor = self.processor()
        probes = []
        for i in range(subscribers):
            probe = self.as_publisher.probe(f"sub{i + 1}" if subscribers > 1 else "downstream")
            self.as_publisher.subscribe(processor, probe)
            probes.append(probe)
        upstream = self.as_subscriber.upstream("upstream")
        self.as_subscriber.attach(upstream, processor)
        self.env.check()
        for probe in probes:
            probe.expect_subscription()
        return upstream, processor, probes

    def late_subscriber(self, processor: Any, name: str) -> ProbeSubscriber:
        probe = self.as_publisher.probe(name)
        self.as_publisher.subscribe(processor, probe)
        probe.expect_subscription()
        return probe

    def close(self) -> None:
        for upstream in self._counting:
            upstream.close()
        self.as_subscriber.close()
        self.as_publisher.close()
        super().close()
