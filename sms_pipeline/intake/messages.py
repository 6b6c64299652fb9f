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

import dataclasses
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
from datetime import UTC, datetime, timedelta
from typing import Protocol
from uuid import UUID

import psycopg
from psycopg import errors

from sms_pipeline import hmac_keys
from sms_pipeline.core import fingerprint, keys, msisdn, otp, segments
from sms_pipeline.core.channels import SENDABLE_CHANNELS
from sms_pipeline.core.clock import Clock
from sms_pipeline.core.ids import SENTINELS
from sms_pipeline.core.states import Channel, MessageClass
from sms_pipeline.db import queries
from sms_pipeline.intake import otp_requests
from sms_pipeline.core.input_lines import BadLine, InvalidField, member, text_problem, without_bom

log = logging.getLogger(__name__)

REQUIRED_TEXT = ("tenant_id", "event_type", "recipient", "body", "message_class", "channel", "sender_id")
OPTIONAL_IDS = ("template_id", "dlt_entity_id", "dlt_template_id")
OPTIONAL_TIMES = ("scheduled_for", "expires_at")
FIELDS = frozenset({*REQUIRED_TEXT, "event_id", *OPTIONAL_IDS, *OPTIONAL_TIMES, *otp_requests.FIELDS})
# Provider-issued ids must arrive as strings: a 19-digit id that went through a
# JSON number in a JavaScript producer is already corrupted.
_PROVIDER_IDS = frozenset({"dlt_entity_id", "dlt_template_id"})
_WHITESPACE = re.compile(r"\s")
# What the provider and the DLT registry take: a sender id of 3-11 letters or
# digits, template and DLT ids of 1-30 digits.
_SENDER_ID = re.compile(r"[A-Za-z0-9]{3,11}", re.ASCII)
_NUMERIC_ID = re.compile(r"[0-9]{1,30}", re.ASCII)
# The control characters an SMS body may hold: line breaks (GSM 03.38 has LF
# and CR) and tab. Any other is refused; NUL always is (Postgres cannot store it).
BODY_CONTROLS = "\n\r\t"
# A body longer than this many segments is refused (SMS_PIPELINE_MAX_BODY_SEGMENTS).
DEFAULT_MAX_BODY_SEGMENTS = 10
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
class IntakePolicy:
    """What intake adds to a request from the settings: default expiry, the OTP retry-after check.

    A row without ``expires_at`` gets one: an OTP expires with its code
    (``SMS_PIPELINE_OTP_EXPIRY_S`` after it is due), any other message
    ``SMS_PIPELINE_MAX_SEND_DELAY_H`` after it is due (``scheduled_for``, else
    now). ``otp_retry_after_s`` (``SMS_PIPELINE_OTP_RETRY_AFTER_S``): a new OTP
    to the same tenant, number and purpose as one taken less than that ago is
    refused; None leaves that to the provider (its ``retryAfter`` rejects it at send).
    ``text_key`` (``SMS_PIPELINE_TEXT_HMAC_KEY``): a fixed body's fingerprint
    is stored with its row here, once per distinct body of the batch (an
    OTP's is made at send, with its code); None stores none.
    """

    otp_expiry_s: int = 300
    max_send_delay_h: int = 24
    otp_retry_after_s: int | None = None
    text_key: bytes | None = field(default=None, repr=False)

    @classmethod
    def from_settings(cls, settings: object) -> IntakePolicy:
        return cls(otp_expiry_s=settings.otp_expiry_s,  # type: ignore[attr-defined]
                   max_send_delay_h=settings.max_send_delay_h,  # type: ignore[attr-defined]
                   otp_retry_after_s=settings.otp_retry_after_s or None,  # type: ignore[attr-defined]
                   text_key=hmac_keys.text_key(settings))

    def fingerprints(self) -> Callable[[NewMessage], bytes | None]:
        """The fingerprint of a message's text as sent, computed once per distinct body."""
        key = self.text_key
        if key is None:
            return lambda message: None
        of_body = functools.lru_cache(maxsize=1024)(lambda body: fingerprint.text_fingerprint(key, body))
        return lambda message: None if message.message_class is MessageClass.otp else of_body(message.body)

    def expires_at(self, message: NewMessage, now: datetime) -> datetime:
        if message.expires_at is not None:
            return message.expires_at
        due = message.scheduled_for or now
        if message.message_class is MessageClass.otp:
            return due + timedelta(seconds=self.otp_expiry_s)
        return due + timedelta(hours=self.max_send_delay_h)


DEFAULT_POLICY = IntakePolicy()


class OtpTooSoon(InvalidField):
    """A second OTP to the same number and purpose inside the provider's retry-after."""

    def __init__(self, retry_after_s: int) -> None:
        super().__init__("recipient", f"another OTP to this number for this purpose was requested less than "
                                      f"{retry_after_s} s ago (SMS_PIPELINE_OTP_RETRY_AFTER_S); "
                                      "the provider would refuse it")


@dataclass(frozen=True, slots=True)
class Enqueued:
    """The row a request maps to; ``created`` is False when the event was already there."""

    message_id: int
    created_at: datetime
    attempt_key: UUID
    state: str
    created: bool
    campaign_id: int | None = None


class CampaignSlot(Protocol):
    """The campaign a file's requests join (:mod:`sms_pipeline.intake.campaigns`).

    Every row is due at ``scheduled_for`` and carries ``campaign_id(conn)``,
    which intake calls inside a batch's transaction (the first call may
    write the campaign, so a new campaign commits with its first rows; later
    calls return the same id).
    """

    scheduled_for: datetime

    def campaign_id(self, conn: psycopg.Connection) -> int: ...


def _text(record: Mapping[str, object], name: str, *, required: bool, allowed_controls: str = "") -> str | None:
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
    # Before anything else reads it: a NUL or a lone surrogate would fail the
    # database write (or the UTF-8 encoding before it), taking the batch along.
    problem = text_problem(value, allowed_controls=allowed_controls)
    if problem is not None:
        raise InvalidField(name, problem)
    return value


def _json_kind(value: object) -> str:
    return {bool: "boolean", int: "number", float: "number", list: "array", dict: "object"}.get(
        type(value), type(value).__name__)


MAX_IDENTIFIER_LENGTH = 200


def _identifier(record: Mapping[str, object], name: str, *, required: bool) -> str | None:
    value = _text(record, name, required=required)
    if value is None:
        return None
    if value.strip() in SENTINELS:
        raise InvalidField(name, "is a placeholder (empty, 0, null or -), not an id")
    if not value.isprintable() or _WHITESPACE.search(value):
        raise InvalidField(name, "must not contain spaces or control characters")
    if len(value) > MAX_IDENTIFIER_LENGTH:  # ids are index keys: Postgres refuses an index row over ~2.7 kB
        raise InvalidField(name, f"is longer than {MAX_IDENTIFIER_LENGTH} characters")
    return value


def _pattern_id(record: Mapping[str, object], name: str, pattern: re.Pattern[str], rule: str, *,
                required: bool) -> str | None:
    value = _identifier(record, name, required=required)
    if value is not None and not pattern.fullmatch(value):
        raise InvalidField(name, f"must be {rule}")
    return value


def _field_name(name: str) -> str:
    """A field name fit to print: an unknown key may hold anything."""
    return name if name.isprintable() and text_problem(name) is None else ascii(name)


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


def _body(record: Mapping[str, object], message_class: MessageClass, otp_code_length: int,
          max_segments: int) -> tuple[str, segments.SegmentCount]:
    body = _text(record, "body", required=True, allowed_controls=BODY_CONTROLS)
    too_long = f"longer than {max_segments} segments (SMS_PIPELINE_MAX_BODY_SEGMENTS)"
    # Every character costs at least one unit, and an OTP's rendered text is at
    # least a fifth of its template ("$otp$" becomes a code of one or more
    # characters): a body longer than this cannot fit, and is refused before
    # anything counts (or caches) it.
    gsm7 = segments.GSM7
    most_characters = max(segments.SINGLE_CAPACITY[gsm7], max_segments * segments.MULTI_CAPACITY[gsm7])
    if message_class is MessageClass.otp:
        most_characters *= len(otp.PLACEHOLDER_OTP)
    if len(body) > most_characters:  # type: ignore[arg-type]
        raise InvalidField("body", too_long)
    try:
        count = _count(body, message_class, otp_code_length)  # type: ignore[arg-type]
    except otp.MissingPlaceholder:
        raise InvalidField("body", f"an OTP body must contain the {otp.PLACEHOLDER_OTP} placeholder") from None
    if count.segments > max_segments:
        raise InvalidField("body", f"{too_long}: {count.segments} {count.encoding} segments")
    return body, count  # type: ignore[return-value]


def new_message(record: Mapping[str, object], *, otp_code_length: int = 6, default_region: str = "IN",
                max_body_segments: int = DEFAULT_MAX_BODY_SEGMENTS) -> NewMessage:
    """Validate one request; raise :class:`InvalidField` naming the first bad field."""
    unknown = sorted(set(record) - FIELDS)
    if unknown:
        raise InvalidField(_field_name(unknown[0]), "unknown field")
    tenant_id = _identifier(record, "tenant_id", required=True)
    event_type = _text(record, "event_type", required=True)
    event_id = _event_id(record)
    message_class = member(MessageClass, _text(record, "message_class", required=True), "message_class")
    channel = member(Channel, _text(record, "channel", required=True), "channel")
    if channel not in SENDABLE_CHANNELS:
        sendable = ", ".join(sorted(SENDABLE_CHANNELS))
        raise InvalidField("channel", f"{channel} has no send strategy yet (sendable: {sendable}); "
                                      "it would wait in pending for ever")
    sender_id = _pattern_id(record, "sender_id", _SENDER_ID, "3 to 11 letters or digits", required=True)
    raw_recipient = _text(record, "recipient", required=True)
    try:
        recipient = msisdn.normalise_mobile(raw_recipient, default_region)  # type: ignore[arg-type]
    except msisdn.NotMobile:
        raise InvalidField("recipient", "not a mobile number (a landline or a special service number "
                                        "cannot receive an SMS)") from None
    except msisdn.InvalidRecipient:
        # The number itself stays out of the message.
        raise InvalidField("recipient", f"not a valid phone number (default region {default_region})") from None
    body, count = _body(record, message_class, otp_code_length, max_body_segments)
    otp_purpose, otp_session_binding = otp_requests.request_fields(record, message_class)
    template_id, dlt_entity_id, dlt_template_id = (
        _pattern_id(record, name, _NUMERIC_ID, "1 to 30 digits", required=False) for name in OPTIONAL_IDS)
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
    except RecursionError:
        raise InvalidField(None, "not valid here: nested too deeply") from None
    except ValueError:  # an integer past Python's digit limit (a hostile line, not a number we use)
        raise InvalidField(None, "not valid here: a number with too many digits") from None
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
    "message_fingerprint",
)  # the order enqueue() writes the staged rows in


def ensure_partition_for(conn: psycopg.Connection, at: datetime) -> None:
    """The month partition for ``at`` (normally made ahead by upkeep; a virtual clock may be elsewhere)."""
    queries.run(conn, "intake_ensure_partition", partition=f"msg.outbound_message_{at:%Y_%m}", at=at)


def enqueue(conn: psycopg.Connection, messages: Sequence[NewMessage], *, clock: Clock,
            policy: IntakePolicy = DEFAULT_POLICY) -> list[Enqueued]:
    """Insert the requests whose keys are new; return the row each request maps to, in order.

    One transaction (a savepoint if the caller has one open). ``created_at``
    is the clock's now; ``policy`` fills in expiry (and may refuse an OTP sent
    too soon: then :class:`OtpTooSoon` is raised and nothing is written). Safe
    to run concurrently with itself: a key inserted by another transaction in
    the meantime makes the insert fail with a unique violation, and the
    statement is retried, now skipping that key.
    """
    return _enqueue(conn, messages, clock=clock, policy=policy, strict=True)  # type: ignore[return-value]


def _enqueue(conn: psycopg.Connection, messages: Sequence[NewMessage], *, clock: Clock, policy: IntakePolicy,
             strict: bool, campaign: CampaignSlot | None = None) -> list[Enqueued | InvalidField]:
    """:func:`enqueue`; without ``strict``, a refused request takes its place in the result as its refusal.

    New rows join ``campaign`` when one is given (their ``scheduled_for`` is already its time).
    """
    if not messages:
        return []
    now = clock.now()
    results: list[Enqueued | InvalidField | None] = [None] * len(messages)
    with conn.transaction():
        for position, refusal in _otp_refusals(conn, messages, now, policy).items():
            if strict:
                raise refusal  # rolls the batch back
            results[position] = refusal
        accepted = [ord_ for ord_, result in enumerate(results) if result is None]
        if not accepted:
            return results  # type: ignore[return-value]
        campaign_id = None if campaign is None else campaign.campaign_id(conn)
        ensure_partition_for(conn, now)
        queries.run(conn, "intake_stage_create")
        fingerprint_of = policy.fingerprints()
        with queries.copy(conn, "intake_stage_copy",
                          identifiers={"columns": queries.column_list(_STAGING_COLUMNS)}) as copy:
            for ord_ in accepted:
                m = messages[ord_]
                copy.write_row((ord_, m.tenant_id, m.business_key, m.channel.value, m.message_class.value,
                                m.recipient, m.sender_id, m.body, m.encoding, m.segments, m.template_id,
                                m.dlt_entity_id, m.dlt_template_id, m.scheduled_for, policy.expires_at(m, now),
                                fingerprint_of(m)))
        created_ids = _insert_new(conn, now, campaign_id)
        rows = queries.run(conn, "intake_resolve").fetchall()
        otp_requests.record_requests(conn, messages, [(row[0], row[1], row[2]) for row in rows])
    if len(rows) != len(accepted):
        raise RuntimeError(f"intake resolved {len(rows)} of {len(accepted)} requests")
    for ord_, message_id, created_at, attempt_key, state, row_campaign_id in rows:
        # A key repeated within the batch: only its first line created the row.
        results[ord_] = Enqueued(message_id, created_at, attempt_key, state, message_id in created_ids,
                                 row_campaign_id)
        created_ids.discard(message_id)
    created = sum(isinstance(r, Enqueued) and r.created for r in results)
    log.info("intake requests=%d created=%d existing=%d refused=%d", len(rows), created,
             len(rows) - created, len(results) - len(rows))
    return results  # type: ignore[return-value]


def _otp_refusals(conn: psycopg.Connection, messages: Sequence[NewMessage], now: datetime,
                  policy: IntakePolicy) -> dict[int, InvalidField]:
    """Positions of the new OTP requests that come too soon after another to the same number and purpose.

    Too soon: another OTP (another business key) to the same tenant, number
    and purpose was taken less than the retry-after ago, or comes earlier in
    this batch. A request whose event is already enqueued maps to its row and
    is never refused, so a re-run changes nothing.
    """
    if policy.otp_retry_after_s is None:
        return {}
    positions = [n for n, m in enumerate(messages) if m.message_class is MessageClass.otp and m.otp_purpose]
    if not positions:
        return {}
    checked = queries.run(
        conn, "intake_otp_recent_requests",
        tenant_ids=[messages[n].tenant_id for n in positions],
        recipients=[messages[n].recipient for n in positions],
        purposes=[messages[n].otp_purpose for n in positions],
        business_keys=[messages[n].business_key for n in positions],
        since=now - timedelta(seconds=policy.otp_retry_after_s),
    ).fetchall()
    refusals: dict[int, InvalidField] = {}
    first_new: dict[tuple[str, str, str | None], str] = {}
    for (_ordinal, known, recent), position in zip(sorted(checked), positions):
        m = messages[position]
        if known:
            continue
        key = (m.tenant_id, m.recipient, m.otp_purpose)
        if recent or first_new.setdefault(key, m.business_key) != m.business_key:
            refusals[position] = OtpTooSoon(policy.otp_retry_after_s)
    return refusals


def _insert_new(conn: psycopg.Connection, now: datetime, campaign_id: int | None) -> set[int]:
    for round_no in range(1, _MAX_INSERT_ROUNDS + 1):
        try:
            with conn.transaction():
                return {row[0] for row in queries.run(conn, "intake_insert_new", now=now, campaign_id=campaign_id)}
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
                    options: Mapping[str, object]) -> list[tuple[int, NewMessage | BadLine]]:
    validated: list[tuple[int, NewMessage | BadLine]] = []
    for line_no, raw in enumerate(raw_lines, start=first_line_no):
        if line_no == 1:
            raw = without_bom(raw)  # as the rate-card loader does
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            validated.append((line_no, BadLine(line_no, None, "not UTF-8 text")))
            continue
        validated.extend(read_jsonl((text,), first_line_no=line_no, **options))
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
    for _line_no, validated in validate_numbered_lines(lines, workers=workers, on_bytes=on_bytes, **options):
        yield validated


def validate_numbered_lines(lines: Iterable[bytes], *, workers: int = 1,
                            on_bytes: Callable[[int], None] | None = None,
                            **options: object) -> Iterator[tuple[int, NewMessage | BadLine]]:
    """:func:`validate_lines` with each line's number."""
    blocks = _blocks(lines, on_bytes)
    head = list(itertools.islice(blocks, 2))
    if workers <= 1 or len(head) < 2:
        for block in itertools.chain(head, blocks):
            yield from _validate_block(*block, options)
        return
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        pending: deque[Future[list[tuple[int, NewMessage | BadLine]]]] = deque()
        for block in itertools.chain(head, blocks):
            pending.append(pool.submit(_validate_block, *block, options))
            if len(pending) > 2 * workers:
                yield from pending.popleft().result()
        while pending:
            yield from pending.popleft().result()


def _joining(campaign: CampaignSlot, line_no: int, message: NewMessage) -> NewMessage | BadLine:
    """A request of a campaign file, due at the campaign's time; a line with a time of its own is refused."""
    if message.scheduled_for is not None:
        return BadLine(line_no, "scheduled_for", "not allowed in a campaign file (the campaign sets the time)")
    if message.expires_at is not None and message.expires_at <= campaign.scheduled_for:
        return BadLine(line_no, "expires_at", "must be later than the campaign's time")
    return dataclasses.replace(message, scheduled_for=campaign.scheduled_for)


def enqueue_lines(conn: psycopg.Connection, lines: Iterable[bytes], *, clock: Clock, chunk_size: int = 10_000,
                  workers: int = 1, on_bytes: Callable[[int], None] | None = None,
                  policy: IntakePolicy = DEFAULT_POLICY, campaign: CampaignSlot | None = None,
                  **options: object) -> FileIntake:
    """Validate and enqueue a JSONL byte stream in chunks of ``chunk_size`` good lines.

    Every line is validated before its chunk touches the database, so a bad
    line is refused by number and field and never fails a write. Good lines
    load even when others are refused; each chunk commits on its own, and a
    re-run after a crash loads only what is missing (intake is idempotent).
    ``policy`` fills in expiry and may refuse an OTP that comes too soon
    (refused lines, like the others). ``workers`` validation processes run
    while the database inserts; ``on_bytes`` is told how many bytes each
    line took (progress). With ``campaign``, every row joins it, due at its
    time; a line whose event is already enqueued outside it is refused
    (it would not go with the campaign).
    """
    result = FileIntake()
    chunk: list[tuple[int, NewMessage]] = []

    def flush() -> None:
        done = _enqueue(conn, [m for _, m in chunk], clock=clock, policy=policy, strict=False, campaign=campaign)
        for (line_no, _), row in zip(chunk, done):
            if isinstance(row, InvalidField):
                result.bad_lines.append(BadLine.from_error(line_no, row))
                continue
            if campaign is not None and row.campaign_id != campaign.campaign_id(conn):
                result.bad_lines.append(BadLine(line_no, "event_id", f"already enqueued outside this campaign "
                                                                      f"(message {row.message_id})"))
                continue
            result.requests += 1
            result.created += row.created
            result.existing += not row.created
        chunk.clear()

    for line_no, validated in validate_numbered_lines(lines, workers=workers, on_bytes=on_bytes, **options):
        if campaign is not None and not isinstance(validated, BadLine):
            validated = _joining(campaign, line_no, validated)
        if isinstance(validated, BadLine):
            result.bad_lines.append(validated)
            continue
        chunk.append((line_no, validated))
        if len(chunk) >= chunk_size:
            flush()
    if chunk:
        flush()
    result.bad_lines.sort(key=lambda bad: bad.line_no)
    return result
