"""The installation row (V69__installation.sql, R__installation.sql): where day partitions start.

One row, recorded by the first upgrade: the first of the month (UTC) of the
earliest migration applied. Its guard refuses removing the row and raising
``partition_start`` with ``check_violation`` naming the trigger; lowering it
is allowed, to a first of a month only (docs/design.md#first-partition-day).
"""

from __future__ import annotations

import shutil
from datetime import UTC, date, datetime, timedelta

import psycopg
import pytest
from psycopg import errors

from sms_pipeline.db import installation, migrate
from sms_pipeline.errors import MigrationError

START = "SELECT partition_start FROM public.installation"


def _month_start(at: datetime) -> date:
    return at.date().replace(day=1)


def _refused(db: psycopg.Connection, statement: str, params: tuple, guard: str) -> errors.CheckViolation:
    with pytest.raises(errors.CheckViolation) as refused:
        db.execute(statement, params)
    assert refused.value.diag.constraint_name == guard
    assert "\n" not in refused.value.diag.message_primary
    return refused.value


def _lowered_to(db: psycopg.Connection, day: date) -> None:
    db.execute("UPDATE public.installation SET partition_start = %s", (day,))


def test_a_new_database_records_the_first_of_the_month_of_its_first_upgrade(blank_db):
    before = datetime.now(UTC)
    migrate.upgrade(blank_db)
    after = datetime.now(UTC)
    rows = blank_db.execute(START).fetchall()
    assert len(rows) == 1
    assert rows[0][0] in {_month_start(before), _month_start(after)}  # the same month unless run at midnight
    assert installation.partition_start(blank_db) == rows[0][0]


def test_an_existing_database_records_the_month_of_its_first_upgrade_not_of_this_one(blank_db, tmp_path):
    for path in migrate.SQL_DIR.glob("*.sql"):
        if path.name not in {"V69__installation.sql", "R__installation.sql"}:
            shutil.copy(path, tmp_path / path.name)
    migrate.upgrade(blank_db, tmp_path)  # installed before this release
    blank_db.execute("UPDATE public.schema_migrations SET applied_at = '2025-03-31 23:30+00' WHERE version = 1")
    assert [m.label for m in migrate.upgrade(blank_db) if m.prefix != "R"] == ["V69 installation"]
    assert blank_db.execute(START).fetchall() == [(date(2025, 3, 1),)]  # the month in UTC


def test_the_row_cannot_be_removed(db):
    recorded = installation.partition_start(db)
    refused = _refused(db, "DELETE FROM public.installation", (), "installation_row_guard")
    assert "removing the installation row is refused" in str(refused)
    _refused(db, "TRUNCATE public.installation", (), "installation_never_truncated")
    assert db.execute(START).fetchall() == [(recorded,)]


def test_a_second_row_is_refused(db):
    with pytest.raises(errors.UniqueViolation):
        db.execute("INSERT INTO public.installation (partition_start) VALUES ('2025-01-01')")
    with pytest.raises(errors.CheckViolation):
        db.execute("INSERT INTO public.installation (one_row, partition_start) VALUES (false, '2025-01-01')")
    assert len(db.execute(START).fetchall()) == 1


def test_partition_start_is_lowered_never_raised(db):
    _lowered_to(db, date(2025, 10, 1))
    assert installation.partition_start(db) == date(2025, 10, 1)

    refused = _refused(db, "UPDATE public.installation SET partition_start = %s", (date(2025, 11, 1),),
                       "installation_row_guard")
    assert "partition_start 2025-11-01 would replace 2025-10-01; refused" in str(refused)
    assert installation.partition_start(db) == date(2025, 10, 1)


def test_partition_start_is_always_the_first_of_a_month(db):
    with pytest.raises(errors.CheckViolation) as refused:
        _lowered_to(db, date(2025, 10, 15))
    assert refused.value.diag.constraint_name == "installation_partition_start_first_of_month"


def test_lowering_goes_to_the_month_start_of_the_day_and_never_up(db):
    recorded = installation.partition_start(db)
    assert installation.lower_partition_start(db, recorded + timedelta(days=40)) == recorded  # later: unchanged
    assert installation.lower_partition_start(db, date(2025, 10, 15)) == date(2025, 10, 1)
    assert installation.lower_partition_start(db, date(2025, 12, 31)) == date(2025, 10, 1)
    assert installation.partition_start(db) == date(2025, 10, 1)


def test_a_database_never_upgraded_says_to_upgrade_it(blank_db):
    for read in (installation.partition_start, lambda conn: installation.lower_partition_start(conn, date.today())):
        with pytest.raises(MigrationError, match=r"run `sms-pipeline db upgrade`"):
            read(blank_db)
