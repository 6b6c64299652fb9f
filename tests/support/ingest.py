"""Helpers for the ingest tests: traffic, the worker's rows for it, runs of the ingest assets."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime

import dagster as dg
import psycopg

from sms_pipeline.core.clock import Clock
from sms_pipeline.orchestration import ingest_assets
from sms_pipeline.orchestration.schedules import partition_range_tags
from sms_pipeline.provider import ProviderClient, SendAccepted
from sms_pipeline.settings import Settings
from tests.support.numbers import numbers
from tests.support.rows import ensure_partitions, insert_message
from tests.support.runs import resources_for

DAY_REPORT = ingest_assets.DAY_REPORT
TRANSACTION_REPORTS = ingest_assets.TRANSACTION_REPORTS
INTRADAY = ingest_assets.INTRADAY_DELIVERY_REPORTS

_next_number = 1


def reset_numbers() -> None:
    """Start the numbers again, so a test's traffic (and the simulator's outcomes) never depends on test order."""
    global _next_number
    _next_number = 1


def mobiles(n: int) -> list[str]:
    """``n`` valid Indian mobile numbers ("9197…"), distinct within a test."""
    global _next_number
    batch = numbers(n, start=_next_number, series="97")
    _next_number += n
    return batch


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
    ensure_partitions(conn, submitted_at, 0, schemas=("msg",))
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
    run_config: dict | None = None,
) -> dg.ExecuteInProcessResult:
    """Run the project's ingest assets with the project's resources, the clock pinned to ``clock``
    (``run_config`` as a launchpad would give it, e.g. the report guard's)."""
    tags = partition_range_tags(first, last or first) if first is not None else None
    return dg.materialize(
        [ingest_assets.day_report, ingest_assets.transaction_reports, ingest_assets.intraday_delivery_reports],
        selection=list(selection),
        resources=resources_for(settings, clock),
        instance=instance or dg.DagsterInstance.ephemeral(),
        tags=tags,
        raise_on_error=raise_on_error,
        run_config=run_config or {},
    )
