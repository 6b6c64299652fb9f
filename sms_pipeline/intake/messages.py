"""Intake: validated send requests become ``pending`` rows, idempotently.

A request is one JSON object per line (``sms-pipeline enqueue FILE.jsonl``)
or a :class:`NewMessage` built by code. The recipient is normalised, the
encoding and segments are counted once and stored, and the business key is
computed before anything touches the database. Rows go in by ``COPY`` into
a temporary staging table and one ``INSERT ... SELECT`` that skips keys
already registered, so a repeated event returns the existing row: no second
row, no error.
"""

from __future__ import annotations

import functools
import itertools
import json
import logging
import multiprocessing
import re
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from uuid import UUID

import psycopg
from psycopg import errors

from sms_pipeline.core import keys, msisdn, otp, segments
from sms_pipeline.core.clock import Clock
from sms_pipeline.core.ids import SENTINELS
from sms_pipeline.core.states import Channel, MessageClass
from sms_pipeline.db import queries
from sms_pipeline.intake import otp_requests
from sms_pipeline.core.input_lines import BadLine, InvalidField, member

log = logging.getLogger(__name__)

REQUIRED_TEXT = ("tenant_id", "event_type", "recipient", "body", "message_class", "channel", "sender_id")
OPTIONAL_IDS = ("template_id", "dlt_entity_id", "dlt_template_id")
OPTIONAL_TIMES = ("scheduled_for", "expires_at")
FIELDS = frozenset({*REQUIRED_TEXT, "event_id", *OPTIONAL_IDS, *OPTIONAL_TIMES, *otp_requests.FIELDS})
# Provider-issued ids must arrive as strings: a 19-digit id that went through a
# JSON number in a JavaScript producer is already corrupted.
_PROVIDER_IDS = frozenset({"dlt_entity_id", "dlt_template_id"})
_WHITESPACE = re.compile(r"\s")
# A concurrent intake of the same key makes the insert fail; each retry sees
# more committed keys, so a few rounds always suffice.
_MAX_INSERT_ROUNDS = 5


@dataclass(frozen=True, slots=True)
class NewMessage:
    """One validated send request; recipient and body are kept out of reprs."""

    tenant_id: str
    event_type: str
    event_id: str
    recipient: str = field(repr=False)  # E.164 digits, no '+'
    body: str = field(repr=False)  # for OTP the template with $otp$, never a code
    message_class: MessageClass
    channel: Channel
    sender_id: str
    template_id: str | None
    dlt_entity_id: str | None
    dlt_template_id: str | None
    scheduled_for: datetime | None
    expires_at: datetime | None
    encoding: str
    segments: int
    business_key: str
    # OTP only: what the code will authorise and the session that asked (sms_pipeline.intake.otp_requests).
    otp_purpose: str | None = None
    otp_session_binding: str | None = None


@dataclass(frozen=True, slots=True)
class Enqueued:
    """The row a request maps to; ``created`` is False when the event was already there."""

    message_id: int
    created_at: datetime
    attempt_key: UUID
    state: str
    created: bool


def _text(record: Mapping[str, object], name: str, *, required: bool) -> str | None:
    value = record.get(name)
    if value is None:
        if required:
            raise InvalidField(name, "is required")
        return None
    if not isinstance(value, str):
        hint = " (a long id loses digits as a JSON number)" if name in _PROVIDER_IDS else ""
        raise InvalidField(name, f"must be a string, got a JSON {_json_kind(value)}{hint}")
    if required and not value.strip():
        raise InvalidField(name, "must not be empty")
    return value


def _json_kind(value: object) -> str:
    return {bool: "boolean", int: "number", float: "number", list: "array", dict: "object"}.get(
        type(value), type(value).__name__)


def _identifier(record: Mapping[str, object], name: str, *, required: bool) -> str | None:
    value = _text(record, name, required=required)
    if value is None:
        return None
    if value.strip() in SENTINELS:
        raise InvalidField(name, "is a placeholder (empty, 0, null or -), not an id")
    if not value.isprintable() or _WHITESPACE.search(value):
        raise InvalidField(name, "must not contain spaces or control characters")
    return value


def _event_id(record: Mapping[str, object]) -> str:
    value = record.get("event_id")
    # An integer event id is common and exact in Python's JSON; floats and
    # booleans are not ids.
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return _identifier(record, "event_id", required=True)  # type: ignore[return-value]


def _instant(record: Mapping[str, object], name: str) -> datetime | None:
    value = _text(record, name, required=False)
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(value.strip())
    except ValueError:
        example = "2026-03-01T09:30:00+05:30"
        raise InvalidField(name, f"must be an ISO 8601 date-time with an offset, e.g. {example}") from None
    if parsed.tzinfo is None or parsed.utcoffset() is None:
        raise InvalidField(name, "has no time zone offset (a naive time is ambiguous)")
    return parsed.astimezone(UTC)


@functools.lru_cache(maxsize=4096)
def _count(body: str, message_class: MessageClass, otp_code_length: int) -> segments.SegmentCount:
    """Bulk traffic repeats one body many times: count it once."""
    if message_class is MessageClass.otp:
        # The stored body is the template; the air carries the rendered code.
        return otp.otp_segments(body, otp_code_length)
    return segments.count_segments(body)


def new_message(record: Mapping[str, object], *, otp_code_length: int = 6,
                default_region: str = "IN") -> NewMessage:
    """Validate one request; raise :class:`InvalidField` naming the first bad field."""
    unknown = sorted(set(record) - FIELDS)
    if unknown:
        raise InvalidField(unknown[0], "unknown field")
    tenant_id = _identifier(record, "tenant_id", required=True)
    event_type = _text(record, "event_type", required=True)
    event_id = _event_id(record)
    message_class = member(MessageClass, _text(record, "message_class", required=True), "message_class")
    channel = member(Channel, _text(record, "channel", required=True), "channel")
    sender_id = _identifier(record, "sender_id", required=True)
    raw_recipient = _text(record, "recipient", required=True)
    try:
        recipient = msisdn.normalise(raw_recipient, default_region)  # type: ignore[arg-type]
    except msisdn.InvalidRecipient:
        # The number itself stays out of the message.
        raise InvalidField("recipient", f"not a valid phone number (default region {default_region})") from None
    body = _text(record, "body", required=True)
    try:
        count = _count(body, message_class, otp_code_length)  # type: ignore[arg-type]
    except otp.MissingPlaceholder:
        raise InvalidField("body", f"an OTP body must contain the {otp.PLACEHOLDER_OTP} placeholder") from None
    otp_purpose, otp_session_binding = otp_requests.request_fields(record, message_class)
    template_id, dlt_entity_id, dlt_template_id = (
        _identifier(record, name, required=False) for name in OPTIONAL_IDS)
    scheduled_for, expires_at = (_instant(record, name) for name in OPTIONAL_TIMES)
    if expires_at is not None and scheduled_for is not None and expires_at <= scheduled_for:
        raise InvalidField("expires_at", "must be later than scheduled_for")
    return NewMessage(
        tenant_id=tenant_id,  # type: ignore[arg-type]
        event_type=event_type,  # type: ignore[arg-type]
        event_id=event_id,
        recipient=recipient,
        body=body,  # type: ignore[arg-type]
        message_class=message_class,
        channel=channel,
        sender_id=sender_id,  # type: ignore[arg-type]
        template_id=template_id,
        dlt_entity_id=dlt_entity_id,
        dlt_template_id=dlt_template_id,
        scheduled_for=scheduled_for,
        expires_at=expires_at,
        encoding=count.encoding,
        segments=count.segments,
        business_key=keys.business_key_of_normalised(tenant_id, event_type, event_id, recipient,  # type: ignore[arg-type]
                                                     template_id),
        otp_purpose=otp_purpose,
        otp_session_binding=otp_session_binding,
    )


def parse_line(text: str, **options: object) -> NewMessage:
    """One JSONL line to a validated request."""
    try:
        record = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidField(None, f"not valid JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(record, dict):
        raise InvalidField(None, f"expected a JSON object, got a JSON {_json_kind(record)}")
    return new_message(record, **options)  # type: ignore[arg-type]


def read_jsonl(lines: Iterable[str], *, first_line_no: int = 1,
               **options: object) -> Iterator[tuple[int, NewMessage | BadLine]]:
    """(line number, request or refusal) for every non-blank line."""
    for line_no, text in enumerate(lines, start=first_line_no):
        if not text.strip():
            continue
        try:
            yield line_no, parse_line(text, **options)
        except InvalidField as exc:
            yield line_no, BadLine.from_error(line_no, exc)


# ----- the database side -------------------------------------------------------

_STAGING_COLUMNS = (
    "ord", "tenant_id", "business_key", "channel", "message_class", "recipient", "sender_id", "body",
    "encoding", "segments", "template_id", "dlt_entity_id", "dlt_template_id", "scheduled_for", "expires_at",
)  # the order enqueue() writes the staged rows in


def ensure_partition_for(conn: psycopg.Connection, at: datetime) -> None:
    """The month partition for ``at`` (normally made ahead by upkeep; a virtual clock may be elsewhere)."""
    queries.run(conn, "intake_ensure_partition", partition=f"msg.outbound_message_{at:%Y_%m}", at=at)


def enqueue(conn: psycopg.Connection, messages: Sequence[NewMessage], *, clock: Clock) -> list[Enqueued]:
    """Insert the requests whose keys are new; return the row each request maps to, in order.

    One transaction (a savepoint if the caller has one open). ``created_at``
    is the clock's now. Safe to run concurrently with itself: a key inserted
    by another transaction in the meantime makes the insert fail with a
    unique violation, and the statement is retried, now skipping that key.
    """
    if not messages:
        return []
    now = clock.now()
    with conn.transaction():
        ensure_partition_for(conn, now)
        queries.run(conn, "intake_stage_create")
        with queries.copy(conn, "intake_stage_copy",
                          identifiers={"columns": queries.column_list(_STAGING_COLUMNS)}) as copy:
            for ord_, m in enumerate(messages):
                copy.write_row((ord_, m.tenant_id, m.business_key, m.channel.value, m.message_class.value,
                                m.recipient, m.sender_id, m.body, m.encoding, m.segments, m.template_id,
                                m.dlt_entity_id, m.dlt_template_id, m.scheduled_for, m.expires_at))
        created_ids = _insert_new(conn, now)
        rows = queries.run(conn, "intake_resolve").fetchall()
        otp_requests.record_requests(conn, messages, [(row[0], row[1], row[2]) for row in rows])
    if len(rows) != len(messages):
        raise RuntimeError(f"intake resolved {len(rows)} of {len(messages)} requests")
    results = []
    for _ord, message_id, created_at, attempt_key, state in rows:
        # A key repeated within the batch: only its first line created the row.
        results.append(Enqueued(message_id, created_at, attempt_key, state, message_id in created_ids))
        created_ids.discard(message_id)
    created = sum(r.created for r in results)
    log.info("intake requests=%d created=%d existing=%d", len(results), created, len(results) - created)
    return results


def _insert_new(conn: psycopg.Connection, now: datetime) -> set[int]:
    for round_no in range(1, _MAX_INSERT_ROUNDS + 1):
        try:
            with conn.transaction():
                return {row[0] for row in queries.run(conn, "intake_insert_new", now=now)}
        except errors.UniqueViolation:
            # Another intake committed one of these keys after our statement
            # began; the next round's NOT EXISTS sees it.
            log.info("intake key race with a concurrent insert; retrying (round %d)", round_no)
    raise RuntimeError(f"intake could not settle key races in {_MAX_INSERT_ROUNDS} rounds")


@dataclass
class FileIntake:
    """What one JSONL file did: requests read, rows created, events already present, refused lines."""

    requests: int = 0
    created: int = 0
    existing: int = 0
    bad_lines: list[BadLine] = field(default_factory=list)


# Lines handed to one validation process at a time: large enough that
# shipping them costs little next to validating them.
_LINES_PER_BLOCK = 2_000


def _validate_block(first_line_no: int, raw_lines: list[bytes],
                    options: Mapping[str, object]) -> list[NewMessage | BadLine]:
    validated: list[NewMessage | BadLine] = []
    for line_no, raw in enumerate(raw_lines, start=first_line_no):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            validated.append(BadLine(line_no, None, "not UTF-8 text"))
            continue
        validated.extend(parsed for _, parsed in read_jsonl((text,), first_line_no=line_no, **options))
    return validated


def _blocks(lines: Iterable[bytes], on_bytes: Callable[[int], None] | None) -> Iterator[tuple[int, list[bytes]]]:
    block: list[bytes] = []
    first_line_no = 1
    for line_no, raw in enumerate(lines, start=1):
        if on_bytes is not None:
            on_bytes(len(raw))
        block.append(raw)
        if len(block) == _LINES_PER_BLOCK:
            yield first_line_no, block
            first_line_no, block = line_no + 1, []
    if block:
        yield first_line_no, block


def validate_lines(lines: Iterable[bytes], *, workers: int = 1, on_bytes: Callable[[int], None] | None = None,
                   **options: object) -> Iterator[NewMessage | BadLine]:
    """Every non-blank JSONL line, validated, in file order.

    Number parsing dominates intake, so with ``workers`` > 1 and more than one
    block of lines it runs in that many processes (spawned, so no database
    connection is ever shared with them), a few blocks ahead of the consumer.
    """
    blocks = _blocks(lines, on_bytes)
    head = list(itertools.islice(blocks, 2))
    if workers <= 1 or len(head) < 2:
        for block in itertools.chain(head, blocks):
            yield from _validate_block(*block, options)
        return
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        pending: deque[Future[list[NewMessage | BadLine]]] = deque()
        for block in itertools.chain(head, blocks):
            pending.append(pool.submit(_validate_block, *block, options))
            if len(pending) > 2 * workers:
                yield from pending.popleft().result()
        while pending:
            yield from pending.popleft().result()


def enqueue_lines(conn: psycopg.Connection, lines: Iterable[bytes], *, clock: Clock, chunk_size: int = 10_000,
                  workers: int = 1, on_bytes: Callable[[int], None] | None = None,
                  **options: object) -> FileIntake:
    """Validate and enqueue a JSONL byte stream in chunks of ``chunk_size`` good lines.

    Good lines load even when others are refused; each chunk commits on its
    own, and a re-run after a crash loads only what is missing (intake is
    idempotent). ``workers`` validation processes run while the database
    inserts; ``on_bytes`` is told how many bytes each line took (progress).
    """
    result = FileIntake()
    chunk: list[NewMessage] = []

    def flush() -> None:
        for row in enqueue(conn, chunk, clock=clock):
            result.created += row.created
            result.existing += not row.created
        chunk.clear()

    for validated in validate_lines(lines, workers=workers, on_bytes=on_bytes, **options):
        if isinstance(validated, BadLine):
            result.bad_lines.append(validated)
            continue
        result.requests += 1
        chunk.append(validated)
        if len(chunk) >= chunk_size:
            flush()
    if chunk:
        flush()
    return result
