"""Helpers for the OTP tests: requests, a worker with the OTP strategy, what the simulator saw."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

import psycopg
from tests.support.provider import PROVIDER_ZONE

from sms_pipeline.core.clock import Clock
from sms_pipeline.otp import codes
from sms_pipeline.send.otp import OtpPolicy, OtpStrategy
from sms_pipeline.provider.client import ProviderClient
from sms_pipeline.simulator.server import RunningSimulator
from sms_pipeline import intake, rates
from sms_pipeline.send.breaker import CircuitBreaker
from sms_pipeline.send.loop import Worker, bulk_strategies

TEST_KEY = b"otp-tests-hmac-key-0123456789abcdef"
TEMPLATE = "Your login code is $otp$. It expires in 5 minutes."


def digits(n: int) -> str:
    """The n-th Indian mobile number as stored and sent."""
    return f"9198{n:08d}"


def otp_request(n: int, **overrides: Any) -> dict[str, Any]:
    return {
        "tenant_id": "tenant-a", "event_type": "login_otp", "event_id": f"login-{n}",
        "recipient": f"+91 98{n:08d}", "body": TEMPLATE, "message_class": "otp", "channel": "sms",
        "sender_id": "OTPSMS", "purpose": "login", **overrides,
    }


def enqueue(conn: psycopg.Connection, records: Sequence[dict[str, Any]], clock: Clock) -> list[intake.Enqueued]:
    return intake.enqueue(conn, [intake.new_message(r) for r in records], clock=clock)


def price(conn: psycopg.Connection, unit_price: str = "0.1500") -> None:
    """A price for tenant-a's SMS OTPs, valid since 2020."""
    parsed, bad = rates.parse_rate_card([
        "tenant_id,channel,message_class,unit_price,currency,valid_from,valid_to",
        f"tenant-a,sms,otp,{unit_price},INR,2020-01-01,"])
    assert not bad
    rates.load_rates(conn, parsed)


def make_worker(db_url: str, client: ProviderClient, clock: Clock, policy: OtpPolicy, **options: Any) -> Worker:
    settings: dict[str, Any] = dict(
        batch_size=500, lease=timedelta(minutes=5), breaker=CircuitBreaker(5, 30.0), concurrency=1,
        poll_interval_s=0.05, backoff_initial_s=0.01, backoff_max_s=0.05)
    settings.update(options)
    strategies = {**bulk_strategies(client, PROVIDER_ZONE),
                  ("sms", "otp"): OtpStrategy(client, PROVIDER_ZONE, policy)}
    return Worker(lambda: psycopg.connect(db_url, autocommit=True), strategies, clock=clock, **settings)


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
