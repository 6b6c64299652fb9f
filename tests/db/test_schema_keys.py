"""Global uniqueness of the business key and of the provider msgId across partitions."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import psycopg
import pytest
from psycopg import errors

from tests.support.rows import any_state_columns, ensure_partitions, fetch, in_month, insert_message, month_start


def _race(db_url: str, db: psycopg.Connection, inserts: list[Callable[[psycopg.Connection], object]]) -> list[str]:
    """Run each insert on its own connection, all released by one barrier.

    Commits are held until one connection is seen waiting on the other's
    uncommitted key (so the two really overlapped), then released. Returns
    each connection's outcome: "committed" or "duplicate".
    """
    barrier = threading.Barrier(len(inserts), timeout=10)
    may_commit = threading.Event()
    outcomes: list[str] = [""] * len(inserts)

    def run(index: int) -> None:
        with psycopg.connect(db_url) as conn:
            barrier.wait()
            try:
                inserts[index](conn)
                assert may_commit.wait(timeout=20)
                conn.commit()
                outcomes[index] = "committed"
            except errors.UniqueViolation:
                conn.rollback()
                outcomes[index] = "duplicate"

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(inserts))]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        waiting = db.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
        ).fetchone()[0]
        if waiting:
            break
        time.sleep(0.01)
    else:
        pytest.fail("the concurrent inserts never overlapped")
    may_commit.set()
    for thread in threads:
        thread.join(timeout=30)
    return sorted(outcomes)


@pytest.mark.parametrize("second_month", [0, 1], ids=["same-month", "other-month"])
def test_concurrent_inserts_of_one_business_key_leave_exactly_one_row(db_url, db, second_month):
    ensure_partitions(db, month_start(), 1, schemas=("msg",))
    outcomes = _race(
        db_url,
        db,
        [
            lambda conn: insert_message(conn, business_key="order-8841", created_at=in_month(0)),
            lambda conn: insert_message(conn, business_key="order-8841", created_at=in_month(second_month)),
        ],
    )
    assert outcomes == ["committed", "duplicate"]
    rows = db.execute("SELECT count(*) FROM msg.outbound_message WHERE business_key = 'order-8841'").fetchone()
    assert rows == (1,)


def test_a_business_key_is_refused_in_another_month(db):
    ensure_partitions(db, month_start(), 2, schemas=("msg",))
    insert_message(db, business_key="order-1", created_at=in_month(0))
    for months in (0, 1, 2):
        with pytest.raises(errors.UniqueViolation, match="duplicate business key"):
            insert_message(db, business_key="order-1", created_at=in_month(months, day=20))
    # Keys are per tenant.
    insert_message(db, business_key="order-1", tenant_id="tenant-b", created_at=in_month(1))


def test_one_statement_cannot_insert_a_key_twice(db):
    with pytest.raises(errors.UniqueViolation):
        db.execute(
            """INSERT INTO msg.outbound_message
                   (business_key, tenant_id, channel, message_class, recipient, body, encoding, segments)
               SELECT 'same', 'tenant-a', 'sms', 'otp', '919800000001', 'b', 'GSM7', 1
                 FROM generate_series(1, 2)"""
        )
    assert db.execute("SELECT count(*) FROM msg.business_key_registry").fetchone() == (0,)


def test_only_a_superseded_row_gives_its_key_to_a_replay(db):
    ensure_partitions(db, month_start(), 1, schemas=("msg",))
    first = insert_message(db, business_key="k", state="rejected", created_at=in_month(0), **any_state_columns(in_month(0)))
    with pytest.raises(errors.UniqueViolation):
        insert_message(db, business_key="k", created_at=in_month(1))

    with db.transaction():
        db.execute("UPDATE msg.outbound_message SET state = 'superseded' WHERE id = %s AND created_at = %s", first)
        replay = insert_message(db, business_key="k", created_at=in_month(1), replaces_id=first[0])
    registered = db.execute(
        "SELECT message_id, message_created_at FROM msg.business_key_registry WHERE business_key = 'k'"
    ).fetchone()
    assert registered == replay
    # The replay is the active row now: a third insert is a duplicate again.
    with pytest.raises(errors.UniqueViolation):
        insert_message(db, business_key="k", created_at=in_month(1, day=9))


def test_a_plain_insert_registers_the_rows_lookup_by_attempt_key_and_recipient(db):
    first = insert_message(db, business_key="k1")
    second = insert_message(db, business_key="k2")
    rows = db.execute(
        """SELECT l.message_id, l.message_created_at FROM msg.message_lookup l
             JOIN msg.outbound_message m ON m.attempt_key = l.attempt_key
            WHERE (l.tenant_id, l.recipient, l.business_key, l.message_id, l.message_created_at)
                  = (m.tenant_id, m.recipient, m.business_key, m.id, m.created_at)
            ORDER BY 1"""
    ).fetchall()
    assert rows == [first, second]


def test_deleting_a_row_releases_its_keys(db):
    key = insert_message(db, business_key="k", provider_message_id="9308878062554710043")
    db.execute("DELETE FROM msg.outbound_message WHERE id = %s AND created_at = %s", key)
    assert db.execute("SELECT count(*) FROM msg.business_key_registry").fetchone() == (0,)
    assert db.execute("SELECT count(*) FROM msg.provider_message_id_registry").fetchone() == (0,)
    assert db.execute("SELECT count(*) FROM msg.message_lookup").fetchone() == (0,)
    insert_message(db, business_key="k", provider_message_id="9308878062554710043")


@pytest.mark.parametrize("second_month", [0, 1], ids=["same-month", "other-month"])
def test_concurrent_writes_of_one_msgid_leave_it_on_one_row(db_url, db, second_month):
    ensure_partitions(db, month_start(), 1, schemas=("msg",))
    msg_id = "9308878062554710043"
    outcomes = _race(
        db_url,
        db,
        [
            lambda conn: insert_message(conn, provider_message_id=msg_id, created_at=in_month(0)),
            lambda conn: insert_message(conn, provider_message_id=msg_id, created_at=in_month(second_month)),
        ],
    )
    assert outcomes == ["committed", "duplicate"]
    rows = db.execute("SELECT count(*) FROM msg.outbound_message WHERE provider_message_id = %s", (msg_id,))
    assert rows.fetchone() == (1,)


@pytest.mark.parametrize("second_month", [0, 1], ids=["same-month", "other-month"])
def test_concurrent_updates_writing_one_msgid_leave_it_on_one_row(db_url, db, second_month):
    # The reconciliation's shape: rows without msgIds get theirs by UPDATE, so the statement trigger's plain
    # insert waits for the other transaction's entry; the one that loses is refused.
    ensure_partitions(db, month_start(), 1, schemas=("msg",))
    rows = [insert_message(db, created_at=in_month(0)), insert_message(db, created_at=in_month(second_month))]
    msg_id = "9308878062554710044"

    def write_onto(row):
        return lambda conn: conn.execute(
            "UPDATE msg.outbound_message SET provider_message_id = %s WHERE id = %s AND created_at = %s",
            (msg_id, *row))

    assert _race(db_url, db, [write_onto(row) for row in rows]) == ["committed", "duplicate"]
    held = db.execute("SELECT count(*) FROM msg.outbound_message WHERE provider_message_id = %s", (msg_id,))
    assert held.fetchone() == (1,)


def test_a_msgid_set_by_update_is_unique_across_months(db):
    ensure_partitions(db, month_start(), 1, schemas=("msg",))
    holder = insert_message(db, created_at=in_month(0))
    other = insert_message(db, created_at=in_month(1))
    db.execute("UPDATE msg.outbound_message SET provider_message_id = '77' WHERE id = %s AND created_at = %s", holder)
    # Writing it again onto the same row is fine.
    db.execute("UPDATE msg.outbound_message SET provider_message_id = '77' WHERE id = %s AND created_at = %s", holder)
    with pytest.raises(errors.UniqueViolation, match="duplicate provider_message_id"):
        db.execute("UPDATE msg.outbound_message SET provider_message_id = '77' WHERE id = %s AND created_at = %s", other)
    with pytest.raises(errors.UniqueViolation):
        insert_message(db, provider_message_id="77", created_at=in_month(1, day=5))

    # A changed msgId releases the old one.
    db.execute("UPDATE msg.outbound_message SET provider_message_id = '78' WHERE id = %s AND created_at = %s", holder)
    db.execute("UPDATE msg.outbound_message SET provider_message_id = '77' WHERE id = %s AND created_at = %s", other)
    assert fetch(db, other, "provider_message_id") == ("77",)
    registry = db.execute(
        "SELECT provider_message_id, message_id FROM msg.provider_message_id_registry ORDER BY 1"
    ).fetchall()
    assert registry == [("77", other[0]), ("78", holder[0])]


def test_one_update_writing_a_msgid_onto_two_rows_is_refused_and_registers_nothing(db):
    # The reconciliation's case (rows without msgIds get theirs in one statement), which the registry's
    # trigger takes without joining the old rows: a msgId twice in the statement is still refused.
    ensure_partitions(db, month_start(), 1, schemas=("msg",))
    first = insert_message(db, created_at=in_month(0))
    second = insert_message(db, created_at=in_month(1))
    third = insert_message(db, created_at=in_month(1, day=4))
    statement = """UPDATE msg.outbound_message m SET provider_message_id = v.msg_id
                     FROM (VALUES (%s::bigint, %s::timestamptz, %s), (%s, %s, %s)) v (id, created_at, msg_id)
                    WHERE m.id = v.id AND m.created_at = v.created_at"""
    with pytest.raises(errors.UniqueViolation, match="duplicate provider_message_id"):
        db.execute(statement, (*first, "91", *second, "91"))
    assert db.execute("SELECT count(*) FROM msg.provider_message_id_registry").fetchone() == (0,)
    db.execute(statement, (*first, "91", *second, "92"))
    registry = db.execute("SELECT provider_message_id, message_id FROM msg.provider_message_id_registry ORDER BY 1")
    assert registry.fetchall() == [("91", first[0]), ("92", second[0])]
    with pytest.raises(errors.UniqueViolation, match="duplicate provider_message_id"):
        db.execute(statement, (*first, "91", *third, "92"))  # one row keeps its own, the other takes a held one


def test_a_msgid_already_registered_to_its_own_row_passes_an_update_that_writes_it(db):
    # An entry left for the row itself (written straight into the registry here) makes the statement
    # trigger's plain insert fail; its careful path must then let it through and register the rest.
    ensure_partitions(db, month_start(), 1, schemas=("msg",))
    first = insert_message(db, created_at=in_month(0))
    second = insert_message(db, created_at=in_month(1))
    db.execute("INSERT INTO msg.provider_message_id_registry (provider_message_id, message_id, message_created_at) "
               "VALUES ('55', %s, %s)", first)
    db.execute("""UPDATE msg.outbound_message m SET provider_message_id = v.msg_id
                    FROM (VALUES (%s::bigint, %s::timestamptz, '55'), (%s, %s, '56')) v (id, created_at, msg_id)
                   WHERE m.id = v.id AND m.created_at = v.created_at""", (*first, *second))
    registry = db.execute("SELECT provider_message_id, message_id FROM msg.provider_message_id_registry ORDER BY 1")
    assert registry.fetchall() == [("55", first[0]), ("56", second[0])]
