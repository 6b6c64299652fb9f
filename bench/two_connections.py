"""The floor's two big writes on one connection, and split in halves over two connections at once.

    python bench/reconcile_day.py --sizes 1000000 --naive-rows 5000 --keep-database   # "kept database NAME"
    python bench/two_connections.py NAME [--rounds 4]

A lab measurement for issue 24 (bench/RESULTS.md): how much of the day's writes a second core could take,
if the reconciliation gave up its one transaction. Two statements of ``bench/reconcile_day.py``, on the
copies its kept database holds:

- the guarded floor's UPDATE (the message copy with the table's UPDATE triggers, step 5 there);
- the durable floor's INSERT of the day's events (the copy of ``dlr.delivery_receipts``, step 6 there).

Each write is timed as one statement on one connection, and as its rows in two halves (the messages by
id, the events by msgId) on two connections started together, each half in its own transaction: the
wall time from the first half's start to the last half's end. Every timed write is rolled back, and
starts from the same state: the msgId registry and the events' copy emptied (the rolled-back writes'
dead entries would otherwise slow the next one), the message copy vacuumed, a CHECKPOINT. The order
alternates (one then two in odd rounds, two then one in even ones), so a drift over the run does not
favour either.

The guarded UPDATE registers its msgIds in the registry, as on the day before the pipeline's, so the
registry is emptied before each write and rebuilt from the message table at the end, as the benchmark
kept it; the events' copy is left empty. The script changes the kept database, so it refuses one whose
name is not the reconciliation benchmark's.
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ThreadPoolExecutor
from threading import Barrier, BrokenBarrierError

from sms_pipeline import settings as settings_module
from sms_pipeline.db import connection

from day_traffic import TZ_NAME
from reconcile_day import durable_insert, floor_update

SCRATCH_PREFIX = "sms_bench_reconcile_"
GUARDED_UPDATE = floor_update("guarded_message", guarded=True)
_HALF_START_TIMEOUT_S = 60


def fresh_start(url: str) -> None:
    """The state every timed write starts from (module docstring)."""
    with connection.connect_url(url, autocommit=True) as conn:
        conn.execute("TRUNCATE msg.provider_message_id_registry, bench_floor.durable_receipts")
        conn.execute("VACUUM bench_floor.guarded_message")
        conn.execute("CHECKPOINT")


def timed(url: str, statement: str, params: dict, work_mem_mb: int, start: Barrier | None) -> tuple[float, float, int]:
    """``statement`` in its own transaction, rolled back after its clock stops: (started, ended, rows)."""
    try:
        with connection.connect_url(url) as conn:
            conn.execute("SELECT set_config('work_mem', %s, true)", (f"{work_mem_mb}MB",))
            if start is not None:
                start.wait(_HALF_START_TIMEOUT_S)
            started = time.perf_counter()
            rows = conn.execute(statement, params).rowcount
            ended = time.perf_counter()
            conn.rollback()
        return started, ended, rows
    except Exception:
        if start is not None:
            start.abort()  # the other half stops waiting at once
        raise


def on_one(url: str, whole: str, params: dict, work_mem_mb: int) -> tuple[float, int]:
    fresh_start(url)
    started, ended, rows = timed(url, whole, params, work_mem_mb, None)
    return ended - started, rows


def on_two(url: str, halves: tuple[str, str], params: dict, work_mem_mb: int) -> tuple[float, list[int]]:
    """Wall time of the two halves at once (the earlier start to the later end), and each half's rows."""
    fresh_start(url)
    start = Barrier(2)
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = [pool.submit(timed, url, half, params, work_mem_mb, start) for half in halves]
        # A half's error is raised before the other half's broken barrier, which it caused.
        for future in sorted(futures, key=lambda f: isinstance(f.exception(), BrokenBarrierError)):
            future.result()
        results = [future.result() for future in futures]
    return max(e for _, e, _ in results) - min(s for s, _, _ in results), [rows for _, _, rows in results]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("database", help="a database kept by reconcile_day.py --keep-database")
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    if not args.database.startswith(SCRATCH_PREFIX):
        parser.error(f"not a reconciliation benchmark's scratch database ({SCRATCH_PREFIX}...): it would be changed")
    settings = settings_module.load()
    work_mem_mb = settings.reconcile_work_mem_mb
    url = connection.with_database(connection.server_url(settings), args.database)
    with connection.connect_url(url, autocommit=True) as conn:
        (message_split,) = conn.execute(
            """SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY m.id) FROM bench_floor.guarded_message m
                 JOIN bench_floor.receipts r ON m.provider_txn_id = r.transaction_id AND m.recipient = r.recipient
            """).fetchone()
        (msgid_split,) = conn.execute(
            'SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY msg_id COLLATE "C") FROM bench_floor.raw_rows'
        ).fetchone()
    writes = {
        "guarded UPDATE": (GUARDED_UPDATE, (f"{GUARDED_UPDATE} AND m.id <= %(split)s",
                                            f"{GUARDED_UPDATE} AND m.id > %(split)s"), {"split": message_split}),
        "durable INSERT": (durable_insert(), (durable_insert(' AND msg_id COLLATE "C" <= %(split)s'),
                                              durable_insert(' AND msg_id COLLATE "C" > %(split)s')),
                           {"tz": TZ_NAME, "split": msgid_split}),
    }
    print("| round | write | rows (halves) | one connection s | two connections s (wall) | two / one |")
    print("|---|---|---|---|---|---|")
    try:
        for round_no in range(1, args.rounds + 1):
            for name, (whole, halves, params) in writes.items():
                if round_no % 2:
                    one_s, rows = on_one(url, whole, params, work_mem_mb)
                    two_s, half_rows = on_two(url, halves, params, work_mem_mb)
                else:
                    two_s, half_rows = on_two(url, halves, params, work_mem_mb)
                    one_s, rows = on_one(url, whole, params, work_mem_mb)
                if sum(half_rows) != rows:
                    raise RuntimeError(f"{name}: the halves wrote {half_rows} rows, the whole {rows:,}")
                print(f"| {round_no} | {name} | {rows:,} ({half_rows[0]:,} + {half_rows[1]:,}) | {one_s:.2f} | "
                      f"{two_s:.2f} | {two_s / one_s:.2f} |", flush=True)
    finally:
        with connection.connect_url(url) as conn, conn.transaction():
            conn.execute("TRUNCATE msg.provider_message_id_registry")
            conn.execute("""INSERT INTO msg.provider_message_id_registry (provider_message_id, message_id,
                                                                       message_created_at)
                            SELECT provider_message_id, id, created_at FROM msg.outbound_message
                             WHERE provider_message_id IS NOT NULL""")


if __name__ == "__main__":
    main()
