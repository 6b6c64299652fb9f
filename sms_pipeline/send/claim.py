"""Claiming: take ownership of the rows of the next request of one channel and class.

A claim is one short transaction of two statements. The first
(``sql/queries/claim_candidates.sql``) locks the next due rows with ``FOR
UPDATE SKIP LOCKED``, so several workers drain one queue without waiting on
each other and no row is claimed twice; the caller's ``take`` picks the rows
of its next request among them (the strategy's plan), and the second
(``sql/queries/claim_take.sql``) moves only those to ``claimed``. The locks on
the others end with the transaction, so they stay ``pending`` for any worker:
a claim takes only what the worker sends next, and a worker that dies holds
one request's rows, never a queue's worth. The claim commits before anything
is sent, so no transaction stays open across a provider call. Time is the
caller's clock.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from uuid import UUID

import psycopg

from sms_pipeline.db import queries


@dataclass(frozen=True, slots=True)
class ClaimedMessage:
    """A row this worker owns until it writes an outcome (or the lease runs out)."""

    id: int
    created_at: datetime
    attempt_key: UUID
    tenant_id: str
    channel: str
    message_class: str
    recipient: str = field(repr=False)
    sender_id: str | None
    body: str = field(repr=False)
    encoding: str
    segments: int
    template_id: str | None
    dlt_entity_id: str | None
    dlt_template_id: str | None
    scheduled_for: datetime | None
    expires_at: datetime | None
    claimed_at: datetime
    attempt_count: int
    campaign_id: int | None = None  # our campaign (msg.campaign), if the row belongs to one


_FIELDS = tuple(ClaimedMessage.__dataclass_fields__)


def claim(conn: psycopg.Connection, *, channel: str, message_class: str, now: datetime, limit: int,
          take: Callable[[Sequence[ClaimedMessage]], Sequence[ClaimedMessage]] | None = None,
          query: str = "claim_candidates") -> list[ClaimedMessage]:
    """Claim due rows (oldest due first) and commit the claim; returns the rows claimed.

    ``limit`` bounds how many due rows are looked at; ``take`` chooses which of
    them to claim (a subset, e.g. the rows of the next request), all of them
    when None. ``query`` names the statement that locks the rows looked at:
    the due rows, or ``campaign_send_candidates`` (the rows of provider-side
    campaigns whose time is still ahead, handed over early).
    """
    if limit <= 0:
        raise ValueError(f"claim limit must be positive, got {limit}")
    with conn.transaction(), conn.cursor() as cur:
        # Prepared, with one generic plan: planning anew for every claim (every
        # partition and its indexes) was about a quarter of the claim's server
        # time, and the plan is the same index walk each time.
        queries.run(cur, "set_local_generic_plan")
        queries.run(cur, query, prepare=True,
                    channel=channel, message_class=message_class, now=now, limit=limit)
        if tuple(column.name for column in cur.description) != _FIELDS:
            raise RuntimeError(f"{query}.sql must return the fields of ClaimedMessage, in order")
        # Oldest due first; ties (rows of one intake) by id, so the plan is deterministic.
        candidates = sorted((ClaimedMessage(*row) for row in cur.fetchall()),
                            key=lambda m: (m.scheduled_for or m.created_at, m.id))
        if not candidates:
            return []
        chosen = list(candidates if take is None else take(candidates))
        if not chosen:
            return []
        known = {m.id for m in candidates}
        if any(m.id not in known for m in chosen):
            raise ValueError("take must choose among the rows it was given")
        queries.run(cur, "claim_take", prepare=True, ids=[m.id for m in chosen],
                    created_ats=sorted({m.created_at for m in chosen}), now=now)
        taken = {row[0] for row in cur.fetchall()}
        if taken != {m.id for m in chosen}:  # locked and pending: cannot happen
            raise RuntimeError(f"claim_take claimed {len(taken)} of the {len(chosen)} locked rows")
        return chosen
