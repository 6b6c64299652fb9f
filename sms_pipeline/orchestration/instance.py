"""Prepare ``DAGSTER_HOME``: render ``dagster.yaml`` for the active database."""

from __future__ import annotations

from pathlib import Path

from sms_pipeline import package_files
from sms_pipeline.db import connection
from sms_pipeline.settings import Settings

TEMPLATE = package_files.dagster_template()


def render(postgres_url: str) -> str:
    return TEMPLATE.read_text(encoding="utf-8").replace("{postgres_url}", postgres_url)


def prepare_dagster_home(settings: Settings) -> Path:
    """Create the ``dagster`` database if needed and write ``dagster.yaml``; return DAGSTER_HOME."""
    admin = connection.server_url(settings)
    connection.ensure_database(admin, settings.dagster_database)
    url = connection.sqlalchemy_psycopg2_url(connection.with_database(admin, settings.dagster_database))
    home = settings.dagster_home.resolve()
    home.mkdir(parents=True, exist_ok=True)
    target = home / "dagster.yaml"
    content = render(url)
    if not target.exists() or target.read_text(encoding="utf-8") != content:
        target.write_text(content, encoding="utf-8")
    return home
