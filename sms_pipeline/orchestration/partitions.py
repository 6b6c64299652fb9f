"""The one day-partitions object and the one backfill policy.

Partition ``D`` is the provider-local day ``D``: exactly what
``/report/day?date=D`` returns. Every partitioned asset (ingest,
reconciliation, dbt) must use the object built here, so a backfill of a date
range means the same days everywhere.
"""

from __future__ import annotations

import dagster as dg

from sms_pipeline.settings import Settings

# At most a month per run: a backfill of a year is 12 runs that each finish
# (and stay finished) on their own, not one run that dies on day 300.
BACKFILL_POLICY = dg.BackfillPolicy.multi_run(max_partitions_per_run=31)

# Assets that write the msg/dlr tables share this pool; dagster.yaml limits it
# to one, so two runs never reconcile at once.
DATABASE_POOL = "sms_pipeline_database"


def day_partitions(settings: Settings) -> dg.DailyPartitionsDefinition:
    return dg.DailyPartitionsDefinition(
        start_date=settings.partition_start.isoformat(),
        timezone=settings.provider_timezone.key,
        end_offset=0,  # today is not a partition until the provider day has closed
    )


def day_asset_options(settings: Settings) -> dict:
    """What every day-partitioned asset that writes msg/dlr tables shares."""
    return {
        "partitions_def": day_partitions(settings),
        "backfill_policy": BACKFILL_POLICY,
        "pool": DATABASE_POOL,
        "kinds": {"python", "postgres"},
    }
