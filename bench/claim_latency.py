"""Claim latency: median time to claim 500 rows with little and with much history.

    python bench/claim_latency.py [--small 100000] [--large 5000000] [--claims 40] [--batch 500]

Two scratch databases, one with ``--small`` and one with ``--large``
historical rows (finished messages spread over the last 120 days: delivered,
failed, expired, rejected, unknown, billed and with provider ids as the
worker and reconciliation leave them; written in bulk by SQL with triggers
off, since only the rows' presence matters here). Each gets a queue of
pending rows through the real intake and is vacuumed and analysed, as
autovacuum would. Then claims of ``--batch`` rows (the worker's
``claim_candidates.sql`` + ``claim_take.sql`` through ``sms_pipeline.send.claim``, committed) run
alternately on the two databases, so that load from other jobs on the
machine falls on both alike. Reports the medians, their ratio and the main
lines of one claim's plan (EXPLAIN ANALYZE, rolled back) on each database.
"""

from __future__ import annotations

import argparse
import sys
import time
from contextlib import ExitStack
from pathlib import Path

import psycopg

from sms_pipeline.core.clock import RealClock
from sms_pipeline.send.claim import claim
from sms_pipeline.db import queries

sys.path.insert(0, str(Path(__file__).resolve().parent))
from send_support import enqueue, machine_line, median_ms, scratch_database, sms_records  # noqa: E402

WARM_UP = 5
CHUNK = 500_000

# Finished messages as the worker and reconciliation leave them, spread over
# the last 120 days. Parameters: first, last (the generate_series bounds).
HISTORY = """
INSERT INTO msg.outbound_message (
    business_key, tenant_id, channel, message_class, recipient, sender_id, body, encoding, segments,
    state, state_reason, attempt_count, provider_txn_id, provider_message_id, created_at, claimed_at,
    submitted_at, delivered_at, billable_units, cost, cost_currency, final_status, updated_at)
SELECT md5('history-' || g), 'bench', 'sms', k.message_class,
       '9198' || lpad((g %% 100000000)::text, 8, '0'), 'SGCSMS', 'Your order has shipped.', 'GSM7', 1,
       s.state::msg.message_state, s.reason, 1,
       CASE WHEN s.billed AND k.message_class <> 'otp' THEN (6305583318236810379::numeric + g / 500)::text END,
       CASE WHEN s.billed THEN (9308878062554710043::numeric + g)::text END,
       t.created, t.created + interval '1 second',
       CASE WHEN s.billed THEN t.created + interval '2 seconds' END,
       CASE WHEN s.state = 'delivered' THEN t.created + interval '9 seconds' END,
       CASE WHEN s.billed THEN 1 END, CASE WHEN s.billed THEN 0.0079 END, CASE WHEN s.billed THEN 'INR' END,
       s.final, t.created + interval '9 seconds'
  FROM generate_series(%(first)s::bigint, %(last)s::bigint) AS g
 CROSS JOIN LATERAL (SELECT (ARRAY['transactional', 'promotional', 'otp'])[1 + g %% 3] AS message_class) k
 CROSS JOIN LATERAL (SELECT now() - interval '1 hour' - ((g * 7919) %% (120 * 86400)) * interval '1 second'
                            - (g %% 997) * interval '1 millisecond' AS created) t
 CROSS JOIN LATERAL (SELECT CASE WHEN g %% 100 < 85 THEN 'delivered' WHEN g %% 100 < 93 THEN 'failed'
                                 WHEN g %% 100 < 97 THEN 'expired' WHEN g %% 100 < 99 THEN 'rejected'
                                 ELSE 'unknown' END AS state) st
 CROSS JOIN LATERAL (SELECT st.state,
                            st.state IN ('delivered', 'failed', 'expired') AS billed,
                            CASE st.state WHEN 'rejected' THEN 'invalid_mobile'
                                          WHEN 'unknown' THEN 'send_ambiguous' END AS reason,
                            CASE st.state WHEN 'delivered' THEN 'DELIVRD' WHEN 'failed' THEN 'UNDELIV'
                                          WHEN 'expired' THEN 'EXPIRED' END AS final) s
"""


def build(url: str, history: int, queue: int, label: str) -> None:
    started = time.perf_counter()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SET session_replication_role = replica")  # bulk history: no triggers
        for first in range(0, history, CHUNK):
            conn.execute(HISTORY, {"first": first, "last": min(history, first + CHUNK) - 1})
        conn.execute("SET session_replication_role = DEFAULT")
    enqueue(url, sms_records(0, queue, "Your order is ready for pickup.", f"queue-{label}"))
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM (ANALYZE) msg.outbound_message")
        size = conn.execute("SELECT pg_size_pretty(pg_total_relation_size(i.inhrelid)) FROM pg_inherits i "
                            "WHERE i.inhparent = 'msg.outbound_message'::regclass").fetchall()
        total = conn.execute("SELECT count(*) FROM msg.outbound_message").fetchone()[0]
    print(f"{label}: {total:,} rows ({history:,} history + {queue:,} queued) built in "
          f"{time.perf_counter() - started:.0f} s; partitions {', '.join(s for (s,) in size)}", flush=True)


def explain(conn: psycopg.Connection, batch: int) -> str:
    """The plan of one claim, executed and rolled back."""
    text = queries.load("claim_candidates")
    params = {"channel": "sms", "message_class": "transactional", "now": RealClock().now(), "limit": batch}
    with conn.transaction(force_rollback=True):
        rows = conn.execute("EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, SUMMARY ON) " + text, params).fetchall()
    lines = [line for (line,) in rows]
    # The statement's own line and totals; the per-partition detail is the same shape on both.
    return "\n".join(line for line in lines if len(line) - len(line.lstrip()) <= 2
                     and not line.lstrip().startswith("Update on outbound_message_"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--small", type=int, default=100_000, help="historical rows, small database")
    parser.add_argument("--large", type=int, default=5_000_000, help="historical rows, large database")
    parser.add_argument("--claims", type=int, default=40, help="timed claims per database")
    parser.add_argument("--batch", type=int, default=500)
    args = parser.parse_args()
    queue = (args.claims + WARM_UP + 2) * args.batch

    print(f"machine before: {machine_line()}", flush=True)
    with ExitStack() as stack:
        urls = {label: stack.enter_context(scratch_database(f"claim_{label}")) for label in ("small", "large")}
        build(urls["small"], args.small, queue, "small")
        build(urls["large"], args.large, queue, "large")
        conns = {label: stack.enter_context(psycopg.connect(url, autocommit=True)) for label, url in urls.items()}
        timings: dict[str, list[float]] = {label: [] for label in conns}
        for number in range(WARM_UP + args.claims):
            for label, conn in conns.items():
                started = time.perf_counter()
                claimed = claim(conn, channel="sms", message_class="transactional", now=RealClock().now(),
                                limit=args.batch)
                elapsed = time.perf_counter() - started
                assert len(claimed) == args.batch, len(claimed)
                if number >= WARM_UP:
                    timings[label].append(elapsed)
        plans = {label: explain(conn, args.batch) for label, conn in conns.items()}
    print(f"machine after: {machine_line()}")
    small, large = (median_ms(timings[label]) for label in ("small", "large"))
    print(f"claims of {args.batch} rows, {args.claims} timed per database (alternating), {WARM_UP} warm-up")
    print("| historical rows | median claim | fastest | slowest |")
    print("|---|---|---|---|")
    for label, history in (("small", args.small), ("large", args.large)):
        print(f"| {history:,} | {median_ms(timings[label]):.1f} ms | {min(timings[label]) * 1000:.1f} ms "
              f"| {max(timings[label]) * 1000:.1f} ms |")
    print(f"ratio large / small: {large / small:.2f}")
    for label, plan in plans.items():
        print(f"\nplan, {label}:\n{plan}")


if __name__ == "__main__":
    main()
