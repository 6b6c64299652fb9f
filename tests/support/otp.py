"""Helpers for the OTP tests: OTP requests, issued codes, what the simulator and the database saw.

Sending itself (enqueue, prices, a worker with the OTP strategy) is ``tests.support.worker``'s.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import psycopg
from tests.support.numbers import digits, written
from tests.support.worker import enqueue

from sms_pipeline.otp import codes
from sms_pipeline.simulator.server import RunningSimulator

TEST_KEY = b"otp-tests-hmac-key-0123456789abcdef"
TEMPLATE = "Your login code is $otp$. It expires in 5 minutes."


def otp_request(n: int, **overrides: Any) -> dict[str, Any]:
    return {
        "tenant_id": "tenant-a", "event_type": "login_otp", "event_id": f"login-{n}",
        "recipient": written(n), "body": TEMPLATE, "message_class": "otp", "channel": "sms",
        "sender_id": "OTPSMS", "purpose": "login", **overrides,
    }


def sent_codes(sim: RunningSimulator, template: str = TEMPLATE) -> list[tuple[str, str]]:
    """(mobile, code) of every OTP the simulator billed, in billing order, read from the rendered texts."""
    view = sim.state.view()
    pattern = re.compile(re.escape(template).replace(re.escape("$otp$"), "(?P<code>.+?)") + "$")
    found = []
    for request in view.ledger.requests[: view.request_count]:
        match = pattern.match(request.text)
        if request.transaction_id == "0" and match:
            mobile = view.ledger.mobiles[request.first_row]
            found.append((mobile, match["code"]))
    return found


def database_text(conn: psycopg.Connection) -> str:
    """Every row of every table of the application's schemas, as text (to search for secrets)."""
    tables = conn.execute(
        """SELECT format('%I.%I', n.nspname, c.relname)
             FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE c.relkind = 'r' AND n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast')
            ORDER BY 1""").fetchall()
    parts = []
    for (table,) in tables:
        parts.extend(row[0] for row in conn.execute(f"SELECT t::text FROM {table} t"))
    return "\n".join(parts)


def verification_rows(conn: psycopg.Connection) -> list[dict[str, Any]]:
    cursor = conn.execute(
        """SELECT v.*, m.state::text AS message_state, m.submitted_at
             FROM msg.otp_verification v
             JOIN msg.outbound_message m ON m.id = v.message_id AND m.created_at = v.message_created_at
            ORDER BY v.id""")
    names = [c.name for c in cursor.description]
    return [dict(zip(names, row)) for row in cursor.fetchall()]


def issue(db, clock, n: int, code: str, *, event: str | None = None, purpose: str = "login",
          session_binding: str | None = None, max_attempts: int = 3, expiry_s: int = 300) -> int:
    """An OTP message to recipient ``n`` with a verification row for ``code`` sent now."""
    [message] = enqueue(db, [otp_request(n, event_id=event or f"login-{n}-{code}", purpose=purpose,
                                         session_binding=session_binding)], clock)
    now = clock.now()
    return db.execute(
        """INSERT INTO msg.otp_verification (message_id, message_created_at, tenant_id, recipient, purpose,
                                             session_binding, code_hmac, created_at, expires_at, max_attempts)
           VALUES (%s, %s, 'tenant-a', %s, %s, %s, %s, %s, %s, %s) RETURNING id""",
        (message.message_id, message.created_at, digits(n), purpose, session_binding,
         codes.code_hmac(TEST_KEY, "tenant-a", digits(n), code), now, now + timedelta(seconds=expiry_s),
         max_attempts)).fetchone()[0]
