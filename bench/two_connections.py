"""The floor's two big writes on one connection, and split in halves over two connections at once.

    python bench/reconcile_day.py --sizes 1000000 --naive-rows 5000 --keep-database   # "kept database NAME"
    python bench/two_connections.py NAME [--rounds 3]

A lab measurement for issue 24 (bench/RESULTS.md): how much of the day's writes a second core could take,
if the reconciliation gave up its one transaction. Two statements of ``bench/reconcile_day.py``, on the
tables its kept database holds:

- the guarded floor's UPDATE (the message copy with the table's UPDATE triggers, step 5 there);
- the durable floor's INSERT of the day's events (the copy of ``dlr.delivery_receipts``, step 6 there).

Each round, for each statement: VACUUM and CHECKPOINT, the statement as one, rolled back; VACUUM and
CHECKPOINT, then its rows in two halves (the messages by id, the events by msgId), one half on each of two
connections started together, each in its own transaction, rolled back. It prints both times and their
ratio, measured in the same round.

The kept database is changed for good: the msgId registry is emptied (the guarded UPDATE registers its
msgIds there, as on the day before the pipeline's) and so is the events' copy. So the script refuses a
database whose name is not one of the benchmarks' scratch databases.
"""

from __future__ import annotations

import argparse
import threading
import time

import psycopg

from sms_pipeline import settings as settings_module
from sms_pipeline.db import connection

from day_traffic import TZ_NAME
from reconcile_day import durable_insert, floor_update

SCRATCH_PREFIX = "sms_bench_reconcile_"
UPDATE = floor_update("guarded_message", guarded=True)


def fresh_start(url: str) -> None:
    """The rolled-back writes' dead rows gone, and no checkpoint owed, before each timed write."""
    with connection.connect_url(url, autocommit=True) as conn:
        conn.execute("VACUUM bench_floor.guarded_message, bench_floor.durable_receipts")
        conn.execute("CHECKPOINT")


def timed(url: str, statement: str, params: dict, work_mem_mb: int, start: threading.Barrier | None,
          out: list[tuple[float, int]]) -> None:
    """``statement`` in its own transaction, rolled back; appends (seconds, rows) to ``out``."""
    with connection.connect_url(url) as conn:
        conn.execute("SELECT set_config('work_mem', %s, true)", (f"{work_mem_mb}MB",))
        if start is not None:
            start.wait()
        started = time.perf_counter()
        rows = conn.execute(statement, params).rowcount
        out.append((time.perf_counter() - started, rows))
        conn.rollback()


def one_and_two(url: str, whole: str, halves: tuple[str, str], params: dict, work_mem_mb: int) -> tuple[float, float]:
    """Seconds of ``whole`` on one connection, then of ``halves`` at once on two (wall time); checks the rows."""
    fresh_start(url)
    one: list[tuple[float, int]] = []
    timed(url, whole, params, work_mem_mb, None, one)
    fresh_start(url)
    two: list[tuple[float, int]] = []
    start = threading.Barrier(2)
    threads = [threading.Thread(target=timed, args=(url, half, params, work_mem_mb, start, two)) for half in halves]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - started
    if len(two) != 2 or sum(rows for _, rows in two) != one[0][1]:
        raise RuntimeError(f"the halves wrote {[rows for _, rows in two]} rows, the whole {one[0][1]:,}")
    return one[0][0], wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("database", help="a database kept by reconcile_day.py --keep-database")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if not args.database.startswith(SCRATCH_PREFIX):
        parser.error(f"not a reconciliation benchmark's scratch database ({SCRATCH_PREFIX}...): it would be changed")
    settings = settings_module.load()
    url = connection.with_database(connection.server_url(settings), args.database)
    with connection.connect_url(url, autocommit=True) as conn:
        (message_split,) = conn.execute(
            """SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY m.id) FROM bench_floor.guarded_message m
                 JOIN bench_floor.receipts r ON m.provider_txn_id = r.transaction_id AND m.recipient = r.recipient
            """).fetchone()
        (msgid_split,) = conn.execute(
            'SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY msg_id COLLATE "C") FROM bench_floor.raw_rows'
        ).fetchone()
        conn.execute("TRUNCATE msg.provider_message_id_registry, bench_floor.durable_receipts")
    writes = {
        "guarded UPDATE": (UPDATE, (f"{UPDATE} AND m.id <= %(split)s", f"{UPDATE} AND m.id > %(split)s"),
                           {"split": message_split}),
        "durable INSERT": (durable_insert(), (durable_insert(' AND msg_id COLLATE "C" <= %(split)s'),
                                              durable_insert(' AND msg_id COLLATE "C" > %(split)s')),
                           {"tz": TZ_NAME, "split": msgid_split}),
    }
    print("| round | write | one connection s | two connections s (wall) | two / one |")
    print("|---|---|---|---|---|")
    for round_no in range(1, args.rounds + 1):
        for name, (whole, halves, params) in writes.items():
            one, two = one_and_two(url, whole, halves, params, settings.reconcile_work_mem_mb)
            print(f"| {round_no} | {name} | {one:.2f} | {two:.2f} | {two / one:.2f} |", flush=True)


if __name__ == "__main__":
    main()
