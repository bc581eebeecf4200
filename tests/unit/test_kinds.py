"""One record per verification kind: the names, the schema and the plugin's options follow it."""

from __future__ import annotations

import json
import re
from importlib import resources

import pytest
import rstck.results
from rstck._internal.environment import Environment
from rstck.settings import Settings
from rstck.verifications import NAMES
from rstck.verifications import VERIFICATIONS


def _schema() -> dict[str, object]:
    text = resources.files("rstck").joinpath("schemas/rs-tck-results-1.schema.json").read_text()
    schema: dict[str, object] = json.loads(text)
    return schema


def test_the_schema_enum_is_the_records_names() -> None:
    result = _schema()["$defs"]["result"]  # type: ignore[index]
    assert result["properties"]["verification"]["enum"] == list(NAMES)
    assert list(NAMES) == list(VERIFICATIONS)


def test_the_schema_levels_and_name_pattern_follow_the_results_contract() -> None:
    properties = _schema()["$defs"]["result"]["properties"]  # type: ignore[index]
    assert properties["level"]["enum"] == list(rstck.results.LEVELS)
    assert properties["test"]["pattern"].startswith(f"^(({'|'.join(rstck.results.LEVELS)})_")
    # Every name a verification has must be one the schema allows: ingest rejects the file else.
    pattern = re.compile(properties["test"]["pattern"])
    names = {t.name for v in VERIFICATIONS.values() for t in v.tests}
    assert "fuzz_demand_cancel_orders" in names
    assert [n for n in sorted(names) if not pattern.match(n)] == []


def test_no_second_list_of_names_shadows_the_records() -> None:
    assert not hasattr(rstck.results, "VERIFICATIONS")


def test_every_record_holds_its_own_tests() -> None:
    import rstck.verifications

    for name, verification in VERIFICATIONS.items():
        assert verification.name == name
        # The record names its kind without importing the module of tests, which names it too.
        assert name == getattr(rstck.verifications, name).VERIFICATION
        assert verification.tests
        assert {t.verification for t in verification.tests} == {name}
        assert verification.option.startswith("--rs-")


def test_the_plugins_subject_options_are_the_records() -> None:
    from rstck_plugins.host import pytest_entry

    options = dict(pytest_entry.table()[0])
    for verification in VERIFICATIONS.values():
        attrs = options[verification.option]
        assert attrs["dest"] == verification.dest
        assert attrs["action"] == "append"  # several subjects of a kind in one run


def test_help_lists_each_records_option_and_text(pytester: pytest.Pytester) -> None:
    out = pytester.runpytest("--help").stdout.str()
    for verification in VERIFICATIONS.values():
        assert f"{verification.option}=[ID=]MODULE:ATTR" in out
        assert verification.help.split()[0] in out


@pytest.mark.parametrize("name", NAMES)
def test_each_records_context_factory_builds_a_context(name: str) -> None:
    from rstck.reference import failed_publisher
    from rstck.reference import range_publisher
    from rstck.reference.processors import identity_processor
    from rstck.reference.subscribers import sync_subscriber
    from rstck.reference.subscribers import sync_whitebox_subscriber
    from rstck.subjects import ProcessorSubject
    from rstck.subjects import PublisherSubject
    from rstck.subjects import SubscriberSubject
    from rstck.subjects import WhiteboxSubject

    subjects = {
        "publisher": PublisherSubject(range_publisher, failed_publisher),
        "subscriber_blackbox": SubscriberSubject(sync_subscriber),
        "subscriber_whitebox": WhiteboxSubject(sync_whitebox_subscriber),
        "processor": ProcessorSubject(identity_processor),
    }
    with Environment(Settings()) as env:
        context = VERIFICATIONS[name].make_context(env, subjects[name])
        assert context.env is env
        context.finish()


@pytest.mark.parametrize("name", NAMES)
def test_a_loader_names_its_records_option_and_resolves_by_its_role(name: str) -> None:
    """The option is spelled once: the loader's refusal and the role it resolves by are the record's."""
    from rstck.errors import SetupError

    verification = VERIFICATIONS[name]
    asked: list[str] = []

    def resolve(spec: str, role: str) -> object:
        asked.append(role)
        return 42

    with pytest.raises(SetupError, match=rf"^{re.escape(verification.option)}=m:f: int object is not callable"):
        verification.load_subject("m:f", resolve=resolve)
    assert asked == [verification.role]
    assert verification.option == "--rs-" + verification.role.replace("_", "-")
