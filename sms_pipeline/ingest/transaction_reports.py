"""Fetch by-transaction reports for the transactions of day D that are still open.

Which transactions: those with rows awaiting a final status whose attempt
time lies in provider day D and for which the day report shows no final
status yet (``sql/queries/ingest_open_transactions.sql``). Calls run on a
bounded thread pool; the client paces them and retries 429 / 5xx / time-outs
with back-off. Each answer is stored as it arrives, in its own short
transaction (HTTP never runs inside one), so a run that dies keeps what it
stored.

Storage rules (``dlr.txn_report_fetches`` / ``dlr.txn_report_rows``): an
answer identical to the stored one writes nothing; a changed answer replaces
the transaction's rows; an empty answer ("no report yet") is recorded for a
transaction that has nothing stored, but never wipes rows an earlier answer
brought (the provider does not forget receipts; an empty list then is a
glitch, not news). For the same reason an answer with fewer rows than the
stored one is refused and writes nothing (docs/design.md#report-guards): the
pass stores the other answers and then raises ``ReportShrinkRefused``, unless
the caller passes ``allow_shrink``.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from datetime import date
from types import MappingProxyType
from typing import Literal, Protocol
from zoneinfo import ZoneInfo

import psycopg

from sms_pipeline.core.clock import Clock
from sms_pipeline.core.provider_time import day_bounds
from sms_pipeline.db import queries, report_guards
from sms_pipeline.ingest.status_counts import StatusCounts, final_status_spellings
from sms_pipeline.ingest.times import consistent_done_time
from sms_pipeline.provider.results import ProviderCallError, TxnReportRow

Stored = Literal["changed", "unchanged", "empty"]
_RULE = "a by-transaction report only grows"

_COLUMNS = (
    "transaction_id", "row_no", "report_date", "msg_id", "mobile", "sender_name", "status", "cause",
    "provider_submit_at", "provider_done_at",
)  # fmt: skip
_COLUMN_LIST = queries.column_list(_COLUMNS)


class TransactionReportSource(Protocol):
    """What this module needs from the provider client (thread-safe)."""

    def transaction_report(self, transaction_id: str, from_date: date, to_date: date) -> list[TxnReportRow]: ...


@dataclass(frozen=True)
class TransactionReports:
    """What one pass over day ``day`` did."""

    day: date
    transactions: int  # open transactions asked about
    changed: int  # answers that replaced what was stored
    unchanged: int  # answers identical to what was stored: nothing written
    empty: int  # "no report yet"
    rows: int  # rows in the answers received
    statuses: StatusCounts
    failed: Mapping[str, str]  # transaction id -> why (after the client's retries)
    duration_s: float


def open_transactions(conn: psycopg.Connection, day: date, tz: ZoneInfo) -> list[str]:
    """Transaction ids of day ``day`` with rows still waiting for a final status."""
    start, end = day_bounds(day, tz)
    rows = queries.run(conn, "ingest_open_transactions", report_date=day, day_start=start, day_end=end,
                       final_words=final_status_spellings()).fetchall()
    return [transaction_id for transaction_id, _ in rows]


def fetch_transaction_reports(
    conn: psycopg.Connection,
    client: TransactionReportSource,
    day: date,
    tz: ZoneInfo,
    clock: Clock,
    *,
    concurrency: int,
    transaction_ids: Sequence[str] | None = None,
    allow_shrink: bool = False,
) -> TransactionReports:
    """Ask for the report of each open transaction of ``day`` and store the answers.

    ``transaction_ids`` defaults to :func:`open_transactions`. A transaction
    whose calls keep failing is listed in ``failed``; the others are stored.
    Answers smaller than the stored ones are refused (nothing of theirs is
    written): once the others are stored, ``ReportShrinkRefused`` names the
    first and how many. ``conn`` must not be inside a transaction.
    """
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, got {concurrency}")
    started = time.perf_counter()
    ids = list(open_transactions(conn, day, tz) if transaction_ids is None else transaction_ids)
    outcomes: Counter[Stored] = Counter()
    raw_statuses: Counter[str] = Counter()
    failed: dict[str, str] = {}
    refused: dict[str, report_guards.ReportShrinkRefused] = {}
    rows_received = 0
    with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="txn-report") as pool:
        pending: dict[Future[list[TxnReportRow]], str] = {
            pool.submit(client.transaction_report, transaction_id, day, day): transaction_id
            for transaction_id in ids
        }
        try:
            for future in as_completed(list(pending)):
                transaction_id = pending.pop(future)
                try:
                    answer = future.result()
                except ProviderCallError as exc:
                    failed[transaction_id] = str(exc)
                    continue
                rows_received += len(answer)
                raw_statuses.update(row.status for row in answer)
                try:
                    stored = store_transaction_report(conn, transaction_id, day, answer, tz, clock,
                                                      allow_shrink=allow_shrink)
                except report_guards.ReportShrinkRefused as exc:
                    refused[transaction_id] = exc
                    continue
                outcomes[stored] += 1
        except BaseException:
            for future in pending:  # a storage error stops the pass: do not keep calling the provider
                future.cancel()
            raise
    if refused:
        first = refused[min(refused)]
        if len(refused) == 1:
            raise first
        raise report_guards.ReportShrinkRefused(
            f"by-transaction reports {day.isoformat()}: {len(refused)} of {len(ids)} refused, the others are "
            f"stored; first: {first}"
        )
    return TransactionReports(
        day=day,
        transactions=len(ids),
        changed=outcomes["changed"],
        unchanged=outcomes["unchanged"],
        empty=outcomes["empty"],
        rows=rows_received,
        statuses=StatusCounts.fold(raw_statuses.items()),
        failed=MappingProxyType(dict(sorted(failed.items()))),
        duration_s=time.perf_counter() - started,
    )


def store_transaction_report(
    conn: psycopg.Connection,
    transaction_id: str,
    day: date,
    answer: Sequence[TxnReportRow],
    tz: ZoneInfo,
    clock: Clock,
    *,
    allow_shrink: bool = False,
) -> Stored:
    """Store one answer by the rules in the module docstring; say what happened.

    Raises ``ReportShrinkRefused`` (nothing written) for a non-empty answer
    with fewer rows than the stored one, unless ``allow_shrink``.
    """
    records = [_record(transaction_id, day, row_no, row, tz) for row_no, row in enumerate(answer, start=1)]
    checksum = _checksum(records)
    with conn.transaction():
        stored = queries.run(conn, "ingest_txn_report_fetch", transaction_id=transaction_id).fetchone()
        if stored is not None and (stored[0] == checksum or (not records and stored[1] > 0)):
            return "empty" if not records else "unchanged"
        if allow_shrink:
            report_guards.allow_shrink(conn)  # the database's guard too, for this transaction
        elif stored is not None and len(records) < stored[1]:
            raise report_guards.refused(
                f"by-transaction report {day.isoformat()}, transaction {transaction_id}",
                report_guards.amount(len(records), "row"), report_guards.are_stored(stored[1]), _RULE,
            )
        queries.run(conn, "ingest_txn_report_fetch_save", transaction_id=transaction_id, report_date=day,
                    checksum=checksum, rows=len(records), fetched_at=clock.now())
        queries.run(conn, "ingest_txn_report_rows_clear", transaction_id=transaction_id)
        with queries.copy(conn, "ingest_txn_report_rows_copy", identifiers={"columns": _COLUMN_LIST}) as sink:
            for record in records:
                sink.write_row(record)
        # Erased numbers stay erased (docs/design.md#redaction-and-erasure).
        queries.run(conn, "erasure_mask_landed", kind="txn", scope_date=None, transaction_id=transaction_id)
    return "changed" if records else "empty"


def _record(transaction_id: str, day: date, row_no: int, row: TxnReportRow, tz: ZoneInfo) -> tuple:
    done_at = consistent_done_time(row.submit_time, row.delivery_time, tz)
    return (transaction_id, row_no, day, row.msg_id, row.mobile, row.sender, row.status, row.cause,
            row.submit_time, done_at)


def _checksum(records: Sequence[tuple]) -> str:
    """SHA-256 of the answer as stored (canonical JSON, times in ISO form)."""
    canonical = json.dumps(
        [[None if value is None else str(value) for value in record[3:]] for record in records],
        separators=(",", ":"), ensure_ascii=False,
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()
