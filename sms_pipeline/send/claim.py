"""Claiming: take ownership of the next due rows of one channel and class.

The claim (``sql/queries/claim_queue.sql``) locks with ``FOR UPDATE SKIP
LOCKED``, so several workers drain one queue without waiting on each other
and no row is claimed twice; it commits before anything is sent, so no
transaction stays open across a provider call. Time is the caller's clock.
"""

from __future__ import annotations

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


_FIELDS = tuple(ClaimedMessage.__dataclass_fields__)


def claim(conn: psycopg.Connection, *, channel: str, message_class: str, now: datetime,
          limit: int) -> list[ClaimedMessage]:
    """Claim up to ``limit`` due rows (oldest due first) and commit the claim."""
    if limit <= 0:
        raise ValueError(f"claim limit must be positive, got {limit}")
    with conn.transaction(), conn.cursor() as cur:
        # Prepared, with one generic plan: planning this UPDATE anew for every
        # batch (every partition and its indexes) was about a quarter of the
        # claim's server time, and the plan is the same index walk each time.
        queries.run(cur, "set_local_generic_plan")
        queries.run(cur, "claim_queue", prepare=True,
                    channel=channel, message_class=message_class, now=now, limit=limit)
        if tuple(column.name for column in cur.description) != _FIELDS:
            raise RuntimeError("claim_queue.sql must return the fields of ClaimedMessage, in order")
        return [ClaimedMessage(*row) for row in cur.fetchall()]  # oldest due first (claim_queue.sql)
