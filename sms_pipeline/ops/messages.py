"""Operator tools: trace every attempt of a message, replay a dead one.

A message (tenant + business key) may have several attempts: each operator
replay supersedes the last attempt and inserts a new row that takes the key
over (``replaces_id`` points back). :func:`trace` finds the messages that
match a business key, an attempt key or a recipient, and returns each one's
whole chain with its receipts; :func:`replay` is the only way a
``failed``/``rejected``/``expired`` row is sent again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from uuid import UUID

import psycopg
from psycopg.rows import dict_row

from sms_pipeline.core.clock import Clock
from sms_pipeline.core.states import REPLAYABLE, MessageClass, MessageState
from sms_pipeline.errors import UserError
from sms_pipeline.intake.messages import ensure_partition_for


class ReplayRefused(UserError):
    """The message cannot be replayed; the text says why."""


@dataclass(frozen=True, slots=True)
class ReceiptView:
    provider_message_id: str
    status_word: str
    outcome: str
    source: str
    provider_submit_at: datetime
    provider_done_at: datetime | None
    first_seen_at: datetime
    disposition: str | None


@dataclass(frozen=True, slots=True)
class AttemptView:
    id: int
    created_at: datetime
    attempt_key: UUID
    business_key: str
    replaces_id: int | None
    tenant_id: str
    channel: str
    message_class: str
    recipient: str = field(repr=False)
    sender_id: str | None
    state: str
    state_reason: str | None
    attempt_count: int
    provider_txn_id: str | None
    provider_message_id: str | None
    provider_campaign_id: str | None
    provider_status_code: str | None
    provider_cause: str | None
    final_status: str | None
    conflicting_final_status: str | None
    correlation_result: str | None
    scheduled_for: datetime | None
    expires_at: datetime | None
    claimed_at: datetime | None
    submitted_at: datetime | None
    delivered_at: datetime | None
    reconciled_at: datetime | None
    encoding: str
    segments: int
    billable_units: int | None
    cost: Decimal | None
    cost_currency: str | None
    receipts: tuple[ReceiptView, ...] = ()


@dataclass(frozen=True, slots=True)
class MessageTrace:
    """Every attempt of one message (tenant + business key), oldest first."""

    tenant_id: str
    business_key: str
    attempts: tuple[AttemptView, ...]


@dataclass(frozen=True, slots=True)
class Replayed:
    replaced_id: int
    message_id: int
    created_at: datetime
    attempt_key: UUID


_ATTEMPT_COLUMNS = ", ".join(
    f"m.{name}::text" if name in ("channel", "state", "correlation_result") else f"m.{name}"
    for name in AttemptView.__dataclass_fields__ if name != "receipts")

# Which messages a lookup names: (tenant, business key) pairs.
_MESSAGES_BY = {
    "business_key": """SELECT tenant_id, business_key FROM msg.business_key_registry
                        WHERE business_key = %(value)s AND (%(tenant)s::text IS NULL OR tenant_id = %(tenant)s)""",
    "attempt_key": """SELECT DISTINCT tenant_id, business_key FROM msg.message_lookup
                       WHERE attempt_key = %(value)s::uuid AND (%(tenant)s::text IS NULL OR tenant_id = %(tenant)s)""",
    "recipient": """SELECT DISTINCT tenant_id, business_key FROM msg.message_lookup
                     WHERE recipient = %(value)s AND (%(tenant)s::text IS NULL OR tenant_id = %(tenant)s)""",
}

# The active attempt (the registry's), then back through replaces_id.
_CHAIN = f"""
WITH RECURSIVE chain AS (
    SELECT m.* FROM msg.business_key_registry r
      JOIN msg.outbound_message m ON m.id = r.message_id AND m.created_at = r.message_created_at
     WHERE r.tenant_id = %(tenant)s AND r.business_key = %(business_key)s
    UNION ALL
    SELECT m.* FROM chain c JOIN msg.outbound_message m ON m.id = c.replaces_id
)
SELECT {_ATTEMPT_COLUMNS} FROM chain m ORDER BY m.created_at, m.id
"""

_RECEIPTS = """
SELECT message_id, provider_message_id, status_word, outcome, source, provider_submit_at, provider_done_at,
       first_seen_at, disposition
  FROM dlr.delivery_receipts
 WHERE message_id = ANY(%(ids)s::bigint[])
 ORDER BY message_id, COALESCE(provider_done_at, first_seen_at), first_seen_at, receipt_id
"""


def trace(conn: psycopg.Connection, *, business_key: str | None = None, attempt_key: str | None = None,
          recipient: str | None = None, tenant: str | None = None) -> list[MessageTrace]:
    """Messages matching exactly one of the lookups (optionally within a tenant), each with every attempt."""
    given = {name: value for name, value in
             (("business_key", business_key), ("attempt_key", attempt_key), ("recipient", recipient))
             if value is not None}
    if len(given) != 1:
        raise ValueError("give exactly one of business_key, attempt_key, recipient")
    (lookup, value), = given.items()
    if lookup == "attempt_key":
        try:
            value = str(UUID(value))
        except ValueError:
            raise UserError("an attempt key is a UUID such as 0b7c...-....; this one is malformed") from None
    with conn.cursor(row_factory=dict_row) as cur:
        keys = cur.execute(_MESSAGES_BY[lookup], {"value": value, "tenant": tenant}).fetchall()
        traces = []
        for key in sorted(keys, key=lambda k: (k["tenant_id"], k["business_key"])):
            rows = cur.execute(_CHAIN, {"tenant": key["tenant_id"], "business_key": key["business_key"]}).fetchall()
            receipts: dict[int, list[ReceiptView]] = {}
            for r in cur.execute(_RECEIPTS, {"ids": [row["id"] for row in rows]}).fetchall():
                message_id = r.pop("message_id")
                receipts.setdefault(message_id, []).append(ReceiptView(**r))
            attempts = tuple(AttemptView(**row, receipts=tuple(receipts.get(row["id"], ()))) for row in rows)
            traces.append(MessageTrace(key["tenant_id"], key["business_key"], attempts))
    return traces


_LOCK_ROW = """
SELECT id, created_at, state::text, message_class FROM msg.outbound_message WHERE id = %(id)s FOR UPDATE
"""

_SUPERSEDE = """
UPDATE msg.outbound_message
   SET state = 'superseded', state_reason = %(state_reason)s, updated_at = %(now)s
 WHERE id = %(id)s AND created_at = %(created_at)s AND state = %(state)s::msg.message_state
"""

# A copy of what the message is (routing, content, schedule) as a fresh
# attempt; an expiry that already passed is dropped, or the new row would
# expire unsent at once. The insert takes the business key over from the
# superseded row (the registry trigger allows exactly that).
_INSERT_REPLAY = """
INSERT INTO msg.outbound_message (
    business_key, replaces_id, tenant_id, channel, message_class, recipient, sender_id, body, encoding,
    segments, template_id, dlt_entity_id, dlt_template_id, scheduled_for, expires_at, created_at, updated_at)
SELECT business_key, id, tenant_id, channel, message_class, recipient, sender_id, body, encoding,
       segments, template_id, dlt_entity_id, dlt_template_id, scheduled_for,
       CASE WHEN expires_at > %(now)s THEN expires_at END, %(now)s, %(now)s
  FROM msg.outbound_message
 WHERE id = %(id)s AND created_at = %(created_at)s
RETURNING id, created_at, attempt_key
"""


def replay(conn: psycopg.Connection, message_id: int, *, reason: str, clock: Clock) -> Replayed:
    """Supersede a failed/rejected/expired attempt and enqueue a new one (one transaction)."""
    if not reason or not reason.strip():
        raise ReplayRefused("a replay needs a reason (--reason), kept on the superseded row")
    now = clock.now()
    with conn.transaction():
        row = conn.execute(_LOCK_ROW, {"id": message_id}).fetchone()
        if row is None:
            raise ReplayRefused(f"no message with id {message_id}")
        _id, created_at, state, message_class = row
        _check_replayable(message_id, state, message_class)
        ensure_partition_for(conn, now)
        conn.execute(_SUPERSEDE, {"id": message_id, "created_at": created_at, "state": state, "now": now,
                                  "state_reason": f"replayed: {reason.strip()}"})
        new_id, new_created_at, attempt_key = conn.execute(
            _INSERT_REPLAY, {"id": message_id, "created_at": created_at, "now": now}).fetchone()
    return Replayed(message_id, new_id, new_created_at, attempt_key)


def _check_replayable(message_id: int, state: str, message_class: str) -> None:
    if message_class == MessageClass.otp:
        raise ReplayRefused(f"message {message_id} is an OTP: a resend is a new event with a new code, "
                            "never a replay")
    if MessageState(state) in REPLAYABLE:
        return
    why = {
        MessageState.unknown: "it may already have been billed; it waits for reconciliation evidence",
        MessageState.superseded: "it was already replayed; replay its latest attempt instead",
        MessageState.delivered: "it was delivered",
    }.get(MessageState(state), "it is still on its way")
    allowed = ", ".join(sorted(s.value for s in REPLAYABLE))
    raise ReplayRefused(f"message {message_id} is {state}: only {allowed} messages can be replayed ({why})")


def mask_recipient(recipient: str) -> str:
    """Enough of a number to tell two apart on screen, not enough to reuse it."""
    return recipient[:2] + "*" * max(0, len(recipient) - 6) + recipient[-4:] if len(recipient) > 6 else "****"

