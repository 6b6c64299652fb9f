"""Dual write for the expand phase of an adoption (issue 23, docs/adoption.md).

The legacy database cannot write into ours, so a trigger there copies each
recorded send into an outbox table beside the legacy table
(``sms_pipeline_adopt_outbox``), and :func:`sync` moves the outbox into
``msg.outbound_message`` through the backfill's own mapping
(:func:`sms_pipeline.adopt.backfill.adopt_legacy_rows`: never ``pending``,
so our worker never re-sends what the old sender sent). A batch is adopted
and committed here first, then deleted there: a crash between the two
re-reads the batch, and the adoption, idempotent, inserts nothing twice.

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

from sms_pipeline.adopt import backfill, responses
from sms_pipeline.adopt.legacy import batches as legacy_batches
from sms_pipeline.adopt.mapping import ColumnMap, LegacyRow
from sms_pipeline.core import msisdn, provider_time, segments
from sms_pipeline.core.clock import Clock
from sms_pipeline.core.input_lines import InvalidField, text_problem
from sms_pipeline.db import queries
from sms_pipeline.errors import UserError
from sms_pipeline.intake import messages as intake
from sms_pipeline.provider.normalise import NUMBER_REGION

log = logging.getLogger(__name__)

OUTBOX = "sms_pipeline_adopt_outbox"
# The order sms_pipeline_adopt_capture reads its trigger arguments in.
_TRIGGER_COLUMNS = ("id", "phone", "message", "sent", "response", "created_at", "event")
_INTEGER_TYPES = frozenset({"smallint", "integer", "bigint"})
# Legacy rows read per round trip when a whole table is scanned (verify, unsent).
_SCAN_ROWS = 5_000


class LegacyTableMissing(UserError):
    """The legacy table (or the outbox) is not in the legacy database."""


def table_name(columns: ColumnMap) -> sql.Identifier:
    """The legacy table as a quoted identifier (``schema.table`` when qualified)."""
    return sql.Identifier(*columns.table.split("."))


def _table_text(conn: psycopg.Connection, columns: ColumnMap) -> str:
    """The legacy table's name as SQL text, for ``to_regclass``."""
    return table_name(columns).as_string(conn)


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

def install_trigger(legacy_conn: psycopg.Connection, columns: ColumnMap) -> None:
    """The outbox, the capture function and the trigger on the legacy table, in one transaction.

    Re-running replaces the function and the trigger (a changed map takes effect), and keeps the outbox.
    """
    table = table_name(columns)
    mapped = columns.columns()
    arguments = sql.SQL(", ").join(sql.Literal(mapped.get(name, "")) for name in _TRIGGER_COLUMNS)
    with legacy_conn.transaction():
        _require_table(legacy_conn, columns)
        _check_columns(legacy_conn, columns)
        queries.run(legacy_conn, "adopt_legacy_outbox_create")
        queries.run(legacy_conn, "adopt_legacy_outbox_index")
        queries.run(legacy_conn, "adopt_legacy_capture_function")
        queries.run(legacy_conn, "adopt_legacy_trigger_drop", identifiers={"table": table})
        queries.run(legacy_conn, "adopt_legacy_trigger_create", identifiers={
            "table": table, "sent": sql.Identifier(columns.sent), "response": sql.Identifier(columns.response),
            "columns": arguments})
    log.info("adopt: dual-write trigger installed on %s", columns.table)


def trigger_installed(legacy_conn: psycopg.Connection, columns: ColumnMap) -> bool:
    return bool(queries.scalar(legacy_conn, "adopt_legacy_trigger_installed", table=_table_text(legacy_conn, columns)))


def remove_trigger(legacy_conn: psycopg.Connection, columns: ColumnMap) -> bool:
    """Drop the trigger (the outbox stays until drained); whether it was there."""
    with legacy_conn.transaction():
        _require_table(legacy_conn, columns)
        was_there = trigger_installed(legacy_conn, columns)
        queries.run(legacy_conn, "adopt_legacy_trigger_drop", identifiers={"table": table_name(columns)})
    log.info("adopt: dual-write trigger removed from %s (was installed: %s)", columns.table, was_there)
    return was_there


# ----- sync --------------------------------------------------------------------

@dataclass
class SyncTotals:
    """What :func:`sync` moved: legacy rows read from the outbox, and what the adoption made of them."""

    batches: int = 0
    legacy_rows: int = 0
    adopted: backfill.AdoptCounts = field(default_factory=backfill.AdoptCounts)


def _outbox_rows(legacy_conn: psycopg.Connection, columns: ColumnMap, batch: int) -> list[tuple[int, LegacyRow]]:
    """(outbox seq, legacy row as recorded) of the next batch."""
    found = queries.run(legacy_conn, "adopt_legacy_outbox_batch", table=_table_text(legacy_conn, columns), batch=batch)
    return [(seq, LegacyRow(id=legacy_id, phone=phone, message=message, sent=sent, response=response,
                            created_at=created_at, event=event if columns.event else None))
            for seq, legacy_id, phone, message, sent, response, created_at, event in found]


def outbox_waiting(legacy_conn: psycopg.Connection, columns: ColumnMap) -> int:
    """The table's recorded sends still in the outbox (0 when there is no outbox)."""
    if not _outbox_exists(legacy_conn):
        return 0
    status = queries.record(legacy_conn, "adopt_legacy_outbox_status", table=_table_text(legacy_conn, columns))
    return status["waiting"]


def sync_batch(ours: psycopg.Connection, legacy_conn: psycopg.Connection, columns: ColumnMap,
               options: backfill.AdoptOptions, *, clock: Clock, batch: int) -> tuple[int, backfill.AdoptCounts]:
    """Adopt the next outbox batch (committed on our side), then delete it there; (legacy rows, counts)."""
    read = _outbox_rows(legacy_conn, columns, batch)
    if not read:
        return 0, backfill.AdoptCounts()
    with ours.transaction():
        counts = backfill.adopt_legacy_rows(ours, [row for _, row in read], options, now=clock.now())
    # Only after our commit: a crash before this line re-reads the batch, and the adoption inserts nothing twice.
    queries.run(legacy_conn, "adopt_legacy_outbox_delete", table=_table_text(legacy_conn, columns),
                legacy_ids=[row.id for _, row in read], seqs=[seq for seq, _ in read])
    return len(read), counts


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
        n, counts = sync_batch(ours, legacy_conn, columns, options, clock=clock, batch=batch)
        if not n:
            break
        totals.batches += 1
        totals.legacy_rows += n
        totals.adopted.add(counts)
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
    compared: the backfill names them)."""

    day: date
    legacy: Figures
    adopted: Figures
    refused: int = 0

    @property
    def same(self) -> bool:
        return self.legacy == self.adopted


def _since_instant(since: date | None, tz: ZoneInfo) -> datetime | None:
    return None if since is None else provider_time.day_bounds(since, tz)[0]


def legacy_rows(conn: psycopg.Connection, columns: ColumnMap, *, since: datetime | None,
                sent: bool) -> Iterator[LegacyRow]:
    """The legacy rows the old sender sent (``sent``) or never sent, created at ``since`` or later, by id.

    "Sent" as the backfill reads it (:func:`sms_pipeline.adopt.responses.attempted`).
    """
    for rows in legacy_batches(conn, columns, after_id=None, since=since, size=_SCAN_ROWS):
        yield from (row for row in rows if responses.attempted(row.sent, row.response) is sent)


def adoptable(row: LegacyRow, region: str) -> tuple[int, int]:
    """(recipients the adoption writes a row for, recipients it refuses) of a sent legacy row.

    The adoption refuses a recipient whose number is not a mobile or whose
    body cannot be stored (it counts and names them); verify compares what it
    can adopt, and shows the refused apart.
    """
    numbers = [n for n in (row.phone or "").split(",") if n.strip()]
    if not row.message or text_problem(row.message, allowed_controls=intake.BODY_CONTROLS) is not None:
        return 0, max(len(numbers), 1)
    good = 0
    for number in numbers:
        try:
            msisdn.normalise_mobile(number, region)
            good += 1
        except msisdn.InvalidRecipient:
            pass
    return good, max(len(numbers), 1) - good


def legacy_figures(conn: psycopg.Connection, columns: ColumnMap, tz: ZoneInfo, *, since: date | None = None,
                   region: str = NUMBER_REGION) -> tuple[dict[date, Figures], dict[date, int]]:
    """The legacy side of :func:`compare`, by provider-local day of ``created_at``: what the adoption can
    write of the sent legacy rows, and how many recipients it refuses."""
    days: dict[date, Figures] = {}
    refused: dict[date, int] = {}
    for row in legacy_rows(conn, columns, since=_since_instant(since, tz), sent=True):
        day = provider_time.local_date(row.created_at, tz)
        good, bad = adoptable(row, region)
        if bad:
            refused[day] = refused.get(day, 0) + bad
        if good:
            units = good * segments.count_segments(row.message).segments
            days[day] = days.get(day, Figures()) + Figures(1, good, units)
    return days, refused


def adopted_figures(ours: psycopg.Connection, tenant: str, columns: ColumnMap, tz: ZoneInfo, *,
                    since: date | None = None) -> dict[date, Figures]:
    """Our side of :func:`compare`: the tenant's rows adopted from this legacy table, by provider-local day."""
    found = queries.run(ours, "adopt_adopted_by_day", tenant_id=tenant,
                        adopted_prefix=backfill.marker(columns.table, ""), timezone=tz.key,
                        since=_since_instant(since, tz))
    return {day: Figures(messages, recipients, units) for day, messages, recipients, units in found}


def compare(ours: psycopg.Connection, legacy_conn: psycopg.Connection, tenant: str, columns: ColumnMap,
            tz: ZoneInfo, *, since: date | None = None) -> list[DayComparison]:
    """Both sides, day by day (every day either side has), oldest first."""
    theirs, refused = legacy_figures(legacy_conn, columns, tz, since=since)
    mine = adopted_figures(ours, tenant, columns, tz, since=since)
    return [DayComparison(day, theirs.get(day, Figures()), mine.get(day, Figures()), refused.get(day, 0))
            for day in sorted(theirs.keys() | mine.keys() | refused.keys())]


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
        "table": table_name(columns), "created_at": sql.Identifier(columns.created_at)})
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

    for row in legacy_rows(legacy_conn, columns, since=None, sent=False):
        for number in [n for n in (row.phone or "").split(",") if n.strip()] or [""]:
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
