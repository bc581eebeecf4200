"""What every catalogue asserts of a failure: it cites the records its verdict rests on, and
the results keep them, however long the trace grew."""

from __future__ import annotations

from rstck.results import TestResult


def assert_cites_kept_records(result: TestResult) -> None:
    """The headline cites at least one record when any was recorded, and every record any
    failure cites is in the results' trace (and so in the message, the JUnit text and the file)."""
    kept = {record["seq"] for record in result.trace}
    headline = result.failures[0]
    assert headline.evidence or not kept, f"the headline cites no record: {headline.headline()}"
    for failure in result.failures:
        missing = [seq for seq in failure.evidence if seq not in kept]
        assert not missing, f"cited record(s) {missing} not kept ({result.trace_total} in all): {failure.headline()}"
