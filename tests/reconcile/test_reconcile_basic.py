"""A plain day sent by the worker: every submitted message is matched and follows its final receipt."""

from __future__ import annotations

from datetime import timedelta

import psycopg

from sms_pipeline.db import queries
from sms_pipeline.reconcile import transaction
from tests.support.numbers import numbers


def test_a_day_of_batch_sends_reconciles_to_the_simulators_outcomes(world):
    # 200 messages: some still open at the download whatever the day's draws
    # (each has about a 6% chance of no final receipt within the first day).
    keys = world.send(numbers(200))
    download_at = world.at(world.day + timedelta(days=1), 3)
    world.move_to(download_at)
    world.run_daily(world.day)
    states = set()
    for key in keys:
        row = world.row(key)
        assert (row["correlation_result"], row["provider_message_id"]) == ("matched", world.msg_id_of(row["recipient"]))
        assert row["state"] == world.expected_state(row["provider_message_id"], download_at)
        states.add(row["state"])
    assert {"delivered", "failed", "submitted"} <= states  # the simulator's mix reached the rows


def test_the_day_run_takes_the_configured_memory_for_its_own_transaction_only(world, monkeypatch):
    """SMS_PIPELINE_RECONCILE_WORK_MEM_MB reaches the message UPDATE through the Dagster resource, and
    ends with the transaction (SET LOCAL), as do the run's parallel_tuple_cost, its random_page_cost and
    the statistics target its work tables are analyzed at: the same connection's statements after it have
    the server's own values."""
    world.settings = world.settings.model_copy(update={"reconcile_work_mem_mb": 96})
    # connection, statement, (work_mem, parallel_tuple_cost, default_statistics_target, random_page_cost),
    # in a transaction
    seen: list[tuple[psycopg.Connection, str, tuple[str, str, str, str], bool]] = []
    run = queries.run

    def settings(conn: psycopg.Connection) -> tuple[str, str, str, str]:
        return conn.execute("SELECT current_setting('work_mem'), current_setting('parallel_tuple_cost'), "
                            "current_setting('default_statistics_target'), "
                            "current_setting('random_page_cost')").fetchone()

    analyzed: list[tuple[str, str, str]] = []  # (schema, table, default_statistics_target) of each ANALYZE

    def run_and_look(target, name, /, **kwargs):
        conn = getattr(target, "connection", target)  # a cursor or a connection
        in_transaction = conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE
        seen.append((conn, name, settings(conn), in_transaction))
        if name == "analyze_table":
            schema, _, table = kwargs["identifiers"]["table"].as_string(conn).replace('"', "").rpartition(".")
            analyzed.append((schema, table, seen[-1][2][2]))
        return run(target, name, **kwargs)

    monkeypatch.setattr(queries, "run", run_and_look)
    world.send(numbers(3))
    world.move_to(world.at(world.day + timedelta(days=1), 3))
    server_default = settings(world.conn)

    world.run_daily(world.day)

    (update,) = [i for i, (_, name, _, _) in enumerate(seen) if name == "reconcile_apply_messages"]
    conn, _, (work_mem, tuple_cost, _, page_cost), _ = seen[update]
    assert work_mem == "96MB" != server_default[0]
    # the run's own price for a row a parallel worker hands over (docs/design.md "Work tables and the second core")
    assert float(tuple_cost) == float(transaction.PARALLEL_TUPLE_COST) != float(server_default[1])
    # and for a page read out of order (docs/design.md "Index probes late in the month")
    assert float(page_cost) == float(transaction.RANDOM_PAGE_COST) != float(server_default[3])
    # each work table a join reads analyzed once, on the run's smaller sample; the day report's load
    # analyzes its stored rows at the server's target (docs/design.md "Statistics of the work tables")
    work = [(table, target) for schema, table, target in analyzed if schema == transaction.WORK_SCHEMA]
    assert sorted(table for table, _ in work) == sorted(
        ["reconcile_new_events", "reconcile_uncorrelated", "reconcile_pairs_by_msgid",
         "reconcile_pairs_by_transaction", "reconcile_pairs_by_reconstruction", "reconcile_decisions",
         "reconcile_unmatched", "reconcile_events", "reconcile_message_decisions"])
    assert {target for _, target in work} == {transaction.WORK_TABLE_STATISTICS_TARGET} != {server_default[2]}
    stored = [target for schema, _, target in analyzed if schema != transaction.WORK_SCHEMA]
    assert stored and set(stored) == {server_default[2]}
    after = [found for c, _, found, in_transaction in seen[update + 1:] if c is conn and not in_transaction]
    assert after and set(after) == {server_default}
