"""What a failed race hunt says it tried: the round it failed in is counted, and it showed."""

from __future__ import annotations

import json
import re

import pytest

SUBJECTS = '''
from tests.broken.processors import ResetsItsDeliveryTurn
from tests.broken.processors import subject

resets_its_turn = subject(ResetsItsDeliveryTurn)
'''

HUNT = "stochastic_spec308_an_element_arriving_while_a_subscriber_requests_must_still_be_delivered"


def test_a_failed_race_hunt_counts_the_round_it_failed_in_as_one_that_showed(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(subjects=SUBJECTS)
    pytester.syspathinsert()
    result = pytester.runpytest("--rs-processor=subjects:resets_its_turn", "-k", HUNT, "--rs-report-json=r.json")
    result.assert_outcomes(failed=1)
    (data,) = json.loads((pytester.path / "r.json").read_text())["results"]
    match = re.search(r"\(round (\d+),", data["message"])
    assert match is not None, data["message"][:500]
    assert data["iterations"] == {"ran": int(match.group(1)), "showed": 1}
    result.stdout.fnmatch_lines([f"3.8 *FAILED*race shown in 1 of {match.group(1)} iteration*"])
