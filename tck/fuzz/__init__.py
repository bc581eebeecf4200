"""Fuzzing with Hypothesis: generated request/cancel/signal orders, shrunk to a replayable scenario.

``publisher_side`` and ``subscriber_side`` generate and interpret scenarios, ``search`` drives
Hypothesis (shrinking, races, the CI profile), ``scenario`` renders and encodes them, and
``verify`` holds the bodies of the fuzz verifications registered with each verification class.
"""
