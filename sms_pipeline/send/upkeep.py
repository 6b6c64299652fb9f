"""Upkeep of the send queue: stale claims and overdue pending rows.

- A ``claimed`` row whose lease ran out goes back to ``pending``
  (``lease_expired_unsent``): a request's rows move to ``sending`` before it
  goes out, so a ``claimed`` row provably never left, and the next worker
  sends it (``sql/queries/stuck_claims.sql``).
- A ``sending`` row whose lease ran out becomes ``unknown``
  (``lease_expired``), never ``pending``: its request may have reached the
  provider, so only evidence from the provider's reports may resolve it
  (``sql/queries/stuck_sending.sql``). The lease counts from ``claimed_at``.
- A ``pending`` row whose ``expires_at`` passed becomes ``expired``: counted,
  never sent late (``sql/queries/worker_expire_pending.sql``).
- A ``scheduled`` row (a provider-side campaign's) whose time has come and
  whose transaction the provider shows sent becomes ``submitted`` at that
  time, billed at the rate in force then (:func:`promote_scheduled`,
  ``sql/queries/campaign_promote.sql``); one the provider lists failed or no
  longer lists becomes ``unknown`` (:func:`give_up_unsent`); one it lists
  cancelled becomes ``expired`` / ``cancelled`` (:func:`expire_cancelled`).
  The worker asks the provider once a poll interval
  (``send.campaigns.CampaignStrategy.settle_due``);
  reconciliation promotes what the day's report shows sent.

Called by the worker loop and by the pipeline's hourly upkeep; both
statements only touch rows that still need it, so running them twice, or
from two places at once, moves nothing the second time.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

import psycopg

from sms_pipeline.db import queries

log = logging.getLogger(__name__)

# Rows one promotion statement moves (one short transaction each).
PROMOTE_BATCH = 5000


@dataclass(frozen=True, slots=True)
class UpkeepCounts:
    claims_expired: int  # sending -> unknown (the request may have left)
    claims_released: int  # claimed -> pending (the request never started)
    pending_expired: int  # pending -> expired


def expire_stale_claims(conn: psycopg.Connection, *, now: datetime, lease: timedelta) -> tuple[int, int]:
    """Leases older than ``lease``: ``claimed`` -> ``pending``, ``sending`` -> ``unknown``.

    One transaction; returns (released, made unknown).
    """
    with conn.transaction():
        released = queries.run(conn, "stuck_claims", now=now, lease_expired_before=now - lease).fetchall()
        unknown = queries.run(conn, "stuck_sending", now=now, lease_expired_before=now - lease).fetchall()
    return len(released), len(unknown)


def expire_overdue_pending(conn: psycopg.Connection, *, now: datetime) -> int:
    """Pending rows past ``expires_at`` -> ``expired``; returns how many."""
    with conn.transaction():
        rows = queries.run(conn, "worker_expire_pending", now=now).fetchall()
    for _id, _created_at, attempt_key in rows:
        log.debug("expired unsent attempt_key=%s", attempt_key)
    return len(rows)


def run_upkeep(conn: psycopg.Connection, *, now: datetime, lease: timedelta) -> UpkeepCounts:
    """Both sweeps, each in its own short transaction."""
    released, unknown = expire_stale_claims(conn, now=now, lease=lease)
    counts = UpkeepCounts(claims_expired=unknown, claims_released=released,
                          pending_expired=expire_overdue_pending(conn, now=now))
    if counts.claims_expired or counts.claims_released or counts.pending_expired:
        log.warning("upkeep claims_expired=%d claims_released=%d pending_expired=%d",
                    counts.claims_expired, counts.claims_released, counts.pending_expired)
    return counts


@dataclass(frozen=True, slots=True)
class Promoted:
    submitted: int  # scheduled -> submitted, billed at their time
    unpriced: int  # of them, those without a rate-card price


def promote_scheduled(conn: psycopg.Connection, *, now: datetime, price_time_zone: str,
                      transaction_ids: Sequence[str], batch_size: int = PROMOTE_BATCH) -> Promoted:
    """``scheduled`` rows of ``transaction_ids`` (transactions the provider shows sent) whose time has passed at
    ``now`` -> ``submitted``, in batches of one transaction each.

    ``price_time_zone`` names the zone the rate card's days are read in.
    """
    submitted = unpriced = 0
    while transaction_ids:
        with conn.transaction():
            moved, without_price = queries.run(conn, "campaign_promote", now=now, limit=batch_size,
                                               price_time_zone=price_time_zone,
                                               transaction_ids=list(transaction_ids)).fetchone()
        submitted += moved
        unpriced += without_price
        if moved < batch_size:
            break
    if submitted:
        log.info("scheduled rows submitted at their time rows=%d unpriced=%d", submitted, unpriced)
    return Promoted(submitted, unpriced)


def give_up_unsent(conn: psycopg.Connection, *, now: datetime, transaction_ids: Sequence[str]) -> int:
    """``scheduled`` rows of ``transaction_ids`` (the provider lists them failed or no longer lists
    them) whose time has passed -> ``unknown`` (``provider_not_sending``), never billed; how many."""
    moved = _settle_unsent(conn, now, transaction_ids, "unknown", "provider_not_sending")
    if moved:
        log.warning("scheduled rows the provider shows not sending: unknown rows=%d transactions=%d",
                    moved, len(transaction_ids))
    return moved


def expire_cancelled(conn: psycopg.Connection, *, now: datetime, transaction_ids: Sequence[str]) -> int:
    """``scheduled`` rows of ``transaction_ids`` (the provider lists them cancelled) whose time has passed
    -> ``expired`` (``cancelled``), as a cancel writes them, never billed; how many."""
    moved = _settle_unsent(conn, now, transaction_ids, "expired", "cancelled")
    if moved:
        log.info("scheduled rows the provider lists cancelled: expired rows=%d transactions=%d",
                 moved, len(transaction_ids))
    return moved


def _settle_unsent(conn: psycopg.Connection, now: datetime, transaction_ids: Sequence[str], state: str,
                   reason: str) -> int:
    if not transaction_ids:
        return 0
    with conn.transaction():
        return queries.scalar(conn, "campaign_settle_unsent", now=now, transaction_ids=list(transaction_ids),
                              state=state, reason=reason)
