"""Marts tests: a real Postgres, real dbt through the real Dagster assets.

dbt invocations cost seconds each, so a module can share one database
(``marts_db_url``) and build it once; tests that mutate data use their own.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date
from typing import Any

import dagster as dg
import psycopg
import pytest
from tests.support.databases import scratch_database

from sms_pipeline import settings as settings_module
from sms_pipeline.orchestration import asset_keys, marts_assets
from sms_pipeline.orchestration.resources import build_resources
from sms_pipeline.orchestration.schedules import partition_range_tags

MARTS_TABLES = ("cost_daily", "delivery_latency_daily", "delivery_by_class_daily",
                "reconciliation_daily", "provider_tieout_daily")


@pytest.fixture(scope="module")
def marts_db_url(pg_admin_url: str, template_db: str) -> Iterator[str]:
    """A migrated database shared by one test module."""
    yield from scratch_database(pg_admin_url, template_db, prefix="sms_test_marts")


class Marts:
    """The marts assets of one database, materialised in process like a Dagster run would.

    The resources are the project's own for ``settings`` (their secrets inline: the settings
    come from a mapping), the provider included (``settings_for`` points it nowhere unless told).
    """

    def __init__(self, settings: settings_module.Settings) -> None:
        assert settings.database_url
        self.settings = settings
        self.assets = [marts_assets.marts_views, marts_assets.marts_daily, marts_assets.provider_summary]
        self.resources: dict[str, Any] = build_resources(settings, secrets_by_name=False)

    def _assets_named(self, name: str) -> dg.AssetsDefinition:
        return next(a for a in self.assets if a.node_def.name == name)

    def _materialize(self, selection: list[dg.AssetKey], partition_key: str | None,
                     run_config: dict | None = None, tags: dict[str, str] | None = None) -> dg.ExecuteInProcessResult:
        return dg.materialize(self.assets, selection=selection, partition_key=partition_key,
                              resources=self.resources, run_config=run_config or {}, tags=tags)

    def build_views(self) -> dg.ExecuteInProcessResult:
        # The views are partitioned like the marts (a range passes through them);
        # what they build is the same whatever the day.
        views = self._assets_named("marts_views")
        return self._materialize(list(views.keys), views.partitions_def.get_last_partition_key())

    def build_day(self, day: date, *, full_refresh: bool = False) -> dg.ExecuteInProcessResult:
        config = {"ops": {"marts_daily": {"config": {"full_refresh": full_refresh}}}}
        return self._materialize(list(self._assets_named("marts_daily").keys), day.isoformat(), config)

    def build_days(self, first: date, last: date) -> dg.ExecuteInProcessResult:
        """The marts of days ``first..last`` as one run, as a range backfill runs them."""
        return self._materialize(list(self._assets_named("marts_daily").keys), None,
                                 tags=partition_range_tags(first, last))

    def fetch_summary(self, day: date) -> dg.ExecuteInProcessResult:
        return self._materialize([asset_keys.PROVIDER_SUMMARY], day.isoformat())


def mart_rows(db_url: str) -> dict[str, list[tuple]]:
    """Every mart's rows, in a stable order (marts have no key to order by)."""
    def order(row: tuple) -> tuple:
        return tuple((value is None, str(value)) for value in row)

    with psycopg.connect(db_url) as conn:
        return {table: sorted(conn.execute(f"SELECT * FROM marts.{table}").fetchall(), key=order)
                for table in MARTS_TABLES}


def rows_as_dicts(db_url: str, sql: str, params: tuple = ()) -> list[dict[str, Any]]:
    with psycopg.connect(db_url) as conn, conn.cursor(row_factory=psycopg.rows.dict_row) as cur:
        return cur.execute(sql, params).fetchall()

