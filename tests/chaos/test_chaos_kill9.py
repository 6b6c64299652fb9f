"""Chaos: worker processes killed with SIGKILL while the provider misbehaves; the ledger decides.

10,500 messages (transactional and promotional in multi-recipient requests,
OTPs one per request, with resends) go through three ``sms-pipeline worker``
processes against the simulator (in this process, on loopback) with faults
on: 5 % accept-then-drop (billed, no answer), 2 % HTTP 5xx, 1 % rate limit,
1 % refused connections. Every couple of seconds a random worker is killed
with SIGKILL and started again. Then the claim lease runs out, upkeep gives
abandoned claims whose request never started back to ``pending`` and turns
requests killed in flight (``sending``) into ``unknown``, and ``worker
--once`` drains the rest.

Every (body, recipient) pair is unique, so each billed recipient in the
simulator's ledger names exactly one row. Checked against the ledger:
nothing billed twice, every ledger entry is one ``submitted`` or ``unknown``
row, every ``submitted`` row was billed, nothing is left ``pending``,
``claimed`` or ``sending``, and the cost of the submitted rows is exactly units x price.
Every OTP code the simulator was sent (billed or not) is then searched for
in the whole database and in every log the workers wrote: none may appear;
and each newest delivered code verifies, across processes, with the key the
workers used.
"""

from __future__ import annotations

import random
import re
import signal
import time
from collections import Counter
from datetime import timedelta
from decimal import Decimal

import pytest
from psycopg.rows import namedtuple_row

from sms_pipeline import settings as settings_module
from sms_pipeline.core.clock import RealClock
from sms_pipeline.otp import codes
from sms_pipeline.otp.verify import VerifyResult, verify_otp
from sms_pipeline.simulator import app as simulator_app
from sms_pipeline.simulator.server import run_simulator
from sms_pipeline import intake
from sms_pipeline.send import upkeep
from tests.support.chaos import Workers, billed_recipients, count_states, worker_command
from tests.support.environment import app_environ, provider_variables
from tests.support.numbers import digits
from tests.support.otp import database_text
from tests.support.worker import price

pytestmark = pytest.mark.slow

TENANT = "chaos"
ZONE = "Asia/Kolkata"
FAULTS = {"accept_then_drop": 0.05, "http_5xx": 0.02, "rate_limit_send": 0.01, "refuse_connection": 0.01}
PRICES = {"transactional": Decimal("0.0079"), "promotional": Decimal("0.0050"), "otp": Decimal("0.1500")}
WORKERS = 3
LEASE_S = 8
KILL_EVERY_S = (1.5, 2.5)
MIN_KILLS = 8
MAX_CHAOS_S = 150
DRAIN_S = 300
OTP_RETRY_AFTER_S = 5  # the provider refuses a resend to one number sooner than this (429)
CODE_LENGTH = 8  # alphanumeric: a code cannot turn up in the data by accident
SEED = 6
BATCH_SIZE = 100


def _bulk(first_event: int, events: int, per_event: int, message_class: str, rng: random.Random) -> list[dict]:
    """Events with a body of their own, each to ``per_event`` numbers (one request's worth or less)."""
    records = []
    for event in range(first_event, first_event + events):
        body = f"Order {event}: your parcel is on its way (ref T{event})."
        if event % 10 == 3:
            body += " Reply STOP to opt out of delivery updates. " * 4  # two or more segments
        elif event % 10 == 7:
            body += " ₹ paid"  # UCS-2
        for recipient in rng.sample(range(50_000), per_event):
            records.append({"tenant_id": TENANT, "event_type": f"{message_class}_update", "event_id": f"e{event}",
                            "recipient": digits(recipient), "body": body, "message_class": message_class,
                            "channel": "sms", "sender_id": "CHAOSX"})
    return records


def _otps(first: int, count: int, recipients: list[int]) -> list[dict]:
    """OTPs with unique templates; the same recipient again is a resend (a new event)."""
    return [{"tenant_id": TENANT, "event_type": "login_otp", "event_id": f"otp{n}", "recipient": digits(recipient),
             "body": f"$otp$ is your login code (ref O{n})", "message_class": "otp", "channel": "sms",
             "sender_id": "CHAOTP", "purpose": "login"}
            for n, recipient in zip(range(first, first + count), recipients, strict=True)]


def _waves(rng: random.Random) -> tuple[list[dict], list[dict]]:
    otp_numbers = list(range(100_000, 101_600))
    first = (_bulk(0, 200, 20, "transactional", rng) + _bulk(1_000, 60, 25, "promotional", rng)
             + _otps(0, 1_200, otp_numbers[:1_200]))
    resent = rng.sample(otp_numbers[:1_200], 400)
    second = (_bulk(2_000, 100, 20, "transactional", rng) + _bulk(3_000, 40, 25, "promotional", rng)
              + _otps(1_200, 400, otp_numbers[1_200:]) + _otps(1_600, 400, resent))
    return first, second


_TOKEN = re.compile(rf"(?<![0-9A-Za-z])[0-9A-Za-z]{{{CODE_LENGTH}}}(?![0-9A-Za-z])")


def _leaked(codes_sent: set[str], text: str) -> set[str]:
    """Codes that stand as a word of their own anywhere in ``text`` (any letter case)."""
    return codes_sent & {token.upper() for token in _TOKEN.findall(text)}


def test_kill_9_never_bills_twice_and_leaves_no_code_in_clear(db, db_url, tmp_path, monkeypatch):
    # Every /otp generate the simulator receives, billed or not: the codes to search for.
    seen: list[tuple[str, str, str]] = []  # (mobile, template, code)
    read_params = simulator_app.read_params

    async def observed(request):
        params = await read_params(request)
        if params.get("sendmethod") == "generate" and params.get("otp"):
            seen.append((params.get("mobile", ""), params.get("msg", ""), params["otp"]))
        return params

    monkeypatch.setattr(simulator_app, "read_params", observed)
    home = tmp_path / "home"
    rng = random.Random(SEED)
    first_wave, second_wave = _waves(rng)

    with run_simulator(seed=SEED, timezone=ZONE, faults=FAULTS, otp_retry_after_s=OTP_RETRY_AFTER_S) as sim:
        env = app_environ(
            SMS_PIPELINE_DATABASE_URL=db_url, SMS_PIPELINE_HOME=str(home), SMS_PIPELINE_LOG_LEVEL="DEBUG",
            SMS_PIPELINE_CLAIM_LEASE_S=str(LEASE_S), SMS_PIPELINE_CIRCUIT_BREAKER_FAILURES="5",
            SMS_PIPELINE_CIRCUIT_BREAKER_COOLDOWN_S="0.5", SMS_PIPELINE_OTP_CODE_TYPE="alphanum",
            SMS_PIPELINE_OTP_CODE_LENGTH=str(CODE_LENGTH), SMS_PIPELINE_OTP_EXPIRY_S="1800",
            **provider_variables(sim.base_url, ZONE), SMS_PROVIDER_CONNECT_TIMEOUT_S="1",
            SMS_PROVIDER_READ_TIMEOUT_S="5",
        )
        settings = settings_module.load(env)
        key = codes.hmac_key(settings.otp_hmac_key, settings.home)  # made now, so every process reads the same file
        for message_class, unit_price in PRICES.items():
            price(db, unit_price, message_class, tenant=TENANT)
        intake.enqueue(db, [intake.new_message(r, otp_code_length=CODE_LENGTH) for r in first_wave],
                       clock=RealClock())
        workers = Workers(env, tmp_path, worker_command(BATCH_SIZE), WORKERS)
        try:
            for slot in range(WORKERS):
                workers.start(slot)
            started = time.monotonic()
            second_wave_in = False
            while True:
                time.sleep(rng.uniform(*KILL_EVERY_S))
                workers.kill_and_restart(rng.randrange(WORKERS))
                if not second_wave_in and workers.kills >= 3:
                    intake.enqueue(db, [intake.new_message(r, otp_code_length=CODE_LENGTH) for r in second_wave],
                                   clock=RealClock())
                    second_wave_in = True
                drained = second_wave_in and count_states(db, ("pending",)) == 0
                if (drained and workers.kills >= MIN_KILLS) or time.monotonic() - started > MAX_CHAOS_S:
                    break
            workers.stop_all(signal.SIGTERM)

            # Claims the killed workers left behind run out of lease: upkeep gives the
            # never-started ones back to pending and makes those killed in flight unknown.
            time.sleep(LEASE_S + 1)
            upkeep.run_upkeep(db, now=RealClock().now(), lease=timedelta(seconds=LEASE_S))
            assert count_states(db, ("claimed", "sending")) == 0
            # A `--once` drain ends when its circuit breaker opens (the faults
            # stay on), more often on a busy machine: drain until empty, bounded
            # by time rather than by a number of attempts.
            drain_until = time.monotonic() + DRAIN_S
            while count_states(db, ("pending",)) and time.monotonic() < drain_until:
                workers.start(None, "--once").wait(timeout=120)
        finally:
            workers.stop_all(signal.SIGKILL)
        ledger = billed_recipients(sim)
        fired = sim.faults.fired()

    # The chaos really happened. (Refusals are drawn per quarter-second slot of
    # the proxy's life: with this seed, slots 7, 11, 95 and 185 refuse.)
    assert workers.kills >= MIN_KILLS
    assert all(fired[name] > 0 for name in FAULTS), fired

    rows = db.cursor(row_factory=namedtuple_row).execute(
        """SELECT id, tenant_id, business_key, message_class, body, recipient, state::text AS state,
                  billable_units, cost FROM msg.outbound_message""").fetchall()
    assert len(rows) == len(first_wave) + len(second_wave) == 10_500
    by_pair = {(row.body, row.recipient): row for row in rows}
    assert len(by_pair) == len(rows)  # every (body, recipient) names one row

    # After the drain nothing waits and nothing is held.
    states = Counter(row.state for row in rows)
    assert states["pending"] == states["claimed"] == states["sending"] == 0, states

    # Each ledger entry is exactly one row, in submitted or unknown, and no row or business key twice.
    templates = {(mobile, template.replace("$otp$", code)): (template, code) for mobile, template, code in seen}
    billed: dict[int, tuple[int, str | None]] = {}  # row id -> (units billed, OTP code)
    for transaction_id, text, mobile, units in ledger:
        template, code = templates[(mobile, text)] if transaction_id == "0" else (text, None)
        row = by_pair[(template, mobile)]
        assert row.state in ("submitted", "unknown"), (row.id, row.state)
        assert row.id not in billed, f"row {row.id} billed twice"
        billed[row.id] = (units, code)
    billed_keys = Counter((row.tenant_id, row.business_key) for row in rows if row.id in billed)
    assert max(billed_keys.values()) == 1

    # Each submitted row was billed, for the units it recorded, and costs units x price exactly.
    submitted = [row for row in rows if row.state == "submitted"]
    assert all(row.id in billed and row.billable_units == billed[row.id][0] for row in submitted)
    assert sum(row.cost for row in submitted) == sum(billed[row.id][0] * PRICES[row.message_class]
                                                     for row in submitted)
    # Both kinds of unknown occurred: billed without an answer, and not billed at all.
    unknown = [row.id in billed for row in rows if row.state == "unknown"]
    assert any(unknown) and not all(unknown)

    # No OTP code in clear, in the database or in any log the workers wrote.
    codes_sent = {code for _, _, code in seen}
    otp_billed = sum(1 for entry in ledger if entry[0] == "0")
    assert len(codes_sent) >= otp_billed > 1_000
    assert _leaked(codes_sent, database_text(db)) == set()
    logs = sorted([*tmp_path.glob("worker-*.out"), *(home / "logs").glob("*")])
    assert logs and all(not _leaked(codes_sent, path.read_text(errors="replace")) for path in logs)

    # The newest code of each recipient that certainly went out verifies, with the workers' key.
    newest = db.execute(
        """SELECT DISTINCT ON (v.recipient) v.message_id, m.state::text
             FROM msg.otp_verification v
             JOIN msg.outbound_message m ON m.id = v.message_id AND m.created_at = v.message_created_at
            WHERE v.tenant_id = %s AND v.purpose = 'login'
            ORDER BY v.recipient, v.created_at DESC, v.id DESC""", (TENANT,)).fetchall()
    delivered = [(message_id, billed[message_id][1]) for message_id, state in newest if state == "submitted"]
    assert len(delivered) > 1_000
    recipients = {row.id: row.recipient for row in rows}
    results = Counter(verify_otp(db, TENANT, recipients[message_id], "login", code, hmac_key=key)
                      for message_id, code in delivered)
    assert results == {VerifyResult.ok: len(delivered)}
