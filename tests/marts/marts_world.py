"""Marts tests: a real Postgres, real dbt through the real Dagster assets.

dbt invocations cost seconds each, so a module can share one database
(``marts_db_url``) and build it once; tests that mutate data use their own.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any

import dagster as dg
import psycopg
import pytest
from dagster_dbt import DbtCliResource
from scratch_databases import scratch_database

from sms_pipeline import settings as settings_module
from sms_pipeline.marts.project import dbt_project
from sms_pipeline.orchestration import marts_assets
from sms_pipeline.orchestration.resources import ClockResource, DatabaseResource, ProviderResource

MARTS_TABLES = ("cost_daily", "delivery_latency_daily", "delivery_by_class_daily",
                "reconciliation_daily", "provider_tieout_daily")


@pytest.fixture(scope="module")
def marts_db_url(pg_admin_url: str, template_db: str) -> Iterator[str]:
    """A migrated database shared by one test module."""
    yield from scratch_database(pg_admin_url, template_db, prefix="sms_test_marts")


def settings_for(db_url: str, home: Path) -> settings_module.Settings:
    env = {k: v for k, v in os.environ.items() if not k.startswith(settings_module.PREFIXES)}
    env.update({"SMS_PIPELINE_HOME": str(home), "SMS_PIPELINE_DATABASE_URL": db_url})
    return settings_module.load(env)


class Marts:
    """The marts assets of one database, materialised in process like a Dagster run would."""

    def __init__(self, settings: settings_module.Settings, provider: ProviderResource | None = None) -> None:
        assert settings.database_url
        self.settings = settings
        self.defs = marts_assets.definitions(settings)
        self.assets = list(self.defs.assets or [])
        self.resources: dict[str, Any] = {
            "dbt": DbtCliResource(project_dir=dbt_project()),
            "database": DatabaseResource(url=settings.database_url),
            "clock": ClockResource(),
            "provider": provider or ProviderResource(base_url="http://127.0.0.1:9/unused", userid="unused"),
        }

    def _assets_named(self, name: str) -> dg.AssetsDefinition:
        return next(a for a in self.assets if a.node_def.name == name)

    def _materialize(self, selection: list[dg.AssetKey], partition_key: str | None,
                     run_config: dict | None = None) -> dg.ExecuteInProcessResult:
        return dg.materialize(self.assets, selection=selection, partition_key=partition_key,
                              resources=self.resources, run_config=run_config or {})

    def build_views(self) -> dg.ExecuteInProcessResult:
        return self._materialize(list(self._assets_named("marts_views").keys), None)

    def build_day(self, day: date, *, full_refresh: bool = False) -> dg.ExecuteInProcessResult:
        config = {"ops": {"marts_daily": {"config": {"full_refresh": full_refresh}}}}
        return self._materialize(list(self._assets_named("marts_daily").keys), day.isoformat(), config)

    def fetch_summary(self, day: date) -> dg.ExecuteInProcessResult:
        return self._materialize([marts_assets.PROVIDER_SUMMARY_KEY], day.isoformat())


def snapshot(db_url: str) -> dict[str, list[tuple]]:
    """Every mart's rows, in a stable order."""
    def order(row: tuple) -> tuple:
        return tuple((value is None, str(value)) for value in row)

    with psycopg.connect(db_url) as conn:
        return {table: sorted(conn.execute(f"SELECT * FROM marts.{table}").fetchall(), key=order)
                for table in MARTS_TABLES}


def rows_as_dicts(db_url: str, sql: str, params: tuple = ()) -> list[dict[str, Any]]:
    with psycopg.connect(db_url) as conn, conn.cursor(row_factory=psycopg.rows.dict_row) as cur:
        return cur.execute(sql, params).fetchall()


_MESSAGE_COLUMNS = {
    "tenant_id", "channel", "message_class", "sender_id", "encoding", "segments", "state", "state_reason",
    "created_at", "claimed_at", "submitted_at", "delivered_at", "billable_units", "cost", "cost_currency",
    "correlation_result", "provider_message_id",
}
_MESSAGE_DEFAULTS = {"tenant_id": "acme", "channel": "sms", "message_class": "transactional", "sender_id": "ACMETX",
                     "encoding": "GSM7", "segments": 1}


def insert_messages(conn: psycopg.Connection, count: int = 1, *, latency_s: float | None = None,
                    **columns: Any) -> list[tuple[int, Any]]:
    """``count`` outbound rows with the given columns (unique business keys and recipients).

    ``latency_s``: delivered_at = submitted_at + (latency_s + i) seconds for
    the i-th row (i from 0), so a batch has latencies latency_s, latency_s+1, ...
    Returns (id, created_at) of the rows.
    """
    values = {**_MESSAGE_DEFAULTS, **columns}
    unknown = set(values) - _MESSAGE_COLUMNS
    assert not unknown, f"not an outbound_message column here: {unknown}"
    names = sorted(values)
    selects = [f"%({name})s" for name in names]
    if latency_s is not None:
        names.append("delivered_at")
        selects.append("%(submitted_at)s::timestamptz + make_interval(secs => %(latency_s)s + g - 1)")
    sql = (
        f"INSERT INTO msg.outbound_message (business_key, recipient, body, {', '.join(names)}) "
        f"SELECT %(prefix)s || g, '9198' || lpad(g::text, 8, '0'), 'hello', {', '.join(selects)} "
        f"FROM generate_series(1, %(count)s) AS g RETURNING id, created_at"
    )
    params = {**values, "prefix": f"bk-{uuid.uuid4().hex}-", "count": count, "latency_s": latency_s}
    return conn.execute(sql, params).fetchall()


def ensure_partitions(conn: psycopg.Connection, first_month: date, months_ahead: int = 2) -> None:
    conn.execute("SELECT msg.ensure_partitions(%s, %s)", (first_month, months_ahead))
    conn.execute("SELECT dlr.ensure_partitions(%s, %s)", (first_month, months_ahead))
