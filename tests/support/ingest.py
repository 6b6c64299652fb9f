"""Helpers for the ingest tests: traffic, outbound rows, Dagster runs, table snapshots."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime
from itertools import count

import dagster as dg
import psycopg

from sms_pipeline.core.clock import Clock
from sms_pipeline.orchestration import ingest_assets
from sms_pipeline.orchestration.resources import ClockResource, build_resources
from sms_pipeline.orchestration.schedules import partition_range_tags
from sms_pipeline.provider import ProviderClient, SendAccepted
from sms_pipeline.settings import Settings
from tests.support.rows import insert_message

DAY_REPORT = ingest_assets.DAY_REPORT
TRANSACTION_REPORTS = ingest_assets.TRANSACTION_REPORTS
INTRADAY = ingest_assets.INTRADAY_DELIVERY_REPORTS

_numbers = count(1)


def reset_numbers() -> None:
    """Start the numbers again, so a test's traffic (and the simulator's outcomes) never depends on test order."""
    global _numbers
    _numbers = count(1)


def mobiles(n: int) -> list[str]:
    """``n`` valid Indian mobile numbers, distinct within a test."""
    return [f"9197{next(_numbers):08d}" for _ in range(n)]


def send(client: ProviderClient, recipients: Sequence[str], text: str = "Your order has shipped") -> SendAccepted:
    outcome = client.send(recipients, text, "SGCSMS")
    assert isinstance(outcome, SendAccepted), outcome
    return outcome


def insert_outbound(
    conn: psycopg.Connection,
    transaction_id: str,
    recipients: Sequence[str],
    submitted_at: datetime,
    *,
    state: str = "submitted",
    final_status: str | None = None,
) -> None:
    """The worker's rows for one accepted request (the worker itself is tested elsewhere)."""
    conn.execute("SELECT msg.ensure_partitions(%s, 0)", (submitted_at,))
    for recipient in recipients:
        insert_message(conn, recipient=recipient, state=state, provider_txn_id=transaction_id,
                       final_status=final_status, created_at=submitted_at, claimed_at=submitted_at,
                       submitted_at=submitted_at, billable_units=1)


def materialize(
    settings: Settings,
    clock: Clock,
    selection: Sequence[dg.AssetKey],
    first: date | None = None,
    last: date | None = None,
    *,
    instance: dg.DagsterInstance | None = None,
    raise_on_error: bool = True,
) -> dg.ExecuteInProcessResult:
    """Run the project's ingest assets with the project's resources, the clock pinned to ``clock``.

    The resources carry their secrets inline: ``settings`` come from a mapping, not the process environment.
    """
    resources = {
        **build_resources(settings, secrets_by_name=False),
        "clock": ClockResource(frozen_at=clock.now().isoformat()),
    }
    tags = partition_range_tags(first, last or first) if first is not None else None
    return dg.materialize(
        ingest_assets.definitions(settings).assets,
        selection=list(selection),
        resources=resources,
        instance=instance or dg.DagsterInstance.ephemeral(),
        tags=tags,
        raise_on_error=raise_on_error,
    )


def materializations(result: dg.ExecuteInProcessResult, key: dg.AssetKey) -> dict[str | None, dict]:
    """Partition -> metadata values of ``key``'s materialisations in ``result``."""
    found = {}
    for event in result.get_asset_materialization_events():
        m = event.event_specific_data.materialization
        if m.asset_key == key:
            found[m.partition] = {name: value.value for name, value in m.metadata.items()}
    return found


def snapshot(conn: psycopg.Connection, table: str, order_by: str) -> list[tuple]:
    """Every row with its ``xmin``: equal snapshots mean nothing was written, not even the same values."""
    return conn.execute(f"SELECT xmin::text, * FROM {table} ORDER BY {order_by}").fetchall()


def content(conn: psycopg.Connection, table: str, order_by: str) -> list[tuple]:
    """Every row, without system columns (to compare two databases)."""
    return conn.execute(f"SELECT * FROM {table} ORDER BY {order_by}").fetchall()
