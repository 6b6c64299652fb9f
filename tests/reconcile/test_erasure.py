"""``messages forget`` (docs/design.md#redaction-and-erasure) on a provider day that went through everything.

One recipient gets bulk messages, an OTP, a message still pending and an
orphaned receipt; the day runs through the real simulator, the worker, the day
report, by-transaction and getDlr loads, a push through the real receiver, the
reconciliation and the marts (real dbt). Then the recipient is forgotten: the
number (as E.164, national, or any digits containing it) and the bodies sent to
it are in no text or JSON column of any table, ids, states and money stay,
every mart is the same after a rebuild; reloading each report and repeating the
push brings nothing back; a second forget changes nothing; and redacting every
final body afterwards leaves the marts as they were too. Then the smaller
promises: a bad number is one line, a row being sent or sent and not yet
reconciled stops the command until its day is reconciled (after which a reload
brings nothing back), a tenant's forget leaves other tenants' rows, the guard's
refusals, a re-send never copies a missing body, and the statements find the
messages through the lookup's recipient index at volume.
"""

from __future__ import annotations

from datetime import timedelta
from functools import partial
from zoneinfo import ZoneInfo

import httpx
import psycopg
import pytest
from psycopg.types.json import Jsonb

from sms_pipeline.core.ids import clean_id
from sms_pipeline.core.provider_time import day_bounds, format_local
from sms_pipeline.db import queries
from sms_pipeline.ingest.intraday import load_intraday_delivery_reports
from sms_pipeline.ingest.transaction_reports import fetch_transaction_reports
from sms_pipeline.receiver.app import ReceiverConfig
from sms_pipeline.receiver.server import run_receiver
from sms_pipeline.reconcile.erasure import ROW_KEY_STEPS, forget_recipient
from sms_pipeline.reconcile.redaction import redact_final_bodies
from tests.support.environment import settings_for
from tests.support.marts import Marts, mart_rows
from tests.support.pushes import codes_from_provider, run_pass
from tests.support.reconcile import SENDER, TENANT, World
from tests.db.test_schema_indexes import NOW, SEED, _scans
from tests.support.rows import billed, ensure_partitions, in_month, insert_message, month_start
from tests.support.worker import TEXT_KEY

pytestmark = pytest.mark.slow

FORGOTTEN = "919812340777"
NATIONAL = FORGOTTEN[2:]  # every stored form of the number contains it
OTHERS = ["919812340101", "919812340102"]
BODIES = ["Hello Asha, your parcel 4471 is out for delivery", "Asha, your refund of 530 rupees is on its way"]
LATER_BODY = "Asha, your next parcel ships tomorrow"
SECRET = "erasure-test-secret-0123456789"
FINAL_STATES = ("delivered", "failed", "rejected", "expired", "superseded")
# forget_recipient as the command calls it with the default settings.
forget = partial(forget_recipient, text_key=TEXT_KEY, provider_timezone=ZoneInfo("Asia/Kolkata"),
                 non_submission_grace_h=24)


def _hits(db_url: str, needles: list[str]) -> list[str]:
    """Every table.column (text or JSON, any table of the app database; a partition named by its
    partitioned table) holding one of ``needles``."""
    patterns = [f"%{needle}%" for needle in needles]
    with psycopg.connect(db_url) as conn:
        columns = conn.execute(
            """SELECT n.nspname, c.relname, a.attname, COALESCE(pg_partition_root(c.oid), c.oid)::regclass::text
                 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                 JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
                WHERE c.relkind = 'r' AND n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast')
                  AND a.atttypid IN ('text'::regtype, 'varchar'::regtype, 'bpchar'::regtype, 'jsonb'::regtype,
                                     'json'::regtype)""").fetchall()
        return sorted({f"{root}.{column}" for schema, table, column, root in columns
                       if conn.execute(f'SELECT EXISTS (SELECT 1 FROM "{schema}"."{table}" '
                                       f'WHERE "{column}"::text LIKE ANY(%s))', (patterns,)).fetchone()[0]})


def _messages(world: World) -> list[tuple]:
    """What erasure must keep: ids, states, money, provider ids."""
    return world.conn.execute(
        "SELECT id, created_at, attempt_key, state, segments, billable_units, cost, cost_currency, provider_txn_id,"
        " provider_message_id FROM msg.outbound_message ORDER BY id").fetchall()


def _push(http: httpx.Client, world: World, msg_id: str, txn_id: str, code: str) -> None:
    submitted = format_local(world.submitted_at(msg_id), world.tz)
    answer = http.post(f"/dlr/{SECRET}", data={"txn_id": txn_id, "msg_id": msg_id, "mobile": FORGOTTEN,
                                               "error_code": code, "received_time": submitted,
                                               "delivered_time": submitted})
    assert answer.status_code == 200, answer.text


def _reload_everything(world: World, http: httpx.Client, txn_ids: list[str], msg_id: str, txn_id: str) -> None:
    """Every load again, rewriting its rows (the stored checksums forgotten), and a new push for the number."""
    world.conn.execute("UPDATE dlr.report_checkpoints SET checksum = 'forced-reload'")
    world.conn.execute("UPDATE dlr.txn_report_fetches SET checksum = repeat('0', 64)")
    world.run_daily(world.day, reconcile=False)
    with psycopg.connect(world.db_url, autocommit=True) as conn:
        fetch_transaction_reports(conn, world.client, world.day, world.tz, world.clock, concurrency=2,
                                  transaction_ids=txn_ids)
        load_intraday_delivery_reports(conn, world.client, world.tz, world.clock, text_key=TEXT_KEY, day=world.day)
    _push(http, world, msg_id, txn_id, "001")  # a new (msgId, code): a row of its own


def test_forget_erases_the_number_and_bodies_everywhere_and_later_loads_keep_it_erased(world, run, tmp_path):
    receiver_settings = settings_for(world.db_url, tmp_path / "receiver", SMS_PIPELINE_WEBHOOK_SECRET=SECRET)
    with run_receiver(ReceiverConfig.from_settings(receiver_settings, world.db_url)) as receiver, \
            httpx.Client(base_url=receiver.base_url, timeout=10) as http:
        bulk = world.send(OTHERS) + world.send([FORGOTTEN], BODIES[0]) + world.send([FORGOTTEN], BODIES[1])
        world.otp(FORGOTTEN)
        scheduled = world.clock.now() + timedelta(days=30)
        pending = insert_message(world.conn, tenant_id=TENANT, recipient=FORGOTTEN, sender_id=SENDER,
                                 body=LATER_BODY, created_at=world.clock.now(), scheduled_for=scheduled)
        entries = [e for e in world.ledger() if e.mobile == FORGOTTEN]
        txn_ids = sorted({e.transaction_id for e in entries if clean_id(e.transaction_id)})  # an OTP has none
        bulk_entry = next(e for e in entries if clean_id(e.transaction_id))

        _, day_end = day_bounds(world.day, world.tz)
        world.move_to(day_end - timedelta(hours=1))
        with psycopg.connect(world.db_url, autocommit=True) as conn:
            fetch_transaction_reports(conn, world.client, world.day, world.tz, world.clock, concurrency=2,
                                      transaction_ids=txn_ids)
        world.run_hourly()  # the day's getDlr pull
        world.inject_getdlr(world.day, "7100000000000001", "DELIVRD", recipient="+" + FORGOTTEN,
                            submit_at=world.clock.now() - timedelta(hours=2))  # a receipt of no message of ours
        codes_from_provider(world)
        _push(http, world, bulk_entry.msg_id, bulk_entry.transaction_id, "000")
        run_pass(world)
        world.move_to(day_end + timedelta(hours=3))
        world.run_daily(world.day)
        marts = Marts(world.settings)
        marts.build_views()
        marts.build_day(world.day)
        marts_before, messages_before = mart_rows(world.db_url), _messages(world)

        assert _hits(world.db_url, [NATIONAL]) == [
            "dlr.day_report_rows.mobile", "dlr.delivery_receipts.recipient", "dlr.getdlr_rows.mobile",
            "dlr.orphaned_receipts.raw_payload", "dlr.receipt_push_inbox.recipient", "dlr.txn_report_rows.mobile",
            "msg.message_lookup.recipient", "msg.otp_verification.recipient", "msg.outbound_message.recipient",
        ]  # the search sees every table the number reached
        assert _hits(world.db_url, BODIES + [LATER_BODY, "Your code is"]) == ["msg.outbound_message.body"]

        code, out, err = run("messages", "forget", "--recipient", "+91 " + NATIONAL)
        assert code == 0, err
        assert NATIONAL not in out + err
        erased = {line.split()[0]: int(line.split()[1]) for line in out.splitlines() if "rows erased" in line
                  and line.startswith(("msg.", "dlr."))}
        assert erased["msg.outbound_message"] == 4 and erased["msg.otp_verification"] == 1
        assert all(erased[table] > 0 for table in ("dlr.day_report_rows", "dlr.txn_report_rows", "dlr.getdlr_rows",
                                                   "dlr.delivery_receipts", "dlr.orphaned_receipts",
                                                   "dlr.receipt_push_inbox", "msg.message_lookup"))

        assert _hits(world.db_url, [NATIONAL, *BODIES, LATER_BODY, "Your code is"]) == []
        messages_after = _messages(world)
        expected = [row if row[:2] != pending else (*row[:3], "expired", *row[4:]) for row in messages_before]
        assert messages_after == expected  # ids, states and money kept; the unsent one expired
        assert world.row(pending)["state_reason"] == "erased"
        assert world.row(bulk[2])["recipient"] == world.row(bulk[3])["recipient"] != world.row(bulk[0])["recipient"]
        assert world.row(bulk[0])["body"] is not None  # another recipient's message keeps its body
        marts.build_day(world.day)
        assert mart_rows(world.db_url) == marts_before

        _reload_everything(world, http, txn_ids, bulk_entry.msg_id, bulk_entry.transaction_id)
        assert world.conn.execute("SELECT count(*) FROM dlr.receipt_push_inbox").fetchone()[0] == 2
        rewritten = world.conn.execute(
            "SELECT (SELECT count(*) FROM dlr.report_checkpoints WHERE checksum = 'forced-reload'),"
            " (SELECT count(*) FROM dlr.txn_report_fetches WHERE checksum = repeat('0', 64))").fetchone()
        assert rewritten == (0, 0)  # every load really wrote its rows again
        assert world.conn.execute("SELECT count(*) FROM dlr.day_report_rows WHERE mobile LIKE 'erased:%%'"
                                  ).fetchone()[0] >= 3
        assert _hits(world.db_url, [NATIONAL, *BODIES, LATER_BODY]) == []

        code, out, _ = run("messages", "forget", "--recipient", FORGOTTEN)
        assert code == 0 and "nothing left to erase" in out
        assert all(line.split()[1] == "0" for line in out.splitlines() if line.startswith(("msg.", "dlr.")))

        assert redact_final_bodies(world.conn, world.clock.now() + timedelta(days=31), after_days=30) > 0
        assert world.conn.execute("SELECT count(*) FROM msg.outbound_message WHERE body IS NOT NULL AND state IN "
                                  "('delivered', 'failed', 'rejected', 'expired', 'superseded')").fetchone()[0] == 0
        marts.build_day(world.day)
        assert mart_rows(world.db_url) == marts_before


@pytest.mark.parametrize("number", ["12345", "not-a-number", "+91 1"])
def test_forget_refuses_a_number_it_cannot_read_in_one_line(run, number):
    code, out, err = run("messages", "forget", "--recipient", number)
    assert code != 0 and out == ""
    assert err.strip().count("\n") == 0 and "--recipient is not a valid phone number" in err


def _every_row(db_url: str) -> dict[str, list[str]]:
    """Every row of every table of the msg and dlr schemas, as text."""
    with psycopg.connect(db_url) as conn:
        tables = [name for (name,) in conn.execute(
            "SELECT c.oid::regclass::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE n.nspname IN ('msg', 'dlr') AND c.relkind IN ('r', 'p') AND NOT c.relispartition")]
        return {table: conn.execute(f"SELECT COALESCE(array_agg(t::text ORDER BY t::text), '{{}}') FROM {table} t"
                                    ).fetchone()[0] for table in tables}


def test_forget_waits_while_a_message_to_the_number_is_being_sent(world, run):
    insert_message(world.conn, tenant_id=TENANT, recipient=FORGOTTEN, state="sending", claimed_at=world.clock.now(),
                   created_at=world.clock.now())
    before = _every_row(world.db_url)
    code, out, err = run("messages", "forget", "--recipient", FORGOTTEN)
    assert code != 0 and out == "" and err.strip().count("\n") == 0
    assert "1 message(s) to this recipient are being sent or await reconciliation" in err
    assert "nothing was erased" in err
    assert _every_row(world.db_url) == before


def test_forget_waits_until_what_was_sent_is_reconciled_and_a_reload_then_brings_nothing_back(world, run):
    """The send path leaves no msgId: reconciliation finds the row's receipts by transaction + recipient.
    Erased before that, the receipts would come back as orphans holding the number."""
    mine = world.send([FORGOTTEN], BODIES[0]) + world.send([FORGOTTEN], BODIES[1])
    world.send(OTHERS)
    assert [world.row(key)["provider_message_id"] for key in mine] == [None, None]
    before = _every_row(world.db_url)
    code, out, err = run("messages", "forget", "--recipient", FORGOTTEN)
    _, day_end = day_bounds(world.day, world.tz)
    ready_at = (day_end + timedelta(hours=24)).astimezone(world.tz)
    assert code != 0 and out == "" and err.strip().count("\n") == 0
    assert "2 message(s) to this recipient are being sent or await reconciliation" in err
    assert f"day report of {world.day} is reconciled, from about {ready_at:%Y-%m-%d %H:%M} Asia/Kolkata" in err
    assert _every_row(world.db_url) == before  # nothing changed, not even a tombstone

    world.move_to(day_end + timedelta(hours=25))
    world.run_daily(world.day)
    assert all(world.row(key)["provider_message_id"] for key in mine)
    assert _hits(world.db_url, [NATIONAL]) != []
    code, out, err = run("messages", "forget", "--recipient", FORGOTTEN)
    assert code == 0, err
    assert _hits(world.db_url, [NATIONAL, *BODIES]) == []

    world.conn.execute("UPDATE dlr.report_checkpoints SET checksum = 'forced-reload'")
    world.run_daily(world.day)  # the day report downloaded and written again, and reconciled
    assert world.conn.execute("SELECT count(*) FROM dlr.report_checkpoints WHERE checksum = 'forced-reload'"
                              ).fetchone()[0] == 0
    assert world.conn.execute("SELECT count(*) FROM dlr.day_report_rows WHERE mobile LIKE 'erased:%%'"
                              ).fetchone()[0] == 2
    assert _hits(world.db_url, [NATIONAL, *BODIES]) == []
    assert world.conn.execute("SELECT count(*) FROM dlr.orphaned_receipts").fetchone()[0] == 0


def test_forget_within_a_tenant_leaves_the_other_tenants_messages(db):
    now = in_month(0, day=10)
    ensure_partitions(db, now, 1)
    mine = insert_message(db, tenant_id="acme", recipient=FORGOTTEN, state="delivered", **billed(now, billable_units=1))
    theirs = insert_message(db, tenant_id="globex", recipient=FORGOTTEN, state="delivered",
                            **billed(now, billable_units=1))
    changed = forget(db, FORGOTTEN, tenant="acme", now=now)
    assert changed["msg.outbound_message"] == changed["msg.message_lookup"] == 1

    def recipient_and_body(key: tuple) -> tuple:
        return db.execute("SELECT recipient, body FROM msg.outbound_message WHERE id = %s AND created_at = %s",
                          key).fetchone()

    assert recipient_and_body(theirs) == (FORGOTTEN, "Your order has shipped")
    marker, body = recipient_and_body(mine)
    assert marker.startswith("erased:") and body is None
    # The same number forgotten for the other tenant later gets the same marker (one tombstone).
    forget(db, FORGOTTEN, tenant="globex", now=now)
    assert recipient_and_body(theirs)[0] == marker
    assert db.execute("SELECT count(*) FROM msg.erased_recipients").fetchone()[0] == 1


@pytest.mark.parametrize(("state", "new_recipient"), [
    ("pending", "erased:0123456789abcdef"),  # a row still to be sent needs its number
    ("sending", "erased:0123456789abcdef"),
    ("delivered", "919812340999"),  # a number only ever becomes a marker
    ("delivered", "erased:not-a-marker"),
    ("submitted", "erased:0123456789abcdef"),  # sent, no msgId yet: its receipts find it by the number
    ("unknown", "erased:0123456789abcdef"),
])
def test_the_guard_allows_a_recipient_only_to_become_its_marker_on_a_row_not_being_sent(db, state, new_recipient):
    now = in_month(0, day=10)
    ensure_partitions(db, now, 1)
    clocks = billed(now, billable_units=1) if state != "unknown" else {"claimed_at": now}
    key = insert_message(db, recipient=FORGOTTEN, state=state, **clocks)
    with pytest.raises(psycopg.errors.CheckViolation) as raised:
        db.execute("UPDATE msg.outbound_message SET recipient = %s WHERE id = %s AND created_at = %s",
                   (new_recipient, *key))
    assert raised.value.diag.constraint_name == "outbound_message_recipient_erasure"


def test_an_erased_recipient_never_changes_again(db):
    now = in_month(0, day=10)
    ensure_partitions(db, now, 1)
    key = insert_message(db, recipient=FORGOTTEN, state="delivered", **billed(now, billable_units=1))
    forget(db, FORGOTTEN, tenant=None, now=now)
    for other in ("erased:0123456789abcdef", FORGOTTEN):
        with pytest.raises(psycopg.errors.CheckViolation) as raised:
            db.execute("UPDATE msg.outbound_message SET recipient = %s WHERE id = %s AND created_at = %s",
                       (other, *key))
        assert raised.value.diag.constraint_name == "outbound_message_recipient_erasure"


def test_a_submitted_row_with_its_msgid_takes_the_marker(db):
    """Its receipts arrive by msgId (recorded as erased), so the guard lets it go before its final receipt."""
    now = in_month(0, day=10)
    ensure_partitions(db, now, 1)
    key = insert_message(db, recipient=FORGOTTEN, state="submitted", provider_message_id="5100000000000001",
                         **billed(now, billable_units=1))
    assert forget(db, FORGOTTEN, tenant=None, now=now)["msg.outbound_message"] == 1
    marker = db.execute("SELECT recipient FROM msg.outbound_message WHERE id = %s AND created_at = %s", key
                        ).fetchone()[0]
    assert marker.startswith("erased:")
    assert db.execute("SELECT marker FROM dlr.erased_message_ids WHERE provider_message_id = '5100000000000001'"
                      ).fetchone()[0] == marker


def test_a_row_without_a_body_is_never_re_sent_after_proof(db):
    now = in_month(0, day=10)
    ensure_partitions(db, now, 1)
    proved = dict(state="failed", state_reason="not_submitted", created_at=now, claimed_at=now)
    kept = insert_message(db, **proved)
    erased = insert_message(db, recipient=FORGOTTEN, **proved)
    forget(db, FORGOTTEN, tenant=None, now=now)
    candidates = queries.run(db, "reconcile_resend_candidates", day_start=now - timedelta(hours=1),
                             day_end=now + timedelta(hours=1), classes=["transactional"],
                             created_after=now - timedelta(hours=72)).fetchall()
    assert db.execute("SELECT body FROM msg.outbound_message WHERE id = %s AND created_at = %s", erased
                      ).fetchone()[0] is None
    assert candidates == [kept]


def test_forget_finds_its_rows_by_index_at_volume(db):
    """The message table has no index on the number: the refusal check and each batch start from
    msg.message_lookup's recipient index and reach each message by its primary key. A raw table's
    batch reaches its rows by the primary keys collected before the lock, never by scanning it."""
    start = month_start(-2)
    db.execute("SELECT msg.ensure_partitions(%s, %s)", (start, 4))
    db.execute(SEED, {"now": NOW, "rows": 100_000, "spacing": (NOW - start) / 100_000})
    db.execute("INSERT INTO dlr.txn_report_fetches (transaction_id, report_date, checksum, rows, fetched_at)"
               " SELECT 'txn-' || t, current_date, repeat('0', 64), 100, now() FROM generate_series(1, 1000) t")
    db.execute("INSERT INTO dlr.txn_report_rows (transaction_id, row_no, report_date, msg_id, mobile)"
               " SELECT 'txn-' || (g / 100 + 1), g % 100 + 1, current_date, 'm' || g,"
               "        '9198' || lpad((g % 50000)::text, 8, '0') FROM generate_series(0, 99999) g")
    for table in ("msg.outbound_message", "msg.message_lookup", "dlr.txn_report_rows"):
        db.execute(f"ANALYZE {table}")
    populated = {name.removeprefix("msg.") for (name,) in db.execute(
        "SELECT DISTINCT tableoid::regclass::text FROM msg.outbound_message").fetchall()}
    populated |= {"message_lookup", "txn_report_rows"}
    recipient = "919800000042"
    params = {"recipient": recipient, "tenant": None, "marker": "erased:0123456789abcdef", "now": NOW,
              "batch_size": 5000, "forms": [recipient],
              "row_keys": Jsonb([{"transaction_id": "txn-1", "row_no": 43},
                                 {"transaction_id": "txn-501", "row_no": 43}])}
    [(_, raw_statement, raw_identifiers)] = [step for step in ROW_KEY_STEPS if step[0] == "dlr.txn_report_rows"]
    for name, index, identifiers in (("erasure_in_flight", "message_lookup_recipient_idx", None),
                                     ("erasure_messages", "message_lookup_recipient_idx", None),
                                     (raw_statement, "txn_report_rows_pkey", raw_identifiers)):
        text = queries.statement(name, identifiers)
        indexes, seq_scans = _scans(db, text if isinstance(text, str) else text.as_string(db), params)
        assert index in indexes, f"{name}: planned on {indexes}"
        assert not seq_scans & populated, f"{name}: seq scan on {seq_scans & populated}"
