"""A provider day under test: real Postgres, a running simulator, the real ingest and assets.

``world`` starts the simulator on the application's virtual clock, points
a settings object (and the Dagster resources built from it) at it, and offers
the moves a test needs: send through the provider client and record the
outbound rows as the worker would, move the clock, run the daily assets
(ingest + reconciliation) for a day or a range through ``dg.materialize``.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any
from unittest.mock import patch
from zoneinfo import ZoneInfo

import dagster as dg
import psycopg
import pytest
from psycopg.rows import dict_row

from sms_pipeline import settings as settings_module
from sms_pipeline.core.clock import VirtualClock
from sms_pipeline.core.provider_time import day_bounds, local_date, localise
from sms_pipeline.core.segments import count_segments
from sms_pipeline.definitions import ASSETS as PIPELINE_ASSETS
from sms_pipeline.orchestration import reconcile_assets
from sms_pipeline.orchestration.asset_keys import HEALTH_CHECK_TARGETS
from sms_pipeline.orchestration.schedules import partition_range_tags
from sms_pipeline.provider.client import ProviderClient
from sms_pipeline.provider.results import SendAccepted
from sms_pipeline.otp import codes
from sms_pipeline.send.otp import OtpPolicy
from sms_pipeline.simulator import generation
from sms_pipeline.simulator.server import RunningSimulator, run_simulator
from tests.support.environment import provider_variables, settings_for
from tests.support.rows import ensure_partitions, insert_message, snapshot
from tests.support.runs import resources_for
from tests.support.otp import TEST_KEY as OTP_CODE_KEY
from tests.support.worker import TEXT_KEY, enqueue, make_worker

TENANT = "tenant-a"
SENDER = "SGCSMS"
UNIT_PRICE = "0.0079"
STATE_OF_WORD = {"DELIVRD": "delivered", "UNDELIV": "failed", "REJECTD": "failed", "EXPIRED": "expired"}
DAILY_ASSETS = ("dlr/day_report", "dlr/transaction_reports", "dlr/receipts", "msg/reconciliation")


@dataclass
class World:
    conn: psycopg.Connection
    db_url: str
    settings: settings_module.Settings
    clock: VirtualClock
    sim: RunningSimulator
    client: ProviderClient
    day: date  # the provider day the test is about
    tz: ZoneInfo
    otps_sent: int = 0  # this world's OTPs so far: each gets its own code, the same on every run

    # ----- time ------------------------------------------------------------

    def at(self, day: date, hh: int, mm: int = 0, ss: int = 0) -> datetime:
        """Provider-local wall time on ``day`` as a UTC instant."""
        return localise(datetime.combine(day, time(hh, mm, ss)), self.tz)

    def move_to(self, instant: datetime) -> None:
        self.clock.set(instant)

    # ----- sending -----------------------------------------------------------

    def _insert(self, recipient: str, text: str, sender: str, message_class: str, **columns: Any) -> tuple:
        now = self.clock.now()
        values = {
            "business_key": uuid.uuid4().hex,
            "tenant_id": TENANT,
            "channel": "sms",
            "message_class": message_class,
            "recipient": recipient,
            "sender_id": sender,
            "body": text,
            "encoding": count_segments(text).encoding,
            "segments": count_segments(text).segments,
            "created_at": now,
            **columns,
        }
        return insert_message(self.conn, **values)

    def _submitted(self, recipient, text, sender, message_class, txn_id) -> tuple:
        key = self._insert(recipient, text, sender, message_class, state="sending", claimed_at=self.clock.now())
        return self.answer_written(key, txn_id)

    def answer_written(self, key: tuple, txn_id: str) -> tuple:
        """The worker writes a `sending` row's accepted answer (as worker_submit does: submitted, billed)."""
        self.conn.execute(
            """UPDATE msg.outbound_message m
                  SET state = 'submitted', provider_txn_id = %(txn)s, submitted_at = %(now)s,
                      billable_units = m.segments,
                      (cost, cost_currency) = (SELECT m.segments * p.unit_price, p.currency
                                                 FROM msg.unit_price(m.tenant_id, m.channel, m.message_class,
                                                                     %(now)s, %(tz)s) p)
                WHERE id = %(id)s AND created_at = %(created_at)s""",
            {"txn": txn_id, "now": self.clock.now(), "tz": self.tz.key, "id": key[0], "created_at": key[1]},
        )
        return key

    def send(self, recipients: Sequence[str], text: str = "Your order has shipped", sender: str = SENDER,
             message_class: str = "transactional") -> list[tuple]:
        """Enqueue one message per recipient and let the real worker send them (one request)."""
        records = [
            {"tenant_id": TENANT, "event_type": "reconcile_test", "event_id": uuid.uuid4().hex,
             "recipient": "+" + recipient, "body": text, "message_class": message_class, "channel": "sms",
             "sender_id": sender}
            for recipient in recipients
        ]
        enqueued = enqueue(self.conn, records, self.clock)
        worker = make_worker(self.db_url, self.client, self.clock, zone=self.tz.key,
                             batch_size=self.settings.batch_size, lease=timedelta(seconds=self.settings.claim_lease_s))
        worker.run(once=True)
        return [(e.message_id, e.created_at) for e in enqueued]

    def send_ambiguous(self, recipients: Sequence[str], fault: str, text: str = "Your order has shipped") -> list[tuple]:
        """A send through the worker whose answer never arrives: the worker writes the rows `unknown`."""
        self.sim.faults.update({fault: 1.0})
        try:
            keys = self.send(recipients, text)
        finally:
            self.sim.faults.update({fault: 0.0})
        assert {self.row(k)["state"] for k in keys} == {"unknown"}
        return keys

    def send_then_crash(self, recipient: str, text: str = "Your order has shipped") -> tuple:
        """The provider accepted the request but the worker died before writing: the row stays `sending`."""
        outcome = self.client.send([recipient], text, SENDER)
        assert isinstance(outcome, SendAccepted), outcome
        return self._insert(recipient, text, SENDER, "transactional", state="sending", claimed_at=self.clock.now())

    def send_same_number_twice(self, recipient: str, text: str = "Your order has shipped") -> list[tuple]:
        """One request listing a number twice (the worker never does this; the provider then has two msgIds)."""
        outcome = self.client.send([recipient, recipient], text, SENDER, duplicate_check=False)
        assert isinstance(outcome, SendAccepted) and len(outcome.accepted) == 2, outcome
        return [self._submitted(recipient, text, SENDER, "transactional", outcome.transaction_id) for _ in range(2)]

    def otp(self, recipient: str, template: str = "Your code is $otp$", *, fault: str | None = None) -> tuple:
        """An OTP sent by the real worker: its own code, the text's fingerprint and the answer's createTime
        kept on the row; ``fault``: a simulator fault for this request (the row then goes `unknown`)."""
        record = {"tenant_id": TENANT, "event_type": "reconcile_otp", "event_id": uuid.uuid4().hex,
                  "recipient": "+" + recipient, "body": template, "message_class": "otp", "channel": "sms",
                  "sender_id": SENDER, "purpose": "login"}
        (enqueued,) = enqueue(self.conn, [record], self.clock)
        policy = OtpPolicy(6, "num", 300, 3, OTP_CODE_KEY, text_key=TEXT_KEY)
        worker = make_worker(self.db_url, self.client, self.clock, policy, zone=self.tz.key,
                             lease=timedelta(seconds=self.settings.claim_lease_s))
        self.sim.faults.update({fault: 1.0} if fault else {})
        # The code is part of the text, so of the simulator's msgId and receipt timeline: a code derived from
        # the recipient and the OTP's turn in this world (not drawn at random) makes its fate the same on every
        # run, and two OTPs to one number still differ in text.
        self.otps_sent += 1
        seed = f"{recipient}/{self.otps_sent}".encode()
        code = str(int.from_bytes(hashlib.sha256(seed).digest()[:8], "big"))[-policy.code_length:]
        try:
            with patch.object(codes, "new_code", return_value=code):
                worker.run(once=True)
        finally:
            self.sim.faults.update({fault: 0.0} if fault else {})
        return enqueued.message_id, enqueued.created_at

    # ----- the pipeline ------------------------------------------------------

    def resources(self) -> dict[str, Any]:
        return resources_for(self.settings, self.clock)

    def run_daily(self, first: date, last: date | None = None, *, ingest: bool = True, reconcile: bool = True,
                  must_succeed: bool = True) -> dg.ExecuteInProcessResult:
        """The daily job's work for days ``first..last`` as one run (ingest, receipts, reconciliation);
        ``reconcile=False``: the downloads alone."""
        wanted = DAILY_ASSETS[0 if ingest else 2:4 if reconcile else 2]
        assets = [a for a in PIPELINE_ASSETS if any(k.to_user_string() in wanted for k in a.keys)]
        result = dg.materialize(
            assets,
            resources=self.resources(),
            instance=dg.DagsterInstance.ephemeral(),
            tags=partition_range_tags(first, last or first),
            raise_on_error=must_succeed,
        )
        assert result.success or not must_succeed
        return result

    def run_hourly(self) -> dg.ExecuteInProcessResult:
        """The hourly job's intraday work: today's getDlr pull, then its reconciliation."""
        wanted = {"dlr/intraday_delivery_reports", "msg/intraday_reconciliation"}
        assets = [a for a in PIPELINE_ASSETS if any(k.to_user_string() in wanted for k in a.keys)]
        result = dg.materialize(assets, resources=self.resources(), instance=dg.DagsterInstance.ephemeral())
        assert result.success
        return result

    def run_upkeep(self) -> dg.ExecuteInProcessResult:
        """The hourly housekeeping asset alone (msg/upkeep: it carries no checks)."""
        result = dg.materialize([reconcile_assets.upkeep], resources=self.resources(), instance=dg.DagsterInstance.ephemeral())
        assert result.success
        return result

    def run_checks(self) -> dg.ExecuteInProcessResult:
        """Upkeep, then the health checks where they live: the send queue observed with its two checks,
        and the checks of dlr/receipts, msg/reconciliation and marts/cost_daily run on what is stored
        (without materialising those assets), all in the one health-check step."""
        self.run_upkeep()
        check_keys = [dg.AssetCheckKey(asset, name) for name, asset in HEALTH_CHECK_TARGETS.items()]
        selection = dg.AssetSelection.assets(reconcile_assets.OUTBOUND_QUEUE) | dg.AssetSelection.checks(*check_keys)
        result = dg.materialize([*PIPELINE_ASSETS, reconcile_assets.health_checks],
                                selection=selection, resources=self.resources(),
                                instance=dg.DagsterInstance.ephemeral())
        assert result.success
        return result

    # ----- looking ---------------------------------------------------------------

    def row(self, key: tuple) -> dict[str, Any]:
        with self.conn.cursor(row_factory=dict_row) as cur:
            return cur.execute("SELECT * FROM msg.outbound_message WHERE id = %s AND created_at = %s", key).fetchone()

    def receipts(self, msg_id: str) -> list[dict[str, Any]]:
        with self.conn.cursor(row_factory=dict_row) as cur:
            return cur.execute(
                "SELECT * FROM dlr.delivery_receipts WHERE provider_message_id = %s ORDER BY status_word", (msg_id,)
            ).fetchall()

    def ledger(self) -> list:
        return list(self.sim.state.ledger_entries())

    def timeline(self, msg_id: str) -> generation.Timeline:
        """What the simulator will report for ``msg_id`` (its ledger timeline)."""
        view = self.sim.state.view()
        row = view.ledger.msg_ids.index(msg_id)
        led = view.ledger
        return generation.Timeline(led.final[row], led.intermediate[row], led.intermediate_ms[row],
                                   led.final_ms[row], led.noise[row])

    def msg_id_of(self, recipient: str) -> str:
        (msg_id,) = [e.msg_id for e in self.ledger() if e.mobile == recipient]
        return msg_id

    def inject_getdlr(self, day: date, msg_id: str, status: str, *, recipient: str, submit_at: datetime,
                      done_at: datetime | None = None, txn_id: str | None = None, cause: str = "") -> None:
        """A getDlr row as the intraday pull stores it (a second source reporting ``status``)."""
        row_no = self.conn.execute(
            "SELECT COALESCE(max(row_no), 0) + 1 FROM dlr.getdlr_rows WHERE report_date = %s", (day,)
        ).fetchone()[0]
        self.conn.execute(
            """INSERT INTO dlr.getdlr_rows (report_date, row_no, msg_id, transaction_id, mobile, sender_name,
                   message_fingerprint, status, cause, error_code, provider_submit_at, provider_done_at)
               VALUES (%s, %s, %s, %s, %s, %s, NULL, %s, %s, '', %s, %s)""",
            (day, row_no, msg_id, txn_id, recipient, SENDER, status, cause, submit_at, done_at),
        )

    def submitted_at(self, msg_id: str) -> datetime:
        (entry,) = [e for e in self.ledger() if e.msg_id == msg_id]
        return entry.submitted_at

    def visible_word(self, msg_id: str, at: datetime) -> str:
        """The status word the provider shows for ``msg_id`` at ``at``."""
        line = self.timeline(msg_id)
        elapsed = (at - self.submitted_at(msg_id)) // timedelta(milliseconds=1)
        code = generation.status_at(line.final, line.intermediate, line.intermediate_ms, line.final_ms, elapsed)
        return generation.STATUSES[code].word

    def expected_state(self, msg_id: str, at: datetime) -> str:
        """The state a submitted row must be in once the report downloaded at ``at`` is reconciled."""
        return STATE_OF_WORD.get(self.visible_word(msg_id, at), "submitted")

    def snapshot(self) -> dict[str, list[tuple]]:
        """Every row (with its row version) of the tables reconciliation writes."""
        tables = {
            "messages": ("msg.outbound_message", "id"),
            "receipts": ("dlr.delivery_receipts", "receipt_id"),
            "orphans": ("dlr.orphaned_receipts", "orphan_id"),
            "registry": ("msg.provider_message_id_registry", "provider_message_id"),
        }
        return {name: snapshot(self.conn, table, order_by) for name, (table, order_by) in tables.items()}


def world_for(db_url: str, tmp_path, *, tz_name: str = "Asia/Kolkata", day: date | None = None,
              start: time = time(10, 0), faults: dict[str, float] | None = None) -> Iterator[World]:
    tz = ZoneInfo(tz_name)
    the_day = day or local_date(datetime.now(UTC), tz) - timedelta(days=6)
    clock = VirtualClock(datetime.combine(the_day, start).replace(tzinfo=tz).astimezone(UTC))
    with run_simulator(clock=clock, seed=8, timezone=tz, faults=faults) as sim:
        cfg = settings_for(
            db_url, tmp_path / "home",
            SMS_PIPELINE_PARTITION_START=(the_day - timedelta(days=10)).isoformat(),
            SMS_PIPELINE_REPORT_REQUESTS_PER_S="1000",
            SMS_PIPELINE_REPORT_MAX_RETRIES="1",
            **provider_variables(sim.base_url, tz_name),
            SMS_PROVIDER_READ_TIMEOUT_S="2",
        )
        with psycopg.connect(db_url, autocommit=True) as conn, ProviderClient.from_settings(cfg, backoff_s=0.01) as client:
            start_of_day, _ = day_bounds(the_day, tz)
            ensure_partitions(conn, start_of_day - timedelta(days=40), 2)
            for message_class in ("otp", "transactional", "promotional"):
                conn.execute(
                    "INSERT INTO msg.rate_card (tenant_id, channel, message_class, unit_price, currency, valid_from) "
                    "VALUES (%s, 'sms', %s, %s, 'INR', %s)",
                    (TENANT, message_class, UNIT_PRICE, the_day - timedelta(days=30)),
                )
            yield World(conn, db_url, cfg, clock, sim, client, the_day, tz)


@pytest.fixture
def world(db_url, tmp_path) -> Iterator[World]:
    yield from world_for(db_url, tmp_path)
