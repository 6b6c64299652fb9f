"""Rows written straight into the tables, for tests that need rows in a given state; tables read back whole."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import UTC, date, datetime, timedelta
from typing import Any

import psycopg
from psycopg import sql

DEFAULTS: dict[str, Any] = {
    "tenant_id": "tenant-a",
    "channel": "sms",
    "message_class": "transactional",
    "recipient": "919800000001",
    "sender_id": "SGCSMS",
    "body": "Your order has shipped",
    "encoding": "GSM7",
    "segments": 1,
}


def month_start(months_from_now: int = 0) -> datetime:
    """First instant (UTC) of the month ``months_from_now`` away from the current one."""
    now = datetime.now(UTC)
    index = now.year * 12 + now.month - 1 + months_from_now
    return datetime(index // 12, index % 12 + 1, 1, tzinfo=UTC)


def in_month(months_from_now: int = 0, day: int = 3) -> datetime:
    return month_start(months_from_now) + timedelta(days=day - 1, hours=10)


def ensure_partitions(conn: psycopg.Connection, start: date | datetime, months_ahead: int = 2, *,
                      schemas: Sequence[str] = ("msg", "dlr")) -> None:
    """Monthly partitions from ``start``'s month to ``months_ahead`` months later, of the messages
    and the receipts (or of ``schemas`` only), as the pipeline's upkeep makes them."""
    for schema in schemas:
        conn.execute(f"SELECT {schema}.ensure_partitions(%s, %s)", (start, months_ahead))


def any_state_columns(at: datetime) -> dict[str, Any]:
    """Clocks and billing that keep a row consistent in every state (claimed, billed)."""
    return {"claimed_at": at, "submitted_at": at, "billable_units": 1}


def billed(submitted_at: datetime, **columns: Any) -> dict[str, Any]:
    """The clocks of a row submitted (hence billed) at ``submitted_at``: created 2 s and claimed 1 s before;
    plus ``columns``."""
    return dict(created_at=submitted_at - timedelta(seconds=2), claimed_at=submitted_at - timedelta(seconds=1),
                submitted_at=submitted_at, **columns)


def insert_message(conn: psycopg.Connection, **columns: Any) -> tuple[int, datetime]:
    """Insert one row through the parent table; returns its primary key (id, created_at)."""
    values = {**DEFAULTS, "business_key": uuid.uuid4().hex, **columns}
    query = sql.SQL("INSERT INTO msg.outbound_message ({}) VALUES ({}) RETURNING id, created_at").format(
        sql.SQL(", ").join(map(sql.Identifier, values)),
        sql.SQL(", ").join(sql.Placeholder(name) for name in values),
    )
    return conn.execute(query, values).fetchone()


def fetch(conn: psycopg.Connection, key: tuple[int, datetime], *columns: str) -> tuple:
    query = sql.SQL("SELECT {} FROM msg.outbound_message WHERE id = %s AND created_at = %s").format(
        sql.SQL(", ").join(map(sql.Identifier, columns))
    )
    return conn.execute(query, key).fetchone()


def update_message(conn: psycopg.Connection, key: tuple[int, datetime], **columns: Any) -> int:
    """UPDATE one row's columns; returns the row count."""
    query = sql.SQL("UPDATE msg.outbound_message SET {} WHERE id = %(id)s AND created_at = %(created_at)s").format(
        sql.SQL(", ").join(sql.SQL("{} = {}").format(sql.Identifier(c), sql.Placeholder(c)) for c in columns)
    )
    return conn.execute(query, {**columns, "id": key[0], "created_at": key[1]}).rowcount


_MESSAGE_COLUMNS = {
    "tenant_id", "channel", "message_class", "sender_id", "encoding", "segments", "state", "state_reason",
    "created_at", "claimed_at", "submitted_at", "delivered_at", "billable_units", "cost", "cost_currency",
    "correlation_result", "provider_message_id",
}
_MESSAGE_DEFAULTS = {"tenant_id": "acme", "channel": "sms", "message_class": "transactional", "sender_id": "ACMETX",
                     "encoding": "GSM7", "segments": 1}


def insert_messages(conn: psycopg.Connection, count: int = 1, *, latency_s: float | None = None,
                    **columns: Any) -> list[tuple[int, Any]]:
    """``count`` outbound rows with the given columns (unique business keys and recipients).

    ``latency_s``: delivered_at = submitted_at + (latency_s + i) seconds for
    the i-th row (i from 0), so a batch has latencies latency_s, latency_s+1, ...
    Returns (id, created_at) of the rows.
    """
    values = {**_MESSAGE_DEFAULTS, **columns}
    unknown = set(values) - _MESSAGE_COLUMNS
    assert not unknown, f"not an outbound_message column here: {unknown}"
    names = sorted(values)
    selects = [f"%({name})s" for name in names]
    if latency_s is not None:
        names.append("delivered_at")
        selects.append("%(submitted_at)s::timestamptz + make_interval(secs => %(latency_s)s + g - 1)")
    query = (
        f"INSERT INTO msg.outbound_message (business_key, recipient, body, {', '.join(names)}) "
        f"SELECT %(prefix)s || g, '9198' || lpad(g::text, 8, '0'), 'hello', {', '.join(selects)} "
        f"FROM generate_series(1, %(count)s) AS g RETURNING id, created_at"
    )
    params = {**values, "prefix": f"bk-{uuid.uuid4().hex}-", "count": count, "latency_s": latency_s}
    return conn.execute(query, params).fetchall()


def snapshot(conn: psycopg.Connection, table: str, order_by: str) -> list[tuple]:
    """Every row with its ``xmin``: equal snapshots mean nothing was written, not even the same values."""
    return conn.execute(f"SELECT xmin::text, * FROM {table} ORDER BY {order_by}").fetchall()


def content(conn: psycopg.Connection, table: str, order_by: str) -> list[tuple]:
    """Every row, without system columns (to compare two databases)."""
    return conn.execute(f"SELECT * FROM {table} ORDER BY {order_by}").fetchall()
