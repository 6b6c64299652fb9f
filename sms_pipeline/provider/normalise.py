"""The one place every provider answer passes through on its way in.

Two parts:

1. The **shape table**: every key name, list name, code and format that
   docs/provider-contract.md marks [assumed] (or [seen] without a published
   spec). When a real account shows a different shape, this table is what
   changes; nothing else in the client names a provider field.
2. The **normalisation**: JSON decoded with numbers kept as text (an id never
   passes through int or float), sentinels ("0", "", "null", ...) to None via
   ``core.ids``, ``statusCode``/``code`` accepted as string or number, HTTP
   429 treated exactly like a body code 429, provider-local times converted
   with the configured zone.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, Literal, TypeVar
from zoneinfo import ZoneInfo

from sms_pipeline.core import msisdn
from sms_pipeline.core.ids import InvalidIdentifier, InvalidTimestamp, SENTINELS, clean_epoch_ms, clean_id
from sms_pipeline.core.provider_time import InvalidLocalTime, parse_human, parse_local
from sms_pipeline.provider.results import (
    HTTP_CODE_PREFIX,
    RATE_LIMITED_CODE,
    CampaignTransaction,
    DeliveryCode,
    DlrRow,
    OtpVerification,
    ScheduleRow,
    SendAccepted,
    SendAmbiguous,
    SendOutcome,
    SendRefused,
    SummaryRow,
    TxnReportRow,
    WebhookRegistration,
)

# =============================================================================
# 1. Shape table ([assumed] / [seen] shapes of docs/provider-contract.md)
# =============================================================================

PATHS: Mapping[str, str] = {
    "send": "/send",
    "otp": "/otp",
    "dlr": "/report/status",  # method=getDlr
    "transaction": "/reports/status",  # uuid=; /report/status?uuid= answers the same [seen]
    "day": "/report/day",  # GET only [doc]
    "summary": "/report/summary",
    "schedule_read": "/schedule/read",
    "schedule_update": "/schedule/update",
    "schedule_delete": "/schedule/delete",
    "campaign_read": "/campaign/read",
    "webhook_create": "/webhook/create",
    "webhook_read": "/webhook/read",  # GET [doc]
    "webhook_update": "/webhook/update",
    "webhook_delete": "/webhook/delete",
    "delivery_codes": "/info/deliverycodes",  # GET [doc for the path]
}

ENVELOPE_KEY = "response"  # report answers wrap their content in it; send answers are flat
STATUS_KEY = "status"
CODE_KEYS = ("statusCode", "code")  # flat send answers / enveloped report answers
REASON_KEYS = ("reason", "msg")
SUCCESS_STATUS = "success"
LIST_SEPARATOR = ","  # mobile / invalidMobile lists
# Region a number without its country code is read in when the answer's
# numbers are matched to ours ("0..." national forms) [assumed: the account's country].
NUMBER_REGION = "IN"

SEND_FIELDS: Mapping[str, str] = {
    "transaction_id": "transactionId",
    "accepted": "mobile",  # every accepted recipient [assumed]
    "invalid": "invalidMobile",
    "campaign_id": "campaignId",  # only with scheduleTime [assumed]
    "request_time": "requestTime",  # provider-local YYYY-MM-DD HH:MM:SS
}
# The XML multi-message send (POST /send, Content-Type application/xml) [doc for
# the form; element names beyond <data>/<sms>/<mobile>/<msg> assumed]. The
# answer is the flat JSON of SEND_FIELDS.
XML_CONTENT_TYPE = "application/xml"
XML_ROOT = "data"
XML_MESSAGE = "sms"
XML_FIELDS: Mapping[str, str] = {
    "userid": "userid", "password": "password", "sender_id": "senderid", "msg_type": "msgType",
    "dlt_entity_id": "dltEntityId", "duplicate_check": "duplicatecheck", "output": "output",
    "mobile": "mobile", "text": "msg", "dlt_template_id": "dltTemplateId",
}
# Characters XML 1.0 cannot carry at all, not even as a character reference.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_safe(value: str) -> bool:
    """Whether ``value`` can travel in an XML send unchanged (else it needs the quick send)."""
    return _NOT_XML.search(value) is None


OTP_FIELDS: Mapping[str, str] = {
    "transaction_id": "transactionId",  # always "0" [doc]
    "mobile": "mobile",
    "create_time": "createTime",  # ms epoch [doc]
    "retry_after_s": "retryAfter",
}

# getDlr: times are ms epoch strings, "0" = not yet [assumed].
DLR_LIST_KEY = "reports_dlrList"
DLR_TOTAL_KEY = "totalRecords"
DLR_FIELDS: Mapping[str, str] = {
    "msg_id": "msgId", "transaction_id": "uuId", "mobile": "mobileNo", "sender": "senderName", "text": "text",
    "status": "status", "cause": "cause", "error_code": "errorCode", "submit_time": "submitTime",
    "delivery_time": "deliveryTime",
}
# By transaction: nested {"Status", "Cause"} [seen], human-readable local times [doc].
TXN_LIST_KEY = "reports_statusList"
TXN_FIELDS: Mapping[str, str] = {
    "msg_id": "msgId", "mobile": "mobileNo", "sender": "senderName", "status_object": "status",
    "status": "Status", "cause": "Cause", "submit_time": "submitTime", "delivery_time": "deliveryTime",
}
SUMMARY_LIST_KEY = "reports_summaryList"
SUMMARY_FIELDS: Mapping[str, str] = {
    "day": "date", "sender_id": "senderid", "total": "total", "delivered": "delivered", "failed": "failed",
    "pending": "pending", "units": "units",
}
SCHEDULE_LIST_KEY = "scheduleList"
SCHEDULE_FIELDS: Mapping[str, str] = {
    "transaction_id": "uuId", "campaign_id": "campaignId", "sender": "senderName", "msg_type": "msgType",
    "total": "total", "schedule_time": "scheduleTime",
}
CAMPAIGN_LIST_KEY = "campaignList"
CAMPAIGN_ITEM_KEY = "campaign"
CAMPAIGN_FIELDS: Mapping[str, str] = {
    "transaction_id": "uuId", "status": "status", "total": "total", "created_at": "timestamp",
    "scheduled_for": "scheduledTimestamp", "last_updated": "lastupdatedTimestamp",
}

# The receipt-push registration (docs/provider-contract.md#dlr-push-webhook): the request's
# parameters [doc], which the answers repeat in the envelope's content [assumed]. A read with
# nothing registered answers code WEBHOOK_ABSENT_CODE [assumed].
WEBHOOK_FIELDS: Mapping[str, str] = {"url": "smswebhook", "rate": "smswebhookrate"}
WEBHOOK_ABSENT_CODE = "404"
# The error-code table a push's code is read with [content assumed].
DELIVERY_CODES_LIST_KEY = "deliveryCodes"
DELIVERY_CODE_FIELDS: Mapping[str, str] = {"code": "code", "status": "status", "description": "description"}

# Day report zip: member name and header (names with spaces) -> our field names.
DAY_REPORT_MEMBER = "dlr_report_{date}.csv"
DAY_REPORT_COLUMNS: Mapping[str, str] = {
    "Message Id": "msg_id",
    "Transaction Id": "transaction_id",
    "Mobile No": "mobile",
    "Sender Name": "sender",
    "Message": "message",
    "Msg Type": "msg_type",
    "Submit Time": "submit_time",
    "Delivery Time": "delivery_time",
    "Status": "status",
    "Cause": "cause",
    "Error Code": "error_code",
    "Units": "units",
}
# Every listed column is required: a file without one of them is not the
# format this table describes, and loading it anyway would be guessing.
DAY_REPORT_REQUIRED: frozenset[str] = frozenset(DAY_REPORT_COLUMNS)

# HTTP statuses that say nothing about whether the request was processed.
_AMBIGUOUS_HTTP = frozenset({408})

# =============================================================================
# 2. Normalisation
# =============================================================================

T = TypeVar("T")


class MalformedBody(ValueError):
    """A body that is not the JSON object the contract describes."""


def decode(content: bytes) -> dict[str, Any]:
    """JSON object with every number kept as its text (``parse_int=str``)."""
    try:
        value = json.loads(content.decode("utf-8-sig"), parse_int=str, parse_float=str)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise MalformedBody(f"body is not JSON ({type(exc).__name__})") from None
    if not isinstance(value, dict):
        raise MalformedBody(f"body is JSON {type(value).__name__}, not an object")
    return value


def text(obj: Mapping[str, Any], key: str) -> str:
    """A scalar field as text; absent or null -> ""."""
    value = obj.get(key)
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    raise MalformedBody(f"field {key!r} is {type(value).__name__}, expected a string or number")


def code_text(value: Any) -> str | None:
    """``statusCode`` / ``code`` as a string, whether it came quoted or as a number."""
    if value is None:
        return None
    if isinstance(value, str) and value.strip():
        return value.strip()
    raise MalformedBody(f"status code {value!r} is neither a string nor a number")


def _converted(convert: Callable[[str], T], raw: str) -> T:
    """``convert(raw)``, its complaint about the value turned into MalformedBody."""
    try:
        return convert(raw)
    except (InvalidIdentifier, InvalidTimestamp, InvalidLocalTime) as exc:
        raise MalformedBody(str(exc)) from None


def _zoned(parse: Callable[[str, ZoneInfo], datetime], raw: str, tz: ZoneInfo) -> datetime | None:
    raw = raw.strip()
    return None if raw in SENTINELS else _converted(lambda text: parse(text, tz), raw)


def optional_id(obj: Mapping[str, Any], key: str) -> str | None:
    return _converted(clean_id, text(obj, key))


def epoch_time(obj: Mapping[str, Any], key: str) -> datetime | None:
    return _converted(clean_epoch_ms, text(obj, key))


def local_time(obj: Mapping[str, Any], key: str, tz: ZoneInfo) -> datetime | None:
    """``YYYY-MM-DD HH:MM:SS`` in the provider zone; sentinels -> None."""
    return _zoned(parse_local, text(obj, key), tz)


def count(obj: Mapping[str, Any], key: str) -> int:
    """A count (units, totals): an integer written as text; absent -> 0."""
    raw = text(obj, key).strip()
    if raw == "":
        return 0
    if not re.fullmatch(r"-?[0-9]+", raw, re.ASCII):
        raise MalformedBody(f"field {key!r} is not an integer: {raw!r}")
    return int(raw)


def _day(obj: Mapping[str, Any], key: str) -> date | None:
    raw = text(obj, key).strip()
    if raw in SENTINELS:
        return None
    try:
        return date.fromisoformat(raw)
    except ValueError:
        raise MalformedBody(f"field {key!r} is not a date: {raw!r}") from None


def _list(raw: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in raw.split(LIST_SEPARATOR) if part.strip())


@dataclass(frozen=True)
class Answer:
    """Status, code and reason of an answer, and the object holding its content."""

    status: str  # "success" / "error" (lower case), or "" when absent
    code: str | None
    reason: str
    content: dict[str, Any]  # the envelope's content, or the flat body

    @property
    def ok(self) -> bool:
        return self.status == SUCCESS_STATUS and self.code in (None, "200")

    @property
    def rate_limited(self) -> bool:
        return self.code == RATE_LIMITED_CODE


def answer(http_status: int, content: bytes) -> Answer:
    """Read any JSON answer (flat or enveloped); HTTP 429 reads like code 429."""
    if http_status == 429:
        return Answer("error", RATE_LIMITED_CODE, "Too many requests (HTTP 429)", {})
    body = decode(content)
    inner = body.get(ENVELOPE_KEY)
    holder = inner if isinstance(inner, dict) else body
    code = next((code_text(holder[k]) for k in CODE_KEYS if holder.get(k) is not None), None)
    reason = next((text(holder, k) for k in REASON_KEYS if holder.get(k)), "")
    return Answer(text(holder, STATUS_KEY).strip().lower(), code, reason, holder)


def _http_problem(http_status: int) -> SendOutcome | None:
    """The outcome an HTTP status decides by itself, if any (body not needed)."""
    if http_status == 429:
        return SendRefused(RATE_LIMITED_CODE, "Too many requests (HTTP 429)")
    if http_status >= 500 or http_status in _AMBIGUOUS_HTTP:
        return SendAmbiguous(f"HTTP {http_status} from the provider")
    if http_status != 200:
        return SendRefused(f"{HTTP_CODE_PREFIX}{http_status}", f"HTTP {http_status} from the provider")
    return None


def _refused_or_ambiguous(ans: Answer) -> SendOutcome:
    if ans.status == "error" and ans.code:
        return SendRefused(ans.code, ans.reason)
    return SendAmbiguous(f"unrecognised answer (status {ans.status!r}, code {ans.code!r})")


def number_key(raw: str, region: str = NUMBER_REGION) -> str:
    """What a number in a request or an answer is compared by.

    The E.164 digits of ``core.msisdn`` when it is a valid number
    (``+91 98765 43210``, ``098765 43210`` and ``919876543210`` are one key);
    otherwise its digits alone, so that a number nobody can read (``917``)
    still matches itself.
    """
    try:
        return msisdn.normalise(raw, region)
    except msisdn.InvalidRecipient:
        return "".join(ch for ch in raw if ch.isdigit()) or raw.strip()


@dataclass(frozen=True)
class Matched:
    """The answer's lists turned into our recipients (see :class:`SendAccepted`)."""

    accepted: tuple[str, ...]
    invalid: tuple[str, ...]
    unlisted: tuple[str, ...]
    unmatched: tuple[str, ...]


def match_recipients(recipients: Sequence[str], accepted: Sequence[str], invalid: Sequence[str],
                     region: str = NUMBER_REGION) -> Matched:
    """Match the answer's ``accepted`` / ``invalid`` numbers to the request's ``recipients``.

    Each recipient is matched at most once (a number sent twice needs two
    mentions), the accepted list first: a number listed in both counts as
    accepted, the reading that never sends it again. Numbers written as we
    sent them match directly; only the rest are normalised (phonenumbers is
    the slow part of a 1,000-number answer).
    """
    waiting: dict[str, list[str]] = {}
    for recipient in recipients:
        waiting.setdefault(recipient, []).append(recipient)
    results: list[list[str]] = [[], []]
    leftovers: list[tuple[int, str]] = []
    for which, listed in enumerate((accepted, invalid)):
        for number in listed:
            queue = waiting.get(number)
            if queue:
                results[which].append(queue.pop())
            else:
                leftovers.append((which, number))
    unmatched: list[str] = []
    if leftovers:
        by_key: dict[str, list[str]] = {}
        for recipient, queue in waiting.items():
            if queue:
                by_key.setdefault(number_key(recipient, region), []).extend(queue)
        for which, number in leftovers:
            candidates = by_key.get(number_key(number, region))
            if candidates:
                recipient = candidates.pop(0)
                waiting[recipient].pop()
                results[which].append(recipient)
            else:
                unmatched.append(number)
    unlisted = [recipient for queue in waiting.values() for recipient in queue]
    order = {recipient: index for index, recipient in reversed(list(enumerate(recipients)))}
    unlisted.sort(key=order.__getitem__)
    return Matched(tuple(results[0]), tuple(results[1]), tuple(unlisted), tuple(unmatched))


def send_outcome(http_status: int, content: bytes, tz: ZoneInfo,
                 recipients: Sequence[str] | None = None) -> SendOutcome:
    """Outcome of a /send call (quick or XML) from its HTTP status and body.

    With ``recipients`` (the request's numbers, as sent), the answer's lists
    are matched to them (:func:`match_recipients`); without, they are kept
    as the provider wrote them.
    """
    decided = _http_problem(http_status)
    if decided is not None:
        return decided
    try:
        ans = answer(http_status, content)
        if not ans.ok:
            return _refused_or_ambiguous(ans)
        body, f = ans.content, SEND_FIELDS
        accepted, invalid = _list(text(body, f["accepted"])), _list(text(body, f["invalid"]))
        unlisted: tuple[str, ...] = ()
        unmatched: tuple[str, ...] = ()
        if recipients is not None:
            matched = match_recipients(recipients, accepted, invalid)
            accepted, invalid, unlisted, unmatched = (matched.accepted, matched.invalid, matched.unlisted,
                                                      matched.unmatched)
        return SendAccepted(
            transaction_id=optional_id(body, f["transaction_id"]),
            accepted=accepted,
            invalid=invalid,
            campaign_id=optional_id(body, f["campaign_id"]),
            request_time=local_time(body, f["request_time"], tz),
            unlisted=unlisted,
            unmatched=unmatched,
            status_code=ans.code,
        )
    except MalformedBody as exc:
        return SendAmbiguous(f"unparseable answer: {exc}")


def otp_outcome(http_status: int, content: bytes) -> SendOutcome:
    """Outcome of an /otp generate call; the accepted result has no transaction id."""
    decided = _http_problem(http_status)
    if decided is not None:
        return decided
    try:
        ans = answer(http_status, content)
        if not ans.ok:
            return _refused_or_ambiguous(ans)
        body, f = ans.content, OTP_FIELDS
        retry_after = text(body, f["retry_after_s"]).strip()
        return SendAccepted(
            transaction_id=optional_id(body, f["transaction_id"]),
            accepted=_list(text(body, f["mobile"])),
            invalid=(),
            retry_after_s=count(body, f["retry_after_s"]) if retry_after else None,
            create_time=epoch_time(body, f["create_time"]),
            status_code=ans.code,
        )
    except MalformedBody as exc:
        return SendAmbiguous(f"unparseable answer: {exc}")


def otp_verification(ans: Answer) -> OtpVerification:
    return OtpVerification(verified=ans.ok, code=None if ans.ok else ans.code, reason=ans.reason)


def items(ans: Answer, list_key: str) -> list[dict[str, Any]]:
    value = ans.content.get(list_key, [])
    if value in ("", None):
        return []
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise MalformedBody(f"{list_key!r} is not a list of objects")
    return value


def dlr_row(item: Mapping[str, Any]) -> DlrRow:
    f = DLR_FIELDS
    return DlrRow(
        msg_id=optional_id(item, f["msg_id"]),
        transaction_id=optional_id(item, f["transaction_id"]),
        mobile=text(item, f["mobile"]),
        sender=text(item, f["sender"]),
        text=text(item, f["text"]),
        status=text(item, f["status"]),
        cause=text(item, f["cause"]),
        error_code=text(item, f["error_code"]),
        submit_time=epoch_time(item, f["submit_time"]),
        delivery_time=epoch_time(item, f["delivery_time"]),
    )


def txn_rows(listed: Sequence[Mapping[str, Any]], tz: ZoneInfo) -> list[TxnReportRow]:
    """One by-transaction answer's rows. Its times are parsed once per distinct text: the rows of one
    transaction share a few submit and delivery seconds (about one text in nine is new in the simulator's
    answers), and parsing a provider-local time with its zone costs more than the rest of the row."""
    parsed: dict[str, datetime | None] = {}

    def human(item: Mapping[str, Any], key: str) -> datetime | None:
        raw = text(item, key)
        if raw not in parsed:
            parsed[raw] = _zoned(parse_human, raw, tz)
        return parsed[raw]

    f = TXN_FIELDS
    rows: list[TxnReportRow] = []
    for item in listed:
        nested = item.get(f["status_object"])
        if isinstance(nested, dict):
            status, cause = text(nested, f["status"]), text(nested, f["cause"])
        else:  # a flat status word, as getDlr has it
            status, cause = text(item, f["status_object"]), ""
        rows.append(TxnReportRow(
            msg_id=optional_id(item, f["msg_id"]),
            mobile=text(item, f["mobile"]),
            sender=text(item, f["sender"]),
            status=status,
            cause=cause,
            submit_time=human(item, f["submit_time"]),
            delivery_time=human(item, f["delivery_time"]),
        ))
    return rows


def summary_row(item: Mapping[str, Any]) -> SummaryRow:
    f = SUMMARY_FIELDS
    sender = text(item, f["sender_id"]).strip()
    return SummaryRow(
        day=_day(item, f["day"]),
        sender_id=sender or None,
        total=count(item, f["total"]),
        delivered=count(item, f["delivered"]),
        failed=count(item, f["failed"]),
        pending=count(item, f["pending"]),
        units=count(item, f["units"]),
    )


def schedule_row(item: Mapping[str, Any], tz: ZoneInfo) -> ScheduleRow:
    f = SCHEDULE_FIELDS
    return ScheduleRow(
        transaction_id=optional_id(item, f["transaction_id"]),
        campaign_id=optional_id(item, f["campaign_id"]),
        sender=text(item, f["sender"]),
        msg_type=text(item, f["msg_type"]),
        total=count(item, f["total"]),
        schedule_time=local_time(item, f["schedule_time"], tz),
    )


def campaign_row(item: Mapping[str, Any]) -> CampaignTransaction:
    inner = item.get(CAMPAIGN_ITEM_KEY, item)
    if not isinstance(inner, dict):
        raise MalformedBody(f"{CAMPAIGN_ITEM_KEY!r} is not an object")
    f = CAMPAIGN_FIELDS
    return CampaignTransaction(
        transaction_id=optional_id(inner, f["transaction_id"]),
        status=text(inner, f["status"]),
        total=count(inner, f["total"]),
        created_at=epoch_time(inner, f["created_at"]),
        scheduled_for=epoch_time(inner, f["scheduled_for"]),
        last_updated=epoch_time(inner, f["last_updated"]),
    )


def webhook_registration(ans: Answer) -> WebhookRegistration:
    body = ans.content
    url = text(body, WEBHOOK_FIELDS["url"]).strip()
    if not url:
        raise MalformedBody(f"no {WEBHOOK_FIELDS['url']!r} in the answer")
    rate = text(body, WEBHOOK_FIELDS["rate"]).strip()
    return WebhookRegistration(url=url, rate=count(body, WEBHOOK_FIELDS["rate"]) if rate else None)


def delivery_code(item: Mapping[str, Any]) -> DeliveryCode:
    f = DELIVERY_CODE_FIELDS
    code, status = text(item, f["code"]).strip(), text(item, f["status"]).strip()
    if not code or not status:
        raise MalformedBody(f"a delivery code without {f['code']!r} or {f['status']!r}")
    return DeliveryCode(code=code, status=status, description=text(item, f["description"]).strip() or None)


ReportVerdict = Literal["ok", "retry", "error"]


def report_verdict(http_status: int, content: bytes) -> tuple[ReportVerdict, Answer | None, str]:
    """Whether a report answer is usable, worth retrying, or an error (with why)."""
    if http_status == 429 or http_status >= 500 or http_status in _AMBIGUOUS_HTTP:
        return "retry", None, f"HTTP {http_status}"
    if http_status != 200:
        return "error", None, f"HTTP {http_status}"
    try:
        ans = answer(http_status, content)
    except MalformedBody as exc:
        return "error", None, f"unparseable answer: {exc}"
    if ans.rate_limited:
        return "retry", ans, "rate limited (code 429)"
    if not ans.ok:
        return "error", ans, f"code {ans.code} ({ans.reason})"
    return "ok", ans, ""
