"""The reconciliation's work tables (sql/V86, docs/design.md "Work tables and the second core").

Each run creates its staged events, candidate pairs and decisions as unlogged
tables in ``reconcile_work`` and drops them before it commits; a run that
fails rolls back and takes them with it. Unlike temporary tables, parallel
workers can read them; a day reconciled with every parallel-safe plan forced
into a worker passes the same checks as the plain run.
"""

from __future__ import annotations

from datetime import timedelta

import psycopg
import pytest

from sms_pipeline.db import queries
from sms_pipeline.reconcile import transaction
from tests.support.numbers import numbers
from tests.support.pushes import codes_from_provider, one_sent, push, run_pass


def work_tables(conn: psycopg.Connection, *, unlogged_only: bool = False) -> list[str]:
    """The relations in reconcile_work (``unlogged_only``: its unlogged tables alone)."""
    return [name for (name,) in conn.execute(
        "SELECT relname FROM pg_class WHERE relnamespace = 'reconcile_work'::regnamespace "
        "AND (NOT %s OR (relkind = 'r' AND relpersistence = 'u')) ORDER BY 1", (unlogged_only,))]


def force_parallel_setting(conn: psycopg.Connection) -> str:
    """The setting that runs every parallel-safe plan in a worker (renamed in Postgres 16)."""
    return "force_parallel_mode" if conn.info.server_version < 160000 else "debug_parallel_query"


class Refused(Exception):
    pass


def test_a_day_run_drops_its_work_tables_and_a_failed_run_leaves_none(world, monkeypatch):
    keys = world.send(numbers(30))
    world.move_to(world.at(world.day + timedelta(days=1), 3))
    world.run_daily(world.day, reconcile=False)
    made: list[list[str]] = []
    run = queries.run

    def fail_at_the_update(target, name, /, **kwargs):
        if name == "reconcile_apply_messages":
            made.append(work_tables(getattr(target, "connection", target), unlogged_only=True))
            raise Refused("the message UPDATE refused")
        return run(target, name, **kwargs)

    monkeypatch.setattr(queries, "run", fail_at_the_update)
    assert not world.run_daily(world.day, ingest=False, must_succeed=False).success
    # the failed run had made its tables, unlogged, in reconcile_work; its rollback took them
    assert {"reconcile_source_rows", "reconcile_new_events", "reconcile_uncorrelated",
            "reconcile_message_decisions"} <= set(made[0])
    assert work_tables(world.conn) == []
    assert {world.row(k)["correlation_result"] for k in keys} == {None}

    monkeypatch.setattr(queries, "run", run)
    world.run_daily(world.day, ingest=False)
    assert work_tables(world.conn) == []
    assert {world.row(k)["correlation_result"] for k in keys} == {"matched"}
    world.run_daily(world.day, ingest=False)  # the next run makes them again
    assert work_tables(world.conn) == []


def test_a_table_left_in_the_work_schema_does_not_stop_the_next_run(world):
    keys = world.send(numbers(5))
    world.move_to(world.at(world.day + timedelta(days=1), 3))
    world.conn.execute("CREATE UNLOGGED TABLE reconcile_work.reconcile_source_rows (left_by_hand int)")
    world.run_daily(world.day)
    assert work_tables(world.conn) == []
    assert {world.row(k)["correlation_result"] for k in keys} == {"matched"}


def test_a_push_pass_drops_its_work_tables(world):
    codes_from_provider(world)
    ((key, msg_id),) = one_sent(world)
    assert push(world, msg_id, "000", done_at=world.clock.now() + timedelta(seconds=5))
    assert run_pass(world).reconciled == 1
    assert world.row(key)["state"] == "delivered"
    assert work_tables(world.conn) == []


def test_the_work_tables_are_read_by_parallel_workers(world):
    """With every parallel-safe plan forced into a worker, a scan of a work table plans a Gather; the same
    rows in a temporary table stay in the leader (the backend's own buffers)."""
    world.send(numbers(20))
    world.move_to(world.at(world.day + timedelta(days=1), 3))
    world.run_daily(world.day, reconcile=False)
    conn = world.conn

    def plan(table: str) -> str:
        return "\n".join(line for (line,) in conn.execute(f"EXPLAIN SELECT count(*) FROM {table}"))

    with pytest.raises(Refused), transaction.reconciliation(conn, 64):
        queries.run(conn, "reconcile_receipts_normalise", report_date=world.day, push_days=[])
        assert conn.execute("SELECT count(*) FROM reconcile_work.reconcile_source_rows").fetchone()[0] >= 20
        conn.execute("CREATE TEMPORARY TABLE source_rows_in_the_leader AS "
                     "SELECT * FROM reconcile_work.reconcile_source_rows")
        conn.execute(f"SET LOCAL {force_parallel_setting(conn)} = on")
        assert "Gather" in plan("reconcile_work.reconcile_source_rows")
        assert "Gather" not in plan("source_rows_in_the_leader")
        raise Refused  # roll back: nothing of the day is stored
    assert work_tables(conn) == []


@pytest.mark.parametrize("forced", [False, True], ids=["plain", "parallel_forced"])
def test_a_day_ends_the_same_with_parallel_plans_forced(world, forced):
    """Every statement of the run that can run in a worker does (the database's setting, so the run's own
    connections take it), and the day ends as the simulator's outcomes say, as the plain run does (the
    same checks; the two worlds' keys and times differ, so their rows are not compared one by one)."""
    if forced:
        name = world.conn.execute("SELECT current_database()").fetchone()[0]
        world.conn.execute(f'ALTER DATABASE "{name}" SET {force_parallel_setting(world.conn)} = on')
    keys = world.send(numbers(60))
    download_at = world.at(world.day + timedelta(days=1), 3)
    world.move_to(download_at)
    world.run_daily(world.day)
    for key in keys:
        row = world.row(key)
        assert (row["correlation_result"], row["provider_message_id"]) == ("matched", world.msg_id_of(row["recipient"]))
        assert row["state"] == world.expected_state(row["provider_message_id"], download_at)
    assert work_tables(world.conn) == []
