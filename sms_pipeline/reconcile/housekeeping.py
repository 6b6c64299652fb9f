"""Hourly upkeep: time-driven state moves, partitions ahead, retention.

- the send queue's own upkeep (stale ``claimed`` -> ``pending``, stale
  ``sending`` -> ``unknown``, overdue pending -> ``expired``:
  :mod:`sms_pipeline.send.upkeep`);
- ``submitted`` rows past validity with no final receipt -> ``expired``;
- monthly partitions created ahead for messages and receipts;
- retention (docs/design.md#retention): receipt partitions older than 90 days dropped,
  resolved orphans deleted after 30 days, expired OTP verifications purged,
  reconciled receipt pushes deleted from the inbox after
  ``SMS_PIPELINE_PUSH_INBOX_KEEP_H`` (their receipt events stay). Message
  partitions go in the daily upkeep (:mod:`sms_pipeline.reconcile.retention`).

Each step is one short transaction; every step only touches what still
needs it, so running upkeep twice moves nothing the second time.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import psycopg

from sms_pipeline.core.clock import Clock
from sms_pipeline.db import queries
from sms_pipeline.reconcile import transaction
from sms_pipeline.send import upkeep as send_queue_upkeep
from sms_pipeline.settings import Settings

RECEIPT_RETENTION = timedelta(days=90)  # docs/design.md#retention; also the simulator's report horizon
RESOLVED_ORPHAN_RETENTION = timedelta(days=30)  # docs/design.md#retention; unresolved orphans are kept
OTP_VERIFICATION_RETENTION = timedelta(days=1)  # after expiry: a code is useless, keep a day for support
PUSH_INBOX_KEEP_H: int = Settings.model_fields["push_inbox_keep_h"].default


@dataclass(frozen=True)
class Upkeep:
    claims_expired: int  # sending -> unknown (lease ran out with the request in flight)
    claims_released: int  # claimed -> pending (lease ran out before the request started)
    pending_expired: int  # pending -> expired (window passed unsent)
    submitted_expired: int  # submitted -> expired (validity passed, no final receipt)
    message_partitions_created: int
    receipt_partitions_created: int
    otp_verifications_purged: int
    receipt_partitions_dropped: int
    day_report_partitions_dropped: int
    txn_reports_purged: int
    getdlr_rows_purged: int
    orphans_purged: int
    push_inbox_purged: int  # reconciled receipt pushes deleted from the inbox
    push_rejects_purged: int  # refused pushes kept for a person, deleted after RESOLVED_ORPHAN_RETENTION


def run_upkeep(
    conn: psycopg.Connection,
    clock: Clock,
    *,
    claim_lease_s: int,
    validity_h: int,
    provider_timezone: ZoneInfo,
    push_inbox_keep_h: int = PUSH_INBOX_KEEP_H,
) -> Upkeep:
    """Every upkeep step (see the module); ``claim_lease_s``, ``validity_h`` and ``push_inbox_keep_h`` as the
    settings of those names."""
    transaction.require_no_open_transaction(conn)
    now = clock.now()
    queue = send_queue_upkeep.run_upkeep(conn, now=now, lease=timedelta(seconds=claim_lease_s))
    submitted_expired = expire_unconfirmed(conn, now, validity_h=validity_h, provider_timezone=provider_timezone)
    with conn.transaction():
        created = queries.record(conn, "reconcile_upkeep_partitions_ahead", now=now)
    with conn.transaction():
        retention = queries.record(conn, "reconcile_upkeep_retention",
                                   **retention_cutoffs(now, provider_timezone, push_inbox_keep_h=push_inbox_keep_h))
    return Upkeep(
        claims_expired=queue.claims_expired,
        claims_released=queue.claims_released,
        pending_expired=queue.pending_expired,
        submitted_expired=submitted_expired,
        message_partitions_created=created["messages"],
        receipt_partitions_created=created["receipts"],
        **retention,
    )


def retention_cutoffs(now: datetime, provider_timezone: ZoneInfo, *,
                      push_inbox_keep_h: int = PUSH_INBOX_KEEP_H) -> dict[str, Any]:
    """The hourly retention's parameters (``reconcile_upkeep_retention``) at ``now``: what goes is older than
    these; ``retention plan`` shows the same."""
    receipts_before = now - RECEIPT_RETENTION
    return {
        "otp_expired_before": now - OTP_VERIFICATION_RETENTION,
        "receipts_before": receipts_before,
        "raw_reports_before": receipts_before.astimezone(provider_timezone).date(),
        "orphans_resolved_before": now - RESOLVED_ORPHAN_RETENTION,
        "pushes_reconciled_before": now - timedelta(hours=push_inbox_keep_h),
    }


def expire_unconfirmed(conn: psycopg.Connection, now: datetime, *, validity_h: int,
                       provider_timezone: ZoneInfo) -> int:
    """Only the validity sweep (``submitted`` past validity -> ``expired``; an adopted row only once its
    provider day is reconciled); commits."""
    transaction.require_no_open_transaction(conn)
    with conn.transaction():
        # Under the reconciliation's lock: a row expired between a reconciliation's
        # decision and its update would leave that receipt marked applied.
        transaction.lock(conn)
        return queries.scalar(
            conn, "reconcile_upkeep_expire_submitted",
            submitted_before=now - timedelta(hours=validity_h), now=now, provider_timezone=provider_timezone.key,
        )  # fmt: skip
