"""Dagster assets of the reconciliation (group ``reconcile``).

- ``dlr/receipts`` and ``msg/reconciliation`` (day partitions), materialised
  together, one transaction per day: the day's raw report loads as receipt
  events (``dlr.delivery_receipts``), correlation, forward-only state moves,
  orphans and the proof of non-submission for day D.
- ``msg/intraday_reconciliation`` (unpartitioned, hourly): the same for
  today's getDlr pull, so outcomes (OTP included) are known within the hour.
- ``msg/upkeep`` (unpartitioned, hourly): validity expiry, the send queue's
  upkeep, partitions ahead, retention (the receipt-push inbox's included).
- ``msg/daily_upkeep`` (unpartitioned, daily): bodies of old final rows
  redacted, message partitions past the retention horizon that the marts no
  longer read dropped (:mod:`sms_pipeline.reconcile.retention`).
- ``msg/outbound_queue`` (observable, hourly): the send queue's backlog.

The health checks (:mod:`sms_pipeline.reconcile.health`) sit on the asset
each judges (:data:`HEALTH_CHECK_TARGETS`) and run as one step, one connection
(:func:`health_checks`): a job runs those of the assets it selects.

The work is in :mod:`sms_pipeline.reconcile`; these assets loop over the
days of a run in order, commit each day on its own, and report counts a
person can read (never recipient numbers or message text).
"""

# No `from __future__ import annotations`: Dagster inspects the asset
# functions' annotations (context and resource types) at definition time.

from dataclasses import asdict
from datetime import date
from typing import Any

import dagster as dg
import psycopg
from pydantic import Field

from sms_pipeline.core.clock import Clock
from sms_pipeline.core.provider_time import local_date
from sms_pipeline.reconcile import health, retention
from sms_pipeline.reconcile.redaction import redact_final_bodies
from sms_pipeline.reconcile.run import ReconcileResult, reconcile_day
from sms_pipeline.reconcile.housekeeping import run_upkeep
from sms_pipeline.orchestration.asset_keys import (
    DATA_ENGINEERING,
    DAY_REPORT,
    HEALTH_CHECK_TARGETS,
    INTRADAY_DELIVERY_REPORTS,
    INTRADAY_RECONCILIATION,
    OUTBOUND_QUEUE,
    RECEIPTS,
    RECONCILIATION,
    TRANSACTION_REPORTS,
    UPKEEP,
)
from sms_pipeline.orchestration import table_metadata
from sms_pipeline.orchestration.day_runs import day_by_day
from sms_pipeline.orchestration.partitions import (
    BACKFILL_POLICY,
    DATABASE_POOL,
    DAY_ASSET_OPTIONS,
    DAY_PARTITIONS,
    FIRST_DAY,
)
from sms_pipeline.orchestration.resources import ClockResource, DatabaseResource, PipelineResource
from sms_pipeline.orchestration.location import SETTINGS
from sms_pipeline.orchestration.schedules import (
    DAILY_FRESHNESS,
    DAILY_UPKEEP_ASSET_OPTIONS,
    HOURLY_ASSET_OPTIONS,
    HOURLY_TAGS,
)

GROUP = "reconcile"

_SEVERITY = {"WARN": dg.AssetCheckSeverity.WARN, "ERROR": dg.AssetCheckSeverity.ERROR}
HEALTH_CHECKS_NAME = "health_checks"


def reconcile(conn: psycopg.Connection, day: date, app_clock: Clock, pipeline: PipelineResource) -> ReconcileResult:
    return reconcile_day(
        conn, day, app_clock, provider_timezone=pipeline.zone, correlation_window_s=pipeline.correlation_window_s,
        campaign_send_spread_s=pipeline.campaign_send_spread_s,
        non_submission_grace_h=pipeline.non_submission_grace_h, partition_start=FIRST_DAY,
        resend_after_proof_classes=pipeline.resend_classes, resend_max_age_h=pipeline.resend_max_age_h,
        max_send_delay_h=pipeline.max_send_delay_h, work_mem_mb=pipeline.reconcile_work_mem_mb,
    )


@dg.multi_asset(
    specs=[
        dg.AssetSpec(
            RECEIPTS,
            metadata=table_metadata.named(table_metadata.DELIVERY_RECEIPTS),
            # Not the hourly getDlr pull: its rows of D are used when present,
            # but an hourly, unpartitioned asset must not gate a day's backfill.
            deps=[DAY_REPORT, TRANSACTION_REPORTS],
            kinds=DAY_ASSET_OPTIONS["kinds"],
            owners=DATA_ENGINEERING,
            freshness_policy=DAILY_FRESHNESS,
            description=(
                "Receipt events of day D: the day report, by-transaction reports and getDlr rows of D, "
                "one row per (msgId, status word) in dlr.delivery_receipts, each stored once with its "
                "correlation and disposition. Replays are no-ops; unmapped status words are kept and counted."
            ),
        ),
        dg.AssetSpec(
            RECONCILIATION,
            metadata=table_metadata.named(table_metadata.OUTBOUND_MESSAGE),
            deps=[RECEIPTS],
            kinds=DAY_ASSET_OPTIONS["kinds"],
            owners=DATA_ENGINEERING,
            freshness_policy=DAILY_FRESHNESS,
            description=(
                "Messages of day D reconciled with the receipts: three correlation passes (msgId; "
                "transaction + recipient; reconstruction within the window), forward-only state moves, "
                "orphans opened and resolved, and the proof of non-submission once D's complete report is in."
            ),
        ),
    ],
    name="receipts_and_reconciliation",
    partitions_def=DAY_PARTITIONS,
    backfill_policy=BACKFILL_POLICY,
    pool=DATABASE_POOL,
    group_name=GROUP,
)
def receipts_and_reconciliation(
    context: dg.AssetExecutionContext,
    database: DatabaseResource,
    clock: ClockResource,
    pipeline: PipelineResource,
):
    # One transaction per day for both assets: the day's receipt events
    # are stored only once correlated and decided (see reconcile.run).
    app_clock = clock.clock()
    with database.connect(autocommit=True) as conn:
        return day_by_day(
            context,
            lambda day: reconcile(conn, day, app_clock, pipeline),
            {
                RECEIPTS: lambda result: {
                    **table_metadata.table(conn, table_metadata.DELIVERY_RECEIPTS,
                                           table_metadata.receipts_of_day(conn, result.day, pipeline.zone)),
                    **receipts_metadata(result),
                },
                RECONCILIATION: lambda result: {
                    **table_metadata.table(conn, table_metadata.OUTBOUND_MESSAGE,
                                           table_metadata.messages_of_day(conn, result.day, pipeline.zone)),
                    **reconciliation_metadata(result),
                },
            },
        )


@dg.asset(
    key=INTRADAY_RECONCILIATION,
    metadata=table_metadata.named(table_metadata.OUTBOUND_MESSAGE),
    deps=[INTRADAY_DELIVERY_REPORTS],
    **HOURLY_ASSET_OPTIONS,
    group_name=GROUP,
    description=(
        "Today's getDlr pull turned into receipts and reconciled like a day partition (without the "
        "proof of non-submission, which needs the closed day), so outcomes are known within the hour."
    ),
)
def intraday_reconciliation(database: DatabaseResource, clock: ClockResource,
                            pipeline: PipelineResource) -> dg.MaterializeResult:
    app_clock = clock.clock()
    today = local_date(app_clock.now(), pipeline.zone)
    with database.connect(autocommit=True) as conn:
        result = reconcile(conn, today, app_clock, pipeline)
        rows = table_metadata.messages_of_day(conn, today, pipeline.zone)
        return dg.MaterializeResult(metadata={**table_metadata.table(conn, table_metadata.OUTBOUND_MESSAGE, rows),
                                              **reconciliation_metadata(result)})


@dg.asset(
    key=UPKEEP,
    **HOURLY_ASSET_OPTIONS,
    group_name=GROUP,
    description=(
        "Hourly upkeep: submitted rows past validity without a final receipt -> expired; stale "
        "claims -> unknown; overdue pending -> expired; partitions created ahead; retention "
        "(receipts 90 days, resolved orphans 30 days, OTP verifications before messages, reconciled "
        "receipt pushes after SMS_PIPELINE_PUSH_INBOX_KEEP_H)."
    ),
)
def upkeep(database: DatabaseResource, clock: ClockResource, pipeline: PipelineResource) -> dg.MaterializeResult:
    with database.connect(autocommit=True) as conn:
        done = run_upkeep(conn, clock.clock(), claim_lease_s=pipeline.claim_lease_s,
                          validity_h=pipeline.validity_h, provider_timezone=pipeline.zone,
                          push_inbox_keep_h=pipeline.push_inbox_keep_h)
    return dg.MaterializeResult(metadata=asdict(done))


DAILY_UPKEEP = dg.AssetKey(["msg", "daily_upkeep"])


class DailyUpkeepConfig(dg.Config):
    message_retention_days: int = Field(
        default=SETTINGS.message_retention_days, ge=0,
        description="Finance's horizon (SMS_PIPELINE_MESSAGE_RETENTION_DAYS): days message rows are kept; "
                    "0 = for ever.",
    )
    redact_bodies_after_days: int = Field(
        default=SETTINGS.redact_bodies_after_days, ge=0,
        description="SMS_PIPELINE_REDACT_BODIES_AFTER_DAYS: days after which a final row's body is redacted; "
                    "0 = never.",
    )


@dg.asset(
    key=DAILY_UPKEEP,
    # what it changes: bodies redacted, month partitions dropped
    metadata=table_metadata.named(table_metadata.OUTBOUND_MESSAGE),
    **DAILY_UPKEEP_ASSET_OPTIONS,
    group_name=GROUP,
    description=(
        "Daily upkeep: bodies of final rows older than SMS_PIPELINE_REDACT_BODIES_AFTER_DAYS redacted; "
        "the OTP sidecar purged, then every message month partition wholly past "
        "SMS_PIPELINE_MESSAGE_RETENTION_DAYS dropped once every mart keeps the days of its rows "
        "(the database checks the marts' build record); the marts never rebuild those days."
    ),
)
def daily_upkeep(config: DailyUpkeepConfig, database: DatabaseResource,
                 clock: ClockResource) -> dg.MaterializeResult:
    now = clock.clock().now()
    with database.connect(autocommit=True) as conn:
        redacted = redact_final_bodies(conn, now, after_days=config.redact_bodies_after_days)
        done = retention.drop_old_messages(conn, now, message_retention_days=config.message_retention_days)
    return dg.MaterializeResult(metadata={"bodies_redacted": redacted, **asdict(done), **config.model_dump()})


QUEUE_SPEC = dg.AssetSpec(
    OUTBOUND_QUEUE,
    group_name=GROUP,
    tags=HOURLY_TAGS,
    owners=DATA_ENGINEERING,
    kinds={"postgres"},
    description=(
        "The send queue (msg.outbound_message rows not yet handed to the provider), written by intake "
        "and drained by the send worker; each hourly observation records how much is due and waiting, "
        "how much a worker holds, and the oldest's age. Its checks judge whether sending keeps up."
    ),
)


def observe_queue(database: DatabaseResource, clock: ClockResource, pipeline: PipelineResource):
    with database.connect(autocommit=True) as conn:
        backlog = health.queue_backlog(conn, clock.clock().now(), pipeline.zone)
    yield dg.ObserveResult(asset_key=OUTBOUND_QUEUE, metadata=backlog)


# An observation, not a materialisation.
outbound_queue = dg.multi_observable_source_asset(name="outbound_queue", specs=[QUEUE_SPEC])(observe_queue)


@dg.multi_asset_check(
    name=HEALTH_CHECKS_NAME,
    specs=[
        dg.AssetCheckSpec(
            name,
            asset=HEALTH_CHECK_TARGETS[name],
            blocking=False,
            description=(reading_of.__doc__ or name.replace("_", " ")).strip().splitlines()[0],
        )
        for name, reading_of in health.READINGS.items()
    ],
    can_subset=True,
)
def health_checks(context: dg.AssetCheckExecutionContext, database: DatabaseResource, clock: ClockResource,
                  pipeline: PipelineResource):
    """The seven health readings as one op: one connection, one result per selected check."""
    thresholds = health.Thresholds(non_submission_grace_h=pipeline.non_submission_grace_h, zone=pipeline.zone)
    selected = context.selected_asset_check_keys
    now = clock.clock().now()
    with database.connect(autocommit=True) as conn:
        for name, reading_of in health.READINGS.items():
            key = dg.AssetCheckKey(HEALTH_CHECK_TARGETS[name], name)
            if key not in selected:
                continue
            reading = reading_of(conn, now, thresholds)
            yield dg.AssetCheckResult(
                asset_key=key.asset_key,
                check_name=name,
                passed=reading.passed,
                severity=_SEVERITY[reading.severity],
                description=reading.description,
                metadata=reading.metadata,
            )


def receipts_metadata(result: ReconcileResult) -> dict[str, Any]:
    load = result.receipts
    return {
        "source_rows": load.source_rows,
        "new_receipts": load.new_receipts,
        "duplicate_rows": load.duplicate_rows,
        "unkeyed_rows": load.unkeyed_rows,
        "new_unmapped_receipts": load.new_unmapped_receipts,
        "unmapped_rows": load.unmapped_rows,
        "unmapped_words": table_metadata.counts(load.unmapped_words),
    }


def reconciliation_metadata(result: ReconcileResult) -> dict[str, Any]:
    """The day's figures, typed: counts by name as tables, lists as text (the day is the partition's;
    the receipt figures are the receipts asset's)."""
    summary = {k: v for k, v in result.summary().items() if k not in ("day", "receipts")}
    return {
        name: table_metadata.counts(value) if isinstance(value, dict)
        else ", ".join(map(str, value)) or "none" if isinstance(value, list)
        else value
        for name, value in summary.items()
    }
