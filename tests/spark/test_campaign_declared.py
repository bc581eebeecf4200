"""``rs-tck campaign tests/test_rs.py``: the subjects a library's tests declare, as campaign units.

No Spark session: the subjects read from the module, and one unit's process run as a campaign
task runs it (the Spark job only maps units onto tasks).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from rstck_plugins.campaign import cli
from rstck_plugins.campaign.plan import UsageError
from rstck_plugins.campaign.plan import build
from rstck_plugins.campaign.unit import run_unit

DECLARED = '''
import rstck.pytest as rs
from rstck.reference import failed_publisher, range_publisher
from rstck.reference.subscribers import sync_whitebox_subscriber

test_map = rs.publisher_verification(range_publisher, id="map", failed=failed_publisher,
                                     skip_rules={"3.9": "hands request(n) on"})
test_probed = rs.whitebox_verification(sync_whitebox_subscriber)


class TestRange(rs.PublisherVerification):
    def create_publisher(self, n):
        return range_publisher(n)


helper = rs.publisher_verification(range_publisher)  # not a test name: not a subject
'''


def test_a_test_module_gives_the_campaign_its_subjects_and_each_unit_their_settings(tmp_path: Path) -> None:
    module = tmp_path / "test_rs_declared_lib.py"
    module.write_text(DECLARED)
    subjects = cli.declared_subjects(module)
    assert [(s.role, s.spec) for s in subjects] == [
        ("publisher", "test_rs_declared_lib:test_map"),
        ("whitebox_subscriber", "test_rs_declared_lib:test_probed"),
        ("publisher", "test_rs_declared_lib:TestRange"),
    ]
    campaign = build(subjects, {"out": str(tmp_path / "runs"), "rules": "sanity,3.9"}, "t")
    unit = next(u for u in campaign.units() if u["subject"].endswith(":test_map"))
    rows = run_unit(unit, campaign.task())
    by_rule = {(r["rule"], r["outcome"]) for r in rows}
    assert ("3.9", "skipped") in by_rule
    assert all("hands request(n) on" in r["message"] for r in rows if r["rule"] == "3.9")
    assert {r["outcome"] for r in rows if r["rule"] is None} == {"passed"}


def test_a_module_without_declarations_is_a_usage_error(tmp_path: Path) -> None:
    module = tmp_path / "test_plain_units.py"
    module.write_text("def test_unit():\n    pass\n")
    with pytest.raises(UsageError, match="declares no subject"):
        cli.declared_subjects(module)
