"""Reactive Streams TCK for Python: rule-by-rule conformance verification.

The core runs without pytest: ``Run("publisher", subject).results()`` yields one result per
rule test (``run_verification`` lists them). The pytest plugin (``pytest
--rs-publisher=module:factory``) and the campaign's work units are front ends over the same
``Run``.

Public: the names in ``__all__`` and every module outside ``rstck._internal``, which the
plugins, the campaign and users may import (what a test a user adds through
``rstck_modify_tests`` speaks: ``rstck.registry``, ``rstck.contexts``, ``rstck.probe``,
``rstck.manual``):

- ``rstck`` these names (``python -m rstck`` is the command line; its module is no import)
- ``rstck.api`` the Reactive Streams interfaces a subject implements
- ``rstck.run_api`` the run API: ``Run`` (select the tests, apply the subject's declared
  settings, schedule, results and their document), ``run_verification``, ``Schedule``
- ``rstck.pytest`` verifications declared in a library's tests (one subject each), which the
  pytest host collects; it imports no test framework
- ``rstck.subjects`` subject records and their loading
- ``rstck.reference`` conforming implementations, to run the kit on and to copy (the package and
  its modules)
- ``rstck.whitebox`` the probe a whitebox subscriber reports to
- ``rstck.settings`` the knobs
- ``rstck.results`` the results and their document
- ``rstck.errors`` ``RuleViolation``, ``NotVerified``, ``SetupError``
- ``rstck.rules`` the rules
- ``rstck.editions`` the rules' numberings in other editions
- ``rstck.generated_docs`` the generated rule tables and docs (``rules_output``, what ``rs-tck
  rules`` prints)
- ``rstck.verifications`` the verification kinds (``VERIFICATIONS``)
- ``rstck.registry`` the test record, ``TckTest``, and ``Registry``, which checks a test's name
  against its rule and level
- ``rstck.fuzz`` the replay token's check
- ``rstck.contexts`` the context a test body receives, one per kind of subject
  (``PublisherContext``, ``BlackboxContext``, ``WhiteboxContext``, ``ProcessorContext``)
- ``rstck.probe`` ``ProbeSubscriber``, the subscriber a publisher test subscribes and asserts
  with (``request``, ``next_element``, ``expect_error``, ``expect_quiet``, ...)
- ``rstck.manual`` ``ManualPublisher``, the upstream a subscriber test drives (``send_next``,
  ``expect_request``, ...)
- ``rstck.processes`` a run's subjects dealt to worker processes, so that a library's many
  subjects use every core

Everything under ``rstck._internal`` (and any module whose name starts with an underscore) is
private: it may change in any release, and nothing outside the core imports it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._internal.lazy import lazy_names

if TYPE_CHECKING:
    from .api import MAX_DEMAND
    from .api import Processor
    from .api import Publisher
    from .api import Subscriber
    from .api import Subscription
    from .errors import NotVerified
    from .errors import RuleViolation
    from .errors import SetupError
    from .results import Failure
    from .results import TestResult
    from .rules import RULES
    from .rules import Rule
    from .run_api import Run
    from .run_api import run_publisher_verification
    from .run_api import run_verification
    from .settings import Settings
    from .subjects import ProcessorSubject
    from .subjects import PublisherSubject
    from .subjects import SubscriberSubject
    from .subjects import WhiteboxSubject
    from .whitebox import Puppet
    from .whitebox import WhiteboxProbe

__version__ = "0.1.0"

#: Where each public name lives: loaded on first use, so that importing one module of the
#: core (``rstck._internal.one_rule``, ``rstck.probe``) does not load the verifications and the engine.
_LAZY = {
    "MAX_DEMAND": "api",
    "Processor": "api",
    "Publisher": "api",
    "Subscriber": "api",
    "Subscription": "api",
    "Run": "run_api",
    "run_publisher_verification": "run_api",
    "run_verification": "run_api",
    "NotVerified": "errors",
    "RuleViolation": "errors",
    "SetupError": "errors",
    "Failure": "results",
    "TestResult": "results",
    "RULES": "rules",
    "Rule": "rules",
    "Settings": "settings",
    "ProcessorSubject": "subjects",
    "PublisherSubject": "subjects",
    "SubscriberSubject": "subjects",
    "WhiteboxSubject": "subjects",
    "Puppet": "whitebox",
    "WhiteboxProbe": "whitebox",
}


__getattr__ = lazy_names(globals(), {name: f".{module}" for name, module in _LAZY.items()})


__all__ = [
    "MAX_DEMAND",
    "RULES",
    "Failure",
    "NotVerified",
    "Processor",
    "ProcessorSubject",
    "Publisher",
    "PublisherSubject",
    "Puppet",
    "Rule",
    "RuleViolation",
    "Run",
    "Settings",
    "SetupError",
    "Subscriber",
    "SubscriberSubject",
    "Subscription",
    "TestResult",
    "WhiteboxProbe",
    "WhiteboxSubject",
    "run_publisher_verification",
    "run_verification",
]
