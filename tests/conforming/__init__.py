"""Conforming implementations written independently of the TCK, to check its verdicts are sound.

The reference implementations in ``rstck.reference`` were written alongside the verifications,
from the same reading of the spec. These are shaped after other designs (the JVM examples, an
actor with an ordered mailbox, a prefetching ``observe_on`` stage, ``first()``/``take(n)``, a
one-shot source, a coroutine per subscription): legal behaviours the TCK's authors did not
necessarily have in mind. Every required verification must pass against every one of them.
"""

from __future__ import annotations

from typing import Any

from rstck.subjects import ProcessorSubject
from rstck.subjects import PublisherSubject
from rstck.subjects import SubscriberSubject
from rstck.subjects import WhiteboxSubject

from . import processors
from . import publishers
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
