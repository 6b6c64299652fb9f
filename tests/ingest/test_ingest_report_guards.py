"""Never load a smaller report over a bigger one (issue 17, docs/design.md#report-guards).

The provider forgets: the simulator's ``reset`` (admin ``POST /_sim/reset``)
drops all its traffic and keeps the clock, like the fresh simulator of the
issue that knew nothing of the stored days. A day report, a by-transaction
report with fewer rows than stored is refused and writes nothing, unless the
run allows it (``report_guard`` resource, ``--allow-shrink``).
"""

from __future__ import annotations

import subprocess
import sys
from datetime import date, timedelta
from pathlib import Path

import dagster as dg
import pytest
from tests.support.ingest import DAY_REPORT, TRANSACTION_REPORTS, insert_outbound, materialize, mobiles, send
from tests.support.rows import snapshot
from tests.support.runs import materializations

from sms_pipeline.core.provider_time import local_date
from sms_pipeline.db.report_guards import OVERRIDE, ReportShrinkRefused
from sms_pipeline.ingest.transaction_reports import fetch_transaction_reports, store_transaction_report

ALLOW_SHRINK = {"resources": {"report_guard": {"config": {"allow_shrink": True}}}}
DAY_TABLES = (("dlr.day_report_rows", "report_date, line_no"), ("dlr.report_checkpoints", "report_kind, report_date"),
              ("dlr.report_confirmations", "report_kind, report_date"))
TXN_TABLES = (("dlr.txn_report_fetches", "transaction_id"), ("dlr.txn_report_rows", "transaction_id, row_no"))


def _snapshots(db, tables) -> list:
    return [snapshot(db, table, order) for table, order in tables]


def _failure(result: dg.ExecuteInProcessResult) -> str:
    (failure,) = [e for e in result.all_events if e.is_step_failure]
    return failure.step_failure_data.user_failure_data.description


def _day_rows(db) -> dict[date, int]:
    return dict(db.execute("SELECT report_date, rows FROM dlr.report_checkpoints WHERE report_kind = 'day'").fetchall())


def test_a_day_report_with_fewer_rows_is_refused_and_loads_only_when_allowed(app_settings, clock, sim, client, db):
    day = local_date(clock.now(), app_settings.provider_timezone)
    send(client, mobiles(5))
    clock.advance(timedelta(minutes=1))
    materialize(app_settings, clock, [DAY_REPORT], day)
    before = _snapshots(db, DAY_TABLES)
    sim.state.reset()  # the provider forgot the day ...
    send(client, mobiles(3))  # ... and knows 3 messages of it
    clock.advance(timedelta(hours=1))

    refused = materialize(app_settings, clock, [DAY_REPORT], day, raise_on_error=False)

    assert not refused.success
    assert _failure(refused) == (f"day report {day}: the provider now has 3 rows, 5 are stored; refused "
                                 f"(a day report only grows). {OVERRIDE}")
    assert materializations(refused, DAY_REPORT) == {}
    assert _snapshots(db, DAY_TABLES) == before  # not a byte written, not even a confirmation

    allowed = materialize(app_settings, clock, [DAY_REPORT], day, run_config=ALLOW_SHRINK)

    assert materializations(allowed, DAY_REPORT)[day.isoformat()]["dagster/row_count"] == 3
    assert db.execute("SELECT count(*) FROM dlr.day_report_rows").fetchone() == (3,)
    assert _day_rows(db) == {day: 3}


def test_a_range_against_a_provider_that_forgot_stops_at_the_first_shrinking_day(app_settings, clock, sim, client, db):
    """The issue's run: days before the refusal finish and stay recorded, the run fails, later days wait."""
    tz = app_settings.provider_timezone
    days = []
    for n in (2, 4, 1):
        days.append(local_date(clock.now(), tz))
        send(client, mobiles(n))
        clock.advance(timedelta(days=1))
    first, stored, last = days
    materialize(app_settings, clock, [DAY_REPORT], stored)
    before = _snapshots(db, DAY_TABLES)
    sim.state.reset()
    instance = dg.DagsterInstance.ephemeral()

    result = materialize(app_settings, clock, [DAY_REPORT], first, last, instance=instance, raise_on_error=False)

    assert not result.success
    assert _failure(result).startswith(f"day report {stored}: the provider now has 0 rows, 4 are stored; refused")
    assert instance.get_materialized_partitions(DAY_REPORT) == {first.isoformat()}  # never stored before: loads
    assert _day_rows(db) == {first: 0, stored: 4}  # the stored day untouched, the last day not attempted
    assert _snapshots(db, DAY_TABLES)[0] == before[0]


def test_a_by_transaction_report_never_shrinks_and_an_empty_answer_is_still_ignored(
    app_settings, clock, sim, client, db
):
    tz = app_settings.provider_timezone
    day = local_date(clock.now(), tz)
    accepted = send(client, mobiles(30))
    insert_outbound(db, accepted.transaction_id, accepted.accepted, clock.now())
    clock.advance(timedelta(seconds=20))  # receipts still coming: the transaction is open
    materialize(app_settings, clock, [DAY_REPORT, TRANSACTION_REPORTS], day)
    answer = client.transaction_report(accepted.transaction_id, day, day)
    assert len(answer) == 30
    before = _snapshots(db, TXN_TABLES)

    # Smaller: refused, one line naming the report, its day and both counts; nothing written.
    with pytest.raises(ReportShrinkRefused) as refused:
        store_transaction_report(db, accepted.transaction_id, day, answer[:10], tz, clock)
    assert str(refused.value) == (
        f"by-transaction report {day}, transaction {accepted.transaction_id}: the provider now has 10 rows, "
        f"30 are stored; refused (a by-transaction report only grows). {OVERRIDE}")
    assert _snapshots(db, TXN_TABLES) == before

    # Empty ("no report yet") after the provider forgot: ignored as before, the run succeeds.
    sim.state.reset()
    again = materialize(app_settings, clock, [TRANSACTION_REPORTS], day)
    meta = materializations(again, TRANSACTION_REPORTS)[day.isoformat()]
    assert (meta["transactions"], meta["no_report_yet"], meta["replaced"]) == (1, 1, 0)
    assert _snapshots(db, TXN_TABLES) == before

    assert store_transaction_report(db, accepted.transaction_id, day, answer[:10], tz, clock,
                                    allow_shrink=True) == "changed"
    assert db.execute("SELECT rows FROM dlr.txn_report_fetches").fetchone() == (10,)
    assert db.execute("SELECT count(*) FROM dlr.txn_report_rows").fetchone() == (10,)


def test_a_pass_stores_the_other_answers_then_fails_on_the_shrunken_one(app_settings, clock, sim, client, db):
    tz = app_settings.provider_timezone
    day = local_date(clock.now(), tz)
    shrinking, growing = send(client, mobiles(12)), send(client, mobiles(8))
    for accepted in (shrinking, growing):
        insert_outbound(db, accepted.transaction_id, accepted.accepted, clock.now())
    clock.advance(timedelta(seconds=20))
    materialize(app_settings, clock, [TRANSACTION_REPORTS], day)
    clock.advance(timedelta(hours=2))  # statuses moved on: both answers changed

    class ForgetsOne:
        def transaction_report(self, transaction_id, from_date, to_date):
            rows = client.transaction_report(transaction_id, from_date, to_date)
            return rows[:5] if transaction_id == shrinking.transaction_id else rows

    def fetch_row(transaction_id):
        return db.execute("SELECT checksum, rows, fetched_at FROM dlr.txn_report_fetches WHERE transaction_id = %s",
                          (transaction_id,)).fetchone()

    kept, replaced = fetch_row(shrinking.transaction_id), fetch_row(growing.transaction_id)
    with pytest.raises(ReportShrinkRefused, match=f"transaction {shrinking.transaction_id}: the provider now has "
                                                  "5 rows, 12 are stored; refused"):
        fetch_transaction_reports(db, ForgetsOne(), day, tz, clock, concurrency=2)

    assert fetch_row(shrinking.transaction_id) == kept
    assert fetch_row(growing.transaction_id)[0] != replaced[0]  # the other answer was stored


def test_the_command_refuses_in_one_line_and_allow_shrink_loads(app_settings, app_env, clock, sim, client, db,
                                                               tmp_path):
    day = local_date(clock.now(), app_settings.provider_timezone)
    send(client, mobiles(6))
    clock.advance(timedelta(minutes=1))
    materialize(app_settings, clock, [DAY_REPORT], day)
    before = _snapshots(db, DAY_TABLES)
    sim.state.reset()

    refused = _materialize_command(app_env, tmp_path, day)

    assert refused.returncode == 2, refused.stderr
    (line,) = [line for line in refused.stderr.splitlines() if line.startswith("sms-pipeline: error:")]
    assert line.endswith(f"failed: day report {day}: the provider now has 0 rows, 6 are stored; refused "
                         f"(a day report only grows). {OVERRIDE}")
    assert _snapshots(db, DAY_TABLES) == before

    allowed = _materialize_command(app_env, tmp_path, day, "--allow-shrink")

    assert allowed.returncode == 0, allowed.stderr
    assert f"dlr/day_report {day}: rows=0, unchanged=False" in allowed.stdout
    assert _day_rows(db) == {day: 0}


def _materialize_command(env: dict[str, str], tmp_path: Path, day: date, *more: str) -> subprocess.CompletedProcess:
    """``sms-pipeline materialize`` of one day's day report, as a user types it."""
    home = tmp_path / "dagster-home"
    home.mkdir(exist_ok=True)
    command = [str(Path(sys.executable).with_name("sms-pipeline")), "materialize", "--from", day.isoformat(),
               "--to", day.isoformat(), "--select", 'key:"dlr/day_report"', *more]
    return subprocess.run(command, env={**env, "DAGSTER_HOME": str(home)}, cwd=tmp_path, capture_output=True,
                          text=True, timeout=180)
