"""``adopt backfill`` (sms_pipeline.adopt.backfill): a legacy sends table with the seed's failure modes becomes
outbound rows, conservatively, idempotently and resumably; real Postgres on both sides."""

from __future__ import annotations

import json
from datetime import date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from zoneinfo import ZoneInfo

import psycopg
import pytest
from psycopg import errors

from sms_pipeline import rates
from sms_pipeline.adopt import backfill as adoption, legacy
from sms_pipeline.adopt.mapping import load_column_map
from sms_pipeline.core.segments import count_segments
from sms_pipeline.reconcile.housekeeping import expire_unconfirmed
from sms_pipeline.reconcile.resend import resend_after_proof
from tests.support.databases import scratch_database
from tests.support.provider import PROVIDER_ZONE
from tests.support.rows import fetch, insert_message

ZONE = ZoneInfo(PROVIDER_ZONE)
TENANT = "tenant-a"
TID_1, TID_6, TID_7 = "6305583318236810379", "4410982270615538201", "4410982270615538777"
TID_8 = "7305583318236810461"  # stored as a JSON number
MANGLED = "6.305583318236811e+18"
HINDI = "आपका ऑर्डर भेज दिया गया है। धन्यवाद! " * 3  # UCS-2, several segments
OCTOBER_PRICE, NOVEMBER_PRICE = Decimal("0.0079"), Decimal("0.0100")


def answer(tid: str, mobile: str, invalid: str = "") -> str:
    return json.dumps({"status": "success", "statusCode": "200", "reason": "success", "msgId": "",
                       "transactionId": tid, "mobile": mobile, "invalidMobile": invalid,
                       "requestTime": "2026-10-05 10:00:01"})


def at(day: str, hour: int = 10) -> datetime:
    return datetime.fromisoformat(f"{day}T{hour:02d}:00:00").replace(tzinfo=ZONE)


# (id, phone, message, sent, response, created_at, order_ref): the seed's failure modes over two months.
LEGACY = [
    (1, "9876543210, 98765 43211", "Your order has shipped", True,
     answer(TID_1, "919876543210", invalid="919876543211"), at("2026-10-05"), "o-1"),  # comma list, one refused
    (2, "9876543212", "Your order has shipped", True, MANGLED, at("2026-10-06"), "o-2"),  # id through a float
    (3, "9876543213", "Your order has shipped", True, "", at("2026-10-07"), "o-3"),  # sent, answer lost
    (4, "9876543214", "Your order has shipped", False, None, at("2026-10-08"), "o-4"),  # never sent
    (5, "12345", "Your order has shipped", True, TID_1, at("2026-11-10"), "o-5"),  # a bad number
    (6, "+91 98765 43215", "Your order is out for delivery", True, answer(TID_6, "919876543215"),
     at("2026-11-11"), "o-6"),
    (7, "9876543215", "Your order is out for delivery", True, answer(TID_7, "919876543215"),
     at("2026-11-12"), "o-6"),  # the same business event sent again: billed twice
    (8, "9876543216", HINDI, True,
     '{"status":"success","transactionId":%s,"mobile":"919876543216"}' % TID_8, at("2026-11-13"), "o-8"),
]


@pytest.fixture
def legacy_url(second_db_url: str) -> str:
    with psycopg.connect(second_db_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE sends (id bigserial PRIMARY KEY, phone text, message text, "
                     "sent boolean NOT NULL DEFAULT false, response text, "
                     "created_at timestamptz NOT NULL DEFAULT now(), order_ref text)")
        with conn.cursor() as cur:
            cur.executemany("INSERT INTO sends (id, phone, message, sent, response, created_at, order_ref) "
                            "VALUES (%s, %s, %s, %s, %s, %s, %s)", LEGACY)
    return second_db_url


@pytest.fixture
def map_file(tmp_path: Path) -> Path:
    path = tmp_path / "sends.toml"
    path.write_text('[columns]\nevent = "order_ref"\n', encoding="utf-8")
    return path


def load_prices(conn: psycopg.Connection) -> None:
    card = ["tenant_id,channel,message_class,unit_price,currency,valid_from,valid_to",
            f"{TENANT},sms,transactional,{OCTOBER_PRICE},INR,2026-09-01,2026-10-20",
            f"{TENANT},sms,transactional,{NOVEMBER_PRICE},INR,2026-10-20,"]
    parsed, bad = rates.parse_rate_card(card)
    assert not bad
    rates.load_rates(conn, parsed)


def options(partition_start: date | None = date(2026, 9, 1)) -> adoption.AdoptOptions:
    return adoption.AdoptOptions(TENANT, "transactional", "SHOPCO", "order_update", "sends",
                                 price_time_zone=PROVIDER_ZONE, partition_start=partition_start)


def run_backfill(db_url: str, legacy_url: str, map_file: Path, **kwargs) -> adoption.AdoptCounts:
    opts = kwargs.pop("opts", None) or options()
    with legacy.connect(legacy_url) as source, psycopg.connect(db_url, autocommit=True) as conn:
        return adoption.backfill(source, conn, load_column_map("sends", map_file), opts, pause_s=0, **kwargs)


def adopted(conn: psycopg.Connection) -> list[tuple]:
    return conn.execute(
        "SELECT adopted_from, recipient, state::text, state_reason, provider_txn_id, segments, billable_units, cost, "
        "submitted_at, claimed_at, business_key FROM msg.outbound_message ORDER BY adopted_from, recipient, state"
    ).fetchall()


def test_the_legacy_table_becomes_one_conservative_row_per_recipient(db, db_url, legacy_url, map_file):
    load_prices(db)
    counts = run_backfill(db_url, legacy_url, map_file)

    assert (counts.legacy_rows, counts.skipped_unsent, counts.bad_number) == (8, 1, 1)
    assert (counts.submitted, counts.rejected, counts.unknown, counts.superseded) == (3, 1, 2, 1)
    assert counts.bad_ids == [(5, counts.bad_ids[0][1])] and "12345" not in counts.bad_ids[0][1]
    rows = {(r[0], r[1]): r for r in adopted(db)}
    assert len(rows) == 7  # every sent legacy recipient with a valid number, once
    assert {r[2] for r in rows.values()} == {"submitted", "rejected", "unknown", "superseded"}  # never delivered
    assert {r[3] for r in rows.values()} == {"adopted"}

    # comma list: the accepted number submitted with the id as text, the refused one rejected and not billed
    first = rows[("sends:1", "919876543210")]
    assert first[2:5] == ("submitted", "adopted", TID_1)
    assert first[8] == first[9] == LEGACY[0][5]  # submitted and claimed at created_at
    assert first[7] == OCTOBER_PRICE * first[5]  # the card in force on 5 October
    refused = rows[("sends:1", "919876543211")]
    assert (refused[2], refused[6], refused[7]) == ("rejected", None, None)

    # sent without a usable id: unknown, unbilled, claimed at created_at (its provider day), the raw value kept apart
    for legacy_id in (2, 3):
        (row,) = [r for key, r in rows.items() if key[0] == f"sends:{legacy_id}"]
        assert (row[2], row[4], row[6], row[7], row[8]) == ("unknown", None, None, None, None)
        assert row[9] == LEGACY[legacy_id - 1][5]
    evidence = dict(db.execute("SELECT adopted_from, problem || ' ' || coalesce(response, '') "
                               "FROM msg.adoption_evidence").fetchall())
    assert evidence == {"sends:2": f"exponent {MANGLED}", "sends:3": "empty "}
    txn_ids = {r[4] for r in rows.values()} - {None}
    assert txn_ids == {TID_1, TID_6, TID_7, TID_8}
    assert not db.execute("SELECT count(*) FROM msg.outbound_message WHERE provider_txn_id LIKE '6305583318236811%%' "
                          "OR provider_txn_id ~ '[eE.]'").fetchone()[0]

    # the duplicate event: the first attempt holds the event's key, the later one is superseded with its cost kept
    attempt, later = rows[("sends:6", "919876543215")], rows[("sends:7", "919876543215")]
    assert (attempt[2], later[2]) == ("submitted", "superseded")
    assert attempt[7] == later[7] == NOVEMBER_PRICE * count_segments(LEGACY[5][2]).segments
    assert later[10] != attempt[10]

    # the JSON-number id digit for digit; a UCS-2 body billed by its segments
    hindi = rows[("sends:8", "919876543216")]
    assert hindi[4] == TID_8
    assert hindi[5] == count_segments(HINDI).segments > 1
    assert hindi[7] == NOVEMBER_PRICE * hindi[5]
    assert counts.days == {date(2026, 10, 5), date(2026, 10, 6), date(2026, 10, 7), date(2026, 11, 11),
                           date(2026, 11, 12), date(2026, 11, 13)}


def test_a_second_run_inserts_nothing(db, db_url, legacy_url, map_file):
    load_prices(db)
    run_backfill(db_url, legacy_url, map_file)
    before = adopted(db)
    db.execute("DELETE FROM msg.adoption_checkpoint")  # not even from the start
    again = run_backfill(db_url, legacy_url, map_file)
    assert again.inserted == 0 and again.already_adopted == 7
    assert adopted(db) == before


class Killed(Exception):
    pass


def test_a_run_stopped_after_one_batch_resumes_from_the_checkpoint_to_the_same_end_state(
        db, db_url, legacy_url, map_file, pg_admin_url, template_db):
    load_prices(db)

    def stop(counts: adoption.AdoptCounts) -> None:
        raise Killed

    with pytest.raises(Killed):
        run_backfill(db_url, legacy_url, map_file, batch=3, on_batch=stop)
    assert db.execute("SELECT last_legacy_id FROM msg.adoption_checkpoint").fetchone() == (3,)
    assert {r[0] for r in adopted(db)} == {"sends:1", "sends:2", "sends:3"}
    resumed = run_backfill(db_url, legacy_url, map_file, batch=3)
    assert resumed.legacy_rows == 5 and resumed.already_adopted == 0  # rows 4-8 only

    for reference_url in scratch_database(pg_admin_url, template_db):
        with psycopg.connect(reference_url, autocommit=True) as reference:
            load_prices(reference)
            run_backfill(reference_url, legacy_url, map_file)
            assert adopted(db) == adopted(reference)


def test_a_dry_run_writes_nothing_and_reports_the_same(db, db_url, legacy_url, map_file):
    load_prices(db)
    dry = run_backfill(db_url, legacy_url, map_file, dry_run=True, batch=3)
    assert db.execute("SELECT (SELECT count(*) FROM msg.outbound_message) + (SELECT count(*) FROM "
                      "msg.adoption_evidence) + (SELECT count(*) FROM msg.adoption_checkpoint)").fetchone() == (0,)
    real = run_backfill(db_url, legacy_url, map_file, batch=3)
    assert (dry.submitted, dry.rejected, dry.unknown, dry.superseded, dry.skipped_unsent, dry.bad_number) == \
           (real.submitted, real.rejected, real.unknown, real.superseded, real.skipped_unsent, real.bad_number)


def test_a_day_before_the_first_partition_is_refused_before_anything_is_written(db, db_url, legacy_url, map_file):
    with pytest.raises(adoption.BeforePartitionStart, match="SMS_PIPELINE_PARTITION_START=2026-10-01"):
        run_backfill(db_url, legacy_url, map_file, opts=options(partition_start=date(2026, 11, 1)))
    assert db.execute("SELECT count(*) FROM msg.outbound_message").fetchone() == (0,)
    # --since past those days adopts the rest
    counts = run_backfill(db_url, legacy_url, map_file, since=date(2026, 11, 1),
                          opts=options(partition_start=date(2026, 11, 1)))
    assert counts.legacy_rows == 4 and counts.inserted == 3


def test_without_an_event_column_keys_come_from_the_legacy_id(db, db_url, legacy_url):
    load_prices(db)
    counts = run_backfill(db_url, legacy_url, None)
    assert counts.superseded == 0 and counts.submitted == 4  # rows 6 and 7 are two events then


def test_adopted_from_never_changes_and_cannot_be_given_to_a_row_of_ours(db, db_url, legacy_url, map_file):
    load_prices(db)
    run_backfill(db_url, legacy_url, map_file)
    with pytest.raises(errors.CheckViolation) as raised:
        db.execute("UPDATE msg.outbound_message SET adopted_from = 'sends:99' WHERE adopted_from = 'sends:6'")
    assert raised.value.diag.constraint_name == "outbound_message_identity_immutable"
    with pytest.raises(errors.CheckViolation, match="illegal state transition"):  # the guard still fires
        db.execute("UPDATE msg.outbound_message SET state = 'pending' WHERE adopted_from = 'sends:2'")
    # legal moves keep the marker (reconciliation settling an unknown row)
    db.execute("UPDATE msg.outbound_message SET state = 'failed', state_reason = 'not_submitted' "
               "WHERE adopted_from = 'sends:2'")
    assert db.execute("SELECT adopted_from FROM msg.outbound_message WHERE state = 'failed'").fetchone() == ("sends:2",)


def test_the_legacy_session_is_read_only(legacy_url):
    with legacy.connect(legacy_url) as conn, pytest.raises(errors.ReadOnlySqlTransaction):
        conn.execute("DELETE FROM sends")


def test_an_adopted_row_proved_unsent_is_never_resent_while_a_row_of_ours_is(db, db_url, legacy_url, map_file):
    """The legacy sender may have retried on its own: a copy from us could be the second message."""
    run_backfill(db_url, legacy_url, map_file)
    day = LEGACY[2][5]  # legacy row 3: sent, its answer lost -> unknown
    ours = insert_message(db, state="unknown", state_reason="send_ambiguous", created_at=day, claimed_at=day)
    db.execute("UPDATE msg.outbound_message SET state = 'failed', state_reason = 'not_submitted' "
               "WHERE adopted_from = 'sends:3' OR id = %s", (ours[0],))
    start = datetime.combine(day.date(), datetime.min.time(), ZONE)
    with db.transaction():
        resent = resend_after_proof(db, day_start=start, day_end=start + timedelta(days=1),
                                    now=day + timedelta(hours=1), classes=["transactional"], max_age_h=24,
                                    send_window=timedelta(hours=24))
    assert resent == 1
    assert db.execute("SELECT state::text FROM msg.outbound_message WHERE adopted_from = 'sends:3'").fetchone() == \
           ("failed",)
    assert fetch(db, ours, "state") == ("superseded",)


def test_the_validity_sweep_leaves_adopted_rows_until_their_day_is_reconciled(db, db_url, legacy_url, map_file):
    load_prices(db)
    run_backfill(db_url, legacy_url, map_file)
    ours = insert_message(db, state="submitted", created_at=LEGACY[0][5], claimed_at=LEGACY[0][5],
                          submitted_at=LEGACY[0][5], billable_units=1)
    now = datetime.now(ZONE)
    assert expire_unconfirmed(db, now, validity_h=24, provider_timezone=ZONE) == 1  # ours only
    assert fetch(db, ours, "state") == ("expired",)
    submitted = "SELECT adopted_from FROM msg.outbound_message WHERE adopted_from IS NOT NULL AND state = 'submitted'"
    assert {r[0] for r in db.execute(submitted)} == {"sends:1", "sends:6", "sends:8"}
    # 5 October's report loaded, not yet reconciled: still waiting; reconciled: the sweep may take it
    db.execute("INSERT INTO dlr.report_checkpoints (report_kind, report_date, checksum, rows, bytes, fetched_at, "
               "loaded_at) VALUES ('day', '2026-10-05', 'x', 0, 0, %s, %s)", (now, now))
    assert expire_unconfirmed(db, now, validity_h=24, provider_timezone=ZONE) == 0
    db.execute("UPDATE dlr.report_checkpoints SET reconciled_at = %s", (now,))
    assert expire_unconfirmed(db, now, validity_h=24, provider_timezone=ZONE) == 1
    assert {r[0] for r in db.execute(submitted)} == {"sends:6", "sends:8"}
