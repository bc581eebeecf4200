"""Reactive Streams TCK for Python: rule-by-rule conformance verification.

The core runs without pytest: ``run_publisher_verification(subject)`` returns one result per
rule test. The pytest plugin (``pytest --rs-publisher=module:factory``) is a thin front end
over the same engine.
"""

from __future__ import annotations

from .api import MAX_DEMAND
from .api import Processor
from .api import Publisher
from .api import Subscriber
from .api import Subscription
from .engine import run_publisher_verification
from .engine import run_verification
from .errors import NotVerified
from .errors import RuleViolation
from .errors import SetupError
from .results import Failure
from .results import TestResult
from .rules import RULES
from .rules import Rule
from .settings import Settings
from .subjects import ProcessorSubject
from .subjects import PublisherSubject
from .subjects import SubscriberSubject
from .subjects import WhiteboxSubject
from .whitebox import Puppet
from .whitebox import WhiteboxProbe

__version__ = "0.1.0"

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
