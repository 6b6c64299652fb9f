"""The two cadences: daily after the provider day closes, and hourly.

Jobs select by asset group and a cadence tag, not by asset name, so the
reconciliation and mart modules join them by declaring their group (and,
for unpartitioned hourly work, the tag):

- daily job: every asset in the groups ``ingest``, ``reconcile``, ``marts``
  except those tagged hourly; one run per tick over the day partitions
  ``yesterday - lookback .. yesterday`` (late receipts change past days);
- hourly job: every asset tagged ``HOURLY_TAGS`` (intraday pulls, upkeep,
  the observation of the send queue), with the checks on them.

Both schedules run in the provider's time zone, so "yesterday" is the
provider's yesterday whatever the server's zone, and the daily tick stays at
02:00 provider-local across DST changes.
"""

from __future__ import annotations

import warnings
from datetime import date, datetime, timedelta

import dagster as dg

from sms_pipeline.settings import Settings

CADENCE_TAG = "sms_pipeline/cadence"
HOURLY_TAGS = {CADENCE_TAG: "hourly"}
DAILY_GROUPS = ("ingest", "reconcile", "marts")

DAILY_JOB = "daily_reports_job"
HOURLY_JOB = "hourly_job"
DAILY_CRON = "0 2 * * *"  # 02:00 provider-local: the day has closed, its report is complete
HOURLY_CRON = "5 * * * *"

# Dagster's run tags for a partition range (what the UI's backfill sets).
PARTITION_RANGE_START_TAG = "dagster/asset_partition_range_start"
PARTITION_RANGE_END_TAG = "dagster/asset_partition_range_end"

with warnings.catch_warnings():
    # The hourly job observes the send queue (an observable source asset): the
    # pinned Dagster calls `include_sources` a beta parameter, a note for no one.
    warnings.filterwarnings("ignore", message=r"Parameter `include_sources` .* is currently in beta")
    HOURLY_SELECTION = dg.AssetSelection.tag(CADENCE_TAG, "hourly", include_sources=True)
DAILY_SELECTION = dg.AssetSelection.groups(*DAILY_GROUPS) - HOURLY_SELECTION


def partition_range_tags(first: date, last: date) -> dict[str, str]:
    return {PARTITION_RANGE_START_TAG: first.isoformat(), PARTITION_RANGE_END_TAG: last.isoformat()}


def daily_days(scheduled_at: datetime, settings: Settings) -> tuple[date, date] | None:
    """The day partitions a daily tick at ``scheduled_at`` covers, or None before the first one."""
    last = scheduled_at.astimezone(settings.provider_timezone).date() - timedelta(days=1)
    if last < settings.partition_start:
        return None
    first = max(last - timedelta(days=settings.lookback_days), settings.partition_start)
    return first, last


def daily_run_request(scheduled_at: datetime, settings: Settings) -> dg.RunRequest | dg.SkipReason:
    days = daily_days(scheduled_at, settings)
    if days is None:
        return dg.SkipReason(f"no closed provider day on or after {settings.partition_start} yet")
    first, last = days
    return dg.RunRequest(run_key=f"daily:{last.isoformat()}", tags=partition_range_tags(first, last))


def hourly_run_request(scheduled_at: datetime) -> dg.RunRequest:
    # The UTC offset keeps the two 01:05 ticks of a DST fall-back night apart.
    return dg.RunRequest(run_key=f"hourly:{scheduled_at.isoformat()}")


def definitions(settings: Settings) -> dg.Definitions:
    tz = settings.provider_timezone.key
    daily_job = dg.define_asset_job(
        DAILY_JOB,
        selection=DAILY_SELECTION,  # partitioning comes from the selected assets
        description=(
            "Day partitions of reports, reconciliation and marts: ingest, then everything downstream. "
            "The daily schedule runs yesterday plus the lookback days as one run."
        ),
    )
    hourly_job = dg.define_asset_job(
        HOURLY_JOB,
        selection=HOURLY_SELECTION,
        description="Hourly, unpartitioned work: today's getDlr pull and whatever else is tagged hourly.",
    )

    @dg.schedule(
        name="daily_reports_schedule",
        cron_schedule=DAILY_CRON,
        execution_timezone=tz,
        job=daily_job,
        description=(
            f"02:00 {tz}: the provider's yesterday plus the {settings.lookback_days} days before it "
            "(late receipts), one run with a run key per day."
        ),
    )
    def daily_reports_schedule(context: dg.ScheduleEvaluationContext) -> dg.RunRequest | dg.SkipReason:
        return daily_run_request(context.scheduled_execution_time, settings)

    @dg.schedule(
        name="hourly_schedule",
        cron_schedule=HOURLY_CRON,
        execution_timezone=tz,
        job=hourly_job,
        description=f"Five past every hour ({tz}): today's receipts through getDlr.",
    )
    def hourly_schedule(context: dg.ScheduleEvaluationContext) -> dg.RunRequest:
        return hourly_run_request(context.scheduled_execution_time)

    return dg.Definitions(jobs=[daily_job, hourly_job], schedules=[daily_reports_schedule, hourly_schedule])
