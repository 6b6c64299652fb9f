"""Erasure of one recipient (``sms-pipeline messages forget``): the number and the bodies sent to it go.

Every table that holds the number gets the recipient's marker in its place
(``core.erasure``): messages (their bodies go too, the rows not yet sent
expire unsent with state_reason ``erased``), their lookup, OTP verifications,
the push inbox, the raw report loads, receipt events and orphans. Ids,
states, units and cost stay, so the marts do not move. A tombstone (keyed
HMAC, never the number) is recorded, and every msgId met on the way joins
``dlr.erased_message_ids``, which each load applies where its rows land
(``dlr.mask_erased_rows``, the receiver's insert): a re-downloaded report or
a repeated push lands with the marker (docs/design.md#redaction-and-erasure).

The recipient's messages are found through ``msg.message_lookup`` (the
message table has no index on the number), the other tables' rows by their
primary keys, collected in one scan per table before any lock. Each batch is
its own transaction, holding the reconciliation lock so that no
reconciliation copies the number from a table not yet erased into one
already done (and re-checking its rows: a load may have rewritten them); an
interrupted run leaves whole batches done, and running it again finishes
(what is erased matches no more).

Refused, before anything changes, while a worker holds one of the
recipient's messages or one was sent and not yet reconciled: until
reconciliation writes its msgId, its receipts find it only by its number.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

from sms_pipeline.core import erasure
from sms_pipeline.core.provider_time import day_bounds, local_date
from sms_pipeline.db import queries
from sms_pipeline.errors import UserError
from sms_pipeline.reconcile import transaction

# What one batch of erasure_messages erases, in the order of its counts.
MESSAGE_TABLES = ("msg.outbound_message", "msg.message_lookup", "msg.otp_verification")


def _raw_load(table: str, key: str, key_type: str, line: str) -> tuple[str, str, dict[str, sql.Composable]]:
    schema, name = table.split(".")
    return table, "erasure_raw_report_rows", {"table": sql.Identifier(schema, name), "key": sql.Identifier(key),
                                              "key_type": sql.SQL(key_type), "line": sql.Identifier(line)}


# (table, batch statement by primary keys, its identifiers), after the messages
# so their msgIds are known to the loads' hook first; the raw loads before the
# receipt events and orphans made from them.
ROW_KEY_STEPS: tuple[tuple[str, str, dict[str, sql.Composable]], ...] = (
    ("dlr.receipt_push_inbox", "erasure_push_inbox", {}),
    _raw_load("dlr.day_report_rows", "report_date", "date", "line_no"),
    _raw_load("dlr.txn_report_rows", "transaction_id", "text", "row_no"),
    _raw_load("dlr.getdlr_rows", "report_date", "date", "row_no"),
    ("dlr.delivery_receipts", "erasure_delivery_receipts", {}),
    ("dlr.orphaned_receipts", "erasure_orphaned_receipts", {}),
)
# The guard's refusal when a row is claimed or sent between the check and its batch.
_SENDING_GUARD = "outbound_message_recipient_erasure"


def forget_recipient(conn: psycopg.Connection, recipient: str, *, tenant: str | None, text_key: bytes,
                     now: datetime, provider_timezone: ZoneInfo, non_submission_grace_h: int,
                     batch_size: int = 5000) -> dict[str, int]:
    """Erase ``recipient`` (E.164 digits, ``core.msisdn.normalise``); rows changed per table.

    ``tenant`` limits the messages, their lookup and OTP verifications to one
    tenant; the receipt tables have no tenant, so the number goes from them
    whatever the tenant. Refused (nothing done) while a worker holds one of
    the recipient's rows or one awaits reconciliation; ``provider_timezone``
    and ``non_submission_grace_h`` say in the refusal roughly when to come
    back. ``conn`` must not be inside a transaction.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    transaction.require_no_open_transaction(conn)
    digest = erasure.tombstone(text_key, recipient)
    params = {"recipient": recipient, "tenant": tenant, "forms": erasure.stored_forms(recipient), "now": now,
              "batch_size": batch_size}
    with conn.transaction():
        held, awaiting, latest_attempt_at = queries.run(conn, "erasure_in_flight", **params).fetchone()
        if held or awaiting:
            # A row being sent is attempted now, after every awaiting one.
            last_attempt_at = now if held else latest_attempt_at
            raise UserError(_refusal(held + awaiting, last_attempt_at, provider_timezone, non_submission_grace_h))
        params["marker"] = queries.scalar(conn, "erasure_tombstone", recipient_hmac=digest,
                                          marker=erasure.marker(digest), erased_at=now)
    changed = dict.fromkeys((*MESSAGE_TABLES, *(table for table, _, _ in ROW_KEY_STEPS)), 0)
    while True:
        counts = dict(zip(MESSAGE_TABLES, _batch(conn, "erasure_messages", params), strict=True))
        for table, count in counts.items():
            changed[table] += count
        if counts["msg.message_lookup"] < batch_size:  # the batch is a batch of lookup rows
            break
    row_keys: dict[str, list[dict]] = {}
    with conn.transaction():  # no lock: one scan per table, nobody waits on it
        for table, row_key in queries.run(conn, "erasure_row_keys", forms=params["forms"]):
            row_keys.setdefault(table, []).append(row_key)
    for table, statement, identifiers in ROW_KEY_STEPS:
        keys = row_keys.get(table, [])
        for start in range(0, len(keys), batch_size):
            changed[table] += _batch(conn, statement, {**params, "row_keys": Jsonb(keys[start:start + batch_size])},
                                     identifiers)[0]
    return changed


def _refusal(blocking: int, last_attempt_at: datetime, zone: ZoneInfo, grace_h: int) -> str:
    """One line: why nothing was erased, and roughly from when forget can run (the latest day's proof time)."""
    day = local_date(last_attempt_at, zone)
    _, day_end = day_bounds(day, zone)
    ready_at = (day_end + timedelta(hours=grace_h)).astimezone(zone)
    return (f"{blocking} message(s) to this recipient are being sent or await reconciliation (their receipts "
            f"are matched on the number): run messages forget again once the day report of {day} is reconciled, "
            f"from about {ready_at:%Y-%m-%d %H:%M} {zone.key} (nothing was erased)")


def _batch(conn: psycopg.Connection, statement: str, params: dict,
           identifiers: dict[str, sql.Composable] | None = None) -> tuple[int, ...]:
    """Run one batch in its own transaction under the reconciliation lock; its counts."""
    try:
        with conn.transaction():
            transaction.lock(conn)
            return queries.run(conn, statement, identifiers=identifiers, **params).fetchone()
    except psycopg.errors.CheckViolation as exc:
        if exc.diag.constraint_name != _SENDING_GUARD:
            raise
        raise UserError("a message to this recipient was sent meanwhile: run messages forget again once it is "
                        "reconciled (what was erased stays erased)") from None
