"""The day-report asset: one day, a range, the same day twice, a newer download."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import dagster as dg
import psycopg
import pytest
from pydantic import SecretStr
from sms_pipeline.core.fingerprint import text_fingerprint
from tests.support.worker import TEXT_KEY
from tests.support.ingest import DAY_REPORT, TRANSACTION_REPORTS, insert_outbound, materialize, mobiles, send
from tests.support.rows import content, snapshot
from tests.support.runs import materializations

from sms_pipeline import settings as settings_module
from sms_pipeline.core.provider_time import local_date

DAY_ROWS = "dlr.day_report_rows"
CHECKPOINTS = "dlr.report_checkpoints"


def _loaded(db, day) -> dict[str, tuple]:
    rows = db.execute(
        "SELECT msg_id, transaction_id, mobile, status, provider_submit_at, message_fingerprint "
        "FROM dlr.day_report_rows WHERE report_date = %s", (day,)
    ).fetchall()
    return {r[0]: r for r in rows}


def test_one_day_loads_every_message_of_the_day_once(app_settings, clock, sim, client, db):
    text = 'Order 7, "express", ships today'
    day = local_date(clock.now(), app_settings.provider_timezone)
    first = send(client, mobiles(40), text)
    second = send(client, mobiles(25), text)
    clock.advance(timedelta(days=1))

    result = materialize(app_settings, clock, [DAY_REPORT], day)

    loaded = _loaded(db, day)
    ledger = {e.msg_id: e for e in sim.state.ledger_entries()}
    assert set(loaded) == set(ledger) and len(loaded) == 65
    for msg_id, (_, txn, mobile, status, submit_at, digest) in loaded.items():
        assert (txn, mobile) == (ledger[msg_id].transaction_id, ledger[msg_id].mobile)
        assert submit_at == ledger[msg_id].submitted_at.replace(microsecond=0)
        assert digest == text_fingerprint(TEXT_KEY, text)  # the text itself is nowhere
    assert {first.transaction_id, second.transaction_id} == {r[1] for r in loaded.values()}

    checksum, rows, size, loaded_at = db.execute(
        "SELECT checksum, rows, bytes, loaded_at FROM dlr.report_checkpoints "
        "WHERE report_kind = 'day' AND report_date = %s", (day,)
    ).fetchone()
    meta = materializations(result, DAY_REPORT)[day.isoformat()]
    assert (meta["dagster/row_count"], meta["checksum"], meta["download_bytes"]) == (65, checksum, size)
    assert meta["dagster/table_name"] == "dlr.day_report_rows"
    assert rows == 65 and size > 0 and loaded_at == clock.now()
    assert meta["unchanged"] is False and meta["duplicates"] == 0 and meta["unmapped_rows"] == 0
    assert meta["slower_path"] == "none"  # the file's own bytes were copied
    assert sum(meta["statuses"].values()) == 65
    shown = repr(meta)
    assert not any(mobile in shown for mobile in (r[2] for r in loaded.values()))  # no recipient numbers


def test_a_range_run_loads_each_day_with_its_own_figures(app_settings, clock, client, db):
    tz = app_settings.provider_timezone
    days = []
    for n in (3, 5, 0):  # the third day has no traffic: an empty file still loads (zero rows)
        days.append(local_date(clock.now(), tz))
        if n:
            send(client, mobiles(n))
        clock.advance(timedelta(days=1))

    result = materialize(app_settings, clock, [DAY_REPORT], days[0], days[-1])

    meta = materializations(result, DAY_REPORT)
    assert {day: meta[day.isoformat()]["dagster/row_count"] for day in days} == dict(zip(days, (3, 5, 0)))
    counts = dict(db.execute(
        "SELECT report_date, count(*) FROM dlr.day_report_rows GROUP BY report_date").fetchall())
    assert counts == {days[0]: 3, days[1]: 5}
    checkpoints = dict(db.execute(
        "SELECT report_date, rows FROM dlr.report_checkpoints WHERE report_kind = 'day'").fetchall())
    assert checkpoints == dict(zip(days, (3, 5, 0)))


def test_the_same_day_twice_writes_nothing_the_second_time(app_settings, clock, client, db):
    day = local_date(clock.now(), app_settings.provider_timezone)
    accepted = send(client, mobiles(30))
    insert_outbound(db, accepted.transaction_id, accepted.accepted, clock.now())
    clock.advance(timedelta(seconds=20))  # receipts still coming: the transaction is open
    both = [DAY_REPORT, TRANSACTION_REPORTS]
    first = materialize(app_settings, clock, both, day)
    fetched = materializations(first, TRANSACTION_REPORTS)[day.isoformat()]
    assert (fetched["transactions"], fetched["replaced"], fetched["answer_rows"]) == (1, 1, 30)
    assert (fetched["dagster/table_name"], fetched["dagster/row_count"]) == ("dlr.txn_report_rows", 30)
    before = {t: snapshot(db, t, o) for t, o in (
        (DAY_ROWS, "report_date, line_no"), (CHECKPOINTS, "report_kind, report_date"),
        ("dlr.txn_report_fetches", "transaction_id"), ("dlr.txn_report_rows", "transaction_id, row_no"))}

    again = materialize(app_settings, clock, both, day)

    assert {t: snapshot(db, t, o) for t, o in (
        (DAY_ROWS, "report_date, line_no"), (CHECKPOINTS, "report_kind, report_date"),
        ("dlr.txn_report_fetches", "transaction_id"), ("dlr.txn_report_rows", "transaction_id, row_no"))} == before
    assert materializations(again, DAY_REPORT)[day.isoformat()]["unchanged"] is True
    refetched = materializations(again, TRANSACTION_REPORTS)[day.isoformat()]
    assert (refetched["transactions"], refetched["replaced"], refetched["identical"]) == (1, 0, 1)


def test_a_newer_download_with_late_statuses_replaces_the_load(app_settings, clock, client, db):
    day = local_date(clock.now(), app_settings.provider_timezone)
    send(client, mobiles(200))
    clock.advance(timedelta(seconds=20))  # many receipts still on their way
    first = materialize(app_settings, clock, [DAY_REPORT], day)
    early = _loaded(db, day)
    clock.advance(timedelta(days=3, hours=1))  # every timeline has reached its last status

    later = materialize(app_settings, clock, [DAY_REPORT], day)

    late = _loaded(db, day)
    assert set(late) == set(early)
    changed = {m for m in late if late[m][3] != early[m][3]}
    assert changed and all(early[m][3] in ("SUBMITTED", "ACCEPTD", "ENROUTE") for m in changed)
    assert db.execute("SELECT count(*) FROM dlr.day_report_rows").fetchone()[0] == 200
    old, new = (materializations(r, DAY_REPORT)[day.isoformat()] for r in (first, later))
    assert new["unchanged"] is False and new["checksum"] != old["checksum"]
    assert db.execute("SELECT checksum FROM dlr.report_checkpoints WHERE report_date = %s",
                      (day,)).fetchone()[0] == new["checksum"]


def test_a_day_that_fails_does_not_stop_the_others_and_they_stay_materialised(app_settings, clock, client, db):
    tz = app_settings.provider_timezone
    good = local_date(clock.now(), tz)
    send(client, mobiles(7))
    clock.advance(timedelta(hours=1))
    refused = good + timedelta(days=1)  # the provider's clock has not reached it: code 400, no zip
    instance = dg.DagsterInstance.ephemeral()

    result = materialize(app_settings, clock, [DAY_REPORT], good, refused, instance=instance,
                         raise_on_error=False)

    assert not result.success
    failure = next(e for e in result.all_events if e.is_step_failure).step_failure_data.user_failure_data
    assert failure.description.startswith("1 of 2 day(s) failed") and refused.isoformat() in failure.description
    assert instance.get_materialized_partitions(DAY_REPORT) == {good.isoformat()}
    assert db.execute("SELECT report_date, count(*) FROM dlr.day_report_rows GROUP BY 1").fetchall() == [(good, 7)]


@pytest.mark.slow
def test_a_killed_range_run_relaunched_ends_like_an_uninterrupted_one(
    app_settings, app_env, clock, sim, client, db, db_url, second_db_url, tmp_path
):
    tz = app_settings.provider_timezone
    days = []
    for n in (4, 6, 3, 5):
        days.append(local_date(clock.now(), tz))
        send(client, mobiles(n))
        clock.advance(timedelta(days=1))
    first, last = days[0], days[-1]

    # The reference: the whole range in one uninterrupted run, into another database.
    materialize(settings_module.load({**app_env, "SMS_PIPELINE_DATABASE_URL": second_db_url}),
                clock, [DAY_REPORT], first, last)

    # The same range through the CLI in a process that is killed after two days.
    sim.faults.update({"slow": 1.0, "slow_delay_s": 1.5})
    killed = _run_cli(app_env, tmp_path, first, last, kill_after_days=2)
    assert killed.returncode == -9
    with psycopg.connect(db_url, autocommit=True) as conn:
        partial = conn.execute("SELECT count(*) FROM dlr.report_checkpoints").fetchone()[0]
    assert 2 <= partial < len(days)

    sim.faults.update({"slow": 0.0})
    finished = _run_cli(app_env, tmp_path, first, last)
    assert finished.returncode == 0, finished.stderr
    assert f"{days[0]}: rows=4, unchanged=True" in finished.stdout  # finished days stayed finished

    with psycopg.connect(second_db_url, autocommit=True) as reference:
        for table, order, columns in (
            (DAY_ROWS, "report_date, line_no", "*"),
            (CHECKPOINTS, "report_kind, report_date", "report_kind, report_date, checksum, rows, bytes"),
        ):
            query = f"SELECT {columns} FROM {table} ORDER BY {order}"
            assert db.execute(query).fetchall() == reference.execute(query).fetchall()
    assert len(content(db, DAY_ROWS, "report_date, line_no")) == 18


def _run_cli(env: dict[str, str], tmp_path: Path, first, last, *, kill_after_days: int | None = None):
    """``sms-pipeline materialize`` of the day reports in a child process; optionally SIGKILL it."""
    home = tmp_path / "dagster-home"
    home.mkdir(exist_ok=True)
    command = [str(Path(sys.executable).with_name("sms-pipeline")), "materialize", "--from", first.isoformat(),
               "--to", last.isoformat(), "--select", 'key:"dlr/day_report"']
    child = subprocess.Popen(command, env={**env, "DAGSTER_HOME": str(home)}, cwd=tmp_path,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if kill_after_days is not None:
        deadline = time.monotonic() + 120
        with psycopg.connect(env["SMS_PIPELINE_DATABASE_URL"], autocommit=True) as conn:
            while conn.execute("SELECT count(*) FROM dlr.report_checkpoints").fetchone()[0] < kill_after_days:
                assert child.poll() is None, child.communicate()
                assert time.monotonic() < deadline, "the run did not get through two days in time"
                time.sleep(0.05)
        child.send_signal(signal.SIGKILL)
    out, err = child.communicate(timeout=180)
    return subprocess.CompletedProcess(command, child.returncode, out, err)


def test_a_day_loaded_before_fingerprints_or_under_another_key_is_reloaded_once(app_settings, clock, client, db):
    text = "Your order has shipped"
    day = local_date(clock.now(), app_settings.provider_timezone)
    send(client, mobiles(3), text)
    clock.advance(timedelta(days=1))

    def load(settings) -> tuple[bool, set]:
        meta = materializations(materialize(settings, clock, [DAY_REPORT], day), DAY_REPORT)[day.isoformat()]
        stored = db.execute("SELECT DISTINCT message_fingerprint FROM dlr.day_report_rows").fetchall()
        return meta["unchanged"], {row[0] for row in stored}

    assert load(app_settings) == (False, {text_fingerprint(TEXT_KEY, text)})
    # As the upgrade leaves a day loaded before fingerprints: no key id, no fingerprints (the old digests dropped).
    db.execute("UPDATE dlr.report_checkpoints SET fingerprint_key_id = NULL")
    db.execute("UPDATE dlr.day_report_rows SET message_fingerprint = NULL")
    assert load(app_settings) == (False, {text_fingerprint(TEXT_KEY, text)})  # reloaded once
    assert load(app_settings) == (True, {text_fingerprint(TEXT_KEY, text)})  # then the no-op holds

    other_key = "another-text-key-0123456789abcdef"
    rekeyed = app_settings.model_copy(update={"text_hmac_key": SecretStr(other_key)})
    assert load(rekeyed) == (False, {text_fingerprint(other_key.encode(), text)})
    assert load(rekeyed) == (True, {text_fingerprint(other_key.encode(), text)})
