"""Real Postgres for the tests: a fresh database per test, cloned from a migrated template.

The server is ``SMS_PIPELINE_TEST_DATABASE_URL`` when set, else an embedded
one in ``.sms-pipeline-test/`` beside the project (kept running between
runs). The template is named after the migrations' fingerprint, so a changed
migration builds a new template and an unchanged one is reused: a fresh
database per test costs one ``CREATE DATABASE ... TEMPLATE`` (tens of ms).
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

import psycopg
import pytest

from sms_pipeline import settings as settings_module
from sms_pipeline.db import connection, embedded, migrate, queries
from sms_pipeline.reconcile import transaction
from tests.support.environment import settings_for

PROJECT_ROOT = Path(__file__).resolve().parents[2]
_TEMPLATE_LOCK = 0x5A5_0002


# The embedded test server holds nothing that must survive a power cut: it
# skips the flushes that make a commit durable (a test's commit then costs
# what its work costs, not a disk flush). Never set on an external server.
_THROWAWAY_SERVER_SETTINGS = {"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"}


def _admin_url() -> str:
    external = os.environ.get("SMS_PIPELINE_TEST_DATABASE_URL")
    if external:
        return connection.with_database(external, "postgres")
    url = embedded.ensure_running(PROJECT_ROOT / ".sms-pipeline-test")
    with connection.connect_url(url, autocommit=True) as admin:
        current = dict(admin.execute(
            "SELECT name, setting FROM pg_settings WHERE name = ANY(%s)", (list(_THROWAWAY_SERVER_SETTINGS),)))
        if current != _THROWAWAY_SERVER_SETTINGS:
            for name, value in _THROWAWAY_SERVER_SETTINGS.items():
                admin.execute(f"ALTER SYSTEM SET {name} = {value}")
            admin.execute("SELECT pg_reload_conf()")
    return url


@pytest.fixture(scope="session")
def pg_admin_url() -> str:
    return _admin_url()


@pytest.fixture(scope="session")
def template_db(pg_admin_url: str) -> str:
    """The migrated template's name, built once per migration set (safe across xdist workers)."""
    # The month is part of the name: the template holds message partitions
    # around the month it was built in, so a new month builds a new one.
    name = f"sms_tpl_{migrate.fingerprint()[:12]}_{datetime.now(timezone.utc):%Y%m}"
    with connection.connect_url(pg_admin_url, autocommit=True) as admin:
        admin.execute("SELECT pg_advisory_lock(%s)", (_TEMPLATE_LOCK,))
        try:
            if admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone() is None:
                building = f"{name}_building"
                admin.execute(f'DROP DATABASE IF EXISTS "{building}" WITH (FORCE)')
                admin.execute(f'CREATE DATABASE "{building}"')
                with connection.connect_url(connection.with_database(pg_admin_url, building)) as conn:
                    migrate.upgrade(conn)
                    # Tests run on virtual clocks up to a few weeks back: cover the months around now.
                    conn.execute("SELECT msg.ensure_partitions(now() - interval '3 months', 5)")
                    conn.execute("SELECT dlr.ensure_partitions(now() - interval '3 months', 5)")
                    conn.commit()
                # Publish atomically: a half-migrated template never carries the final name.
                admin.execute(f'ALTER DATABASE "{building}" RENAME TO "{name}"')
                admin.execute(f'ALTER DATABASE "{name}" WITH IS_TEMPLATE true')
                # Only templates of past months go: another checkout or run on the same
                # server may be using a template of other migrations right now.
                stale = admin.execute(
                    "SELECT datname FROM pg_database WHERE datname LIKE 'sms\\_tpl\\_%%' AND datname NOT LIKE %s",
                    (f"%\\_{datetime.now(timezone.utc):%Y%m}",),
                ).fetchall()
                for (old,) in stale:
                    admin.execute(f'ALTER DATABASE "{old}" WITH IS_TEMPLATE false')
                    admin.execute(f'DROP DATABASE IF EXISTS "{old}" WITH (FORCE)')
        finally:
            admin.execute("SELECT pg_advisory_unlock(%s)", (_TEMPLATE_LOCK,))
    return name


@pytest.fixture
def db_url(pg_admin_url: str, template_db: str) -> Iterator[str]:
    """A fresh, migrated database for one test; dropped afterwards."""
    yield from scratch_database(pg_admin_url, template_db)


@pytest.fixture
def second_db_url(pg_admin_url: str, template_db: str) -> Iterator[str]:
    """Another fresh migrated database on the same server (e.g. for a reference run)."""
    yield from scratch_database(pg_admin_url, template_db)


@pytest.fixture
def blank_db(pg_admin_url: str) -> Iterator[psycopg.Connection]:
    """An empty database (no migrations), for testing the migration runner itself."""
    for url in scratch_database(pg_admin_url, "template0"):
        with psycopg.connect(url, autocommit=True) as conn:
            yield conn


@pytest.fixture
def db(db_url: str) -> Iterator[psycopg.Connection]:
    """An autocommit connection to the test's database."""
    with psycopg.connect(db_url, autocommit=True) as conn:
        yield conn


@pytest.fixture
def settings(tmp_path: Path, db_url: str) -> settings_module.Settings:
    """Settings pointing at the test's database, with a private home folder."""
    return settings_for(db_url, tmp_path / "home")


def scratch_database(admin_url: str, template: str, prefix: str = "sms_test") -> Iterator[str]:
    """Yield the URL of a new database made from ``template``; drop it when the generator closes."""
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    with connection.connect_url(admin_url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
        # A test database is thrown away: its commits need not wait for the disk,
        # on any server (a setting of this database only, not of the server).
        admin.execute(f'ALTER DATABASE "{name}" SET synchronous_commit = off')
    try:
        yield connection.with_database(admin_url, name)
    finally:
        with connection.connect_url(admin_url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def planned_query(name: str) -> str:
    """What the named statement plans: the query of a ``CREATE UNLOGGED TABLE ... AS``, any other as it is."""
    return strip_create_table_as(queries.load(name))


def strip_create_table_as(text: str) -> str:
    """A ``CREATE UNLOGGED TABLE ... AS`` statement's query (a statement of any other kind unchanged)."""
    return re.sub(r"(?ms)^CREATE UNLOGGED TABLE [\w.]+ AS\s*$", "", text)


def plan_nodes(plan: dict) -> Iterator[dict]:
    """Every node of an ``EXPLAIN (FORMAT JSON)`` plan, the given one first."""
    yield plan
    for child in plan.get("Plans", []):
        yield from plan_nodes(child)


def planned_inside_reconciliation(name: str) -> bool:
    """Whether the named statement runs in the reconciliation's transaction (its health checks do not)."""
    return name.startswith("reconcile_") and not name.startswith("reconcile_health_")


@contextmanager
def reconciliation_planner(conn: psycopg.Connection, name: str) -> Iterator[None]:
    """Plan statement ``name`` as its run does: a statement of the reconciliation's transaction with that
    transaction's prices for a row handed over by a parallel worker and for a page read out of order
    (docs/design.md "Work tables and the second core", "Index probes late in the month"); any other with
    the server's own."""
    if not planned_inside_reconciliation(name):
        yield
        return
    conn.execute("SELECT set_config('parallel_tuple_cost', %s, false), set_config('random_page_cost', %s, false)",
                 (transaction.PARALLEL_TUPLE_COST, transaction.RANDOM_PAGE_COST))
    try:
        yield
    finally:
        conn.execute("RESET parallel_tuple_cost")
        conn.execute("RESET random_page_cost")
