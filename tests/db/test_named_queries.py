"""The SQL convention: every statement is a named file of sql/queries, run by the one runner.

Each file starts with a comment header that names its parameters (and the
identifiers it takes), every file is run by the application (a query only
tests read is dead), and no Python module outside the runner executes SQL of
its own: the migration runner (db/migrate.py) included, whose bookkeeping
statements are named queries too (only the migration files themselves go
through ``queries.run_script``).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
QUERY_FILES = sorted((ROOT / "sql" / "queries").glob("*.sql"))
PACKAGE_SOURCES = {path: path.read_text(encoding="utf-8") for path in sorted((ROOT / "sms_pipeline").rglob("*.py"))}
RUNNERS = {ROOT / "sms_pipeline" / "db" / "queries.py"}


def _header_and_body(path: Path) -> tuple[str, str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    count = next((i for i, line in enumerate(lines) if not line.startswith("--")), len(lines))
    return "\n".join(lines[:count]), "\n".join(lines[count:])


def test_there_are_named_queries():
    assert len(QUERY_FILES) > 50


@pytest.mark.parametrize("path", QUERY_FILES, ids=lambda p: p.stem)
def test_each_query_file_has_a_header_naming_its_parameters_and_identifiers(path):
    header, body = _header_and_body(path)
    assert header, f"{path.name}: starts with a comment saying what it does and its parameters"
    assert body.strip(), f"{path.name}: holds a statement"
    unnamed = sorted(p for p in set(re.findall(r"%\((\w+)\)s", body)) if not re.search(rf"\b{p}\b", header))
    assert not unnamed, f"{path.name}: parameters not named in the header: {unnamed}"
    fields = set(re.findall(r"\{(\w+)\}", body))
    if fields:
        (line,) = [line for line in header.splitlines() if "Identifiers:" in line]
        assert all(field in line for field in fields), f"{path.name}: identifiers {sorted(fields)} not all named"


@pytest.mark.parametrize("path", QUERY_FILES, ids=lambda p: p.stem)
def test_each_query_is_run_by_the_application(path):
    """A named query that only tests read is dead: production uses it, or it goes."""
    literal = re.compile(rf"""["']{re.escape(path.stem)}["']""")
    assert any(literal.search(text) for text in PACKAGE_SOURCES.values()), f"{path.name} is not used by sms_pipeline"


def test_no_module_runs_sql_outside_the_runner():
    executing = re.compile(r"\.(execute|executemany)\(|\bcur\.copy\(|\bcursor\(\)\.copy\(")
    offenders = [f"{path.relative_to(ROOT)}:{n}" for path, text in PACKAGE_SOURCES.items() if path not in RUNNERS
                 for n, line in enumerate(text.splitlines(), start=1) if executing.search(line)]
    assert not offenders, f"SQL run outside sms_pipeline.db.queries: {offenders}"
