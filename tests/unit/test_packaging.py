"""What an install needs: every imported distribution declared, the project's files found from the package."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

import pytest

from sms_pipeline import package_files
from sms_pipeline.cli import dev_cmd
from sms_pipeline.db import migrate
from sms_pipeline.errors import MigrationError

ROOT = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _declared(requirements: list[str]) -> set[str]:
    return {_normalise(re.match(r"[A-Za-z0-9._-]+", r.strip()).group(0)) for r in requirements}


def _imported(folder: Path) -> dict[str, str]:
    """Top-level names of every absolute import under ``folder`` (lazy ones too), with one file importing each."""
    found: dict[str, str] = {}
    for path in sorted(folder.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                found.setdefault(name.split(".")[0], str(path.relative_to(ROOT)))
    return found


def _undeclared(folder: Path, declared: set[str], own: set[str]) -> list[str]:
    distributions = importlib.metadata.packages_distributions()
    problems = []
    for name, where in sorted(_imported(folder).items()):
        if name in sys.stdlib_module_names or name in own:
            continue
        dists = {_normalise(d) for d in distributions.get(name, [])}
        if not dists:
            problems.append(f"{name} (imported by {where}) belongs to no installed distribution")
        elif not dists & declared:
            problems.append(f"{name} (imported by {where}) comes from {', '.join(sorted(dists))}, not declared")
    return problems


def test_every_package_the_code_imports_is_a_declared_dependency():
    declared = _declared(PROJECT["dependencies"])
    assert _undeclared(ROOT / "sms_pipeline", declared, {"sms_pipeline"}) == []


def test_every_package_the_tests_import_is_declared_with_the_dev_extra():
    declared = _declared(PROJECT["dependencies"]) | _declared(PROJECT["optional-dependencies"]["dev"])
    own = {"sms_pipeline", "tests", "conftest"}
    assert _undeclared(ROOT / "tests", declared, own) == []


def test_a_checkout_reads_the_files_at_the_top_of_the_repository():
    # The test environment is an editable install: no packaged copy, the originals.
    assert not package_files.is_packaged()
    assert package_files.sql_dir() == ROOT / "sql"
    assert package_files.queries_dir() == ROOT / "sql" / "queries"
    assert package_files.dbt_project_dir() == ROOT / "dbt_project"
    assert package_files.dagster_template() == ROOT / "dagster.yaml.template"
    assert migrate.discover(), "the project's migrations are found"


def test_no_migrations_is_an_error_not_an_empty_upgrade(tmp_path: Path):
    with pytest.raises(MigrationError, match="no migrations"):
        migrate.discover(tmp_path)
    with pytest.raises(MigrationError, match="no migrations"):
        migrate.discover(tmp_path / "missing")


def test_commands_are_found_beside_the_interpreter_first(tmp_path: Path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for folder in (bin_dir, tmp_path / "on_path"):
        folder.mkdir(exist_ok=True)
        tool = folder / "some-tool"
        tool.write_text("#!/bin/sh\n", encoding="utf-8")
        tool.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(bin_dir / "python"))
    monkeypatch.setenv("PATH", str(tmp_path / "on_path"))
    assert package_files.console_script("some-tool") == str(bin_dir / "some-tool")
    (bin_dir / "some-tool").unlink()
    assert package_files.console_script("some-tool") == str(tmp_path / "on_path" / "some-tool")
    with pytest.raises(Exception, match="neither beside"):
        package_files.console_script("no-such-tool")


def test_dev_writes_the_same_workspace_as_the_checkouts():
    def content(text: str) -> list[str]:
        return [line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]

    assert content(dev_cmd.WORKSPACE) == content((ROOT / "workspace.yaml").read_text(encoding="utf-8"))
