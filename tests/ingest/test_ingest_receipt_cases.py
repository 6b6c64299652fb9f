"""Cases 15-21 of docs/receipt-cases.md, at the ingest level.

Each goes through the real path: sends through the client to the running
sim, downloads over HTTP, loads into Postgres through the Dagster
assets (or, for hand-made files, the loader itself).
"""

from __future__ import annotations

import http.server
import io
import threading
import zipfile
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

from pydantic import SecretStr
import pytest
from sms_pipeline.core.fingerprint import text_fingerprint
from tests.support.worker import TEXT_KEY
from tests.support.ingest import DAY_REPORT, TRANSACTION_REPORTS, insert_outbound, materialize, mobiles, send
from tests.support.rows import snapshot
from tests.support.runs import materializations

from sms_pipeline.core.clock import FrozenClock
from sms_pipeline.core.provider_time import local_date
from sms_pipeline.ingest.day_report import DayLoadError, load_day_report
from sms_pipeline.ingest.transaction_reports import open_transactions
from sms_pipeline.provider import DayReportError, ProviderClient

SNAPSHOTS = (("dlr.day_report_rows", "report_date, line_no"), ("dlr.report_checkpoints", "report_kind, report_date"))


def _snapshots(db) -> list:
    return [snapshot(db, table, order) for table, order in SNAPSHOTS]


# ----- 15: unmapped status words ------------------------------------------------


@pytest.mark.parametrize("simulator_options", [{"faults": {"unmapped_status": 1.0}}])
def test_case_15_unmapped_words_are_kept_raw_and_counted(app_settings, clock, client, db):
    day = local_date(clock.now(), app_settings.provider_timezone)
    accepted = send(client, mobiles(120))
    insert_outbound(db, accepted.transaction_id, accepted.accepted, clock.now())
    clock.advance(timedelta(days=4))

    result = materialize(app_settings, clock, [DAY_REPORT, TRANSACTION_REPORTS], day)

    raw = dict(db.execute("SELECT status, count(*) FROM dlr.day_report_rows GROUP BY status").fetchall())
    assert {"BLACKLST", "NCPR"} <= set(raw)  # odd words kept as received ...
    assert any(word != word.strip() for word in raw) and any(word.islower() for word in raw)  # ... spacing, case
    meta = materializations(result, DAY_REPORT)[day.isoformat()]
    assert meta["unmapped_statuses"] == {"BLACKLST": raw["BLACKLST"], "NCPR": raw["NCPR"]}
    assert meta["unmapped_rows"] == raw["BLACKLST"] + raw["NCPR"]
    assert meta["dagster/row_count"] == 120 and sum(meta["statuses"].values()) == 120
    # lower case and trailing spaces are spellings of known words, folded into them
    assert meta["statuses"].get("DELIVRD", 0) == sum(n for w, n in raw.items() if w.strip().upper() == "DELIVRD")
    # the finals hidden behind odd words leave the transaction open: its report is fetched and kept raw
    txn_words = {w for (w,) in db.execute("SELECT DISTINCT status FROM dlr.txn_report_rows").fetchall()}
    assert "BLACKLST" in txn_words or "NCPR" in txn_words
    assert materializations(result, TRANSACTION_REPORTS)[day.isoformat()]["unmapped_rows"] > 0


# ----- 16: human-readable times across a DST change ---------------------------


def _last_fall_back(tz: ZoneInfo) -> datetime:
    """The most recent instant (UTC, at least a week ago) at which ``tz`` set its clocks back."""
    probe = datetime.now(UTC).replace(minute=0, second=0, microsecond=0) - timedelta(days=7)
    while not probe.astimezone(tz).utcoffset() < (probe - timedelta(hours=1)).astimezone(tz).utcoffset():
        probe -= timedelta(hours=1)
    return probe


LONDON = ZoneInfo("Europe/London")
FALL_BACK = _last_fall_back(LONDON)


@pytest.mark.parametrize("provider_tz", [LONDON])
@pytest.mark.parametrize("simulator_options", [{"report_retention_days": 400}])
@pytest.mark.parametrize("start_time", [FALL_BACK - timedelta(seconds=15)], ids=["15s-before-the-fall-back"])
def test_case_16_local_times_across_a_dst_change_are_exact(app_settings, clock, client, db):
    # Submitted 15 s before the clocks go back (01:59:45, first occurrence); receipts arrive
    # on both sides, many in the repeated hour (01:00:xx again), where a wall time alone is
    # ambiguous: only "delivered after submitted" decides it.
    fall_back = FALL_BACK
    tz = app_settings.provider_timezone
    day = local_date(clock.now(), tz)
    accepted = send(client, mobiles(300))
    insert_outbound(db, accepted.transaction_id, accepted.accepted, clock.now())
    clock.advance(timedelta(days=4))

    materialize(app_settings, clock, [TRANSACTION_REPORTS], day)
    materialize(app_settings, clock, [DAY_REPORT], day)

    truth = {r.msg_id: r for r in client.delivery_reports(day, day)}  # millisecond epochs: exact
    delivered = [r.delivery_time for r in truth.values() if r.delivery_time]
    assert any(t < fall_back for t in delivered) and any(fall_back <= t < fall_back + timedelta(hours=1)
                                                          for t in delivered)
    for table in ("dlr.day_report_rows", "dlr.txn_report_rows"):
        stored = db.execute(f"SELECT msg_id, provider_submit_at, provider_done_at FROM {table}").fetchall()
        assert len(stored) == 300, table
        for msg_id, submit_at, done_at in stored:
            expected = truth[msg_id]
            assert submit_at == expected.submit_time.replace(microsecond=0), (table, msg_id)
            want = expected.delivery_time.replace(microsecond=0) if expected.delivery_time else None
            assert done_at == want, (table, msg_id, done_at, want)


# ----- 17: BOM, CRLF, quoting, extra and missing columns ------------------------

HEADER = ["Message Id", "Transaction Id", "Mobile No", "Sender Name", "Message", "Msg Type", "Submit Time",
          "Delivery Time", "Status", "Cause", "Error Code", "Units"]


def _zip(day: date, lines: list[str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(f"dlr_report_{day.isoformat()}.csv", "\ufeff" + "".join(f"{line}\r\n" for line in lines))
    return buffer.getvalue()


@pytest.fixture
def file_provider() -> Iterator[tuple[dict[str, bytes], str]]:
    """A plain HTTP server answering /SMSApi/report/day with whatever bytes a test puts in ``files``."""
    files: dict[str, bytes] = {}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = files["day"]
            self.send_response(200)
            self.send_header("Content-Type", "application/zip")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield files, f"http://127.0.0.1:{server.server_address[1]}/SMSApi"
    finally:
        server.shutdown()
        server.server_close()


def test_case_17_quoted_text_with_commas_quotes_and_line_breaks_round_trips(app_settings, clock, client, db):
    text = 'Dear "Asha", order 7,\r\nships today\nline three, "done"'
    day = local_date(clock.now(), app_settings.provider_timezone)
    send(client, mobiles(5), text)
    clock.advance(timedelta(hours=1))

    materialize(app_settings, clock, [DAY_REPORT], day)

    digests = db.execute("SELECT DISTINCT message_fingerprint, count(*) OVER () FROM dlr.day_report_rows").fetchall()
    assert digests == [(text_fingerprint(TEXT_KEY, text), 5)]


def test_case_17_extra_columns_are_ignored_and_a_missing_one_fails_cleanly(file_provider, db):
    files, base_url = file_provider
    tz = ZoneInfo("Asia/Kolkata")
    day = date(2026, 3, 5)
    clock = FrozenClock(datetime(2026, 3, 6, tzinfo=UTC))
    row = ["18446744073709551615", "0630558331823681037", "919999999999", "SGCSMS", "hi", "text",
           "2026-03-05 10:00:00", "2026-03-05 10:00:07", "DELIVRD", "Delivered", "000", "1"]
    files["day"] = _zip(day, [",".join(HEADER + ["Operator"]), ",".join(row + ["Jio"]), ",".join(row + ["Vi", "x"])])
    with ProviderClient(base_url, "demo", SecretStr("demo"), None, tz, max_retries=0) as provider:
        loaded = load_day_report(db, provider, day, tz, clock, text_key=TEXT_KEY)
        assert (loaded.rows, loaded.ignored_columns) == (2, ("Operator",))
        assert db.execute("SELECT DISTINCT msg_id, transaction_id, units FROM dlr.day_report_rows").fetchall() == [
            ("18446744073709551615", "0630558331823681037", "1")]  # ids above 2**63, leading zero: as text
        before = _snapshots(db)

        files["day"] = _zip(day, [",".join(HEADER[:-1]), ",".join(row[:-1])])  # no Units column
        with pytest.raises(DayReportError, match=r"2026-03-05.*missing required column.*Units"):
            load_day_report(db, provider, day, tz, clock, text_key=TEXT_KEY)
    assert _snapshots(db) == before


def test_case_17_a_row_the_database_refuses_rolls_the_whole_day_back(file_provider, db):
    files, base_url = file_provider
    tz = ZoneInfo("Asia/Kolkata")
    day = date(2026, 3, 5)
    clock = FrozenClock(datetime(2026, 3, 6, tzinfo=UTC))
    good = ["9000000000000000001", "7000000000000000001", "919812345678", "SGCSMS", "hi", "text",
            "2026-03-05 10:00:00", "2026-03-05 10:00:07", "DELIVRD", "Delivered", "000", "1"]
    bad = [*good[:9], "Deliv\x00ered", *good[10:]]  # a NUL byte: no Postgres text can hold it
    files["day"] = _zip(day, [",".join(HEADER), ",".join(good), ",".join(bad)])
    with ProviderClient(base_url, "demo", SecretStr("demo"), None, tz, max_retries=0) as provider:
        with pytest.raises(DayLoadError, match=r"day report 2026-03-05: load failed and was rolled back") as failed:
            load_day_report(db, provider, day, tz, clock, text_key=TEXT_KEY)
    assert "919812345678" not in str(failed.value)  # the row is not quoted back
    assert db.execute("SELECT count(*) FROM dlr.day_report_rows").fetchone() == (0,)
    assert db.execute("SELECT count(*) FROM dlr.report_checkpoints").fetchone() == (0,)


# ----- 18: truncated, corrupt, non-zip ------------------------------------------


@pytest.mark.parametrize("fault", ["corrupt_zip", "truncated_zip", "error_body_zip"])
def test_case_18_an_unusable_download_fails_naming_the_date_and_writes_nothing(
    fault, app_settings, clock, sim, client, db
):
    tz = app_settings.provider_timezone
    loaded_day = local_date(clock.now(), tz)
    send(client, mobiles(50))
    clock.advance(timedelta(days=1))
    new_day = local_date(clock.now(), tz)
    send(client, mobiles(20))
    clock.advance(timedelta(seconds=30))
    materialize(app_settings, clock, [DAY_REPORT], loaded_day)
    before = _snapshots(db)
    clock.advance(timedelta(days=2))  # a new download would now bring changed statuses
    sim.faults.update({fault: 1.0})

    result = materialize(app_settings, clock, [DAY_REPORT], loaded_day, new_day, raise_on_error=False)

    assert not result.success
    failure = next(e for e in result.all_events if e.is_step_failure).step_failure_data.user_failure_data
    assert f"day report {loaded_day.isoformat()}" in failure.description
    assert f"day report {new_day.isoformat()}" in failure.description
    assert _snapshots(db) == before  # the earlier load and its checkpoint untouched, the new day absent
    assert not db.execute("SELECT 1 FROM dlr.day_report_rows WHERE report_date = %s", (new_day,)).fetchone()


# ----- 19: empty day --------------------------------------------------------------


def test_case_19_a_day_without_traffic_loads_zero_rows(app_settings, clock, db):
    day = local_date(clock.now(), app_settings.provider_timezone)
    clock.advance(timedelta(days=1))

    result = materialize(app_settings, clock, [DAY_REPORT], day)

    meta = materializations(result, DAY_REPORT)[day.isoformat()]
    assert (meta["dagster/row_count"], meta["duplicates"], meta["statuses"], meta["unmapped_rows"]) == (0, 0, {}, 0)
    assert db.execute("SELECT rows FROM dlr.report_checkpoints WHERE report_date = %s", (day,)).fetchone() == (0,)


# ----- 20: a row filed in the neighbouring day's file --------------------------


@pytest.mark.parametrize("simulator_options", [{"faults": {"neighbour_day": 1.0}}])
def test_case_20_rows_filed_in_a_neighbouring_day_are_loaded_once_and_count_as_seen(
    app_settings, clock, sim, client, db
):
    tz = app_settings.provider_timezone
    day = local_date(clock.now(), tz)  # the clock stands at 10:00: morning rows go to the day before
    morning = send(client, mobiles(30))
    clock.advance(timedelta(hours=6))  # 16:00: afternoon rows go to the day after
    afternoon = send(client, mobiles(30))
    for accepted in (morning, afternoon):
        insert_outbound(db, accepted.transaction_id, accepted.accepted, clock.now())
    clock.advance(timedelta(days=4))

    materialize(app_settings, clock, [DAY_REPORT], day - timedelta(days=1), day + timedelta(days=1))

    filed = dict(db.execute("SELECT msg_id, report_date FROM dlr.day_report_rows").fetchall())
    ledger = {e.msg_id: e.transaction_id for e in sim.state.ledger_entries()}
    assert db.execute("SELECT count(*) FROM dlr.day_report_rows").fetchone()[0] == len(ledger) == 60  # once each
    assert {filed[m] for m, txn in ledger.items() if txn == morning.transaction_id} == {day - timedelta(days=1)}
    assert {filed[m] for m, txn in ledger.items() if txn == afternoon.transaction_id} == {day + timedelta(days=1)}
    # A final status filed next door counts: only transactions with a row lacking one stay open.
    finals = {"DELIVRD", "UNDELIV", "EXPIRED", "REJECTD"}
    status = dict(db.execute("SELECT msg_id, status FROM dlr.day_report_rows").fetchall())
    still_open = {txn for m, txn in ledger.items() if status[m] not in finals}
    assert set(open_transactions(db, day, tz)) == still_open


# ----- 21: rate-limited report calls ----------------------------------------------


@pytest.mark.parametrize("simulator_options", [{"faults": {"rate_limit_report": 0.4}}])
def test_case_21_rate_limited_report_calls_are_retried_and_the_result_is_right(
    app_settings, clock, sim, client, db
):
    day = local_date(clock.now(), app_settings.provider_timezone)
    for _ in range(4):
        accepted = send(client, mobiles(10))
        insert_outbound(db, accepted.transaction_id, accepted.accepted, clock.now())
    clock.advance(timedelta(seconds=20))  # receipts still coming: every transaction is open
    both = [DAY_REPORT, TRANSACTION_REPORTS]

    limited = materialize(app_settings, clock, both, day)

    assert limited.success and sim.faults.snapshot()["fired"]["rate_limit_report"] > 0
    assert materializations(limited, TRANSACTION_REPORTS)[day.isoformat()]["transactions"] == 4
    # Without the fault, the same downloads change nothing: the limited run stored the right data.
    sim.faults.update({"rate_limit_report": 0.0})
    clean = materialize(app_settings, clock, both, day)
    assert materializations(clean, DAY_REPORT)[day.isoformat()]["unchanged"] is True
    assert materializations(clean, TRANSACTION_REPORTS)[day.isoformat()]["replaced"] == 0
