"""rsocket-py 0.4's local streams as TCK factories (verify with ``--rs-adapter=rsocket``).

Each factory builds the stream the way rsocket-py's own request handlers do, producing ``n``
payloads; ``n >= 2**63-1`` asks for an unbounded stream.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncGenerator
from collections.abc import Iterator
from typing import Any

from rsocket.payload import Payload
from rsocket.streams.error_stream import ErrorStream
from rsocket.streams.stream_from_async_generator import StreamFromAsyncGenerator
from rsocket.streams.stream_from_generator import StreamFromGenerator
from rstck.subjects import PublisherSubject

UNBOUNDED = 2**63 - 1


def _payloads(n: int) -> Iterator[tuple[Payload, bool]]:
    numbers = itertools.count() if n >= UNBOUNDED else range(n)
    for i in numbers:
        yield Payload(str(i).encode()), i == n - 1


def stream_from_generator(n: int) -> Any:
    return StreamFromGenerator(lambda: _payloads(n))


def stream_from_async_generator(n: int) -> Any:
    async def generate() -> AsyncGenerator[tuple[Payload, bool], None]:
        for item in _payloads(n):
            yield item

    return StreamFromAsyncGenerator(generate)


def _observable_publisher(n: int) -> Any:
    import reactivex
    from rsocket.reactivex.back_pressure_publisher import observable_to_publisher

    source = reactivex.from_iterable(
        itertools.count() if n >= UNBOUNDED else range(n)
    ).pipe(reactivex.operators.map(lambda i: Payload(str(i).encode())))
    return observable_to_publisher(source)


#: ``observable_to_publisher`` drains its whole source on the event loop, ignoring demand, and
#: a thread cannot be stopped from outside: with the 3.17 test's 2**31-1 elements an abandoned
#: loop would keep filling memory for hours. Declaring a capacity keeps every run finite.
observable_publisher = PublisherSubject(_observable_publisher, max_elements=1_000_000,
                                        label="observable_to_publisher")


def error_stream() -> Any:
    return ErrorStream(RuntimeError("rsocket ErrorStream, as asked"))


def default_subscriber() -> Any:
    """reactivestreams' ``DefaultSubscriber``: callbacks only, it never requests by itself."""
    from reactivestreams.subscriber import DefaultSubscriber

    return DefaultSubscriber()


def collector_subscriber() -> Any:
    """rsocket-py's ``CollectorSubscriber``, re-requesting in batches of 2 once started."""
    from rsocket.awaitable.collector_subscriber import CollectorSubscriber

    return CollectorSubscriber(limit_rate=2)


def _start(subscriber: Any) -> None:
    subscriber.request(2)  # the collector's owner starts it, as rsocket-py's requesters do


def _collector_subject() -> Any:
    from rstck.subjects import SubscriberSubject

    return SubscriberSubject(collector_subscriber, trigger_request=_start, label="CollectorSubscriber")


collector = _collector_subject()
