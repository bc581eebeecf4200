"""Project hygiene that keeps its promises checkable: lint, types, generated docs (layering:
test_import_contract.py)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_ruff_is_clean() -> None:
    ruff = shutil.which("ruff") or str(Path(sys.executable).with_name("ruff"))
    result = subprocess.run([ruff, "check", "tck", "plugins", "tests", "conftest.py"], cwd=ROOT,
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


def test_types_are_clean() -> None:
    # Each top-level folder holds its package under its import name (pyproject's mypy_path).
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"), "--no-incremental",
         "-p", "rstck", "-p", "rstck_plugins"],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_readme_rule_table_is_current() -> None:
    from rstck.generated_docs import readme_block

    assert readme_block() in (ROOT / "README.md").read_text(), (
        "README rule table is stale: run `python -m rstck rules --update README.md`"
    )


def test_verifications_doc_is_current() -> None:
    from rstck.generated_docs import verifications_markdown

    assert (ROOT / "docs" / "verifications.md").read_text() == verifications_markdown(), (
        "docs/verifications.md is stale: run `python -m rstck docs --update docs/verifications.md`"
    )


@pytest.mark.parametrize("command", ["rules", "tests", "docs"])
def test_command_line(command: str) -> None:
    out = subprocess.run([sys.executable, "-m", "rstck", command], capture_output=True, text=True, check=True).stdout
    assert "3.9" in out


def test_every_package_directory_is_packaged() -> None:
    import tomllib

    packages = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {
        ".".join(init.relative_to(ROOT / top).parts[:-1])
        for top in ("tck", "plugins")
        for init in (ROOT / top).rglob("__init__.py")
    }
    assert found == packages, "pyproject.toml [tool.setuptools] packages must list every package"
