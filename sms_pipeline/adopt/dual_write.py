"""Dual write for the expand phase of an adoption (issue 23, docs/adoption.md).

The legacy database cannot write into ours, so a trigger there copies each
recorded send into an outbox table beside the legacy table
(``sms_pipeline_adopt_outbox``), and :func:`sync` moves the outbox into
``msg.outbound_message`` through the backfill's own mapping
(:func:`sms_pipeline.adopt.backfill.adopt_legacy_rows`: never ``pending``,
so our worker never re-sends what the old sender sent). A batch is adopted
and committed here first, then deleted there: a crash between the two
re-reads the batch, and the adoption, idempotent, inserts nothing twice. A
legacy row recorded again after its adoption (its answer stored in a second
statement, or the row sent again) is checked against what was adopted: an
``unknown`` row that now has a usable transaction id becomes ``submitted``;
another id is a second billed send, reported (sync, verify) and never
adopted silently.

:func:`compare` checks both sides day by day before the cutover, and
:func:`cutover_steps` lists what still stands in the way of it; the legacy
rows never sent are then enqueued as ``pending`` through the normal intake
(:func:`enqueue_unsent`), with the business key the backfill gives them.

Every statement run on the legacy database is a ``sql/queries/adopt_legacy_*``
file; the legacy column names come from the map, always as quoted
identifiers (or as literals, for the trigger's arguments).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

import psycopg
from psycopg import sql

from sms_pipeline.adopt import backfill, legacy, responses
from sms_pipeline.adopt.mapping import ColumnMap, LegacyRow
from sms_pipeline.adopt.responses import Outcome
from sms_pipeline.core import provider_time, segments
from sms_pipeline.core.clock import Clock
from sms_pipeline.core.input_lines import InvalidField
from sms_pipeline.db import queries
from sms_pipeline.errors import UserError
from sms_pipeline.intake import messages as intake

log = logging.getLogger(__name__)

OUTBOX = "sms_pipeline_adopt_outbox"
# The order sms_pipeline_adopt_capture reads its trigger arguments in.
_TRIGGER_COLUMNS = ("id", "phone", "message", "sent", "response", "created_at", "event")
_INTEGER_TYPES = frozenset({"smallint", "integer", "bigint"})
# Legacy rows read per round trip when a whole table is scanned (verify, unsent).
_SCAN_ROWS = 5_000
# More recorded sends than this waiting in the outbox: sync is falling behind the old sender.
BACKLOG_WARNING = 10_000
INSTALL_LOCK_TIMEOUT = "5s"


class LegacyTableMissing(UserError):
    """The legacy table (or the outbox) is not in the legacy database."""


class LegacyTableBusy(UserError):
    """The installation could not lock the legacy table in time (a long transaction holds it)."""


def _table_text(conn: psycopg.Connection, columns: ColumnMap) -> str:
    """The legacy table's name as SQL text, for ``to_regclass``."""
    return legacy.table_identifier(columns.table).as_string(conn)


def _require_table(legacy_conn: psycopg.Connection, columns: ColumnMap) -> None:
    if not queries.scalar(legacy_conn, "adopt_legacy_table_exists", table=_table_text(legacy_conn, columns)):
        raise LegacyTableMissing(f"no table {columns.table} in the legacy database")


def _check_columns(legacy_conn: psycopg.Connection, columns: ColumnMap) -> None:
    """Every mapped column exists, the id is an integer: a trigger reading a wrong name would record nothing."""
    found = dict(queries.run(legacy_conn, "adopt_legacy_columns", table=_table_text(legacy_conn, columns)))
    missing = [theirs for theirs in columns.columns().values() if theirs not in found]
    if missing:
        raise LegacyTableMissing(f"legacy table {columns.table} has no column {', '.join(missing)} (see --map)")
    if found[columns.id] not in _INTEGER_TYPES:
        raise UserError(f"legacy table {columns.table}: the id column {columns.id} is {found[columns.id]}, "
                        "not an integer (the adoption keys rows by an integer id)")


def _outbox_exists(legacy_conn: psycopg.Connection) -> bool:
    return bool(queries.scalar(legacy_conn, "adopt_legacy_table_exists", table=OUTBOX))


# ----- install / remove --------------------------------------------------------

def install_trigger(legacy_conn: psycopg.Connection, columns: ColumnMap, *,
                    lock_timeout: str = INSTALL_LOCK_TIMEOUT) -> None:
    """The outbox, the capture function and the trigger on the legacy table, in one transaction.

    Re-running replaces the function and the trigger (a changed map takes effect), and keeps the outbox.
    A lock not granted within ``lock_timeout`` gives up (:class:`LegacyTableBusy`): waiting longer would
    hold the old sender's writes in the queue behind the installation.
    """
    table = legacy.table_identifier(columns.table)
    mapped = columns.columns()
    arguments = sql.SQL(", ").join(sql.Literal(mapped.get(name, "")) for name in _TRIGGER_COLUMNS)
    try:
        with legacy_conn.transaction():
            _install(legacy_conn, columns, table, arguments, lock_timeout)
    except psycopg.errors.LockNotAvailable:
        log.info("adopt: install-trigger gave up waiting for a lock on %s", columns.table, exc_info=True)
        raise LegacyTableBusy(f"the legacy table {columns.table} is busy; retry") from None
    log.info("adopt: dual-write trigger installed on %s", columns.table)


def _install(legacy_conn: psycopg.Connection, columns: ColumnMap, table: sql.Identifier,
             arguments: sql.Composable, lock_timeout: str) -> None:
    queries.run(legacy_conn, "adopt_legacy_lock_timeout", lock_timeout=lock_timeout)
    _require_table(legacy_conn, columns)
    _check_columns(legacy_conn, columns)
    queries.run(legacy_conn, "adopt_legacy_outbox_create")
    queries.run(legacy_conn, "adopt_legacy_outbox_index")
    queries.run(legacy_conn, "adopt_legacy_capture_function")
    queries.run(legacy_conn, "adopt_legacy_trigger_drop", identifiers={"table": table})
    queries.run(legacy_conn, "adopt_legacy_trigger_create", identifiers={
        "table": table, "sent": sql.Identifier(columns.sent), "response": sql.Identifier(columns.response),
        "columns": arguments})


def trigger_installed(legacy_conn: psycopg.Connection, columns: ColumnMap) -> bool:
    return bool(queries.scalar(legacy_conn, "adopt_legacy_trigger_installed", table=_table_text(legacy_conn, columns)))


def remove_trigger(legacy_conn: psycopg.Connection, columns: ColumnMap) -> bool:
    """Drop the trigger (the outbox stays until drained); whether it was there."""
    with legacy_conn.transaction():
        _require_table(legacy_conn, columns)
        was_there = trigger_installed(legacy_conn, columns)
        queries.run(legacy_conn, "adopt_legacy_trigger_drop",
                    identifiers={"table": legacy.table_identifier(columns.table)})
    log.info("adopt: dual-write trigger removed from %s (was installed: %s)", columns.table, was_there)
    return was_there


# ----- sync --------------------------------------------------------------------

@dataclass
class LaterSends:
    """What the entries recorded after a legacy row's adopted one did (recipients, except ``sent_again``)."""

    upgraded: int = 0  # unknown -> submitted with the id that arrived later
    unpriced: int = 0  # of those, without a rate-card price (cost NULL)
    left_unknown: int = 0  # the later answer rejects them: unknown -> rejected is not a legal move
    sent_again: list[int] = field(default_factory=list)  # legacy ids with another usable id: not adopted

    def add(self, other: LaterSends) -> None:
        self.upgraded += other.upgraded
        self.unpriced += other.unpriced
        self.left_unknown += other.left_unknown
        self.sent_again.extend(other.sent_again)


@dataclass
class SyncTotals:
    """What :func:`sync` moved: legacy rows read from the outbox, and what the adoption made of them."""

    batches: int = 0
    legacy_rows: int = 0
    adopted: backfill.AdoptCounts = field(default_factory=backfill.AdoptCounts)
    later: LaterSends = field(default_factory=LaterSends)


def _outbox_rows(legacy_conn: psycopg.Connection, columns: ColumnMap,
                 batch: int) -> dict[int, list[tuple[int, LegacyRow]]]:
    """Legacy id -> its (outbox seq, legacy row as recorded) entries of the next batch, oldest first."""
    found = queries.run(legacy_conn, "adopt_legacy_outbox_batch", table=_table_text(legacy_conn, columns), batch=batch)
    entries: dict[int, list[tuple[int, LegacyRow]]] = {}
    for seq, legacy_id, phone, message, sent, response, created_at, event in found:
        entries.setdefault(legacy_id, []).append((seq, LegacyRow(
            id=legacy_id, phone=phone, message=message, sent=sent, response=response, created_at=created_at,
            event=event if columns.event else None)))
    return entries


def outbox_waiting(legacy_conn: psycopg.Connection, columns: ColumnMap) -> int:
    """The table's recorded sends still in the outbox (0 when there is no outbox)."""
    if not _outbox_exists(legacy_conn):
        return 0
    status = queries.record(legacy_conn, "adopt_legacy_outbox_status", table=_table_text(legacy_conn, columns))
    return status["waiting"]


def falling_behind(waiting: int) -> str | None:
    """A warning when the outbox holds more than :data:`BACKLOG_WARNING` recorded sends."""
    if waiting <= BACKLOG_WARNING:
        return None
    return (f"{waiting} recorded sends wait in {OUTBOX} (more than {BACKLOG_WARNING}): sync is falling behind "
            "the old sender (a larger --batch, or a sync that runs continuously)")


def _usable_id(row: LegacyRow) -> str | None:
    """The row's usable transaction id, when the old sender sent it."""
    if not responses.attempted(row.sent, row.response):
        return None
    return responses.parse_response(row.response).transaction_id


def _billed_to(row: LegacyRow, recipients: list[str]) -> list[str]:
    """Those of ``recipients`` (normalised) the row's answer bills under its transaction id."""
    parsed = responses.parse_response(row.response)
    return [r for r in recipients if responses.outcome(parsed, row.sent, row.response, r) is Outcome.submitted]


def _to_adopt(entries: list[LegacyRow]) -> LegacyRow:
    """The entry a legacy row is adopted from: its first with a usable id (a later different id is a second
    send, reported, and verify sees it in the legacy table), else its latest."""
    return next((row for row in entries if _usable_id(row) is not None), entries[-1])


def _adopted_rows(ours: psycopg.Connection, tenant: str, table: str,
                  rows: list[LegacyRow]) -> dict[str, list[tuple[str, str, str | None]]]:
    """adopted_from -> (recipient, state, provider_txn_id) of the adopted rows of ``rows`` (entries of a legacy
    row may repeat; ``table``: the canonical legacy table name the markers hold)."""
    recipients = sorted({r for row in rows for r in backfill.adoptable_recipients(row)[0]})
    found = queries.run(ours, "adopt_sync_adopted", tenant_id=tenant, recipients=recipients,
                        adopted_froms=sorted({backfill.marker(table, row.id) for row in rows}))
    held: dict[str, list[tuple[str, str, str | None]]] = {}
    for adopted_from, recipient, state, txn in found:
        held.setdefault(adopted_from, []).append((recipient, state, txn))
    return held


def settle_later_sends(ours: psycopg.Connection, options: backfill.AdoptOptions,
                       entries: dict[int, list[LegacyRow]], *, now: datetime) -> LaterSends:
    """Check the usable ids of each legacy row's entries (by legacy id, oldest first) against its adopted rows.

    Adopted rows still ``unknown`` without an id take the first one (those the answer accepts become
    ``submitted``, billed as the adoption bills); any other id not adopted is a second billed send, listed
    in ``sent_again``. A legacy row with no adopted row (every recipient refused) is the backfill's report.
    """
    later = LaterSends()
    with_ids = {legacy_id: [(row, txn) for row in rows if (txn := _usable_id(row)) is not None]
                for legacy_id, rows in entries.items()}
    with_ids = {legacy_id: found for legacy_id, found in with_ids.items() if found}
    if not with_ids:
        return later
    held = _adopted_rows(ours, options.tenant, options.legacy_table,
                         [row for legacy_id in with_ids for row in entries[legacy_id]])
    upgrades: list[tuple[str, str, str]] = []
    for legacy_id, found in with_ids.items():
        adopted_from = backfill.marker(options.legacy_table, legacy_id)
        mine = held.get(adopted_from, [])
        if not mine:
            continue
        known = {txn for _, _, txn in mine if txn is not None}
        waiting = [recipient for recipient, state, txn in mine if state == Outcome.unknown.value and txn is None]
        for row, txn in found:
            if txn in known:
                continue
            if not known and waiting:
                billed = _billed_to(row, waiting)
                upgrades.extend((adopted_from, recipient, txn) for recipient in billed)
                parsed = responses.parse_response(row.response)
                later.left_unknown += sum(responses.outcome(parsed, row.sent, row.response, r) is Outcome.rejected
                                          for r in waiting)
            elif _billed_to(row, [recipient for recipient, _, _ in mine]):
                later.sent_again.append(legacy_id)
            known.add(txn)  # one decision per id
    if upgrades:
        moved = queries.run(ours, "adopt_sync_upgrade", tenant_id=options.tenant,
                            price_time_zone=options.price_time_zone, now=now,
                            adopted_froms=[u[0] for u in upgrades], recipients=[u[1] for u in upgrades],
                            transaction_ids=[u[2] for u in upgrades]).fetchall()
        later.upgraded = len(moved)
        later.unpriced = sum(unpriced for (unpriced,) in moved)
    log.info("adopt sync: later sends upgraded=%d left_unknown=%d sent_again=%d", later.upgraded,
             later.left_unknown, len(later.sent_again))
    return later


def sync_batch(ours: psycopg.Connection, legacy_conn: psycopg.Connection, columns: ColumnMap,
               options: backfill.AdoptOptions, *, clock: Clock,
               batch: int) -> tuple[int, backfill.AdoptCounts, LaterSends]:
    """Adopt the next outbox batch (committed on our side), then delete it there; (legacy rows, counts,
    what the later entries did)."""
    read = _outbox_rows(legacy_conn, columns, batch)
    if not read:
        return 0, backfill.AdoptCounts(), LaterSends()
    rows = {legacy_id: [row for _, row in found] for legacy_id, found in read.items()}
    with ours.transaction():
        now = clock.now()
        counts = backfill.adopt_legacy_rows(ours, [_to_adopt(found) for found in rows.values()], options, now=now)
        later = settle_later_sends(ours, options, rows, now=now)
    # Only after our commit: a crash before this line re-reads the batch, and the adoption inserts nothing twice.
    queries.run(legacy_conn, "adopt_legacy_outbox_delete", table=_table_text(legacy_conn, columns),
                legacy_ids=list(read), seqs=[found[-1][0] for found in read.values()])
    return len(read), counts, later


def sync(ours: psycopg.Connection, legacy_conn: psycopg.Connection, columns: ColumnMap,
         options: backfill.AdoptOptions, *, clock: Clock, batch: int = 500,
         stopped: Callable[[], bool] = lambda: False,
         on_batch: Callable[[int], None] | None = None) -> SyncTotals:
    """Drain the table's outbox batch by batch, until empty or ``stopped()``.

    Both connections must be in autocommit mode: each batch commits on our
    side before it is deleted on the legacy side.
    """
    if not (ours.autocommit and legacy_conn.autocommit):
        raise ValueError("adopt sync needs autocommit connections (each batch commits before its delete)")
    if not _outbox_exists(legacy_conn):
        raise LegacyTableMissing(f"no {OUTBOX} in the legacy database: run `sms-pipeline adopt install-trigger` "
                                 "first")
    totals = SyncTotals()
    while not stopped():
        n, counts, later = sync_batch(ours, legacy_conn, columns, options, clock=clock, batch=batch)
        if not n:
            break
        totals.batches += 1
        totals.legacy_rows += n
        totals.adopted.add(counts)
        totals.later.add(later)
        if on_batch is not None:
            on_batch(n)
    return totals


# ----- verify ------------------------------------------------------------------

@dataclass(frozen=True)
class Figures:
    """One side's traffic of a day: legacy rows (messages), their recipients, and recipients x segments."""

    messages: int = 0
    recipients: int = 0
    units: int = 0

    def __add__(self, other: Figures) -> Figures:
        return Figures(self.messages + other.messages, self.recipients + other.recipients,
                       self.units + other.units)


@dataclass(frozen=True)
class DayComparison:
    """One provider-local day of both sides; ``refused``: legacy recipients the adoption refuses (shown, not
    compared: the backfill names them); ``not_adopted``: legacy ids whose stored transaction id no adopted
    row holds (sent again, or answered after an adoption sync has not upgraded yet): a difference."""

    day: date
    legacy: Figures
    adopted: Figures
    refused: int = 0
    not_adopted: tuple[int, ...] = ()

    @property
    def same(self) -> bool:
        return self.legacy == self.adopted and not self.not_adopted


@dataclass
class LegacySide:
    """The legacy side of :func:`compare`, by provider-local day."""

    figures: dict[date, Figures] = field(default_factory=dict)
    refused: dict[date, int] = field(default_factory=dict)
    not_adopted: dict[date, list[int]] = field(default_factory=dict)


def _since_instant(since: date | None, tz: ZoneInfo) -> datetime | None:
    return None if since is None else provider_time.day_bounds(since, tz)[0]


def _batches(conn: psycopg.Connection, columns: ColumnMap, *, since: datetime | None,
             sent: bool) -> Iterator[list[LegacyRow]]:
    """The legacy rows the old sender sent (``sent``) or never sent, created at ``since`` or later, by id, a
    scan batch at a time. "Sent" as the backfill reads it (:func:`sms_pipeline.adopt.responses.attempted`)."""
    for rows in legacy.batches(conn, columns, after_id=None, since=since, size=_SCAN_ROWS):
        yield [row for row in rows if responses.attempted(row.sent, row.response) is sent]


def not_adopted(ours: psycopg.Connection, tenant: str, table: str, rows: list[LegacyRow]) -> list[int]:
    """The legacy ids of ``rows`` (sent) whose usable id bills some of their adopted rows' recipients, yet
    none of those rows holds it (a recipient the answer rejects is the day report's to settle)."""
    with_ids = [row for row in rows if _usable_id(row) is not None]
    if not with_ids:
        return []
    held = _adopted_rows(ours, tenant, table, with_ids)
    missing = []
    for row in with_ids:
        mine = held.get(backfill.marker(table, row.id), [])
        if _usable_id(row) not in {txn for _, _, txn in mine} and _billed_to(row, [r for r, _, _ in mine]):
            missing.append(row.id)
    return missing


def legacy_figures(ours: psycopg.Connection, legacy_conn: psycopg.Connection, tenant: str, columns: ColumnMap,
                   tz: ZoneInfo, *, since: date | None = None) -> LegacySide:
    """The legacy side of :func:`compare`, by provider-local day of ``created_at``: what the adoption writes
    of the sent legacy rows (:func:`sms_pipeline.adopt.backfill.adoptable_recipients`, the backfill's own
    judgement), how many recipients it refuses, and the rows whose transaction id was not adopted."""
    side = LegacySide()
    table = legacy.canonical_table(legacy_conn, columns.table)
    for rows in _batches(legacy_conn, columns, since=_since_instant(since, tz), sent=True):
        for row in rows:
            if row.created_at is None:
                continue  # refused on no day: the backfill names it
            day = provider_time.local_date(row.created_at, tz)
            written, refused = backfill.adoptable_recipients(row)
            if refused:
                side.refused[day] = side.refused.get(day, 0) + len(refused)
            if written:
                units = len(written) * segments.count_segments(row.message).segments
                side.figures[day] = side.figures.get(day, Figures()) + Figures(1, len(written), units)
        created = {row.id: row.created_at for row in rows}
        for legacy_id in not_adopted(ours, tenant, table, rows):
            side.not_adopted.setdefault(provider_time.local_date(created[legacy_id], tz), []).append(legacy_id)
    return side


def adopted_figures(ours: psycopg.Connection, tenant: str, table: str, tz: ZoneInfo, *,
                    since: date | None = None) -> dict[date, Figures]:
    """Our side of :func:`compare`: the tenant's rows adopted from the legacy table (its canonical name), by
    provider-local day."""
    found = queries.run(ours, "adopt_adopted_by_day", tenant_id=tenant, adopted_prefix=backfill.marker(table, ""),
                        timezone=tz.key, since=_since_instant(since, tz))
    return {day: Figures(messages, recipients, units) for day, messages, recipients, units in found}


def compare(ours: psycopg.Connection, legacy_conn: psycopg.Connection, tenant: str, columns: ColumnMap,
            tz: ZoneInfo, *, since: date | None = None) -> list[DayComparison]:
    """Both sides, day by day (every day either side has), oldest first."""
    theirs = legacy_figures(ours, legacy_conn, tenant, columns, tz, since=since)
    mine = adopted_figures(ours, tenant, legacy.canonical_table(legacy_conn, columns.table), tz, since=since)
    days = theirs.figures.keys() | mine.keys() | theirs.refused.keys() | theirs.not_adopted.keys()
    return [DayComparison(day, theirs.figures.get(day, Figures()), mine.get(day, Figures()),
                          theirs.refused.get(day, 0), tuple(theirs.not_adopted.get(day, ())))
            for day in sorted(days)]


# ----- cutover -----------------------------------------------------------------

@dataclass(frozen=True)
class Step:
    """One condition of the cutover, and what stands in its way when it is not met."""

    name: str
    met: bool
    detail: str


def cutover_steps(ours: psycopg.Connection, legacy_conn: psycopg.Connection, tenant: str, columns: ColumnMap,
                  tz: ZoneInfo, *, now: datetime, quiet: timedelta) -> list[Step]:
    """Every condition of the cutover, in the order a person meets them."""
    _require_table(legacy_conn, columns)
    waiting, last_recorded = 0, None
    if _outbox_exists(legacy_conn):
        status = queries.record(legacy_conn, "adopt_legacy_outbox_status", table=_table_text(legacy_conn, columns))
        waiting, last_recorded = status["waiting"], status["last_recorded_at"]
    last_created = queries.scalar(legacy_conn, "adopt_legacy_last_created", identifiers={
        "table": legacy.table_identifier(columns.table), "created_at": sql.Identifier(columns.created_at)})
    latest = max((t for t in (last_created, last_recorded) if t is not None), default=None)
    quiet_since = None if latest is None else now - latest
    differing = [c for c in compare(ours, legacy_conn, tenant, columns, tz) if not c.same]
    minutes = quiet.total_seconds() / 60
    return [
        Step("quiet", quiet_since is None or quiet_since >= quiet or quiet <= timedelta(0),
             f"the legacy table's newest row or recorded send is {_minutes(quiet_since)} old (less than "
             f"{minutes:g} minutes): stop the old sender and wait"),
        Step("outbox drained", waiting == 0,
             f"{waiting} recorded sends still in {OUTBOX}: run `sms-pipeline adopt sync --once`"),
        Step("trigger removed", not trigger_installed(legacy_conn, columns),
             "the dual-write trigger is still installed: run `sms-pipeline adopt remove-trigger`"),
        Step("verify clean", not differing,
             f"`sms-pipeline adopt verify` differs on {len(differing)} day(s)"
             + (f", first {differing[0].day.isoformat()}" if differing else "")),
    ]


def _minutes(elapsed: timedelta | None) -> str:
    return "?" if elapsed is None else f"{max(elapsed.total_seconds(), 0) / 60:.1f} minutes"


@dataclass
class UnsentIntake:
    """What :func:`enqueue_unsent` did: recipients enqueued, already there, refused (reason -> count)."""

    created: int = 0
    existing: int = 0
    refused: dict[str, int] = field(default_factory=dict)


def enqueue_unsent(ours: psycopg.Connection, legacy_conn: psycopg.Connection, columns: ColumnMap,
                   options: backfill.AdoptOptions, *, clock: Clock, policy: intake.IntakePolicy,
                   chunk: int = 1_000, **intake_options: object) -> UnsentIntake:
    """Enqueue each recipient of the legacy rows never sent as ``pending``, through the normal intake.

    The event id is the one the backfill gives the row, so the business key
    is the key an adopted copy of it would hold: a row adopted meanwhile (or
    enqueued by an earlier cutover) maps to its existing row and is not sent
    again. ``intake_options`` are :func:`sms_pipeline.intake.messages.new_message`'s
    (the settings' body limit and region): these rows are sent by our worker.
    """
    result = UnsentIntake()
    batch: list[intake.NewMessage] = []

    def flush() -> None:
        for row in intake.enqueue(ours, batch, clock=clock, policy=policy):
            result.created += row.created
            result.existing += not row.created
        batch.clear()

    for row in (row for rows in _batches(legacy_conn, columns, since=None, sent=False) for row in rows):
        for number in backfill.phone_items(row):
            record = {"tenant_id": options.tenant, "event_type": options.event_type,
                      "event_id": backfill.event_id(options, row), "recipient": number, "body": row.message,
                      "message_class": options.message_class, "channel": "sms", "sender_id": options.sender}
            try:
                batch.append(intake.new_message(record, **intake_options))
            except InvalidField as exc:  # never quotes the number
                reason = str(exc)
                result.refused[reason] = result.refused.get(reason, 0) + 1
                log.info("adopt cutover: legacy row %s not enqueued: %s", row.id, reason)
            if len(batch) >= chunk:
                flush()
    if batch:
        flush()
    return result
