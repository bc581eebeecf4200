"""Verifications declared in a library's own tests, one subject each, as JVM TCK users write them.

A library's authors verify many constructions (RxJava some 130 operators, one ``*TckTest`` class
each), beside their unit tests, in one run and one report. This module holds the declarations,
as plain objects of the core; the kit's pytest host collects them wherever pytest collects
tests, each as a node of its own (``tests/test_rs.py::test_map::required_spec101_...[1.1]``)::

    import rstck.pytest as rs

    test_range = rs.publisher_verification(mylib.range_publisher, id="range")
    test_map = rs.publisher_verification(lambda n: mylib.range_publisher(n).map(str), id="map",
                                         max_subscribers=1, skip_rules={"3.9": "map hands request(0) on"})

    class TestFilter(rs.PublisherVerification):     # the JVM TCK's class form
        def create_publisher(self, n): return mylib.range_publisher(n).filter(lambda x: True)
        def create_failed_publisher(self): return mylib.error(RuntimeError("boom"))

Each declaration carries its own settings (any knob of ``rstck.settings``, by its ``Settings``
name or its option's name without ``--rs-``: ``timeout_ms=2000``), rules and skipped rules
(with a reason). What a declaration states wins over the run's settings, which fill the rest.

Importing this module imports no test framework: a declaration is data, checked when collected.
Problems (a bad id, an unknown setting, a class without its factory method) are kept on the
declaration, not raised at import, so the host can report them all at once, with file and line,
before any test runs (``Declaration.problem``); ``Declaration.check`` raises them as ``SetupError``.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
from typing import Any
from typing import ClassVar

from .errors import SetupError
from .settings import KNOBS
from .settings import Settings
from .settings import parse_value

#: The kinds, by the verification each runs.
PUBLISHER = "publisher"
SUBSCRIBER = "subscriber_blackbox"
WHITEBOX = "subscriber_whitebox"
PROCESSOR = "processor"
KINDS = (PUBLISHER, SUBSCRIBER, WHITEBOX, PROCESSOR)

_FIELDS = {k.name: k for k in KNOBS}
#: Settings a declaration may also name as its option does, without ``--rs-``: ``timeout_ms``.
_OPTION_NAMES = {k.option.removeprefix("--rs-").replace("-", "_"): k for k in KNOBS}
#: Settings that belong to the run, not to one subject.
_RUN_ONLY = frozenset({"concurrency", "subjects_at_once", "processes", "edition", "fuzz_replay", "fuzz_db"})


def settings_problem(values: Mapping[str, Any]) -> tuple[dict[str, Any], str | None]:
    """``values`` as ``Settings`` fields (seconds for durations), or why they cannot be."""
    out: dict[str, Any] = {}
    for name, value in values.items():
        knob = _FIELDS.get(name)
        if knob is not None and name not in _OPTION_NAMES:
            field_name, parsed = knob.name, value
        elif name in _OPTION_NAMES:
            knob = _OPTION_NAMES[name]
            field_name = knob.name
            try:
                parsed = parse_value(knob, str(value).lower() if isinstance(value, bool) else str(value),
                                     f"setting {name}")
            except ValueError as exc:
                return {}, str(exc)
        else:
            return {}, f"unknown setting {name!r}; known: {', '.join(sorted(_OPTION_NAMES))}"
        if field_name in _RUN_ONLY:
            return {}, f"setting {name!r} belongs to the whole run (--rs-{field_name.replace('_', '-')}), not to a subject"
        out[field_name] = parsed
    try:
        Settings(**out)
    except (TypeError, ValueError) as exc:
        return {}, str(exc)
    return out, None


@dataclass
class Declaration:
    """One subject to verify with one verification kind, and what holds for it alone.

    ``subject`` is a factory, a subject record (``PublisherSubject``, ...) or its
    ``"module:attr"``, imported when collected. ``id`` names it in node ids, reports and the
    baseline; None: the name it is collected under, without ``test_``.
    """

    __rstck_declaration__: ClassVar[bool] = True

    kind: str
    subject: Any
    id: str | None = None
    #: The ``failed`` publisher factory (publisher and processor kinds), or its ``"module:attr"``.
    failed: Any = None
    #: ``Settings`` fields this subject sets for itself.
    settings: dict[str, Any] = field(default_factory=dict)
    rules: tuple[str, ...] = ()
    #: Rule id -> why it is not verified for this subject.
    skip_rules: dict[str, str] = field(default_factory=dict)
    #: ``(file, line)`` of the declaration.
    where: tuple[str, int] = ("?", 0)
    #: What is wrong with it, or None: reported by the host before any test runs.
    problem: str | None = None

    def subject_id(self, name: str) -> str:
        """The id, or the default from the name it is collected under (``test_map`` -> ``map``)."""
        if self.id:
            return self.id
        for prefix in ("test_", "Test"):
            if name.startswith(prefix) and len(name) > len(prefix):
                return name[len(prefix):]
        return name

    def location(self) -> str:
        return f"{self.where[0]}:{self.where[1]}"

    def apply(self, settings: Settings) -> Settings:
        """``settings`` with this subject's own settings over them."""
        return settings.replace(**self.settings) if self.settings else settings

    def check(self) -> None:
        """Raise the declaration's problem, for callers outside a test host."""
        if self.problem:
            raise SetupError(f"{self.location()}: {self.problem}")


def _caller(depth: int = 2) -> tuple[str, int]:
    frame = sys._getframe(depth)
    return frame.f_code.co_filename, frame.f_lineno


def _declare(kind: str, subject: Any, *, id: str | None, failed: Any, rules: Iterable[str],
             skip_rules: Mapping[str, str] | Iterable[str] | None, settings: Mapping[str, Any],
             where: tuple[str, int]) -> Declaration:
    values, problem = settings_problem(settings)
    if problem is None and id is not None and not (isinstance(id, str) and id.isidentifier()):
        problem = f"subject id {id!r} is not a valid identifier (letters, digits and _, not first a digit)"
    if problem is None and not (callable(subject) or isinstance(subject, str)):
        problem = f"{type(subject).__name__} object is not a factory, a subject record or 'module:attr'"
    skipped: dict[str, str] = {}
    if isinstance(skip_rules, Mapping):
        skipped = {str(k): str(v) for k, v in skip_rules.items()}
    elif skip_rules is not None:
        skipped = {str(k): "skipped by the declaration" for k in skip_rules}
    return Declaration(kind, subject, id, failed, values, tuple(rules), skipped, where, problem)


def publisher_verification(subject: Any, *, id: str | None = None, failed: Any = None,
                           rules: Iterable[str] = (), skip_rules: Mapping[str, str] | None = None,
                           **settings: Any) -> Declaration:
    """Verify a publisher factory ``f(n)`` (or a ``PublisherSubject``) with the publisher rules."""
    return _declare(PUBLISHER, subject, id=id, failed=failed, rules=rules, skip_rules=skip_rules,
                    settings=settings, where=_caller())


def subscriber_verification(subject: Any, *, id: str | None = None, rules: Iterable[str] = (),
                            skip_rules: Mapping[str, str] | None = None, **settings: Any) -> Declaration:
    """Verify a subscriber factory ``f()`` (or a ``SubscriberSubject``) as a blackbox."""
    return _declare(SUBSCRIBER, subject, id=id, failed=None, rules=rules, skip_rules=skip_rules,
                    settings=settings, where=_caller())


def whitebox_verification(subject: Any, *, id: str | None = None, rules: Iterable[str] = (),
                          skip_rules: Mapping[str, str] | None = None, **settings: Any) -> Declaration:
    """Verify a whitebox subscriber factory ``f(probe)`` (or a ``WhiteboxSubject``)."""
    return _declare(WHITEBOX, subject, id=id, failed=None, rules=rules, skip_rules=skip_rules,
                    settings=settings, where=_caller())


def processor_verification(subject: Any, *, id: str | None = None, failed: Any = None,
                           rules: Iterable[str] = (), skip_rules: Mapping[str, str] | None = None,
                           **settings: Any) -> Declaration:
    """Verify an identity processor factory ``f()`` (or a ``ProcessorSubject``)."""
    return _declare(PROCESSOR, subject, id=id, failed=failed, rules=rules, skip_rules=skip_rules,
                    settings=settings, where=_caller())


# -- the class form, for ports of JVM TCK classes ------------------------------------------------


class _Verification:
    """The base of the class forms: class attributes say what the keyword arguments say.

    A subclass names its factory method (``create_publisher``, ...); the kit makes one instance
    of it for the run, as the JVM TCK makes one of each test class. The JVM TCK's capability
    methods are read when defined: ``max_elements_from_publisher``, ``max_supported_subscribers``,
    ``bounded_depth_of_on_next_and_request_recursion``, ``skip_stochastic_tests``.
    """

    #: The verification the class runs.
    kind: ClassVar[str] = ""
    #: The factory method the subclass must define.
    factory_method: ClassVar[str] = ""
    #: The subject's id; None: the class name without ``Test``.
    id: ClassVar[str | None] = None
    settings: ClassVar[dict[str, Any]] = {}
    rules: ClassVar[tuple[str, ...]] = ()
    skip_rules: ClassVar[dict[str, str]] = {}

    @classmethod
    def declaration(cls, name: str | None = None) -> Declaration:
        """The class as a declaration (one instance made now)."""
        where = _class_where(cls)
        method = cls.factory_method
        if not callable(getattr(cls, method, None)):
            return Declaration(cls.kind, None, where=where,
                               problem=f"class {cls.__qualname__} has no {method}() method: define it to "
                                       f"return the subject ({_WHAT[cls.kind]})")
        try:
            instance = cls()
        except Exception as exc:
            return Declaration(cls.kind, None, where=where,
                               problem=f"{cls.__qualname__}() raised {type(exc).__name__}: {exc}")
        settings = dict(cls.settings)
        for method_name, knob in _CAPABILITY_METHODS:
            fn = getattr(instance, method_name, None)
            if callable(fn) and knob not in settings:
                settings[knob] = fn()
        factory = getattr(instance, method)
        failed = getattr(instance, "create_failed_publisher", None)
        return _declare(cls.kind, _subject_of(cls.kind, instance, factory), id=cls.id or _class_id(cls),
                        failed=failed if callable(failed) else None, rules=cls.rules,
                        skip_rules=cls.skip_rules, settings=settings, where=where)


_WHAT = {
    PUBLISHER: "a Publisher of exactly n elements",
    SUBSCRIBER: "a Subscriber",
    WHITEBOX: "a Subscriber reporting to the probe",
    PROCESSOR: "an identity Processor",
}

_CAPABILITY_METHODS = (
    ("max_elements_from_publisher", "max_elements"),
    ("max_supported_subscribers", "max_subscribers"),
    ("bounded_depth_of_on_next_and_request_recursion", "recursion_depth"),
    ("skip_stochastic_tests", "skip_stochastic"),
)


def _class_id(cls: type) -> str:
    name = cls.__name__
    return name[4:] if name.startswith("Test") and len(name) > 4 else name


def _class_where(cls: type) -> tuple[str, int]:
    try:
        return inspect.getsourcefile(cls) or "?", inspect.getsourcelines(cls)[1]
    except (OSError, TypeError):
        module = sys.modules.get(cls.__module__)
        return getattr(module, "__file__", None) or cls.__module__, 0


def _subject_of(kind: str, instance: Any, factory: Callable[..., Any]) -> Any:
    """A bare factory, or the subject record when the class defines the element hook."""
    element = getattr(instance, "create_element", None)
    trigger = getattr(instance, "trigger_request", None)
    if kind == PUBLISHER or (not callable(element) and not callable(trigger)):
        return factory
    from . import subjects

    label = f"{type(instance).__module__}:{type(instance).__qualname__}"
    if kind == SUBSCRIBER:
        return subjects.SubscriberSubject(factory, element=element if callable(element) else None,
                                          trigger_request=trigger if callable(trigger) else None, label=label)
    if kind == WHITEBOX:
        return subjects.WhiteboxSubject(factory, element=element if callable(element) else None, label=label)
    return subjects.ProcessorSubject(factory, element=element if callable(element) else None, label=label)


class PublisherVerification(_Verification):
    """``create_publisher(self, n)``; optionally ``create_failed_publisher(self)``."""

    kind = PUBLISHER
    factory_method = "create_publisher"


class SubscriberBlackboxVerification(_Verification):
    """``create_subscriber(self)``; optionally ``create_element(self, i)``, ``trigger_request(self, s)``."""

    kind = SUBSCRIBER
    factory_method = "create_subscriber"


class SubscriberWhiteboxVerification(_Verification):
    """``create_subscriber(self, probe)``; optionally ``create_element(self, i)``."""

    kind = WHITEBOX
    factory_method = "create_subscriber"


class IdentityProcessorVerification(_Verification):
    """``create_identity_processor(self)``; optionally ``create_failed_publisher(self)``, ``create_element``."""

    kind = PROCESSOR
    factory_method = "create_identity_processor"


def declaration_of(obj: Any, name: str | None = None) -> Declaration | None:
    """``obj`` as a declaration: itself, a class form's subclass, or None for anything else."""
    if isinstance(obj, Declaration):
        return obj
    if isinstance(obj, type) and issubclass(obj, _Verification) and obj.__module__ != __name__:  # not a base
        return obj.declaration(name)
    return None
