"""Operator tools: trace every attempt of a message, replay a dead one.

A message (tenant + business key) may have several attempts: each operator
replay supersedes the last attempt and inserts a new row that takes the key
over (``replaces_id`` points back). :func:`trace` finds the messages that
match a business key, an attempt key or a recipient, and returns each one's
whole chain with its receipts; :func:`replay` is the only way an operator
sends a ``failed``/``rejected``/``expired`` row again. Reconciliation re-sends
rows it proved never submitted through the same mechanism
(:func:`supersede_with_new_attempts`), with state_reason ``resent_after_proof``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from uuid import UUID

import psycopg
from psycopg.rows import dict_row

from sms_pipeline.core.clock import Clock
from sms_pipeline.core.states import REPLAYABLE, MessageClass, MessageState
from sms_pipeline.db import queries
from sms_pipeline.errors import UserError
from sms_pipeline.intake.attempts import Replayed, supersede_with_new_attempts


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
    """One attempt (row) of a message; the fields are the columns of ``ops_message_chain``, in order."""

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
    correlation_evidence: str | None  # what a match rested on: msgid, transaction, fingerprint, reconstruction
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


# Which messages a lookup names: the statement giving (tenant, business key) pairs.
_MESSAGES_BY = {
    "business_key": "ops_messages_by_business_key",
    "attempt_key": "ops_messages_by_attempt_key",
    "recipient": "ops_messages_by_recipient",
}


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
        keys = queries.run(cur, _MESSAGES_BY[lookup], value=value, tenant=tenant).fetchall()
        traces = []
        for key in sorted(keys, key=lambda k: (k["tenant_id"], k["business_key"])):
            rows = queries.run(cur, "ops_message_chain", tenant=key["tenant_id"],
                               business_key=key["business_key"]).fetchall()
            receipts: dict[int, list[ReceiptView]] = {}
            for r in queries.run(cur, "ops_message_receipts", ids=[row["id"] for row in rows]).fetchall():
                message_id = r.pop("message_id")
                receipts.setdefault(message_id, []).append(ReceiptView(**r))
            attempts = tuple(AttemptView(**row, receipts=tuple(receipts.get(row["id"], ()))) for row in rows)
            traces.append(MessageTrace(key["tenant_id"], key["business_key"], attempts))
    return traces


def replay(conn: psycopg.Connection, message_id: int, *, reason: str, clock: Clock,
           send_window: timedelta) -> Replayed:
    """Supersede a failed/rejected/expired attempt and enqueue a new one (one transaction)."""
    if not reason or not reason.strip():
        raise ReplayRefused("a replay needs a reason (--reason), kept on the superseded row")
    now = clock.now()
    with conn.transaction():
        row = queries.run(conn, "ops_replay_lock", id=message_id).fetchone()
        if row is None:
            raise ReplayRefused(f"no message with id {message_id}")
        _id, created_at, state, message_class = row
        _check_replayable(message_id, state, message_class)
        (done,) = supersede_with_new_attempts(conn, [(message_id, created_at)], state=state,
                                              state_reason=f"replayed: {reason.strip()}", now=now,
                                              send_window=send_window)
    return done


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

