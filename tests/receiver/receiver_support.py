"""What the receiver's tests push and read back."""

from __future__ import annotations

import psycopg

SECRET = "s3cret-Path-Segment-0123456789"
PATH = f"/dlr/{SECRET}"
LONG_ID = "18446744073709551617"  # above 2**64: kept as text
NUMBER = "919876543210"


def form(**changes: str | None) -> dict[str, str]:
    """A valid push (delivered), with ``changes`` (None drops a parameter)."""
    fields = {"txn_id": "4412345678", "msg_id": LONG_ID, "mobile": NUMBER, "error_code": "000",
              "received_time": "2026-11-30 23:59:58", "delivered_time": "2026-12-01 00:00:04"}
    fields.update(changes)
    return {name: value for name, value in fields.items() if value is not None}


def inbox(db: psycopg.Connection) -> list[tuple]:
    return db.execute("SELECT provider_message_id, error_code, provider_txn_id, recipient, provider_submit_at,"
                      " provider_done_at, report_date FROM dlr.receipt_push_inbox"
                      " ORDER BY provider_message_id, error_code").fetchall()


def rejects(db: psycopg.Connection) -> list[tuple[str, dict]]:
    return db.execute("SELECT reason, fields FROM dlr.receipt_push_rejects ORDER BY reject_id").fetchall()
