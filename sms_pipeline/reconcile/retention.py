"""Message retention (docs/design.md#retention): the daily upkeep's partition drop and the plan that shows it.

Finance's horizon, ``SMS_PIPELINE_MESSAGE_RETENTION_DAYS`` (0 = keep for
ever), says how long message rows are kept. The daily upkeep purges the OTP
sidecar, then drops every month partition wholly past the horizon that the
marts no longer read: the database decides that
(``msg.message_partition_retention``) from the marts' own build record
(``msg.mart_build_days``, written by dbt in each mart's transaction), and
keeps a partition when some row's day has no build of some mart since the row
last changed. What it drops raises ``msg.message_retention_floor``: a mart day
at or before the floor is never rebuilt, so the marts keep their aggregates
of days whose messages are gone (:func:`first_rebuildable_day`).

:func:`plan` shows what the next upkeep would do (the hourly one's receipt,
raw report and orphan retention included) without changing anything.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

import psycopg

from sms_pipeline.core.provider_time import local_date
from sms_pipeline.db import queries
from sms_pipeline.reconcile import housekeeping, transaction

DROP = "drop"
# Why a partition is kept, for a person (the verdicts of msg.message_partition_retention).
KEPT_BECAUSE = {
    "within_horizon": "within the horizon",
    "otp_sidecar": "OTP verifications or requests still reference it (the upkeep purges expired ones first)",
    "marts_not_built": "the marts still need it",
    "older_month_kept": "an older month is kept for the marts (they go oldest first)",
}


def message_horizon(now: datetime, retention_days: int) -> datetime | None:
    """Rows of months ending on or before this instant may go; None when they are kept for ever."""
    return now - timedelta(days=retention_days) if retention_days > 0 else None


@dataclass(frozen=True)
class MessagePartition:
    partition: str
    month: date
    rows: int | None  # exact past the horizon; the planner's estimate within it (None before an ANALYZE)
    rows_estimated: bool
    verdict: str  # DROP or a key of KEPT_BECAUSE
    unbuilt_mart: str | None  # the first mart missing a day of its rows (verdict marts_not_built)
    unbuilt_day: date | None  # that row's provider-local day

    def reason(self) -> str:
        if self.verdict == DROP:
            return "every mart keeps the days of its rows"
        if self.verdict == "marts_not_built":
            return (f"{KEPT_BECAUSE[self.verdict]}: {self.unbuilt_mart} has not been built for "
                    f"{self.unbuilt_day} since its rows last changed")
        return KEPT_BECAUSE[self.verdict]


def message_partitions(conn: psycopg.Connection, horizon: datetime | None, zone: ZoneInfo) -> list[MessagePartition]:
    """Every message partition with its verdict at ``horizon`` (None: all are kept, within no horizon)."""
    rows = queries.run(conn, "retention_message_partitions", messages_before=horizon).fetchall()
    return [
        MessagePartition(partition=partition, month=month, rows=count, rows_estimated=estimated, verdict=verdict,
                         unbuilt_mart=mart, unbuilt_day=local_date(attempt_at, zone) if attempt_at else None)
        for partition, month, count, estimated, _last_attempt, verdict, mart, attempt_at in rows
    ]


@dataclass(frozen=True)
class Plan:
    now: datetime
    message_retention_days: int
    message_horizon: datetime | None
    message_partitions: list[MessagePartition]
    expired_otp_verifications: int  # purged by the upkeep before it drops partitions
    receipt_partitions: list[tuple[str, int | None]]  # name, estimated rows
    receipts_before: datetime
    raw_reports_before: date
    day_report_partitions: int
    txn_reports: int
    getdlr_rows: int
    orphans_resolved_before: datetime
    resolved_orphans: int


def plan(conn: psycopg.Connection, now: datetime, *, message_retention_days: int, zone: ZoneInfo) -> Plan:
    """What the next upkeeps at ``now`` would drop or purge; changes nothing."""
    horizon = message_horizon(now, message_retention_days)
    cutoffs = housekeeping.retention_cutoffs(now, zone)
    raw = queries.record(conn, "retention_raw_report_days", raw_reports_before=cutoffs["raw_reports_before"])
    return Plan(
        now=now,
        message_retention_days=message_retention_days,
        message_horizon=horizon,
        message_partitions=message_partitions(conn, horizon, zone),
        expired_otp_verifications=queries.scalar(conn, "retention_expired_otp",
                                                 otp_expired_before=cutoffs["otp_expired_before"]),
        receipt_partitions=[(name, count) for name, _month, count in queries.run(
            conn, "retention_receipt_partitions", receipts_before=cutoffs["receipts_before"])],
        receipts_before=cutoffs["receipts_before"],
        raw_reports_before=cutoffs["raw_reports_before"],
        day_report_partitions=raw["day_report_partitions"],
        txn_reports=raw["txn_reports"],
        getdlr_rows=raw["getdlr_rows"],
        orphans_resolved_before=cutoffs["orphans_resolved_before"],
        resolved_orphans=queries.scalar(conn, "retention_resolved_orphans",
                                        orphans_resolved_before=cutoffs["orphans_resolved_before"]),
    )


@dataclass(frozen=True)
class MessageRetention:
    otp_verifications_purged: int
    message_partitions_dropped: int


def drop_old_messages(conn: psycopg.Connection, now: datetime, *, message_retention_days: int) -> MessageRetention:
    """The daily upkeep's message retention: the OTP sidecar purged, then every partition the plan says ``drop``
    dropped (each step one transaction; a second run drops nothing)."""
    transaction.require_no_open_transaction(conn)
    horizon = message_horizon(now, message_retention_days)
    if horizon is None:
        return MessageRetention(otp_verifications_purged=0, message_partitions_dropped=0)
    with conn.transaction():
        purged = queries.scalar(conn, "reconcile_upkeep_purge_otp",
                                otp_expired_before=now - housekeeping.OTP_VERIFICATION_RETENTION)
    with conn.transaction():
        dropped = queries.scalar(conn, "reconcile_upkeep_drop_messages", messages_before=horizon)
    return MessageRetention(otp_verifications_purged=purged, message_partitions_dropped=dropped)


def first_rebuildable_day(conn: psycopg.Connection, zone: ZoneInfo) -> date | None:
    """The first provider-local day a mart may be rebuilt from: the day after the latest send attempt of any
    dropped message (that day and those before it may read rows that are gone); None when nothing was dropped."""
    floor = queries.scalar(conn, "retention_floor")
    return None if floor is None else local_date(floor, zone) + timedelta(days=1)
