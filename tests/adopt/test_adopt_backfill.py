"""``adopt backfill`` (sms_pipeline.adopt.backfill): a legacy sends table with the seed's failure modes becomes
outbound rows, conservatively, idempotently and resumably; real Postgres on both sides."""

from __future__ import annotations

import dataclasses
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
from sms_pipeline.adopt.inspect import inspect_table
from sms_pipeline.adopt.mapping import LegacyRow, load_column_map
from sms_pipeline.core.segments import count_segments
from sms_pipeline.db import queries
from sms_pipeline.errors import UserError
from sms_pipeline.reconcile.housekeeping import expire_unconfirmed
from sms_pipeline.reconcile.resend import resend_after_proof
from tests.db.test_schema_indexes import _scans
from tests.support.databases import scratch_database
from tests.support.provider import PROVIDER_ZONE
from tests.support.rows import fetch, insert_message, month_start

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
    first = rows[("public.sends:1", "919876543210")]
    assert first[2:5] == ("submitted", "adopted", TID_1)
    assert first[8] == first[9] == LEGACY[0][5]  # submitted and claimed at created_at
    assert first[7] == OCTOBER_PRICE * first[5]  # the card in force on 5 October
    refused = rows[("public.sends:1", "919876543211")]
    assert (refused[2], refused[6], refused[7]) == ("rejected", None, None)

    # sent without a usable id: unknown, unbilled, claimed at created_at (its provider day), the raw value kept apart
    for legacy_id in (2, 3):
        (row,) = [r for key, r in rows.items() if key[0] == f"public.sends:{legacy_id}"]
        assert (row[2], row[4], row[6], row[7], row[8]) == ("unknown", None, None, None, None)
        assert row[9] == LEGACY[legacy_id - 1][5]
    evidence = dict(db.execute("SELECT adopted_from, problem || ' ' || coalesce(response, '') "
                               "FROM msg.adoption_evidence").fetchall())
    assert evidence == {"public.sends:2": f"exponent {MANGLED}", "public.sends:3": "empty "}
    txn_ids = {r[4] for r in rows.values()} - {None}
    assert txn_ids == {TID_1, TID_6, TID_7, TID_8}
    assert not db.execute("SELECT count(*) FROM msg.outbound_message WHERE provider_txn_id LIKE '6305583318236811%%' "
                          "OR provider_txn_id ~ '[eE.]'").fetchone()[0]

    # the duplicate event: the first attempt holds the event's key, the later one is superseded with its cost kept
    attempt, later = rows[("public.sends:6", "919876543215")], rows[("public.sends:7", "919876543215")]
    assert (attempt[2], later[2]) == ("submitted", "superseded")
    assert attempt[7] == later[7] == NOVEMBER_PRICE * count_segments(LEGACY[5][2]).segments
    assert later[10] != attempt[10]

    # the JSON-number id digit for digit; a UCS-2 body billed by its segments
    hindi = rows[("public.sends:8", "919876543216")]
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
    assert {r[0] for r in adopted(db)} == {"public.sends:1", "public.sends:2", "public.sends:3"}
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
        db.execute("UPDATE msg.outbound_message SET adopted_from = 'public.sends:99' "
                   "WHERE adopted_from = 'public.sends:6'")
    assert raised.value.diag.constraint_name == "outbound_message_identity_immutable"
    with pytest.raises(errors.CheckViolation, match="illegal state transition"):  # the guard still fires
        db.execute("UPDATE msg.outbound_message SET state = 'pending' WHERE adopted_from = 'public.sends:2'")
    # legal moves keep the marker (reconciliation settling an unknown row)
    db.execute("UPDATE msg.outbound_message SET state = 'failed', state_reason = 'not_submitted' "
               "WHERE adopted_from = 'public.sends:2'")
    assert db.execute("SELECT adopted_from FROM msg.outbound_message WHERE state = 'failed'").fetchone() == \
           ("public.sends:2",)


def test_the_legacy_session_is_read_only(legacy_url):
    with legacy.connect(legacy_url) as conn, pytest.raises(errors.ReadOnlySqlTransaction):
        conn.execute("DELETE FROM sends")


def test_an_adopted_row_proved_unsent_is_never_resent_while_a_row_of_ours_is(db, db_url, legacy_url, map_file):
    """The legacy sender may have retried on its own: a copy from us could be the second message."""
    run_backfill(db_url, legacy_url, map_file)
    day = LEGACY[2][5]  # legacy row 3: sent, its answer lost -> unknown
    ours = insert_message(db, state="unknown", state_reason="send_ambiguous", created_at=day, claimed_at=day)
    db.execute("UPDATE msg.outbound_message SET state = 'failed', state_reason = 'not_submitted' "
               "WHERE adopted_from = 'public.sends:3' OR id = %s", (ours[0],))
    start = datetime.combine(day.date(), datetime.min.time(), ZONE)
    with db.transaction():
        resent = resend_after_proof(db, day_start=start, day_end=start + timedelta(days=1),
                                    now=day + timedelta(hours=1), classes=["transactional"], max_age_h=24,
                                    send_window=timedelta(hours=24))
    assert resent == 1
    assert db.execute("SELECT state::text FROM msg.outbound_message "
                      "WHERE adopted_from = 'public.sends:3'").fetchone() == ("failed",)
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
    assert {r[0] for r in db.execute(submitted)} == {"public.sends:1", "public.sends:6", "public.sends:8"}
    # 5 October's report (and the next day's, which may hold its line) loaded, not yet reconciled: still
    # waiting; reconciled: the sweep may take it
    db.execute("INSERT INTO dlr.report_checkpoints (report_kind, report_date, checksum, rows, bytes, fetched_at, "
               "loaded_at) VALUES ('day', '2026-10-05', 'x', 0, 0, %s, %s), ('day', '2026-10-06', 'x', 0, 0, %s, %s)",
               (now, now, now, now))
    assert expire_unconfirmed(db, now, validity_h=24, provider_timezone=ZONE) == 0
    db.execute("UPDATE dlr.report_checkpoints SET reconciled_at = %s", (now,))
    assert expire_unconfirmed(db, now, validity_h=24, provider_timezone=ZONE) == 1
    assert {r[0] for r in db.execute(submitted)} == {"public.sends:6", "public.sends:8"}


def test_the_key_lookup_probes_one_index_entry_per_key_never_every_partition(db):
    """A join on (id, created_at) is planned as a hash join reading every partition, and so grows with the table."""
    start = month_start(-2)
    db.execute("SELECT msg.ensure_partitions(%s, 2)", (start,))
    db.execute("INSERT INTO msg.outbound_message (business_key, tenant_id, channel, message_class, recipient, "
               "sender_id, body, encoding, segments, state, created_at, updated_at) "
               "SELECT 'k' || g, %s, 'sms', 'transactional', '919800000000', 'SHOPCO', 'body', 'GSM7', 1, 'pending', "
               "%s::timestamptz + g * interval '2 minutes', now() FROM generate_series(1, 60000) AS g",
               (TENANT, start))
    db.execute("ANALYZE msg.outbound_message")
    db.execute("ANALYZE msg.business_key_registry")
    wanted = [f"k{g}" for g in range(1, 60000, 20)] + ["not-held"]
    populated = {f"outbound_message_{month_start(n):%Y_%m}" for n in (-2, -1, 0)}  # empty ones cost nothing
    params = {"tenant_id": TENANT, "business_keys": wanted}
    for generic in (False, True):  # psycopg prepares a statement run often: its generic plan too
        indexes, seq_scans = _scans(db, queries.load("adopt_key_holders"), params, generic=generic)
        assert "outbound_message_pkey" in indexes and not seq_scans & populated, (generic, indexes, seq_scans)
    held = queries.run(db, "adopt_key_holders", tenant_id=TENANT, business_keys=wanted).fetchall()
    assert len(held) == len(wanted) - 1 and {holder for _, holder, _ in held} == {None}


def add_legacy(url: str, *rows: tuple) -> None:
    with psycopg.connect(url, autocommit=True) as conn, conn.cursor() as cur:
        cur.executemany("INSERT INTO sends (id, phone, message, sent, response, created_at, order_ref) "
                        "VALUES (%s, %s, %s, %s, %s, %s, %s)", rows)


def states(conn: psycopg.Connection, *legacy_ids: int) -> dict[tuple[str, str], tuple]:
    """(adopted_from, recipient) -> (state, provider_txn_id) of the rows adopted from those legacy ids."""
    found = conn.execute("SELECT adopted_from, recipient, state::text, provider_txn_id FROM msg.outbound_message "
                         "WHERE adopted_from = ANY(%s)", ([f"public.sends:{i}" for i in legacy_ids],)).fetchall()
    return {(r[0], r[1]): r[2:] for r in found}


def test_one_table_spelled_two_ways_is_adopted_once(db, db_url, legacy_url, map_file):
    first = run_backfill(db_url, legacy_url, map_file)
    opts = adoption.AdoptOptions(TENANT, "transactional", "SHOPCO", "order_update", "public.sends",
                                 price_time_zone=PROVIDER_ZONE, partition_start=date(2026, 9, 1))
    with legacy.connect(legacy_url) as source, psycopg.connect(db_url, autocommit=True) as conn:
        again = adoption.backfill(source, conn, load_column_map("public.sends", map_file), opts, pause_s=0)
        assert legacy.canonical_table(source, "sends") == legacy.canonical_table(source, "public.sends") == \
               "public.sends"
        with pytest.raises(UserError, match="no table nosuch"):
            legacy.canonical_table(source, "nosuch")
    assert first.inserted == 7 and (again.inserted, again.already_adopted) == (0, 7)
    # without an event column the fallback event id (legacy:<table>:<id>) names the table the same way
    run_backfill(db_url, legacy_url, None)
    with legacy.connect(legacy_url) as source, psycopg.connect(db_url, autocommit=True) as conn:
        again = adoption.backfill(source, conn, load_column_map("public.sends", None), opts, pause_s=0)
    assert (again.inserted, again.already_adopted) == (0, 7)


def test_which_duplicate_is_superseded_does_not_depend_on_the_reading_order(db, db_url, legacy_url, map_file):
    """Row 9 is read first (a lower id, or synced first) but row 10 was the first attempt of event o-9."""
    add_legacy(legacy_url, (9, "9876543230", "Your order has shipped", True, answer(TID_6, "919876543230"),
                            at("2026-11-20"), "o-9"),
               (10, "9876543230", "Your order has shipped", True, answer(TID_7, "919876543230"),
                at("2026-11-15"), "o-9"))
    run_backfill(db_url, legacy_url, map_file, batch=1)
    # row 9 keeps the key it took; row 10, earlier, is no later attempt: its own key and its real state
    assert states(db, 9, 10) == {("public.sends:9", "919876543230"): ("submitted", TID_6),
                                 ("public.sends:10", "919876543230"): ("submitted", TID_7)}
    # in one batch the earlier row takes the key and the later one is superseded, as before
    db.execute("TRUNCATE msg.outbound_message, msg.business_key_registry, msg.adoption_evidence CASCADE")
    run_backfill(db_url, legacy_url, map_file)
    assert states(db, 9, 10) == {("public.sends:9", "919876543230"): ("superseded", TID_6),
                                 ("public.sends:10", "919876543230"): ("submitted", TID_7)}


def test_sync_calls_out_of_order_keep_the_real_first_attempt_unsuperseded(db):
    opts = dataclasses.replace(options(), legacy_table="public.sends")
    early = LegacyRow(20, "9876543240", "Your order has shipped", True, answer(TID_6, "919876543240"),
                      at("2026-11-15"), "o-20")
    late = LegacyRow(21, "9876543240", "Your order has shipped", True, answer(TID_7, "919876543240"),
                     at("2026-11-16"), "o-20")
    lost = LegacyRow(19, "9876543240", "Your order has shipped", True, "", at("2026-11-14"), "o-20")
    now = at("2026-11-17")
    with db.transaction():
        adoption.adopt_legacy_rows(db, [late], opts, now=now)
    with db.transaction():
        counts = adoption.adopt_legacy_rows(db, [early, lost], opts, now=now)
    assert (counts.submitted, counts.unknown, counts.superseded, counts.duplicates) == (1, 1, 0, 2)
    assert {key[0]: value[0] for key, value in states(db, 19, 20, 21).items()} == {
        "public.sends:21": "submitted", "public.sends:20": "submitted", "public.sends:19": "unknown"}
    # a row later than the holder arriving after it is superseded
    later = LegacyRow(22, "9876543240", "Your order has shipped", True, answer(TID_8, "919876543240"),
                      at("2026-11-18"), "o-20")
    with db.transaction():
        assert adoption.adopt_legacy_rows(db, [later], opts, now=now).superseded == 1


def test_sent_false_with_a_clean_id_is_adopted_as_sent_and_counted(db, db_url, legacy_url, map_file):
    add_legacy(legacy_url, (11, "9876543250", "Your order has shipped", False, TID_6, at("2026-11-14"), "o-11"),
               (12, "9876543251", "Your order has shipped", False, MANGLED, at("2026-11-14"), "o-12"))
    counts = run_backfill(db_url, legacy_url, map_file)
    assert (counts.sent_flag_false_rows, counts.skipped_unsent) == (1, 2)  # rows 4 and 12 were never sent
    assert states(db, 11, 12) == {("public.sends:11", "919876543250"): ("submitted", TID_6)}


def test_month_partitions_are_made_before_the_batches_so_a_dry_run_locks_nothing(db, db_url, legacy_url, map_file):
    add_legacy(legacy_url, (15, "9876543280", "Your order has shipped", True, TID_6, at("2026-06-10"), "o-15"))
    month = "outbound_message_2026_06"  # the only month the test database has no partition for
    assert db.execute("SELECT to_regclass(%s)", (f"msg.{month}",)).fetchone() == (None,)
    seen = []

    def write_meanwhile(counts: adoption.AdoptCounts) -> None:
        with psycopg.connect(db_url, autocommit=True) as other:
            other.execute("SET lock_timeout = '200ms'")
            seen.append(other.execute("SELECT count(*) FROM msg.outbound_message").fetchone()[0])

    dry = run_backfill(db_url, legacy_url, map_file, dry_run=True, batch=5, on_batch=write_meanwhile,
                       opts=options(partition_start=date(2026, 6, 1)))
    assert dry.inserted == 8 and seen == [0, 0]  # never waited on a lock
    # the partition stays (empty), nothing else does
    assert db.execute("SELECT to_regclass(%s)::text", (f"msg.{month}",)).fetchone() == (f"msg.{month}",)
    assert db.execute("SELECT count(*) FROM msg.outbound_message").fetchone() == (0,)


def test_only_accepted_recipients_carry_the_transaction_id(db, db_url, legacy_url, map_file):
    add_legacy(legacy_url, (13, "9876543260, 12345, 98765 43261, 555", "Your order has shipped", True,
                            answer(TID_6, "919876543260", invalid=" 12345 ,919876543261"), at("2026-11-14"), "o-13"))
    counts = run_backfill(db_url, legacy_url, map_file)
    # "12345" is no number but the answer lists it: rejected as written; "555" is listed nowhere: refused
    assert states(db, 13) == {("public.sends:13", "919876543260"): ("submitted", TID_6),
                              ("public.sends:13", "12345"): ("rejected", None),
                              ("public.sends:13", "919876543261"): ("rejected", None)}
    assert counts.bad_number == 2 and [i for i, _ in counts.bad_ids] == [5, 13]
    billed = db.execute("SELECT state::text, provider_txn_id IS NOT NULL FROM msg.outbound_message").fetchall()
    assert {state for state, has_id in billed if has_id} == {"submitted", "superseded"}
    assert all(has_id for state, has_id in billed if state in ("submitted", "superseded"))


def test_a_row_without_created_at_is_refused_by_legacy_id_and_the_batch_goes_on(db, db_url, legacy_url, map_file):
    with psycopg.connect(legacy_url, autocommit=True) as conn:
        conn.execute("ALTER TABLE sends ALTER created_at DROP NOT NULL")
    add_legacy(legacy_url, (14, "9876543270", "Your order has shipped", True, TID_6, None, "o-14"))
    counts = run_backfill(db_url, legacy_url, map_file, batch=20)
    assert (counts.undated_rows, counts.inserted) == (1, 7)
    assert (14, "created_at: missing") in counts.bad_ids
    with legacy.connect(legacy_url) as conn:
        found = inspect_table(conn, load_column_map("sends", map_file))
    assert found.undated_rows == 1 and found.recipients["submitted"] == 4


def test_a_complete_run_clears_the_checkpoint_so_a_row_sent_later_is_adopted(db, db_url, legacy_url, map_file):
    run_backfill(db_url, legacy_url, map_file, batch=3)
    assert db.execute("SELECT count(*) FROM msg.adoption_checkpoint").fetchone() == (0,)
    with psycopg.connect(legacy_url, autocommit=True) as conn:  # row 4 (below any checkpoint) sent since
        conn.execute("UPDATE sends SET sent = true, response = %s WHERE id = 4", (TID_6,))
    again = run_backfill(db_url, legacy_url, map_file, batch=3)
    assert (again.submitted, again.already_adopted) == (1, 7)
    assert states(db, 4) == {("public.sends:4", "919876543214"): ("submitted", TID_6)}


@pytest.mark.parametrize(("phone", "message", "response", "written", "refused"), [
    ("9876543210, 98765 43211", "Hi", None, ["919876543210", "919876543211"], []),
    ("9876543210", "   ", None, [], ["9876543210"]),  # a body that cannot be stored refuses every recipient
    ("9876543210,12345", "Hi", answer(TID_1, "919876543210", invalid="12345"), ["919876543210", "12345"], []),
    ("9876543210,12345", "Hi", TID_1, ["919876543210"], ["12345"]),
    ("02223456789", "Hi", None, [], ["02223456789"]),  # a landline
    ("", "Hi", None, [], [""]),
])
def test_adoptable_recipients_says_what_the_adoption_writes_and_refuses(phone, message, response, written, refused):
    row = LegacyRow(1, phone, message, True, response, at("2026-11-01"))
    assert adoption.adoptable_recipients(row) == (written, refused)
    assert adoption.adoptable_recipients(dataclasses.replace(row, created_at=None)) == \
           ([], [n.strip() for n in phone.split(",")] if phone else [""])
