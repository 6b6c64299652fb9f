"""Legacy rows into ``msg.outbound_message``: one row per recipient, never ``pending`` (docs/adoption.md).

:func:`adopt_legacy_rows` is the one insertion (the backfill and the dual
write's sync both use it); :func:`backfill` drives it over a legacy table in
primary-key batches with a checkpoint.

Each recipient of a legacy row (its ``phone`` split on commas, normalised)
becomes one row whose state comes from the stored response
(:mod:`sms_pipeline.adopt.responses`): ``submitted`` with a usable id (billed
at ``created_at``), ``rejected`` when the answer refused the number,
``unknown`` otherwise; never ``delivered``: only a receipt says that. The
business key is the intake's, with the mapped event column as the event id
(else ``legacy:<table>:<id>``), so a second run finds every key taken and
inserts nothing. A later legacy row of an event already adopted is a
duplicate: it gets a key of its own (``legacy:<table>:<id>#<position>``) and
is ``superseded`` when it was billed (its cost kept), else keeps its state.
"""

from __future__ import annotations

import logging
import time
from contextlib import nullcontext
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time as clock_time
from zoneinfo import ZoneInfo

import psycopg
from psycopg import errors

from sms_pipeline.adopt import legacy
from sms_pipeline.adopt.mapping import ColumnMap, LegacyRow
from sms_pipeline.adopt.responses import Outcome, ParsedResponse, attempted, outcome, parse_response
from sms_pipeline.core import keys
from sms_pipeline.core.input_lines import InvalidField
from sms_pipeline.core.states import MessageClass
from sms_pipeline.db import installation, queries
from sms_pipeline.errors import UserError
from sms_pipeline.intake import IntakePolicy, NewMessage, new_message
from sms_pipeline.intake.messages import ensure_partition_for

log = logging.getLogger(__name__)

ADOPTED_REASON = "adopted"
SUPERSEDED = "superseded"
# A legacy body was sent whatever its length: count it, never refuse it (segments is a SMALLINT).
_MAX_SEGMENTS = 32_767
DEFAULT_BATCH = 5000
DEFAULT_PAUSE_MS = 200
# A concurrent adoption of the same keys makes the insert fail; each round sees more of them.
_MAX_INSERT_ROUNDS = 5


class BeforePartitionStart(UserError):
    """A legacy row older than the first day partition."""


@dataclass(frozen=True)
class AdoptOptions:
    """What the legacy table does not say: whose rows, which class, sender and event type, and the settings
    the rows are priced and checked with (build it with :meth:`from_settings`)."""

    tenant: str
    message_class: str
    sender: str
    event_type: str
    legacy_table: str
    price_time_zone: str  # the provider's zone: the rate card's days and the report days
    partition_start: date | None = None  # SMS_PIPELINE_PARTITION_START; None: the recorded first day
    text_key: bytes | None = field(default=None, repr=False)  # the text fingerprint key (reconstruction)

    @classmethod
    def from_settings(cls, settings: object, *, tenant: str, message_class: str, sender: str, event_type: str,
                      legacy_table: str) -> AdoptOptions:
        from sms_pipeline import hmac_keys

        return cls(tenant, message_class, sender, event_type, legacy_table,
                   price_time_zone=settings.provider_timezone.key,  # type: ignore[attr-defined]
                   partition_start=settings.partition_start,  # type: ignore[attr-defined]
                   text_key=hmac_keys.text_key(settings))


@dataclass
class AdoptCounts:
    """What one or more calls did, by outcome (recipients, except legacy_rows and skipped_unsent)."""

    legacy_rows: int = 0
    recipients: int = 0
    submitted: int = 0
    rejected: int = 0
    unknown: int = 0
    superseded: int = 0  # later attempts of an event already adopted, billed
    skipped_unsent: int = 0  # legacy rows never sent
    bad_number: int = 0
    bad_row: int = 0  # a recipient whose body cannot be stored (empty, NUL...)
    already_adopted: int = 0
    unpriced: int = 0  # billed rows without a rate-card price (cost NULL)
    duplicates: int = 0  # recipients of a later legacy row of an event already adopted (any state)
    bad_ids: list[tuple[int, str]] = field(default_factory=list)  # (legacy id, why) of refused recipients
    days: set[date] = field(default_factory=set)  # provider days of the rows written
    last_legacy_id: int | None = None

    def add(self, other: AdoptCounts) -> None:
        for name in ("legacy_rows", "recipients", "submitted", "rejected", "unknown", "superseded",
                     "skipped_unsent", "bad_number", "bad_row", "already_adopted", "unpriced", "duplicates"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.bad_ids.extend(other.bad_ids)
        self.days |= other.days
        if other.last_legacy_id is not None:
            self.last_legacy_id = other.last_legacy_id

    @property
    def inserted(self) -> int:
        return self.submitted + self.rejected + self.unknown + self.superseded


def marker(table: str, legacy_id: int) -> str:
    """The adopted_from of a legacy row's outbound rows."""
    return f"{table}:{legacy_id}"


@dataclass(frozen=True)
class _Recipient:
    row: LegacyRow
    position: int
    message: NewMessage
    outcome: Outcome
    parsed: ParsedResponse


@dataclass(frozen=True)
class _Planned:
    recipient: _Recipient
    business_key: str
    state: str
    duplicate: bool


def _validate(options: AdoptOptions) -> None:
    if options.message_class not in {c.value for c in MessageClass} or options.message_class == MessageClass.otp:
        raise UserError(f"--class must be transactional or promotional, not {options.message_class!r} "
                        "(an OTP's text holds its code: it is not adopted)")


def _request(options: AdoptOptions, row: LegacyRow, number: str, event_id: str) -> NewMessage:
    return new_message({"tenant_id": options.tenant, "event_type": options.event_type, "event_id": event_id,
                        "recipient": number, "body": row.message, "message_class": options.message_class,
                        "channel": "sms", "sender_id": options.sender}, max_body_segments=_MAX_SEGMENTS)


def event_id(options: AdoptOptions, row: LegacyRow) -> str:
    return row.event if row.event else f"legacy:{options.legacy_table}:{row.id}"


def _duplicate_event_id(options: AdoptOptions, row: LegacyRow, position: int) -> str:
    return f"legacy:{options.legacy_table}:{row.id}#{position}"


def _recipients(options: AdoptOptions, rows: Sequence[LegacyRow], counts: AdoptCounts) -> list[_Recipient]:
    found = []
    for row in sorted(rows, key=lambda r: (r.created_at, r.id)):
        counts.legacy_rows += 1
        if not attempted(row.sent, row.response):
            counts.skipped_unsent += 1
            continue
        parsed = parse_response(row.response)
        numbers = [n for n in (row.phone or "").split(",") if n.strip()] or [""]
        for position, number in enumerate(numbers):
            counts.recipients += 1
            try:
                message = _request(options, row, number, event_id(options, row))
            except InvalidField as exc:
                if exc.field == "recipient":
                    counts.bad_number += 1
                else:
                    counts.bad_row += 1
                counts.bad_ids.append((row.id, str(exc)))  # InvalidField never quotes the number
                continue
            found.append(_Recipient(row, position, message, outcome(parsed, row.sent, row.response,
                                                                    message.recipient), parsed))
    return found


def _check_partition_start(conn: psycopg.Connection, options: AdoptOptions, recipients: list[_Recipient]) -> None:
    if not recipients:
        return
    zone = ZoneInfo(options.price_time_zone)
    first = min(recipients, key=lambda r: r.row.created_at).row
    start = options.partition_start or installation.partition_start(conn)
    day = first.created_at.astimezone(zone).date()
    if day < start:
        raise BeforePartitionStart(
            f"legacy row {first.id} was created on {day}, before the first day partition {start}: set "
            f"SMS_PIPELINE_PARTITION_START={day.replace(day=1)} (or earlier) for every process first, or skip "
            "those rows with --since")


def _plan(conn: psycopg.Connection, options: AdoptOptions,
          recipients: list[_Recipient]) -> tuple[list[_Planned], int]:
    """The rows to insert, and how many recipients were adopted already."""
    duplicate_keys = {id(r): keys.business_key_of_normalised(
        options.tenant, options.event_type, _duplicate_event_id(options, r.row, r.position), r.message.recipient)
        for r in recipients}
    wanted = [r.message.business_key for r in recipients] + list(duplicate_keys.values())
    held = dict(queries.run(conn, "adopt_key_holders", tenant_id=options.tenant, business_keys=wanted).fetchall())
    claimed: set[str] = set()  # keys taken earlier in this call
    planned, already = [], 0
    for r in recipients:
        key = r.message.business_key
        if key in held and held[key] == marker(options.legacy_table, r.row.id):
            already += 1
            continue
        duplicate = key in held or key in claimed
        if duplicate:
            key = duplicate_keys[id(r)]
            if key in held:
                already += 1
                continue
        claimed.add(key)
        state = SUPERSEDED if duplicate and r.outcome is Outcome.submitted else r.outcome.value
        planned.append(_Planned(r, key, state, duplicate))
    return planned, already


def _insert(conn: psycopg.Connection, options: AdoptOptions, planned: list[_Planned], *,
            now: datetime) -> dict[str, bool]:
    """Insert ``planned`` (partitions first); business key -> unpriced, of the rows inserted."""
    for month in sorted({(p.recipient.row.created_at.astimezone(UTC).year,
                          p.recipient.row.created_at.astimezone(UTC).month) for p in planned}):
        ensure_partition_for(conn, datetime(*month, 1, tzinfo=UTC))
    fingerprint_of = IntakePolicy(text_key=options.text_key).fingerprints()
    return dict(queries.run(
        conn, "adopt_insert", tenant_id=options.tenant, message_class=options.message_class,
        sender_id=options.sender, price_time_zone=options.price_time_zone, now=now,
        business_keys=[p.business_key for p in planned],
        recipients=[p.recipient.message.recipient for p in planned],
        bodies=[p.recipient.message.body for p in planned],
        encodings=[p.recipient.message.encoding for p in planned],
        segments=[p.recipient.message.segments for p in planned],
        states=[p.state for p in planned],
        billed=[p.state in (Outcome.submitted.value, SUPERSEDED) for p in planned],
        transaction_ids=[p.recipient.parsed.transaction_id for p in planned],
        created_ats=[p.recipient.row.created_at for p in planned],
        fingerprints=[fingerprint_of(p.recipient.message) for p in planned],
        adopted_froms=[marker(options.legacy_table, p.recipient.row.id) for p in planned],
    ).fetchall())


def adopt_legacy_rows(conn: psycopg.Connection, rows: Sequence[LegacyRow], options: AdoptOptions, *,
                      now: datetime, dry_run: bool = False) -> AdoptCounts:
    """Insert the outbound rows of ``rows`` not adopted yet, in the caller's transaction (a savepoint);
    counts by outcome. ``dry_run``: the same work, rolled back. Unsent rows are counted and skipped; a bad
    number is counted with its legacy id and skipped. A row before the first day partition raises
    :class:`BeforePartitionStart` before anything is written."""
    _validate(options)
    counts = AdoptCounts()
    if rows:
        counts.last_legacy_id = max(r.id for r in rows)
    recipients = _recipients(options, rows, counts)
    _check_partition_start(conn, options, recipients)
    if not recipients:
        return counts
    zone = ZoneInfo(options.price_time_zone)
    with conn.transaction(force_rollback=dry_run):
        for round_no in range(1, _MAX_INSERT_ROUNDS + 1):
            try:
                with conn.transaction():
                    planned, already = _plan(conn, options, recipients)
                    inserted = _insert(conn, options, planned, now=now)
                break
            except errors.UniqueViolation:
                # A concurrent adoption (backfill and sync at once) committed one of these keys after our
                # statement began: plan again, now seeing it.
                log.info("adoption key race with a concurrent insert; retrying (round %d)", round_no)
        else:
            raise RuntimeError(f"adoption could not settle key races in {_MAX_INSERT_ROUNDS} rounds")
        counts.already_adopted += already
        evidence = {}
        for p in planned:
            if p.business_key not in inserted:
                counts.already_adopted += 1  # adopted by a concurrent run meanwhile
                continue
            setattr(counts, p.state, getattr(counts, p.state) + 1)
            counts.unpriced += inserted[p.business_key]
            counts.duplicates += p.duplicate
            counts.days.add(p.recipient.row.created_at.astimezone(zone).date())
            if p.state == Outcome.unknown.value and p.recipient.parsed.problem is not None:
                row = p.recipient.row
                evidence[row.id] = (row, p.recipient.parsed.problem.value)
        for row, problem in evidence.values():
            queries.run(conn, "adopt_evidence_insert", tenant_id=options.tenant,
                        adopted_from=marker(options.legacy_table, row.id), problem=problem, response=row.response,
                        now=now)
    log.info("adopted legacy_rows=%d submitted=%d rejected=%d unknown=%d superseded=%d already=%d dry_run=%s",
             counts.legacy_rows, counts.submitted, counts.rejected, counts.unknown, counts.superseded,
             counts.already_adopted, dry_run)
    return counts


def since_start(options: AdoptOptions, since: date | None) -> datetime | None:
    """The instant ``--since`` names: the start of that provider-local day."""
    return None if since is None else datetime.combine(since, clock_time(), ZoneInfo(options.price_time_zone))


def checkpoint(conn: psycopg.Connection, tenant: str, legacy_table: str) -> tuple[date | None, int] | None:
    """(since, last legacy id) of the last committed backfill batch of the table for the tenant, if any."""
    return queries.run(conn, "adopt_checkpoint", tenant_id=tenant, legacy_table=legacy_table).fetchone()


def resume_after(conn: psycopg.Connection, options: AdoptOptions, since: date | None) -> int | None:
    """The last legacy id a backfill with the same ``since`` committed (None: start from the beginning)."""
    stored = checkpoint(conn, options.tenant, options.legacy_table)
    return stored[1] if stored is not None and stored[0] == since else None


def backfill(legacy_conn: psycopg.Connection, conn: psycopg.Connection, columns: ColumnMap, options: AdoptOptions,
             *, since: date | None = None, batch: int = DEFAULT_BATCH, pause_s: float = DEFAULT_PAUSE_MS / 1000,
             dry_run: bool = False, now: Callable[[], datetime] = lambda: datetime.now(UTC),
             on_batch: Callable[[AdoptCounts], None] | None = None) -> AdoptCounts:
    """Adopt the legacy table from its checkpoint on, ``batch`` rows per transaction, ``pause_s`` between.

    Each batch commits with the checkpoint (its last legacy id), so a killed
    run resumes after the last committed batch; a checkpoint made with another
    ``since`` is ignored (adoption is idempotent anyway). ``dry_run`` writes
    nothing, checkpoint included. ``conn`` must be in autocommit mode.
    """
    total = AdoptCounts()
    # A dry run is one transaction rolled back at the end: each batch still sees what the ones before it
    # would have written (an event's first attempt), so it reports what the real run will do.
    with conn.transaction(force_rollback=True) if dry_run else nullcontext():
        for number, rows in enumerate(legacy.batches(legacy_conn, columns, after_id=resume_after(conn, options, since),
                                                     since=since_start(options, since), size=batch)):
            if number and pause_s and not dry_run:
                time.sleep(pause_s)  # room for the replicas and the live traffic
            with conn.transaction():
                counts = adopt_legacy_rows(conn, rows, options, now=now())
                if not dry_run:
                    queries.run(conn, "adopt_checkpoint_save", tenant_id=options.tenant,
                                legacy_table=options.legacy_table, since=since, last_legacy_id=rows[-1].id,
                                now=now())
            total.add(counts)
            if on_batch is not None:
                on_batch(counts)
    return total
