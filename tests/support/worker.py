"""Sending through the real worker: requests, enqueueing, prices, a worker against the simulator.

The worker, OTP and reconciliation tests share these; the OTP strategy joins
the bulk ones when ``make_worker`` is given an OTP policy.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from decimal import Decimal
from typing import Any

import psycopg
from tests.support.numbers import written
from tests.support.environment import TEXT_HMAC_KEY
from tests.support.provider import PROVIDER_ZONE

from sms_pipeline.core.clock import Clock
from sms_pipeline.provider.client import ProviderClient
from sms_pipeline.simulator.server import RunningSimulator
from sms_pipeline import intake, rates
from sms_pipeline.send.breaker import CircuitBreaker
from sms_pipeline.send.loop import Worker, bulk_strategies
from sms_pipeline.send.otp import OtpPolicy, OtpStrategy

# A valid number (phonenumbers) that the simulator refuses: it takes Indian mobiles only.
FOREIGN_NUMBER = "+16502530000"


def request(n: int, **overrides: Any) -> dict[str, Any]:
    return {
        "tenant_id": "tenant-a", "event_type": "order_shipped", "event_id": f"order-{n}",
        "recipient": written(n), "body": "Your order has shipped", "message_class": "transactional",
        "channel": "sms", "sender_id": "SGCSMS", **overrides,
    }


TEXT_KEY = TEXT_HMAC_KEY.encode()
INTAKE_POLICY = intake.IntakePolicy(text_key=TEXT_KEY)  # fingerprints like the test deployment's settings


def enqueue(conn: psycopg.Connection, records: Sequence[dict[str, Any]], clock: Clock) -> list[intake.Enqueued]:
    return intake.enqueue(conn, [intake.new_message(r) for r in records], clock=clock, policy=INTAKE_POLICY)


ROW_COLUMNS = ("recipient", "state", "state_reason", "provider_txn_id", "provider_status_code", "claimed_at",
               "submitted_at", "attempt_count", "segments", "billable_units", "cost", "cost_currency")


def rows(conn: psycopg.Connection) -> list[dict[str, Any]]:
    """The outcome columns of every row, in id order."""
    cursor = conn.execute("SELECT recipient, state::text, " + ", ".join(ROW_COLUMNS[2:])
                          + " FROM msg.outbound_message ORDER BY id")
    return [dict(zip(ROW_COLUMNS, row)) for row in cursor.fetchall()]


def ledger(sim: RunningSimulator) -> list:
    """Every recipient the simulator billed."""
    return list(sim.state.ledger_entries())


def price(conn: psycopg.Connection, unit_price: str | Decimal = "0.0079", message_class: str = "transactional",
          *, tenant: str = "tenant-a") -> None:
    """A rate-card price for a tenant's SMS of one class, in INR, valid since 2020."""
    card = ["tenant_id,channel,message_class,unit_price,currency,valid_from,valid_to",
            f"{tenant},sms,{message_class},{unit_price},INR,2020-01-01,"]
    parsed, bad = rates.parse_rate_card(card)
    assert not bad
    rates.load_rates(conn, parsed)


def states(conn: psycopg.Connection) -> dict[str, int]:
    return dict(conn.execute("SELECT state::text, count(*) FROM msg.outbound_message GROUP BY 1").fetchall())


def make_worker(db_url: str, client: ProviderClient, clock: Clock, policy: OtpPolicy | None = None, *,
                zone: str = PROVIDER_ZONE, **options: Any) -> Worker:
    """A worker on ``db_url`` sending through ``client``; with ``policy``, OTPs too. ``options`` override its settings."""
    settings: dict[str, Any] = dict(
        batch_size=500, lease=timedelta(minutes=5), breaker=CircuitBreaker(5, 30.0), concurrency=1,
        poll_interval_s=0.05, backoff_initial_s=0.01, backoff_max_s=0.05)
    settings.update(options)
    strategies = dict(bulk_strategies(client, zone))
    if policy is not None:
        strategies[("sms", "otp")] = OtpStrategy(client, zone, policy)
    return Worker(lambda: psycopg.connect(db_url, autocommit=True), strategies, clock=clock, **settings)
