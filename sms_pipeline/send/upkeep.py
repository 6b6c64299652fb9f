"""Upkeep of the send queue: stale claims and overdue pending rows.

- A ``claimed`` row whose lease ran out becomes ``unknown``, never
  ``pending``: its request may have left the process, so only evidence from
  the provider's reports may resolve it (``sql/queries/stuck_claims.sql``).
- A ``pending`` row whose ``expires_at`` passed becomes ``expired``: counted,
  never sent late (``sql/queries/worker_expire_pending.sql``).

Called by the worker loop and by the pipeline's hourly upkeep; both
statements only touch rows that still need it, so running them twice, or
from two places at once, moves nothing the second time.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

import psycopg

from sms_pipeline.db import queries

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class UpkeepCounts:
    claims_expired: int  # claimed -> unknown
    pending_expired: int  # pending -> expired


def expire_stale_claims(conn: psycopg.Connection, *, now: datetime, lease: timedelta) -> int:
    """Claims older than ``lease`` -> ``unknown``; returns how many."""
    with conn.transaction():
        rows = queries.run(conn, "stuck_claims", now=now, lease_expired_before=now - lease).fetchall()
    return len(rows)


def expire_overdue_pending(conn: psycopg.Connection, *, now: datetime) -> int:
    """Pending rows past ``expires_at`` -> ``expired``; returns how many."""
    with conn.transaction():
        rows = queries.run(conn, "worker_expire_pending", now=now).fetchall()
    for _id, _created_at, attempt_key in rows:
        log.debug("expired unsent attempt_key=%s", attempt_key)
    return len(rows)


def run_upkeep(conn: psycopg.Connection, *, now: datetime, lease: timedelta) -> UpkeepCounts:
    """Both sweeps, each in its own short transaction."""
    counts = UpkeepCounts(claims_expired=expire_stale_claims(conn, now=now, lease=lease),
                          pending_expired=expire_overdue_pending(conn, now=now))
    if counts.claims_expired or counts.pending_expired:
        log.warning("upkeep claims_expired=%d pending_expired=%d", counts.claims_expired, counts.pending_expired)
    return counts
