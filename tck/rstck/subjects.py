"""Subjects under test: the user's factories and what they declare they can do."""

from __future__ import annotations

import importlib
import inspect
import os
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import fields
from dataclasses import replace
from pathlib import Path
from typing import Any
from typing import ClassVar
from typing import cast

from ._internal.environment import Environment
from ._internal.trace import short_repr
from ._internal.worker import Worker
from .api import FailedPublisherFactory
from .api import Processor
from .api import PublisherFactory
from .api import Subscriber
from .api import missing_methods
from .errors import SetupError
from .errors import format_frames
from .settings import CAPABILITY_KNOBS
from .settings import Settings
from .whitebox import WhiteboxProbe


def apply_declared(subject: Any, settings: Settings, *, loop: str | None = None) -> Settings:
    """``settings`` with the capability knobs a subject declares, where the user set none."""
    declared = {
        f.name: getattr(subject, f.name)
        for f in fields(subject)
        if f.name in CAPABILITY_KNOBS and getattr(subject, f.name) is not None
    }
    if loop is not None:
        declared.setdefault("loop", loop)
    changes = {k: v for k, v in declared.items() if k not in settings.explicit}
    return settings.replace(**changes) if changes else settings


def implied_loop(factory: Any) -> str | None:
    """"asyncio" for an ``async def`` factory: what it returns is awaited, on an event loop."""
    return "asyncio" if inspect.iscoroutinefunction(factory) else None


class _Subject:
    """What every subject form shares: a label that defaults to its factory's name, and its
    declared knobs, applied where the user set none."""

    #: What the subject is to a resolver and a campaign; its option is ``subject_option(ROLE)``.
    ROLE: ClassVar[str]
    factory: Any
    label: str

    def __post_init__(self) -> None:
        if not self.label:
            self.label = getattr(self.factory, "__qualname__", repr(self.factory))

    def apply(self, settings: Settings) -> Settings:
        """Settings with this subject's declared knobs filled in where the user set none."""
        return apply_declared(self, settings, loop=implied_loop(self.factory))


@dataclass
class PublisherSubject(_Subject):
    """A publisher factory together with its capabilities: the richer form of ``--rs-publisher``.

    A bare ``factory(n)`` is enough; wrapping it here lets a library declare, next to its code,
    that it can only produce so many elements, supports one subscriber, and so on. Values given
    on the command line, in the ini file or in the environment override what is declared here.
    """

    ROLE: ClassVar[str] = "publisher"

    factory: PublisherFactory
    failed_factory: FailedPublisherFactory | None = None
    max_elements: int | None = None
    recursion_depth: int | None = None
    max_subscribers: int | None = None
    skip_stochastic: bool | None = None
    #: factory(n) gives every subscriber the same sequence (``--rs-deterministic-sequence``).
    deterministic_sequence: bool | None = None
    #: "asyncio" for a publisher that must be called on an event loop (see ``--rs-loop``).
    loop: str | None = None
    label: str = ""


#: Libraries an extra of this package installs, by import name: a missing one gets its install line.
EXTRAS = {"rsocket": "rsocket", "reactivex": "rsocket", "pyspark": "spark", "py4j": "spark"}


def load_object(spec: str, *, what: str) -> Any:
    """Import ``module:attribute`` (attribute may be dotted), with a message for each failure.

    A module that is not importable is retried with the working directory on ``sys.path``,
    so ``pytest --rs-publisher=mylib.streams:f`` works from a project's root as
    ``python -m pytest`` would.
    """
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise SetupError(f"{what} must be 'module:attribute', got {spec!r}")
    try:
        module = _import(module_name)
    except ModuleNotFoundError as exc:
        extra = EXTRAS.get((exc.name or "").split(".")[0])
        hint = f"; install it with: pip install 'reactive-streams-tck[{extra}]'" if extra else ""
        if _inside(exc, module_name):  # the module is there; an import in it failed: say where
            raise SetupError(f"{what}={spec}: importing {module_name!r} raised {type(exc).__name__}: {exc}"
                             f"{hint}{user_frames(exc)}") from None
        raise SetupError(f"{what}={spec}: cannot import module {module_name!r}: {exc}{hint}") from None
    except Exception as exc:
        raise SetupError(
            f"{what}={spec}: importing {module_name!r} raised {type(exc).__name__}: {exc}{user_frames(exc)}"
        ) from None
    obj: Any = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise SetupError(f"{what}={spec}: module {module_name!r} has no attribute {attr!r}") from None
    return obj


def _inside(exc: ModuleNotFoundError, module_name: str) -> bool:
    """Whether the missing module is not ``module_name`` nor a package of it: an import inside it."""
    parts = module_name.split(".")
    return exc.name is not None and exc.name not in {".".join(parts[:i]) for i in range(1, len(parts) + 1)}


def _import(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        top = name.split(".")[0]
        cwd = os.getcwd()
        if exc.name != top or cwd in sys.path:
            raise
        sys.path.insert(0, cwd)
        return importlib.import_module(name)


#: Frames in these folders are the kit's own (the core, its plugins) or the import machinery's.
_KIT_DIRS = (
    Path(__file__).resolve().parent, Path(__file__).resolve().parents[2] / "plugins" / "rstck_plugins",
    Path(__file__).resolve().parent.parent / "rstck_plugins", Path(importlib.__file__).resolve().parent,
)


def user_frames(exc: BaseException) -> str:
    """Where in the user's code ``exc`` was raised, as pytest shows a collection error's frames.

    The kit's frames and the import machinery's are left out: an import or factory error is
    about the user's module. "" when no frame is the user's.
    """
    frames = [
        f for f in traceback.extract_tb(exc.__traceback__)
        if not f.filename.startswith("<frozen ")
        and "/pluggy/" not in f.filename.replace("\\", "/")
        and not any(Path(f.filename).resolve().is_relative_to(d) for d in _KIT_DIRS)
    ]
    if not frames:
        return ""
    return "\n" + format_frames(frames[-8:]).rstrip()


#: ``resolve(spec, role)``: the object a subject option names (roles: publisher,
#: failed_publisher, subscriber, whitebox_subscriber, processor). Plugins may supply their own.
Resolver = Callable[[str, str], Any]


#: The role of a publisher's failed counterpart (``--rs-failed-publisher``).
FAILED_ROLE = "failed_publisher"


def subject_option(role: str) -> str:
    """The command-line option naming a subject of ``role`` (``whitebox_subscriber``:
    ``--rs-whitebox-subscriber``): the one place an option is spelled, from the role each
    subject class declares, for the loaders' messages, the verifications and the pytest options."""
    return "--rs-" + role.replace("_", "-")


def default_resolve(spec: str, role: str) -> Any:
    return load_object(spec, what=subject_option(role))


def load_publisher_subject(
    spec: str, failed_spec: str | None = None, *, resolve: Resolver = default_resolve
) -> PublisherSubject:
    """The subject named by ``--rs-publisher`` (and ``--rs-failed-publisher``), checked."""
    obj = resolve(spec, PublisherSubject.ROLE)
    if isinstance(obj, PublisherSubject):
        subject = PublisherSubject(**{f.name: getattr(obj, f.name) for f in fields(obj)})
        subject.label = spec if subject.label == getattr(obj.factory, "__qualname__", None) else subject.label
    elif callable(obj):
        subject = PublisherSubject(obj, label=spec)
    else:
        raise SetupError(
            f"{subject_option(PublisherSubject.ROLE)}={spec}: {type(obj).__name__} object is not callable; expected a "
            "factory f(n) -> Publisher or a PublisherSubject"
        )
    if failed_spec:
        failed = resolve(failed_spec, FAILED_ROLE)
        if not callable(failed):
            raise SetupError(
                f"{subject_option(FAILED_ROLE)}={failed_spec}: {type(failed).__name__} object is not "
                "callable; expected a factory f() -> Publisher"
            )
        subject.failed_factory = failed
    return subject


def _call_bounded(call: Callable[[], Any], label: str, timeout: float, *, hint_loop: bool = False) -> Any:
    """``call()`` on a TCK daemon thread, waiting at most ``timeout``; failures as SetupError."""
    worker = Worker(call, "rs-tck:smoke-check")
    if not worker.wait(timeout):
        raise SetupError(f"{label} did not return within {timeout * 1000:.0f} ms")
    error = worker.error
    if error is not None:
        hint = ""
        if hint_loop and "event loop" in str(error):
            hint = " (a subject that must be called on an event loop needs --rs-loop=asyncio)"
        raise SetupError(f"{label} raised {type(error).__name__}: {error}{hint}{user_frames(error)}")
    return worker.value


def _direct(fn: Callable[..., Any], *args: Any) -> Any:
    return fn(*args)


def _factory_caller(loop: str) -> Callable[..., Any]:
    """How the start-up check calls a subject's factory: ``call(factory, *args)``.

    Under ``--rs-loop=asyncio`` (implied by a subject's ``loop="asyncio"`` or an ``async def``
    factory) on an event loop the TCK runs on a thread of its own, awaiting what the factory
    returns there when it is awaitable, as the tests will call it; otherwise directly.
    """
    if loop != "asyncio":
        return _direct
    from ._internal.loop import LoopThread

    return LoopThread("rs-tck-smoke-check-loop").call


def _made(call: Callable[[], Any], label: str, timeout: float, loop: str) -> Any:
    """What a factory returned at the start-up check (see ``_call_bounded``); an awaitable left
    unawaited, off any loop, is refused with the option that awaits it."""
    value = _call_bounded(call, label, timeout, hint_loop=loop != "asyncio")
    if inspect.isawaitable(value):
        if inspect.iscoroutine(value):
            value.close()
        raise SetupError(f"{label} returned an awaitable; run with --rs-loop=asyncio to await it")
    return value


def smoke_check(
    subject: PublisherSubject, *, timeout: float, elements: int = 1, loop: str = "thread"
) -> None:
    """Call the factories once, on a TCK thread (or the TCK's loop, see ``_factory_caller``), so
    bad input stops the run before it starts."""
    call = _factory_caller(loop)
    factory, failed = subject.factory, subject.failed_factory
    checks: list[tuple[str, Callable[[], Any]]] = [
        (f"{subject_option(subject.ROLE)}={subject.label}: calling it with n={elements}",
         lambda: call(factory, elements))
    ]
    if failed is not None:
        checks.append((f"{subject_option(FAILED_ROLE)}: calling it", lambda: call(failed)))
    for index, (label, check) in enumerate(checks):
        value = _made(check, label, timeout, loop)
        _refuse_class(value, label, "Publisher")
        if not callable(getattr(value, "subscribe", None)):
            raise SetupError(
                f"{label} returned {type(value).__name__} {short_repr(value)}, which is not a "
                "Publisher (it has no subscribe() method)"
            )
        if loop != "asyncio" and index == 0:
            _check_needs_no_loop(value, label, timeout)


def _refuse_class(value: Any, label: str, kind: str) -> None:
    """A factory that returns a class, not an instance, would fail every rule as 1.9: refuse it now."""
    if inspect.isclass(value):
        raise SetupError(
            f"{label} returned the class {value.__qualname__} itself, not a {kind}: the factory "
            f"must return an instance (call the class: {value.__qualname__}(...))"
        )


#: How long the start-up check waits for its one subscription (a hostile subscribe may block).
LOOP_CHECK_S = 1.0


class _LoopCheck:
    """The start-up check's subscriber: subscribes once, requests one element, keeps any error."""

    def __init__(self) -> None:
        self.error: BaseException | None = None
        self.subscription: Any = None

    def on_subscribe(self, subscription: Any) -> None:
        self.subscription = subscription

    def on_next(self, element: Any) -> None:
        pass

    def on_error(self, error: BaseException) -> None:
        self.error = error

    def on_complete(self) -> None:
        pass


def _needs_loop(error: BaseException | None) -> bool:
    return error is not None and "event loop" in str(error)


def _check_needs_no_loop(publisher: Any, label: str, timeout: float) -> None:
    """Subscribe once off any loop: a publisher that says it needs one gets ``--rs-loop`` named now.

    Without it, every verification fails on its own, as rule 1.9, with the same
    ``no running event loop``. Anything else the subscription does is for the rules to judge.
    """
    check = _LoopCheck()

    def subscribe() -> None:
        publisher.subscribe(check)
        if check.subscription is not None:
            check.subscription.request(1)
            check.subscription.cancel()

    worker = Worker(subscribe, "rs-tck:smoke-check")
    worker.wait(min(timeout, LOOP_CHECK_S))
    error = worker.error or check.error
    if _needs_loop(error):
        assert error is not None
        raise SetupError(
            f"{label}: subscribing to what it returned raised {type(error).__name__}: {error}: the "
            "subject must be called on an event loop; run with --rs-loop=asyncio"
        )


# -- subscribers and processors ----------------------------------------------------------------

#: ``element(i)`` is the i-th element the TCK sends to a subscriber or processor under test.
ElementHook = Callable[[int], Any]
SubscriberFactory = Callable[[], Subscriber[Any]]
WhiteboxFactory = Callable[[WhiteboxProbe], Subscriber[Any]]
ProcessorFactory = Callable[[], Processor[Any, Any]]


@dataclass
class SubscriberSubject(_Subject):
    """A blackbox subscriber factory with its hooks: the richer form of ``--rs-subscriber``.

    ``element(i)`` makes the i-th element the TCK sends (default: the int ``i``), for
    subscribers that only accept their own element type. ``trigger_request(subscriber)`` is
    called right after subscribing, for a subscriber that requests only once something outside
    it happens.
    """

    ROLE: ClassVar[str] = "subscriber"

    factory: SubscriberFactory
    element: ElementHook | None = None
    trigger_request: Callable[[Any], None] | None = None
    #: True for a subscriber that never requests, by design (see ``--rs-never-requests``).
    never_requests: bool | None = None
    #: How many elements it needs at most, by design (see ``--rs-takes-at-most``).
    takes_at_most: int | None = None
    #: "asyncio" for a subscriber that must be called on an event loop (see ``--rs-loop``).
    loop: str | None = None
    label: str = ""


@dataclass
class WhiteboxSubject(_Subject):
    """A whitebox subscriber factory ``f(probe)``: the richer form of ``--rs-whitebox-subscriber``."""

    ROLE: ClassVar[str] = "whitebox_subscriber"

    factory: WhiteboxFactory
    element: ElementHook | None = None
    #: True for a subscriber that never requests, by design (see ``--rs-never-requests``).
    never_requests: bool | None = None
    #: True when its puppet may be pulled from any thread (see ``--rs-any-thread-puppet``).
    any_thread_puppet: bool | None = None
    #: How many elements it needs at most, by design (see ``--rs-takes-at-most``).
    takes_at_most: int | None = None
    #: "asyncio" for a subscriber that must be called on an event loop (see ``--rs-loop``).
    loop: str | None = None
    label: str = ""


@dataclass
class ProcessorSubject(_Subject):
    """An identity-processor factory and what it can do: the richer form of ``--rs-processor``.

    The processor is verified as a publisher fed by a TCK upstream, so the publisher knobs
    apply; ``failed_factory`` replaces the TCK's own failed publisher (a processor whose
    upstream fails), for a processor that recovers from upstream errors (rule 4.2).
    """

    ROLE: ClassVar[str] = "processor"

    factory: ProcessorFactory
    element: ElementHook | None = None
    failed_factory: FailedPublisherFactory | None = None
    max_elements: int | None = None
    recursion_depth: int | None = None
    max_subscribers: int | None = None
    skip_stochastic: bool | None = None
    coordinated_emission: bool | None = None
    #: The processor relays every subscriber the same sequence (``--rs-deterministic-sequence``).
    deterministic_sequence: bool | None = None
    #: "asyncio" for a processor that lives on an event loop, as for the other subjects.
    loop: str | None = None
    label: str = ""


def _load_factory_subject(spec: str, cls: type[Any], expects: str, resolve: Resolver = default_resolve) -> Any:
    obj = resolve(spec, cls.ROLE)
    if isinstance(obj, cls):
        subject = replace(obj)
        if subject.label == getattr(obj.factory, "__qualname__", None):
            subject.label = spec
        return subject
    if callable(obj):
        return cls(obj, label=spec)
    raise SetupError(f"{subject_option(cls.ROLE)}={spec}: {type(obj).__name__} object is not callable; "
                     f"expected {expects}")


def load_subscriber_subject(spec: str, *, resolve: Resolver = default_resolve) -> SubscriberSubject:
    """The subject named by ``--rs-subscriber``."""
    return cast(SubscriberSubject, _load_factory_subject(
        spec, SubscriberSubject, "a factory f() -> Subscriber or a SubscriberSubject",
        resolve,
    ))


def load_whitebox_subject(spec: str, *, resolve: Resolver = default_resolve) -> WhiteboxSubject:
    """The subject named by ``--rs-whitebox-subscriber``."""
    return cast(WhiteboxSubject, _load_factory_subject(
        spec, WhiteboxSubject, "a factory f(probe) -> Subscriber or a WhiteboxSubject", resolve,
    ))


def load_processor_subject(spec: str, *, resolve: Resolver = default_resolve) -> ProcessorSubject:
    """The subject named by ``--rs-processor``."""
    return cast(ProcessorSubject, _load_factory_subject(
        spec, ProcessorSubject, "a factory f() -> Processor or a ProcessorSubject",
        resolve,
    ))


def smoke_check_subject(
    subject: SubscriberSubject | WhiteboxSubject | ProcessorSubject, option: str, *, timeout: float,
    loop: str | None = None,
) -> None:
    """Call the factory once, on a TCK thread (or the TCK's loop, see ``_factory_caller``), and
    check what it returns has the right methods.

    ``loop``: the run's ``--rs-loop`` with what the subject declares applied; None: what the
    subject declares (``loop="asyncio"``) or implies (an ``async def`` factory) alone.
    """
    if loop is None:
        loop = subject.apply(Settings()).loop
    protocol: type = Processor if isinstance(subject, ProcessorSubject) else Subscriber
    call = _factory_caller(loop)
    args: tuple[Any, ...] = ()
    if isinstance(subject, WhiteboxSubject):
        args = (WhiteboxProbe(Environment(Settings()), "smoke-check"),)
    factory = subject.factory
    label = f"{option}={subject.label}: calling it"
    value = _made(lambda: call(factory, *args), label, timeout, loop)
    _refuse_class(value, label, protocol.__name__)
    missing = missing_methods(value, protocol)
    if missing:
        raise SetupError(
            f"{label} returned {type(value).__name__} {short_repr(value)}, which is not a "
            f"{protocol.__name__} (it lacks {', '.join(missing)})"
        )


def subject_record(kind: str, obj: Any, failed: Any, spec: str, load_subject: Callable[..., Any]) -> Any:
    """The subject record of ``obj`` (a factory or a record) with its failed publisher, made as the
    host makes it (``load_subject``: the verification's own), so a worker's subject is the host's."""
    if kind == "publisher":
        return load_subject(spec, spec if failed is not None else None,
                            resolve=lambda _spec, role: failed if role == "failed_publisher" else obj)
    subject = load_subject(spec, resolve=lambda _spec, _role: obj)
    if failed is not None:
        if not callable(failed):
            raise SetupError(f"{spec}: its failed publisher is not callable")
        subject.failed_factory = failed
    return subject
