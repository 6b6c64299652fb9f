"""Typed results of provider calls: what the worker and the pipeline act on.

Ids are ``str | None`` (sentinels already mapped to None), times are aware
UTC datetimes, counts are ints. Nothing here holds credentials.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime

from sms_pipeline.errors import UserError

# Codes that mean our own configuration or account is wrong (credentials,
# malformed request, credit): the worker stops instead of failing messages.
CONFIGURATION_CODES = frozenset({"216", "213", "147", "301"})
# Codes that mean this message is wrong (template, sender, numbers).
MESSAGE_CODES = frozenset({"230", "231", "235"})
RATE_LIMITED_CODE = "429"
# More than MAX_MESSAGES_PER_REQUEST <sms> in one XML send [assumed]: nothing billed. It is our own
# bug (the planner never makes such a request), so it stays unclassified: rows released, worker stops.
TOO_MANY_MESSAGES_CODE = "414"
MAX_MESSAGES_PER_REQUEST = 1000
# Prefix of a refusal code made from an HTTP status (no provider body).
HTTP_CODE_PREFIX = "HTTP "


@dataclass(frozen=True, slots=True)
class PersonalisedSms:
    """One message of an XML multi-message send: its own number, body and DLT template."""

    mobile: str
    text: str = field(repr=False)
    dlt_template_id: str | None = None


@dataclass(frozen=True, slots=True)
class SendAccepted:
    """The provider took the request: ``accepted`` are billed, ``invalid`` are not.

    When the client knows the request's recipients (every send it makes),
    the answer's numbers are matched to them after normalisation (the
    provider may write ``+91...``, ``0...`` or spaces): ``accepted``,
    ``invalid`` and ``unlisted`` then hold *our* recipients, exactly as we
    sent them, so they compare equal to ``outbound_message.recipient``.
    ``unlisted`` are the recipients the answer names in neither list: they
    may have been sent (and billed) or not, so they are ``unknown``, never
    submitted and never rejected. ``unmatched`` are numbers of the answer
    that match none of our recipients (kept as written, for the log).
    """

    transaction_id: str | None  # None for OTP ("0" on the wire)
    accepted: tuple[str, ...]
    invalid: tuple[str, ...]
    campaign_id: str | None = None
    request_time: datetime | None = None
    retry_after_s: int | None = None  # OTP only
    create_time: datetime | None = None  # OTP only
    unlisted: tuple[str, ...] = ()
    unmatched: tuple[str, ...] = ()
    status_code: str | None = None  # the answer's statusCode ("200"), to store on the rows


@dataclass(frozen=True, slots=True)
class SendRefused:
    """The provider answered and accepted nothing."""

    code: str
    reason: str

    @property
    def is_configuration_error(self) -> bool:
        """Our credentials, request or account are wrong; an HTTP 4xx (bad URL, method) counts too."""
        return self.code in CONFIGURATION_CODES or (
            self.code.startswith(HTTP_CODE_PREFIX) and self.code != HTTP_CODE_PREFIX + RATE_LIMITED_CODE
        )

    @property
    def is_rate_limited(self) -> bool:
        return self.code == RATE_LIMITED_CODE

    @property
    def is_message_error(self) -> bool:
        return self.code in MESSAGE_CODES

    @property
    def is_too_many_messages(self) -> bool:
        """An XML send over the per-request limit: our bug, nothing taken (an unclassified refusal)."""
        return self.code == TOO_MANY_MESSAGES_CODE


@dataclass(frozen=True, slots=True)
class SendAmbiguous:
    """The request may or may not have been accepted (and billed): never resend blindly."""

    reason: str


@dataclass(frozen=True, slots=True)
class SendNeverConnected:
    """No connection was made, so nothing was sent: safe to try again later."""

    reason: str


SendOutcome = SendAccepted | SendRefused | SendAmbiguous | SendNeverConnected


@dataclass(frozen=True, slots=True)
class OtpVerification:
    verified: bool
    code: str | None  # the provider's code when not verified
    reason: str


@dataclass(frozen=True, slots=True)
class DlrRow:
    """One row of the date-range delivery report (getDlr)."""

    msg_id: str | None
    transaction_id: str | None
    mobile: str
    sender: str
    text: str
    status: str  # raw word; normalise with core.statuses
    cause: str
    error_code: str
    submit_time: datetime | None
    delivery_time: datetime | None


@dataclass(frozen=True, slots=True)
class TxnReportRow:
    """One row of the by-transaction report."""

    msg_id: str | None
    mobile: str
    sender: str
    status: str  # raw long word (DELIVERED, ...); normalise with core.statuses
    cause: str
    submit_time: datetime | None
    delivery_time: datetime | None


@dataclass(frozen=True, slots=True)
class SummaryRow:
    day: date | None
    sender_id: str | None
    total: int
    delivered: int
    failed: int
    pending: int
    units: int


@dataclass(frozen=True, slots=True)
class ScheduleRow:
    transaction_id: str | None
    campaign_id: str | None
    sender: str
    msg_type: str
    total: int
    schedule_time: datetime | None


@dataclass(frozen=True, slots=True)
class CampaignTransaction:
    transaction_id: str | None
    status: str
    total: int
    created_at: datetime | None
    scheduled_for: datetime | None
    last_updated: datetime | None  # None: never ("0" on the wire)


@dataclass(frozen=True, slots=True)
class WebhookRegistration:
    """The receipt-push URL registered with the provider, and its rate (pushes per second; None: not said)."""

    url: str
    rate: int | None


@dataclass(frozen=True, slots=True)
class DeliveryCode:
    """One row of the provider's error-code table: a push's code and the report word it stands for (raw)."""

    code: str
    status: str
    description: str | None


class ProviderCallError(UserError):
    """A provider call other than a send failed; the text names the call, never credentials."""


class ReportError(ProviderCallError):
    """A report call answered with an error or kept failing after its retries."""


class DayReportError(ReportError):
    """A day report could not be downloaded or is unusable; names the date, keeps no file."""
