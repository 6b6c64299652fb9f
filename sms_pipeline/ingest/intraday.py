"""Pull today's receipts through the paged getDlr report (``/report/status``).

The day report only exists once the provider day has closed; OTP messages
have no transaction id for a by-transaction report. The getDlr pull of the
current provider-local day fills that gap within the hour.

Pages are staged in a session-local temporary table as they arrive, each in
its own short transaction, so no transaction stays open across HTTP calls and
memory stays flat. Then, in one transaction, the day's rows in
``dlr.getdlr_rows`` are replaced and the checkpoint (kind ``getdlr``) is
written, unless the pull's checksum and text key id equal the stored ones:
then nothing is written at all.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime
from typing import Protocol
from zoneinfo import ZoneInfo

import psycopg

from sms_pipeline.core import fingerprint
from sms_pipeline.core.clock import Clock
from sms_pipeline.core.provider_time import local_date
from sms_pipeline.db import queries
from sms_pipeline.ingest import checkpoints
from sms_pipeline.ingest.status_counts import StatusCounts
from sms_pipeline.provider.results import DlrRow

REPORT_KIND = "getdlr"
DEFAULT_PAGE_LIMIT = 1000
_LOCK_CLASS = 0x5A5_0702  # pg_advisory_xact_lock(class, day): one pull of a day at a time
_COLUMNS = (
    "report_date", "row_no", "msg_id", "transaction_id", "mobile", "sender_name", "message_fingerprint",
    "status", "cause", "error_code", "provider_submit_at", "provider_done_at",
)  # fmt: skip
_COLUMN_LIST = queries.column_list(_COLUMNS)


class DeliveryReportSource(Protocol):
    """What this module needs from the provider client."""

    def delivery_reports(self, from_date: date, to_date: date, page_limit: int = ...) -> Iterable[DlrRow]: ...


@dataclass(frozen=True)
class IntradayLoad:
    """What one pull of day ``day`` did (or found already stored)."""

    day: date
    rows: int
    checksum: str  # SHA-256 of the pull as stored (canonical JSON lines)
    duplicates: int  # rows repeating an earlier (msgId, status) pair
    statuses: StatusCounts
    skipped_same_checksum: bool
    duration_s: float
    loaded_at: datetime | None


def load_intraday_delivery_reports(
    conn: psycopg.Connection,
    client: DeliveryReportSource,
    tz: ZoneInfo,
    clock: Clock,
    *,
    text_key: bytes,
    day: date | None = None,
    page_limit: int = DEFAULT_PAGE_LIMIT,
) -> IntradayLoad:
    """Pull every getDlr row of ``day`` (default: today, provider-local) and store it.

    ``conn`` must not be inside a transaction and must not be shared while
    this runs (the staging table belongs to its session). ``text_key``: the
    message texts' HMAC key; the texts are stored only as its fingerprints.
    """
    started = time.perf_counter()
    day = day or local_date(clock.now(), tz)
    fetched_at = clock.now()
    with conn.transaction():
        queries.run(conn, "ingest_getdlr_stage_create")
        queries.run(conn, "ingest_getdlr_stage_clear")
    try:
        rows, size, checksum = _stage(conn, client, day, page_limit, text_key)
        key_id = fingerprint.key_id(text_key)
        with conn.transaction():
            queries.run(conn, "advisory_xact_lock_pair", lock_class=_LOCK_CLASS, key=day.toordinal())
            previous = checkpoints.read(conn, REPORT_KIND, day)
            if previous is not None and previous.unchanged(checksum, key_id):
                return _summarise(conn, day, checksum, skipped=True, loaded_at=previous.loaded_at, started=started)
            queries.run(conn, "ingest_getdlr_clear_day", report_date=day)
            queries.run(conn, "ingest_getdlr_store")
            # Erased numbers stay erased (docs/design.md#redaction-and-erasure).
            queries.run(conn, "erasure_mask_landed", kind="getdlr", scope_date=day, transaction_id=None)
            loaded_at = clock.now()
            queries.run(conn, "ingest_report_checkpoint_save", report_kind=REPORT_KIND, report_date=day,
                        checksum=checksum, rows=rows, bytes=size, fetched_at=fetched_at, loaded_at=loaded_at,
                        fingerprint_key_id=key_id)
            return _summarise(conn, day, checksum, skipped=False, loaded_at=loaded_at, started=started)
    finally:
        with conn.transaction():
            queries.run(conn, "ingest_getdlr_stage_drop")


def _stage(conn: psycopg.Connection, client: DeliveryReportSource, day: date, page_limit: int,
           text_key: bytes) -> tuple[int, int, str]:
    """Copy the pull into the staging table page by page; (rows, canonical bytes, checksum)."""
    digest = hashlib.sha256()
    size = rows = 0
    batch: list[tuple] = []
    for row in client.delivery_reports(day, day, page_limit):
        rows += 1
        record = _record(day, rows, row, text_key)
        line = (json.dumps([None if v is None else _canonical(v) for v in record[2:]], ensure_ascii=False)
                + "\n").encode()
        digest.update(line)
        size += len(line)
        batch.append(record)
        if len(batch) >= page_limit:
            _copy(conn, batch)
    _copy(conn, batch)
    return rows, size, digest.hexdigest()


def _copy(conn: psycopg.Connection, batch: list[tuple]) -> None:
    if not batch:
        return
    with conn.transaction(), \
            queries.copy(conn, "ingest_getdlr_stage_copy", identifiers={"columns": _COLUMN_LIST}) as sink:
        for record in batch:
            sink.write_row(record)
    batch.clear()


def _canonical(value: object) -> str:
    return value.hex() if isinstance(value, bytes) else str(value)


def _record(day: date, row_no: int, row: DlrRow, text_key: bytes) -> tuple:
    """A row in ``_COLUMNS`` order; the text only as its keyed fingerprint (epoch times need no DST care)."""
    return (
        day, row_no, row.msg_id, row.transaction_id, row.mobile, row.sender,
        fingerprint.text_fingerprint(text_key, row.text), row.status, row.cause, row.error_code,
        row.submit_time, row.delivery_time,
    )  # fmt: skip


def _summarise(
    conn: psycopg.Connection, day: date, checksum: str, *, skipped: bool, loaded_at: datetime, started: float
) -> IntradayLoad:
    params = {"report_date": day}
    rows, duplicates = queries.run(conn, "ingest_getdlr_stats", **params).fetchone()
    statuses = StatusCounts.fold(queries.run(conn, "ingest_getdlr_status_counts", **params))
    return IntradayLoad(
        day=day,
        rows=rows,
        checksum=checksum,
        duplicates=duplicates,
        statuses=statuses,
        skipped_same_checksum=skipped,
        duration_s=time.perf_counter() - started,
        loaded_at=loaded_at,
    )
