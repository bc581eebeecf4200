"""Conforming implementations written independently of the TCK, to check its verdicts are sound.

The reference implementations in ``rstck.reference`` were written alongside the verifications,
from the same reading of the spec. These are shaped after other designs (the JVM examples, an
actor with an ordered mailbox, a prefetching ``observe_on`` stage, ``first()``/``take(n)``, a
one-shot source, a coroutine per subscription): legal behaviours the TCK's authors did not
necessarily have in mind. Every required verification must pass against every one of them.

``real_designs()`` are RxJava's and Reactor's own TCK constructions (``rx_ports``,
``reactor_ports``): they pass the JVM TCK, and break for real only what docs/verifications.md
("Real designs") documents.
"""

from __future__ import annotations

from typing import Any

from rstck.subjects import ProcessorSubject
from rstck.subjects import PublisherSubject
from rstck.subjects import SubscriberSubject
from rstck.subjects import WhiteboxSubject

from . import processors
from . import publishers
from . import reactor_ports
from . import rx_ports
from . import subscribers


def subjects() -> dict[str, tuple[str, Any]]:
    """Every conforming shape by label: (verification, subject)."""
    return {
        "publisher:async_iterable": ("publisher", PublisherSubject(
            publishers.async_iterable_publisher, publishers.failed_iterable_publisher,
            label="async_iterable")),
        "publisher:jvm_range": ("publisher", PublisherSubject(
            publishers.jvm_range_publisher, label="jvm_range")),
        "publisher:one_shot": ("publisher", PublisherSubject(
            publishers.one_shot_publisher, publishers.failed_one_shot_publisher, label="one_shot")),
        "publisher:asyncio_task": ("publisher", PublisherSubject(
            publishers.task_publisher, label="asyncio_task")),
        "publisher:single_threaded": ("publisher", PublisherSubject(
            publishers.single_threaded_range_publisher, label="single_threaded")),
        # The shapes below run on RxJava's operators (rx_ports) behind a StrictSubscriber that
        # keeps rule 3.6; RxJava's own constructions are real_designs().
        # range(0, 2n).filter(even): the end comes once more is asked for.
        "publisher:filter_ending_on_demand": ("publisher", PublisherSubject(
            publishers.filter_ending_on_demand, label="filter_ending_on_demand")),
        # A Python iterator learns its end only by pulling the next element.
        "publisher:pulling_iterator": ("publisher", PublisherSubject(
            publishers.pulling_iterator_publisher, publishers.failed_pulling_iterator_publisher,
            label="pulling_iterator")),
        # Two pulling halves merged: their order depends on when demand came.
        "publisher:merged_halves": ("publisher", PublisherSubject(
            publishers.merged_halves, label="merged_halves")),
        # Every subscriber gets the elements in an order of its own.
        "publisher:shuffled": ("publisher", PublisherSubject(
            publishers.shuffled_publisher, publishers.failed_pulling_iterator_publisher, label="shuffled")),
        "subscriber_blackbox:jvm_sync": ("subscriber_blackbox", SubscriberSubject(
            subscribers.jvm_sync_subscriber, label="jvm_sync")),
        "subscriber_blackbox:jvm_async": ("subscriber_blackbox", SubscriberSubject(
            subscribers.jvm_async_subscriber, label="jvm_async")),
        "subscriber_blackbox:first": ("subscriber_blackbox", SubscriberSubject(
            subscribers.first_subscriber, takes_at_most=1, label="first")),
        "subscriber_blackbox:take3": ("subscriber_blackbox", SubscriberSubject(
            subscribers.take3_subscriber, takes_at_most=3, label="take3")),
        "subscriber_whitebox:jvm_sync": ("subscriber_whitebox", WhiteboxSubject(
            subscribers.jvm_sync_whitebox, label="jvm_sync_whitebox")),
        # Its puppet goes through its actor, like its signals: it may be pulled from any thread.
        "subscriber_whitebox:jvm_async": ("subscriber_whitebox", WhiteboxSubject(
            subscribers.jvm_async_whitebox, any_thread_puppet=True, label="jvm_async_whitebox")),
        "subscriber_blackbox:cancel_at_once": ("subscriber_blackbox", SubscriberSubject(
            subscribers.cancel_at_once_sink, never_requests=True, label="cancel_at_once")),
        "subscriber_whitebox:cancel_at_once": ("subscriber_whitebox", WhiteboxSubject(
            subscribers.cancel_at_once_whitebox, never_requests=True, label="cancel_at_once_whitebox")),
        "subscriber_blackbox:ignoring": ("subscriber_blackbox", SubscriberSubject(
            subscribers.ignoring_sink, never_requests=True, label="ignoring")),
        "subscriber_whitebox:ignoring": ("subscriber_whitebox", WhiteboxSubject(
            subscribers.ignoring_whitebox, never_requests=True, label="ignoring_whitebox")),
        "subscriber_blackbox:asyncio_loop": ("subscriber_blackbox", SubscriberSubject(
            subscribers.loop_subscriber, loop="asyncio", label="asyncio_loop")),
        "subscriber_whitebox:asyncio_loop": ("subscriber_whitebox", WhiteboxSubject(
            subscribers.loop_whitebox, loop="asyncio", label="asyncio_loop_whitebox")),
        # Gives up its own subscription too when offered a second (2.5 asks only that the
        # second be cancelled).
        "subscriber_blackbox:fail_fast": ("subscriber_blackbox", SubscriberSubject(
            subscribers.fail_fast_subscriber, label="fail_fast")),
        "subscriber_whitebox:fail_fast": ("subscriber_whitebox", WhiteboxSubject(
            subscribers.fail_fast_whitebox, label="fail_fast_whitebox")),
        # Requests one element at a time, each half a timeout after the one before (3.8): slow.
        "subscriber_whitebox:one_at_a_time": ("subscriber_whitebox", WhiteboxSubject(
            subscribers.one_at_a_time_whitebox, label="one_at_a_time_whitebox")),
        "processor:actor": ("processor", ProcessorSubject(
            processors.actor_processor, max_subscribers=1, label="actor")),
        "processor:prefetch": ("processor", ProcessorSubject(
            processors.prefetch_processor, max_subscribers=1, label="prefetch")),
        # Asks its upstream for one element at a time, one more as each arrives (3.8).
        "processor:netty_handler": ("processor", ProcessorSubject(
            processors.handler_processor, max_subscribers=1, label="netty_handler")),
        # Ends its own stream with on_error after refusing a None argument (2.13, 2.11).
        "processor:akka_virtual": ("processor", ProcessorSubject(
            processors.virtual_processor, max_subscribers=1, label="akka_virtual")),
        # Passes request(n <= 0) on unchanged; the upstream's on_error answers it (3.9).
        "processor:reactor_map": ("processor", ProcessorSubject(
            processors.map_processor, max_subscribers=1, label="reactor_map")),
    }


#: RxJava's TCK classes (``src/test/java/io/reactivex/rxjava3/tck/``) by label: the factory its
#: ``createPublisher`` builds and its ``maxElementsFromPublisher`` (``BaseTck``: 1024).
RX_TCK = {
    "rx_range": (rx_ports.range_tck, rx_ports.MAX_ELEMENTS),
    "rx_from_iterable": (rx_ports.from_iterable_tck, rx_ports.MAX_ELEMENTS),
    "rx_just": (rx_ports.just_tck, 1),
    "rx_empty": (rx_ports.empty_tck, 0),
    "rx_filter": (rx_ports.filter_tck, rx_ports.MAX_ELEMENTS),
    "rx_map": (rx_ports.map_tck, rx_ports.MAX_ELEMENTS),
    "rx_take": (rx_ports.take_tck, rx_ports.MAX_ELEMENTS),
    "rx_skip": (rx_ports.skip_tck, rx_ports.MAX_ELEMENTS),
    "rx_concat": (rx_ports.concat_tck, rx_ports.MAX_ELEMENTS),
    "rx_merge": (rx_ports.merge_tck, rx_ports.MAX_ELEMENTS),
    "rx_flat_map": (rx_ports.flat_map_tck, rx_ports.MAX_ELEMENTS),
    "rx_observe_on": (rx_ports.observe_on_tck, rx_ports.MAX_ELEMENTS),
    "rx_hide": (rx_ports.hide_tck, rx_ports.MAX_ELEMENTS),
    # Not a TCK class of its own: HideTckTest's source under ObserveOnTckTest's operator, so that
    # observeOn runs unfused (prefetch 128, a request of 96 each time 96 were emitted).
    "rx_hide_observe_on": (rx_ports.hide_observe_on, rx_ports.MAX_ELEMENTS),
}


def real_designs() -> dict[str, tuple[str, Any]]:
    """RxJava's and Reactor's TCK constructions, ported with their operators, by label.

    Kept apart from ``subjects()``: some break a rule for real (docs/verifications.md, "Real
    designs"), and the conforming catalogue states which test each must fail.
    """
    rx = {
        f"publisher:{label}": ("publisher", PublisherSubject(
            factory, rx_ports.failed_publisher, max_elements=max_elements, label=label))
        for label, (factory, max_elements) in RX_TCK.items()
    }
    return {
        **rx,
        # FluxGenerateVerification: the default maxElementsFromPublisher; any n is a cursor bound.
        "publisher:reactor_generate": ("publisher", PublisherSubject(
            reactor_ports.generate_tck, reactor_ports.generate_failed, label="reactor_generate")),
        # AbstractFluxVerification: the default maxElementsFromPublisher; past Integer.MAX_VALUE
        # its source is an endless stream of random ints.
        "publisher:reactor_range_filter_map": ("publisher", PublisherSubject(
            reactor_ports.range_filter_map, reactor_ports.abstract_failed, label="reactor_range_filter_map")),
        "publisher:reactor_publish_on": ("publisher", PublisherSubject(
            reactor_ports.range_filter_map_publish_on, reactor_ports.abstract_failed_publish_on,
            label="reactor_publish_on")),
        # UnicastProcessorTckTest: one subscriber, 1024 elements.
        "processor:rx_unicast": ("processor", ProcessorSubject(
            rx_ports.unicast_processor_tck, failed_factory=rx_ports.unicast_failed_publisher,
            max_elements=rx_ports.MAX_ELEMENTS, max_subscribers=1, label="rx_unicast")),
    }
