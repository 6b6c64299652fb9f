"""The itemised tie-out: every provider message and every billed row of ours in exactly one bucket.

Rows, day reports, receipts and summaries are written as ingest and
reconciliation leave them; the marts are built by the real Dagster assets.

Day D (explained, residual 0):
  ACMETX  matched 1 unit; a pair whose units differ (provider 2, ours 1);
          an orphan (1); an ambiguous receipt whose only candidate is still
          unknown (1, provider-only); a billed unpriced row nobody reported (2,
          ours-only). Summary 5 = report 5; ours 4.
  ACMEOT  one ambiguous receipt (1) that fits two billed rows (1 + 1).
D+1 (mismatch): a report line without a usable msgId (1 unit nobody can place), and one whose units
     cannot be read (matched to a row of ours, which is then ours-only): 2 messages unplaced.
D+2 (explained): every message matched, but the summary says 3 units more than the day report
     (the provider's two figures disagree: named in the equation, not a residual).
D+3: summary fetched, day report not loaded: nothing to compare.
D+4: day report loaded, summary not fetched: nothing to compare either.
"""

from __future__ import annotations

import csv
import io
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

import psycopg
import pytest

from tests.support.environment import settings_for
from tests.support.marts import Marts, rows_as_dicts
from tests.support.rows import billed, ensure_partitions, insert_messages

from sms_pipeline.demo import summary
from sms_pipeline.marts import tieout
from sms_pipeline.marts.provider_summary import SenderSummary, store_summary
from sms_pipeline.orchestration.marts_assets import TIEOUT_CHECK

pytestmark = pytest.mark.slow

D = date(2026, 5, 20)
D1, D2, D3, D4 = (D + timedelta(days=n) for n in (1, 2, 3, 4))
TEN_IST = datetime(2026, 5, 20, 4, 30, tzinfo=UTC)  # 10:00 in Kolkata on D
PRICED = dict(cost=Decimal("0.0079"), cost_currency="INR")


def _at(day: date) -> datetime:
    return TEN_IST + timedelta(days=(day - D).days)


def _row(conn: psycopg.Connection, day: date, *, units: int = 1, sender: str = "ACMETX", priced: bool = True,
         **columns) -> tuple:
    money = dict(cost=PRICED["cost"] * units, cost_currency="INR") if priced else {}
    [row] = insert_messages(conn, 1, state="delivered", segments=units, sender_id=sender,
                            **billed(_at(day), billable_units=units, **money), **columns)
    return row


def _report(conn: psycopg.Connection, day: date, lines: list[tuple[str, str, str]]) -> None:
    """The day report as loaded: (msgId, sender, units) per line, and its checkpoint."""
    partition = conn.execute("SELECT dlr.ensure_day_report_partition(%s)", (day,)).fetchone()[0]
    assert partition
    for line_no, (msg_id, sender, units) in enumerate(lines, start=1):
        conn.execute("INSERT INTO dlr.day_report_rows (report_date, line_no, msg_id, sender_name, units, "
                     "provider_submit_at, status) VALUES (%s, %s, %s, %s, %s, %s, 'DELIVRD')",
                     (day, line_no, msg_id, sender, units, _at(day)))
    conn.execute("INSERT INTO dlr.report_checkpoints (report_kind, report_date, checksum, rows, bytes, fetched_at, "
                 "loaded_at) VALUES ('day', %s, 'sum', %s, 100, %s, %s)",
                 (day, len(lines), _at(day) + timedelta(days=1), _at(day) + timedelta(days=1)))


def _receipt(conn: psycopg.Connection, msg_id: str, day: date, correlation: str, message: tuple | None = None) -> None:
    at = _at(day)
    conn.execute(
        """INSERT INTO dlr.delivery_receipts
               (provider_message_id, status_word, raw_status, outcome, provider_submit_at, submit_month, source,
                first_seen_at, message_id, message_created_at, correlation_result, correlated_at, disposition)
           VALUES (%s, 'DELIVRD', 'DELIVRD', 'delivered', %s, dlr.submit_month(%s), 'day_report', %s, %s, %s,
                   %s, %s, %s)""",
        (msg_id, at, at, at + timedelta(hours=20), message[0] if message else None,
         message[1] if message else None, correlation, at + timedelta(hours=20),
         "applied" if message else None))


def _summary(conn: psycopg.Connection, day: date, units_by_sender: dict[str, int]) -> None:
    store_summary(conn, day, [SenderSummary(sender, units, units, 0, 0, units)
                              for sender, units in units_by_sender.items()], _at(day) + timedelta(days=1))


@pytest.fixture(scope="module")
def built(marts_db_url: str, tmp_path_factory: pytest.TempPathFactory):
    with psycopg.connect(marts_db_url, autocommit=True) as conn:
        ensure_partitions(conn, date(2026, 5, 1))
        matched = _row(conn, D)
        differs = _row(conn, D)
        _row(conn, D, units=2, priced=False)  # ours-only, unpriced
        insert_messages(conn, 1, state="unknown", correlation_result="ambiguous", created_at=_at(D),
                        claimed_at=_at(D))
        for _ in range(2):
            _row(conn, D, sender="ACMEOT", correlation_result="ambiguous")
        _report(conn, D, [("7001", "ACMETX", "1"), ("7002", "ACMETX", "2"), ("7003", "ACMETX", "1"),
                          ("7004", "ACMETX", "1"), ("7005", "ACMEOT", "1")])
        _receipt(conn, "7001", D, "matched", matched)
        _receipt(conn, "7002", D, "matched", differs)
        _receipt(conn, "7003", D, "not_found")
        _receipt(conn, "7004", D, "ambiguous")
        _receipt(conn, "7005", D, "ambiguous")
        _summary(conn, D, {"ACMETX": 5, "ACMEOT": 1})

        _receipt(conn, "7101", D1, "matched", _row(conn, D1))
        _receipt(conn, "7102", D1, "matched", _row(conn, D1))
        _report(conn, D1, [("7101", "ACMETX", "1"), ("0", "ACMETX", "1"), ("7102", "ACMETX", "n/a")])
        _summary(conn, D1, {"ACMETX": 2})

        _receipt(conn, "7201", D2, "matched", _row(conn, D2))
        _report(conn, D2, [("7201", "ACMETX", "1")])
        _summary(conn, D2, {"ACMETX": 4})

        _row(conn, D3)
        _summary(conn, D3, {"ACMETX": 1})

        _receipt(conn, "7401", D4, "matched", _row(conn, D4))
        _report(conn, D4, [("7401", "ACMETX", "1")])
    marts = Marts(settings_for(marts_db_url, tmp_path_factory.mktemp("home")))
    marts.build_views()
    explained_run = marts.build_day(D)
    mismatch_run = marts.build_days(D, D4)
    return explained_run, mismatch_run


def _tieout_check(result):
    [check] = [c for c in result.get_asset_check_evaluations() if c.asset_check_key.name == TIEOUT_CHECK]
    return check


BUCKET_COLUMNS = ("day, sender_id, status, provider_units, day_report_units, our_units, difference, "
                  "matched_messages, matched_units, units_differ_messages, units_differ_units, "
                  "provider_only_messages, provider_only_units, ours_only_messages, ours_only_units, "
                  "ambiguous_provider_messages, ambiguous_our_messages, ambiguous_units, "
                  "summary_minus_report_units, residual, unplaced_messages, unknown_units, unpriced_units")


def test_each_message_and_billed_row_is_in_one_bucket(built, marts_db_url):
    rows = rows_as_dicts(marts_db_url, f"SELECT {BUCKET_COLUMNS} FROM marts.provider_tieout_daily "
                                       "WHERE day = %s ORDER BY sender_id", (D,))
    zero_buckets = dict(matched_messages=0, matched_units=0, units_differ_messages=0, units_differ_units=0,
                        provider_only_messages=0, provider_only_units=0, ours_only_messages=0, ours_only_units=0,
                        ambiguous_provider_messages=0, ambiguous_our_messages=0, ambiguous_units=0)
    assert rows == [
        {"day": D, "sender_id": "ACMEOT", "status": "explained", "provider_units": 1, "day_report_units": 1,
         "our_units": 2, "difference": -1, **zero_buckets,
         "ambiguous_provider_messages": 1, "ambiguous_our_messages": 2, "ambiguous_units": -1,
         "summary_minus_report_units": 0, "residual": 0, "unplaced_messages": 0, "unknown_units": 0,
         "unpriced_units": 0},
        {"day": D, "sender_id": "ACMETX", "status": "explained", "provider_units": 5, "day_report_units": 5,
         "our_units": 4, "difference": 1, **zero_buckets,
         "matched_messages": 1, "matched_units": 1, "units_differ_messages": 1, "units_differ_units": 1,
         "provider_only_messages": 2, "provider_only_units": 2, "ours_only_messages": 1, "ours_only_units": 2,
         # the unknown row and the unpriced one are beside the equation, not in it
         "summary_minus_report_units": 0, "residual": 0, "unplaced_messages": 0, "unknown_units": 1,
         "unpriced_units": 2},
    ]


def test_an_explained_difference_is_a_warning_with_its_breakdown(built):
    explained_run, _ = built
    check = _tieout_check(explained_run)
    assert check.passed is False
    assert check.severity.value == "WARN"
    assert check.metadata["days_with_differences"].value == D.isoformat()
    assert check.metadata["days_with_residual"].value == "none"
    assert check.metadata["residual_units"].value == 0
    breakdown = {r.data["sender_id"]: r.data for r in check.metadata["breakdown"].value.records}
    assert set(breakdown) == {"ACMEOT", "ACMETX"}
    assert (breakdown["ACMETX"]["provider_only_units"], breakdown["ACMETX"]["ours_only_units"],
            breakdown["ACMETX"]["units_differ_units"], breakdown["ACMETX"]["residual"]) == (2, 2, 1, 0)
    assert breakdown["ACMEOT"]["ambiguous_units"] == -1
    assert check.description == (f"explained or not compared: {D} explained "
                                 "(units differ 1, provider-only 2, ours-only 1, ambiguous 1/2)")


def test_units_nobody_can_place_are_a_residual_and_an_error(built, marts_db_url):
    _, mismatch_run = built
    rows = rows_as_dicts(marts_db_url, "SELECT day, status, provider_units, day_report_units, our_units, "
                                       "ours_only_units, summary_minus_report_units, residual, unplaced_messages "
                                       "FROM marts.provider_tieout_daily WHERE day > %s ORDER BY day", (D,))
    assert rows == [
        # a line without a msgId (1 unit, in no bucket) and a line whose units cannot be read (its row of
        # ours is then ours-only): the residual is the first, and both are unplaced
        {"day": D1, "status": "mismatch", "provider_units": 2, "day_report_units": 2, "our_units": 2,
         "ours_only_units": 1, "summary_minus_report_units": 0, "residual": 1, "unplaced_messages": 2},
        # the provider's two figures disagree: explained by that line of the equation, residual 0
        {"day": D2, "status": "explained", "provider_units": 4, "day_report_units": 1, "our_units": 1,
         "ours_only_units": 0, "summary_minus_report_units": 3, "residual": 0, "unplaced_messages": 0},
        # no day report: nothing made up
        {"day": D3, "status": "day_report_not_loaded", "provider_units": 1, "day_report_units": None,
         "our_units": 1, "ours_only_units": None, "summary_minus_report_units": None, "residual": None,
         "unplaced_messages": None},
        {"day": D4, "status": "summary_not_fetched", "provider_units": None, "day_report_units": 1,
         "our_units": 1, "ours_only_units": 0, "summary_minus_report_units": None, "residual": 0,
         "unplaced_messages": 0},
    ]
    check = _tieout_check(mismatch_run)
    assert check.passed is False
    assert check.severity.value == "ERROR"
    assert check.metadata["days_with_residual"].value == f"{D1}"
    assert check.metadata["residual_units"].value == 1
    assert check.description.startswith(f"units nobody can explain: {D} explained (")
    assert f"{D1} MISMATCH (residual 1, 2 unplaced)" in check.description
    assert f"{D3} not compared (day report not loaded)" in check.description


def test_day_labels_for_the_demo(built, marts_db_url):
    with psycopg.connect(marts_db_url) as conn:
        labels = tieout.day_labels(tieout.rows(conn, D, D4))
        days = summary.per_day(conn, D, D4 + timedelta(days=1), "Asia/Kolkata")
    assert labels == {
        D: "explained (units differ 1, provider-only 2, ours-only 1, ambiguous 1/2)",
        D1: "MISMATCH (residual 1, 2 unplaced)",
        D2: "explained (summary - day report +3)",
        D3: "not compared (day report not loaded)",
        D4: "not compared (summary not fetched)",
    }
    assert [d.tieout for d in days] == [*labels.values(), "no data"]


@pytest.fixture
def cli_database_url(marts_db_url: str) -> str:
    return marts_db_url


def test_report_tieout_csv(built, run):
    code, out, _ = run("report", "tieout", "--from", D.isoformat(), "--to", D4.isoformat(), "--format", "csv")
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [(r["day"], r["sender_id"], r["status"], r["residual"]) for r in rows] == [
        (D.isoformat(), "ACMEOT", "explained", "0"), (D.isoformat(), "ACMETX", "explained", "0"),
        (D1.isoformat(), "ACMETX", "mismatch", "1"), (D2.isoformat(), "ACMETX", "explained", "0"),
        (D3.isoformat(), "ACMETX", "day_report_not_loaded", ""),
        (D4.isoformat(), "ACMETX", "summary_not_fetched", "0")]
    tx = rows[1]
    assert (tx["provider_only_messages"], tx["provider_only_units"], tx["ours_only_units"], tx["unknown_units"]) == \
        ("2", "2", "2", "1")


def test_report_tieout_table(built, run):
    code, out, _ = run("report", "tieout", "--from", D.isoformat(), "--to", (D4 + timedelta(days=1)).isoformat())
    assert code == 0
    assert "provider-only" in out and "explained" in out
    assert f"{D1} MISMATCH (residual 1, 2 unplaced)" in out and f"{D2} explained (summary - day report +3)" in out
    assert f"{D4 + timedelta(days=1)} no data" in out
    # piped, the table is whole: no cell cut to "…"
    assert "…" not in out
    code, _, err = run("report", "tieout", "--from", D1.isoformat(), "--to", D.isoformat())
    assert code == 2 and "before" in err
