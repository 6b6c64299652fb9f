"""The two cadences: daily after the provider day closes, and hourly.

Jobs select by asset group and a cadence tag, not by asset name, so the
reconciliation and mart modules join them by declaring their group (and,
for unpartitioned hourly work, the tag):

- daily job: every asset in the groups ``ingest``, ``reconcile``, ``marts``
  except those tagged hourly; one run per tick over the day partitions
  ``yesterday - lookback .. yesterday`` (late receipts change past days);
- hourly job: every asset tagged ``HOURLY_TAGS`` (intraday pulls, upkeep,
  the observation of the send queue), with the checks on them;
- daily upkeep job: every asset tagged ``DAILY_UPKEEP_TAGS`` (body
  redaction, message retention), at 03:30, after the 02:00 run has built
  yesterday's marts.

Every schedule runs in the provider's time zone, so "yesterday" is the
provider's yesterday whatever the server's zone, and the daily tick stays at
02:00 provider-local across DST changes.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

import dagster as dg

from sms_pipeline.orchestration.asset_keys import DATA_ENGINEERING, HEALTH_CHECK_TARGETS
from sms_pipeline.orchestration.location import SETTINGS
from sms_pipeline.orchestration.partitions import DATABASE_POOL, FIRST_DAY

CADENCE_TAG = "sms_pipeline/cadence"
HOURLY_TAGS = {CADENCE_TAG: "hourly"}
DAILY_GROUPS = ("ingest", "reconcile", "marts")

DAILY_JOB = "daily_reports_job"
DAY_CLOSE_JOB = "day_close_job"
HOURLY_JOB = "hourly_job"
DAILY_CRON = "0 2 * * *"  # 02:00 provider-local: the day has closed, its report is complete
HOURLY_CRON = "5 * * * *"
DAILY_UPKEEP_TAGS = {CADENCE_TAG: "daily_upkeep"}
DAILY_UPKEEP_JOB = "daily_upkeep_job"
# 03:30 provider-local: after the 02:00 run has built yesterday's marts (so
# the build record it relies on is current), before the Sunday 04:00 rebuild.
DAILY_UPKEEP_CRON = "30 3 * * *"

# Dagster's run tags for a partition range (what the UI's backfill sets).
PARTITION_RANGE_START_TAG = "dagster/asset_partition_range_start"
PARTITION_RANGE_END_TAG = "dagster/asset_partition_range_end"

# The hourly job observes the send queue too (an observable source asset), and
# runs every health check on what is stored (without materialising the day
# assets they sit on): on-call hears within the hour when receipts stop.
HOURLY_ASSETS = dg.AssetSelection.tag(CADENCE_TAG, "hourly", include_sources=True)
HOURLY_SELECTION = HOURLY_ASSETS | dg.AssetSelection.checks(
    *(dg.AssetCheckKey(asset, name) for name, asset in HEALTH_CHECK_TARGETS.items()))
# Selecting an asset selects the checks on it: the daily job runs the health
# checks of the receipts, the reconciliation and cost_daily (unpriced units)
# once the run has built them.
DAILY_UPKEEP_ASSETS = dg.AssetSelection.tag(CADENCE_TAG, "daily_upkeep")
UNPARTITIONED_ASSETS = HOURLY_ASSETS | DAILY_UPKEEP_ASSETS
DAILY_SELECTION = dg.AssetSelection.groups(*DAILY_GROUPS) - UNPARTITIONED_ASSETS
DAY_CLOSE_SELECTION = dg.AssetSelection.groups("ingest", "reconcile") - UNPARTITIONED_ASSETS


# When a person may rely on an asset: a daily-run asset is fresh when the 02:00
# run has materialised it by 04:00 provider time; an hourly one when its last
# run is at most two hours old (a missed tick warns, two fail).
DAILY_FRESHNESS = dg.FreshnessPolicy.cron(deadline_cron="0 4 * * *", lower_bound_delta=timedelta(hours=2),
                                          timezone=SETTINGS.provider_timezone.key)
HOURLY_FRESHNESS = dg.FreshnessPolicy.time_window(fail_window=timedelta(hours=2), warn_window=timedelta(minutes=75))

# What every hourly, unpartitioned asset that writes the msg/dlr tables shares.
HOURLY_ASSET_OPTIONS: dict = {
    "pool": DATABASE_POOL,
    "tags": HOURLY_TAGS,
    "owners": DATA_ENGINEERING,
    "freshness_policy": HOURLY_FRESHNESS,
    "kinds": {"python", "postgres"},
}
# The daily upkeep's: fresh when its last run is at most a day and a bit old.
DAILY_UPKEEP_ASSET_OPTIONS: dict = {
    **HOURLY_ASSET_OPTIONS,
    "tags": DAILY_UPKEEP_TAGS,
    "freshness_policy": dg.FreshnessPolicy.time_window(fail_window=timedelta(hours=50),
                                                       warn_window=timedelta(hours=26)),
}


def partition_range_tags(first: date, last: date) -> dict[str, str]:
    return {PARTITION_RANGE_START_TAG: first.isoformat(), PARTITION_RANGE_END_TAG: last.isoformat()}


def daily_days(scheduled_at: datetime, zone: ZoneInfo, first_day: date,
               lookback_days: int) -> tuple[date, date] | None:
    """The day partitions a daily tick at ``scheduled_at`` covers, or None before ``first_day``."""
    last = scheduled_at.astimezone(zone).date() - timedelta(days=1)
    if last < first_day:
        return None
    first = max(last - timedelta(days=lookback_days), first_day)
    return first, last


def daily_run_request(scheduled_at: datetime, zone: ZoneInfo, first_day: date,
                      lookback_days: int) -> dg.RunRequest | dg.SkipReason:
    days = daily_days(scheduled_at, zone, first_day, lookback_days)
    if days is None:
        return dg.SkipReason(f"no closed provider day on or after {first_day} yet")
    first, last = days
    return dg.RunRequest(run_key=f"daily:{last.isoformat()}", tags=partition_range_tags(first, last))


def hourly_run_request(scheduled_at: datetime) -> dg.RunRequest:
    # The UTC offset keeps the two 01:05 ticks of a DST fall-back night apart.
    return dg.RunRequest(run_key=f"hourly:{scheduled_at.isoformat()}")


daily_reports_job = dg.define_asset_job(
    DAILY_JOB,
    selection=DAILY_SELECTION,  # partitioning comes from the selected assets
    description=(
        "Day partitions of reports, reconciliation and marts: ingest, then everything downstream. "
        "The daily schedule runs yesterday plus the lookback days as one run."
    ),
)
day_close_job = dg.define_asset_job(
    DAY_CLOSE_JOB,
    selection=DAY_CLOSE_SELECTION,
    description=(
        "Day partitions of reports and reconciliation only, without the marts: what a day's close "
        "needs to settle the messages (the demo runs it at each day's close)."
    ),
)
daily_upkeep_job = dg.define_asset_job(
    DAILY_UPKEEP_JOB,
    selection=DAILY_UPKEEP_ASSETS,
    description="Daily, unpartitioned upkeep: old final bodies redacted; message partitions past "
                "SMS_PIPELINE_MESSAGE_RETENTION_DAYS that the marts no longer read dropped.",
)
hourly_job = dg.define_asset_job(
    HOURLY_JOB,
    selection=HOURLY_SELECTION,
    description="Hourly, unpartitioned work: today's getDlr pull and whatever else is tagged hourly.",
)


@dg.schedule(
    name="daily_reports_schedule",
    cron_schedule=DAILY_CRON,
    execution_timezone=SETTINGS.provider_timezone.key,
    job=daily_reports_job,
    description=(
        f"02:00 {SETTINGS.provider_timezone.key}: the provider's yesterday plus the {SETTINGS.lookback_days} "
        "days before it (late receipts), one run with a run key per day."
    ),
)
def daily_reports_schedule(context: dg.ScheduleEvaluationContext) -> dg.RunRequest | dg.SkipReason:
    return daily_run_request(context.scheduled_execution_time, SETTINGS.provider_timezone, FIRST_DAY,
                             SETTINGS.lookback_days)


@dg.schedule(
    name="hourly_schedule",
    cron_schedule=HOURLY_CRON,
    execution_timezone=SETTINGS.provider_timezone.key,
    job=hourly_job,
    description=f"Five past every hour ({SETTINGS.provider_timezone.key}): today's receipts through getDlr.",
)
def hourly_schedule(context: dg.ScheduleEvaluationContext) -> dg.RunRequest:
    return hourly_run_request(context.scheduled_execution_time)


@dg.schedule(
    name="daily_upkeep_schedule",
    cron_schedule=DAILY_UPKEEP_CRON,
    execution_timezone=SETTINGS.provider_timezone.key,
    job=daily_upkeep_job,
    description=f"03:30 {SETTINGS.provider_timezone.key}: body redaction and message retention, after the "
                "daily run's marts.",
)
def daily_upkeep_schedule(context: dg.ScheduleEvaluationContext) -> dg.RunRequest:
    return dg.RunRequest(run_key=f"daily_upkeep:{context.scheduled_execution_time.isoformat()}")
