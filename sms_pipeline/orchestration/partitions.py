"""The one day-partitions object and the one backfill policy.

Partition ``D`` is the provider-local day ``D``: exactly what
``/report/day?date=D`` returns. Every partitioned asset (ingest,
reconciliation, dbt) uses :data:`DAY_PARTITIONS`, so a backfill of a date
range means the same days everywhere.
"""

from __future__ import annotations

from datetime import date

import dagster as dg

from sms_pipeline.db import connection, installation
from sms_pipeline.orchestration.location import SETTINGS

# At most a month per run: a backfill of a year is 12 runs that each finish
# (and stay finished) on their own, not one run that dies on day 300.
BACKFILL_POLICY = dg.BackfillPolicy.multi_run(max_partitions_per_run=31)

# Assets that write the msg/dlr tables share this pool; dagster.yaml limits it
# to one, so two runs never reconcile at once.
DATABASE_POOL = "sms_pipeline_database"


def _first_day() -> date:
    """The first day partition: ``SMS_PIPELINE_PARTITION_START`` when set, else the day the database recorded
    at its first upgrade (docs/design.md#first-partition-day)."""
    if SETTINGS.partition_start is not None:
        return SETTINGS.partition_start
    with connection.connect(SETTINGS) as conn:
        return installation.partition_start(conn)


FIRST_DAY: date = _first_day()

DAY_PARTITIONS = dg.DailyPartitionsDefinition(
    start_date=FIRST_DAY.isoformat(),
    timezone=SETTINGS.provider_timezone.key,
    end_offset=0,  # today is not a partition until the provider day has closed
)

# What every day-partitioned asset that writes msg/dlr tables shares.
DAY_ASSET_OPTIONS: dict = {
    "partitions_def": DAY_PARTITIONS,
    "backfill_policy": BACKFILL_POLICY,
    "pool": DATABASE_POOL,
    "kinds": {"python", "postgres"},
}
