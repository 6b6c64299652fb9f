"""Receipt pushes in tests: pushes stored as the receiver stores them, a reconcile-recent pass, the inbox."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import psycopg
from psycopg.rows import dict_row

from sms_pipeline.core.ids import clean_id
from sms_pipeline.core.provider_time import format_local, local_date, parse_local
from sms_pipeline.ingest.delivery_codes import refresh_delivery_codes
from sms_pipeline.reconcile.pushes import PushPass, reconcile_pushes
from sms_pipeline.simulator import generation
from tests.support.numbers import numbers
from tests.support.reconcile import World

HOLD_S = 300


def provider_seconds(instant: datetime, world: World) -> datetime:
    """``instant`` as a push carries it: provider-local, to the second."""
    return parse_local(format_local(instant, world.tz), world.tz)


def push(world: World, msg_id: str, code: str, *, done_at: datetime | None = None, received_ago_s: float = 0,
         txn_id: str | None = None, recipient: str | None = None, submit_at: datetime | None = None) -> bool:
    """Store one push as the receiver does (an OTP's transaction "0" as none); False when it was already
    stored (a repeat)."""
    entry = next((e for e in world.ledger() if e.msg_id == msg_id), None)
    submit = provider_seconds(submit_at or entry.submitted_at, world)
    txn = clean_id(txn_id or (entry.transaction_id if entry else None))
    stored = world.conn.execute(
        """INSERT INTO dlr.receipt_push_inbox (provider_message_id, error_code, provider_txn_id, recipient,
                   provider_submit_at, provider_done_at, report_date, received_at)
           VALUES (%s, %s, %s, %s, %s, %s, %s, clock_timestamp() - make_interval(secs => %s))
           ON CONFLICT DO NOTHING""",
        (msg_id, code, txn, recipient or entry.mobile, submit,
         provider_seconds(done_at, world) if done_at else submit + timedelta(seconds=4), local_date(submit, world.tz),
         received_ago_s),
    )
    return stored.rowcount == 1


def final_push(world: World, msg_id: str) -> bool:
    """The push the provider sends for ``msg_id``'s final receipt (its code as the reports show it)."""
    line = world.timeline(msg_id)
    shown = generation.shown_final(generation.STATUSES[line.final], line.noise, 0.0)
    done_at = world.submitted_at(msg_id) + timedelta(milliseconds=line.final_ms)
    return push(world, msg_id, shown.error_code, done_at=done_at)


def codes_from_provider(world: World) -> None:
    with psycopg.connect(world.db_url, autocommit=True) as conn:
        refresh_delivery_codes(conn, world.client, world.clock)


def run_pass(world: World, **options: Any) -> PushPass | None:
    with psycopg.connect(world.db_url, autocommit=True) as conn:
        return reconcile_pushes(conn, world.clock, provider_timezone=world.tz,
                                correlation_window_s=world.settings.correlation_window_s,
                                campaign_send_spread_s=world.settings.campaign_send_spread_s,
                                hold_s=options.get("hold_s", HOLD_S))


def inbox(world: World) -> list[dict[str, Any]]:
    with world.conn.cursor(row_factory=dict_row) as cur:
        return cur.execute("SELECT * FROM dlr.receipt_push_inbox ORDER BY provider_message_id, error_code").fetchall()


def one_sent(world: World, n: int = 1, start: int = 500) -> list[tuple[tuple, str]]:
    """``n`` messages sent by the worker: (row key, the provider's msgId, which the row learns from a receipt)."""
    recipients = numbers(n, start=start)
    return list(zip(world.send(recipients), map(world.msg_id_of, recipients), strict=True))
