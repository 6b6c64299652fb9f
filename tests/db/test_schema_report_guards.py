"""The database's report guards (R__report_guards.sql): a stored report never shrinks, whatever path writes it.

Each guard refuses a direct statement with ``check_violation`` (SQLSTATE 23514)
naming the guard; inside a transaction that ran the named query
``report_guard_allow_shrink`` the same statement passes, and the permission
ends with that transaction.
"""

from __future__ import annotations

import shutil
from datetime import UTC, date, datetime, timedelta

import psycopg
import pytest
from psycopg import errors

from sms_pipeline.db import migrate, queries, report_guards

DAY = date(2026, 11, 28)
AT = datetime(2026, 11, 29, 3, 0, tzinfo=UTC)
TXN = "0630558331823681037"
CHECKSUM = "a" * 64


def _refused(db: psycopg.Connection, statement: str, params: tuple, guard: str) -> errors.CheckViolation:
    with pytest.raises(errors.CheckViolation) as refused:
        db.execute(statement, params)
    assert refused.value.sqlstate == "23514"
    assert refused.value.diag.constraint_name == guard
    assert "\n" not in refused.value.diag.message_primary
    return refused.value


def _allowed(db: psycopg.Connection, statement: str, params: tuple) -> int:
    """``statement`` in a transaction that allowed shrinking; its row count."""
    with db.transaction():
        report_guards.allow_shrink(db)
        return db.execute(statement, params).rowcount


def _checkpoint(db: psycopg.Connection, kind: str, rows: int) -> None:
    db.execute("INSERT INTO dlr.report_checkpoints (report_kind, report_date, checksum, rows, bytes, fetched_at, "
               "loaded_at) VALUES (%s, %s, 'c1', %s, 2048, %s, %s)", (kind, DAY, rows, AT, AT))


SET_ROWS = "UPDATE dlr.report_checkpoints SET rows = %s, checksum = 'c2' WHERE report_kind = %s AND report_date = %s"


def test_a_day_report_checkpoint_never_shrinks_unless_the_transaction_allows_it(db):
    _checkpoint(db, "day", 1199)

    refused = _refused(db, SET_ROWS, (0, "day", DAY), "report_checkpoints_never_shrink")
    assert "day report 2026-11-28: 0 rows would replace the 1199 stored; refused" in str(refused)
    assert db.execute("SELECT rows, checksum FROM dlr.report_checkpoints").fetchone() == (1199, "c1")

    assert db.execute(SET_ROWS, (1199, "day", DAY)).rowcount == 1  # equal: statuses moved forward, normal
    assert db.execute(SET_ROWS, (1300, "day", DAY)).rowcount == 1  # grew
    assert _allowed(db, SET_ROWS, (0, "day", DAY)) == 1
    assert db.execute("SELECT rows FROM dlr.report_checkpoints").fetchone() == (0,)
    assert db.execute(SET_ROWS, (5, "day", DAY)).rowcount == 1
    # the permission ended with its transaction
    _refused(db, SET_ROWS, (4, "day", DAY), "report_checkpoints_never_shrink")


def test_the_load_path_s_upsert_is_guarded_too(db):
    _checkpoint(db, "day", 10)
    save = {"report_kind": "day", "report_date": DAY, "checksum": "c2", "rows": 3, "bytes": 10, "fetched_at": AT,
            "loaded_at": AT, "fingerprint_key_id": None}
    with pytest.raises(errors.CheckViolation, match="day report 2026-11-28: 3 rows would replace the 10 stored"):
        queries.run(db, "ingest_report_checkpoint_save", **save)
    with db.transaction():
        report_guards.allow_shrink(db)
        assert queries.run(db, "ingest_report_checkpoint_save", **save).rowcount == 1


def test_forgetting_a_day_report_checkpoint_is_refused_and_other_kinds_are_not_guarded(db):
    _checkpoint(db, "day", 10)
    _checkpoint(db, "getdlr", 10)
    delete = "DELETE FROM dlr.report_checkpoints WHERE report_kind = %s"

    refused = _refused(db, delete, ("day",), "report_checkpoints_never_shrink")
    assert "forgetting the checkpoint of 10 stored rows is refused" in str(refused)
    # the intraday pull is replaced as a whole and purged by retention: not a day report
    assert db.execute(SET_ROWS, (2, "getdlr", DAY)).rowcount == 1
    assert db.execute(delete, ("getdlr",)).rowcount == 1
    assert _allowed(db, delete, ("day",)) == 1


def test_a_by_transaction_report_never_shrinks_but_retention_may_forget_it(db):
    db.execute("INSERT INTO dlr.txn_report_fetches (transaction_id, report_date, checksum, rows, fetched_at) "
               "VALUES (%s, %s, %s, 3, %s)", (TXN, DAY, CHECKSUM, AT))
    shrink = "UPDATE dlr.txn_report_fetches SET rows = %s WHERE transaction_id = %s"

    refused = _refused(db, shrink, (1, TXN), "txn_report_fetches_never_shrink")
    assert f"by-transaction report {TXN} of 2026-11-28: 1 rows would replace the 3 stored; refused" in str(refused)
    assert db.execute(shrink, (3, TXN)).rowcount == 1
    assert _allowed(db, shrink, (1, TXN)) == 1
    assert db.execute("SELECT dlr.purge_txn_reports_before(%s)", (date(2026, 11, 29),)).fetchone() == (1,)


def _summary(db: psycopg.Connection, units: tuple[int, ...]) -> None:
    db.execute("INSERT INTO dlr.provider_summary_fetch (day, fetched_at, sender_rows, units) VALUES (%s, %s, %s, %s)",
               (DAY, AT, len(units), sum(units)))
    for n, sender_units in enumerate(units):
        db.execute("INSERT INTO dlr.provider_summary (day, sender_id, total_messages, delivered, failed, pending, "
                   "units) VALUES (%s, %s, %s, %s, 0, 0, %s)", (DAY, f"SENDR{n}", sender_units, sender_units,
                                                                 sender_units))


@pytest.mark.parametrize(("change", "params"), [
    ("units = %s", (681,)),  # fewer units
    ("sender_rows = %s", (1,)),  # fewer sender rows
])
def test_a_provider_summary_never_shrinks_unless_the_transaction_allows_it(db, change, params):
    _summary(db, (600, 82))
    statement = f"UPDATE dlr.provider_summary_fetch SET {change} WHERE day = %s"

    refused = _refused(db, statement, (*params, DAY), "provider_summary_fetch_never_shrinks")
    assert str(refused).startswith("provider summary 2026-11-28: ")
    assert "the 682 units in 2 stored; refused" in str(refused)
    assert _allowed(db, statement, (*params, DAY)) == 1


def test_forgetting_a_provider_summary_is_refused_with_its_rows(db):
    _summary(db, (600, 82))
    delete = "DELETE FROM dlr.provider_summary_fetch WHERE day = %s"

    refused = _refused(db, delete, (DAY,), "provider_summary_fetch_never_shrinks")
    assert "forgetting the stored 682 units in 2 sender rows is refused" in str(refused)
    assert db.execute("SELECT count(*) FROM dlr.provider_summary").fetchone() == (2,)
    assert db.execute("UPDATE dlr.provider_summary_fetch SET units = 700, sender_rows = 3").rowcount == 1  # grows
    assert _allowed(db, delete, (DAY,)) == 1
    assert db.execute("SELECT count(*) FROM dlr.provider_summary").fetchone() == (0,)


def test_the_permission_is_local_to_its_transaction(db):
    assert db.execute("SELECT dlr.report_shrink_allowed()").fetchone() == (False,)
    with db.transaction():
        report_guards.allow_shrink(db)
        assert db.execute("SELECT dlr.report_shrink_allowed()").fetchone() == (True,)
    assert db.execute("SELECT dlr.report_shrink_allowed()").fetchone() == (False,)


def test_the_upgrade_gives_summaries_fetched_before_it_their_units(blank_db, tmp_path):
    """V68 fills the fetch marker's new column from the stored sender rows (0 for a day without traffic)."""
    guards = {"V68__report_shrink_guards.sql", "R__report_guards.sql"}
    for path in migrate.SQL_DIR.glob("[VR]*__*.sql"):
        if path.name not in guards:
            shutil.copy(path, tmp_path / path.name)
    migrate.upgrade(blank_db, tmp_path)
    blank_db.execute("INSERT INTO dlr.provider_summary_fetch (day, fetched_at, sender_rows) VALUES (%s, %s, 2), "
                     "(%s, %s, 0)", (DAY, AT, DAY - timedelta(days=1), AT))
    blank_db.execute("INSERT INTO dlr.provider_summary VALUES (%s, 'A', 1, 1, 0, 0, 600), (%s, 'B', 1, 1, 0, 0, 82)",
                     (DAY, DAY))
    for name in guards:
        shutil.copy(migrate.SQL_DIR / name, tmp_path / name)

    migrate.upgrade(blank_db, tmp_path)

    filled = blank_db.execute("SELECT day, sender_rows, units FROM dlr.provider_summary_fetch ORDER BY day")
    assert filled.fetchall() == [(DAY - timedelta(days=1), 0, 0), (DAY, 2, 682)]
