"""Legacy rows into ``msg.outbound_message``: one row per recipient, never ``pending`` (docs/adoption.md).

:func:`adopt_legacy_rows` is the one insertion (the backfill and the dual
write's sync both use it); :func:`backfill` drives it over a legacy table in
primary-key batches with a checkpoint.

Each recipient of a legacy row (its ``phone`` split on commas, normalised;
:func:`adoptable_recipients`) becomes one row whose state comes from the
stored response (:mod:`sms_pipeline.adopt.responses`): ``submitted`` with a
usable id (billed at ``created_at``), ``rejected`` when the answer refused the
number, ``unknown`` otherwise; never ``delivered``: only a receipt says that.
The business key is the intake's, with the mapped event column as the event
id (else ``legacy:<table>:<id>``, the table as legacy.canonical_table names
it), so a second run finds every key taken and inserts nothing. Another
legacy row of an event already adopted is a duplicate: it gets a key of its
own (``legacy:<table>:<id>#<position>``); it is ``superseded`` when it was
billed and is later than the key's holder, else keeps its state.
"""

from __future__ import annotations

import dataclasses
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
from sms_pipeline.core import keys, msisdn
from sms_pipeline.core.input_lines import InvalidField
from sms_pipeline.core.states import MessageClass
from sms_pipeline.db import installation, queries
from sms_pipeline.errors import UserError
from sms_pipeline.intake import IntakePolicy, NewMessage, new_message
from sms_pipeline.intake.messages import ensure_partition_for
from sms_pipeline.provider.normalise import NUMBER_REGION

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
    """What one or more calls did, by outcome (recipients, except the *_rows counts)."""

    legacy_rows: int = 0
    recipients: int = 0
    submitted: int = 0
    rejected: int = 0
    unknown: int = 0
    superseded: int = 0  # later attempts of an event already adopted, billed
    skipped_unsent: int = 0  # legacy rows never sent
    sent_flag_false_rows: int = 0  # legacy rows with sent = false but a usable id stored: adopted as sent
    undated_rows: int = 0  # legacy rows without created_at: refused
    bad_number: int = 0
    bad_row: int = 0  # a recipient whose body cannot be stored (empty, NUL...)
    already_adopted: int = 0
    unpriced: int = 0  # billed rows without a rate-card price (cost NULL)
    duplicates: int = 0  # recipients of a legacy row whose event + recipient another row holds (any state)
    bad_ids: list[tuple[int, str]] = field(default_factory=list)  # (legacy id, why) of refused rows/recipients
    days: set[date] = field(default_factory=set)  # provider days of the rows written

    def add(self, other: AdoptCounts) -> None:
        for counter in dataclasses.fields(self):
            if counter.type == "int":  # the counts (annotations are strings here)
                setattr(self, counter.name, getattr(self, counter.name) + getattr(other, counter.name))
        self.bad_ids.extend(other.bad_ids)
        self.days |= other.days

    @property
    def inserted(self) -> int:
        return self.submitted + self.rejected + self.unknown + self.superseded


def marker(table: str, legacy_id: int) -> str:
    """The adopted_from of a legacy row's outbound rows (``table`` canonical: legacy.canonical_table)."""
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


# The row's body and the options are validated once per legacy row, with a stand-in recipient: its numbers
# are judged apart (_numbers), so that a number invalidMobile lists can be kept as written.
_STAND_IN = {"tenant_id": "adopt", "event_type": "adopt", "event_id": "adopt", "recipient": "+919876543210",
             "message_class": "transactional", "channel": "sms", "sender_id": "ADOPT"}


def _row_request(row: LegacyRow, **fields: str) -> NewMessage:
    """The row's request for the stand-in recipient; :class:`InvalidField` when it cannot be stored."""
    return new_message({**_STAND_IN, **fields, "body": row.message}, max_body_segments=_MAX_SEGMENTS)


def phone_items(row: LegacyRow) -> list[str]:
    """The row's numbers as listed (one recipient each; an empty phone is one refused recipient)."""
    return [n.strip() for n in (row.phone or "").split(",") if n.strip()] or [""]


def _numbers(row: LegacyRow, parsed: ParsedResponse, region: str) -> tuple[list[tuple[int, str]], list[str]]:
    """((position, recipient) written, items refused) of the row's numbers: a mobile, normalised; else, if
    the answer lists it in invalidMobile, normalised when it is a number, else its text (it was rejected)."""
    written, refused = [], []
    for position, item in enumerate(phone_items(row)):
        try:
            written.append((position, msisdn.normalise_mobile(item, region)))
            continue
        except msisdn.InvalidRecipient:
            pass
        try:
            number = msisdn.normalise(item, region)
        except msisdn.InvalidRecipient:
            number = item
        if number in parsed.invalid or number in parsed.invalid_unreadable:
            written.append((position, number))
        else:
            refused.append(item)
    return written, refused


def adoptable_recipients(row: LegacyRow, region: str = NUMBER_REGION) -> tuple[list[str], list[str]]:
    """(recipients written, items refused) of one legacy row, as the adoption judges it whatever ``sent``
    says: written in phone order, one per number (see :func:`_numbers`); refused, trimmed, when not a mobile
    and not listed in invalidMobile, and every item when the body cannot be stored or created_at is NULL."""
    if row.created_at is None:
        return [], phone_items(row)
    try:
        _row_request(row)
    except InvalidField:
        return [], phone_items(row)
    written, refused = _numbers(row, parse_response(row.response, region), region)
    return [number for _, number in written], refused


def event_id(options: AdoptOptions, row: LegacyRow) -> str:
    return row.event if row.event else f"legacy:{options.legacy_table}:{row.id}"


def _duplicate_event_id(options: AdoptOptions, row: LegacyRow, position: int) -> str:
    return f"legacy:{options.legacy_table}:{row.id}#{position}"


def _recipients(options: AdoptOptions, rows: Sequence[LegacyRow], counts: AdoptCounts) -> list[_Recipient]:
    found = []
    dated = []
    for row in rows:
        counts.legacy_rows += 1
        if not attempted(row.sent, row.response):
            counts.skipped_unsent += 1
        elif row.created_at is None:
            counts.undated_rows += 1
            counts.bad_ids.append((row.id, "created_at: missing"))
        else:
            counts.sent_flag_false_rows += row.sent is False
            dated.append(row)
    for row in sorted(dated, key=lambda r: (r.created_at, r.id)):
        event = event_id(options, row)
        try:
            template = _row_request(row, tenant_id=options.tenant, event_type=options.event_type, event_id=event,
                                    message_class=options.message_class, sender_id=options.sender)
        except InvalidField as exc:
            counts.recipients += len(phone_items(row))
            counts.bad_row += len(phone_items(row))
            counts.bad_ids.append((row.id, str(exc)))  # a body or option problem, never a number
            continue
        parsed = parse_response(row.response)
        written, refused = _numbers(row, parsed, NUMBER_REGION)
        counts.recipients += len(written) + len(refused)
        counts.bad_number += len(refused)
        counts.bad_ids.extend((row.id, "recipient: not a mobile number") for _ in refused)
        for position, number in written:
            message = dataclasses.replace(template, recipient=number, business_key=keys.business_key_of_normalised(
                options.tenant, options.event_type, event, number))
            found.append(_Recipient(row, position, message, outcome(parsed, row.sent, row.response, number), parsed))
    return found


def _first_day(conn: psycopg.Connection, options: AdoptOptions) -> date:
    return options.partition_start or installation.partition_start(conn)


def _check_partition_start(conn: psycopg.Connection, options: AdoptOptions, recipients: list[_Recipient]) -> None:
    if not recipients:
        return
    zone = ZoneInfo(options.price_time_zone)
    first = min(recipients, key=lambda r: r.row.created_at).row
    start = _first_day(conn, options)
    day = first.created_at.astimezone(zone).date()
    if day < start:
        raise BeforePartitionStart(
            f"legacy row {first.id} was created on {day}, before the first day partition {start}: set "
            f"SMS_PIPELINE_PARTITION_START={day.replace(day=1)} (or earlier) for every process first, or skip "
            "those rows with --since")


def _holder_is_earlier(options: AdoptOptions, row: LegacyRow, holder: str | None, held_at: datetime) -> bool:
    """Whether the row holding an event's key came before ``row``, by (created_at, legacy id); a row of ours
    or of another table by created_at alone (a tie counts as earlier: ``row`` is then the later attempt)."""
    table, _, legacy_id = (holder or "").rpartition(":")
    if table == options.legacy_table and legacy_id.isdigit():
        return (held_at, int(legacy_id)) < (row.created_at, row.id)
    return held_at <= row.created_at


def _plan(conn: psycopg.Connection, options: AdoptOptions,
          recipients: list[_Recipient]) -> tuple[list[_Planned], int]:
    """The rows to insert, and how many recipients were adopted already.

    The event's key stays with whoever holds it. A row later than the holder (recipients come by
    (created_at, id), so one taken earlier in this call always is) is a later attempt: its own key,
    ``superseded`` when billed. A row earlier than the holder (read after it: another batch, a sync) was
    the real first attempt: its own key and its real state, for its report line to settle it.
    """
    duplicate_keys = {id(r): keys.business_key_of_normalised(
        options.tenant, options.event_type, _duplicate_event_id(options, r.row, r.position), r.message.recipient)
        for r in recipients}
    wanted = [r.message.business_key for r in recipients] + list(duplicate_keys.values())
    held = {key: (holder, held_at) for key, holder, held_at in queries.run(
        conn, "adopt_key_holders", tenant_id=options.tenant, business_keys=wanted)}
    claimed: set[str] = set()  # keys taken earlier in this call
    planned, already = [], 0
    for r in recipients:
        key = r.message.business_key
        own = marker(options.legacy_table, r.row.id)
        if key in held and held[key][0] == own:
            already += 1
            continue
        later = key in claimed or (key in held and _holder_is_earlier(options, r.row, *held[key]))
        duplicate = key in held or key in claimed
        if duplicate:
            key = duplicate_keys[id(r)]
            if key in held:
                already += 1
                continue
        claimed.add(key)
        state = SUPERSEDED if later and r.outcome is Outcome.submitted else r.outcome.value
        planned.append(_Planned(r, key, state, duplicate))
    return planned, already


def _insert(conn: psycopg.Connection, options: AdoptOptions, planned: list[_Planned], *,
            now: datetime) -> dict[str, bool]:
    """Insert ``planned`` (partitions first); business key -> unpriced, of the rows inserted."""
    for month in sorted({(p.recipient.row.created_at.astimezone(UTC).year,
                          p.recipient.row.created_at.astimezone(UTC).month) for p in planned}):
        ensure_partition_for(conn, datetime(*month, 1, tzinfo=UTC))  # normally made before (backfill)
    fingerprint_of = IntakePolicy(text_key=options.text_key).fingerprints()
    billed = [p.state in (Outcome.submitted.value, SUPERSEDED) for p in planned]
    return dict(queries.run(
        conn, "adopt_insert", tenant_id=options.tenant, message_class=options.message_class,
        sender_id=options.sender, price_time_zone=options.price_time_zone, now=now,
        business_keys=[p.business_key for p in planned],
        recipients=[p.recipient.message.recipient for p in planned],
        bodies=[p.recipient.message.body for p in planned],
        encodings=[p.recipient.message.encoding for p in planned],
        segments=[p.recipient.message.segments for p in planned],
        states=[p.state for p in planned],
        billed=billed,
        # The id is the accepted numbers' only: a rejected (or unknown) recipient was not taken under it.
        transaction_ids=[p.recipient.parsed.transaction_id if b else None for p, b in zip(planned, billed)],
        created_ats=[p.recipient.row.created_at for p in planned],
        fingerprints=[fingerprint_of(p.recipient.message) for p in planned],
        adopted_froms=[marker(options.legacy_table, p.recipient.row.id) for p in planned],
    ).fetchall())


def adopt_legacy_rows(conn: psycopg.Connection, rows: Sequence[LegacyRow], options: AdoptOptions, *,
                      now: datetime, dry_run: bool = False) -> AdoptCounts:
    """Insert the outbound rows of ``rows`` not adopted yet, in the caller's transaction (a savepoint);
    counts by outcome. ``options.legacy_table`` must be canonical (:func:`legacy.canonical_table`).
    ``dry_run``: the same work, rolled back. Unsent rows are counted and skipped; a bad number, and a row
    without created_at, is counted with its legacy id and skipped. A row before the first day partition
    raises :class:`BeforePartitionStart` before anything is written."""
    _validate(options)
    counts = AdoptCounts()
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
    """(since, last legacy id) of the last committed batch of an unfinished backfill of the table (canonical)
    for the tenant, if any."""
    return queries.run(conn, "adopt_checkpoint", tenant_id=tenant, legacy_table=legacy_table).fetchone()


def resume_after(conn: psycopg.Connection, options: AdoptOptions, since: date | None) -> int | None:
    """The last legacy id a backfill with the same ``since`` committed (None: start from the beginning)."""
    stored = checkpoint(conn, options.tenant, options.legacy_table)
    return stored[1] if stored is not None and stored[0] == since else None


def _ensure_partitions(legacy_conn: psycopg.Connection, conn: psycopg.Connection, columns: ColumnMap,
                       options: AdoptOptions, *, after_id: int | None, since: datetime | None) -> None:
    """Make the month partitions the rows ahead need, each in a short transaction of its own, before any
    batch. A new partition takes an ACCESS EXCLUSIVE lock on the table: made inside a batch (or inside a dry
    run's one transaction), it would hold up every writer of the pipeline until that ended."""
    zone, first_day = ZoneInfo(options.price_time_zone), _first_day(conn, options)
    for month, earliest in legacy.months(legacy_conn, columns, after_id=after_id, since=since):
        if earliest.astimezone(zone).date() >= first_day:  # else the batch refuses it (BeforePartitionStart)
            ensure_partition_for(conn, month.astimezone(UTC))  # the name is the UTC month's


def backfill(legacy_conn: psycopg.Connection, conn: psycopg.Connection, columns: ColumnMap, options: AdoptOptions,
             *, since: date | None = None, batch: int = DEFAULT_BATCH, pause_s: float = DEFAULT_PAUSE_MS / 1000,
             dry_run: bool = False, now: Callable[[], datetime] = lambda: datetime.now(UTC),
             on_batch: Callable[[AdoptCounts], None] | None = None) -> AdoptCounts:
    """Adopt the legacy table from its checkpoint on, ``batch`` rows per transaction, ``pause_s`` between.

    The table is named as :func:`legacy.canonical_table` resolves it, however ``columns`` spells it. Each
    batch commits with the checkpoint (its last legacy id), so a killed run resumes after the last committed
    batch; a checkpoint made with another ``since`` is ignored, and a run that reaches the end clears it (a
    re-run reads every row again: adoption is idempotent). ``dry_run`` writes nothing, checkpoint included,
    except the empty month partitions the rows need. ``conn`` must be in autocommit mode.
    """
    table = legacy.canonical_table(legacy_conn, columns.table)
    columns, options = dataclasses.replace(columns, table=table), dataclasses.replace(options, legacy_table=table)
    after_id, since_at = resume_after(conn, options, since), since_start(options, since)
    _ensure_partitions(legacy_conn, conn, columns, options, after_id=after_id, since=since_at)
    total = AdoptCounts()
    # A dry run is one transaction rolled back at the end: each batch still sees what the ones before it
    # would have written (an event's first attempt), so it reports what the real run will do.
    with conn.transaction(force_rollback=True) if dry_run else nullcontext():
        for number, rows in enumerate(legacy.batches(legacy_conn, columns, after_id=after_id, since=since_at,
                                                     size=batch)):
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
    if not dry_run:
        queries.run(conn, "adopt_checkpoint_clear", tenant_id=options.tenant, legacy_table=options.legacy_table)
    return total
