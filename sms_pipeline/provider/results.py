"""Typed results of provider calls: what the worker and the pipeline act on.

Ids are ``str | None`` (sentinels already mapped to None), times are aware
UTC datetimes, counts are ints. Nothing here holds credentials.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime

from sms_pipeline.errors import UserError

# Codes that mean our own configuration or account is wrong (credentials,
# malformed request, credit): the worker stops instead of failing messages.
CONFIGURATION_CODES = frozenset({"216", "213", "147", "301"})
# Codes that mean this message is wrong (template, sender, numbers).
MESSAGE_CODES = frozenset({"230", "231", "235"})
RATE_LIMITED_CODE = "429"
# Prefix of a refusal code made from an HTTP status (no provider body).
HTTP_CODE_PREFIX = "HTTP "


@dataclass(frozen=True, slots=True)
class SendAccepted:
    """The provider took the request: ``accepted`` are billed, ``invalid`` are not."""

    transaction_id: str | None  # None for OTP ("0" on the wire)
    accepted: tuple[str, ...]
    invalid: tuple[str, ...]
    campaign_id: str | None = None
    request_time: datetime | None = None
    retry_after_s: int | None = None  # OTP only
    create_time: datetime | None = None  # OTP only


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


class ProviderCallError(UserError):
    """A provider call other than a send failed; the text names the call, never credentials."""


class ReportError(ProviderCallError):
    """A report call answered with an error or kept failing after its retries."""


class DayReportError(ReportError):
    """A day report could not be downloaded or is unusable; names the date, keeps no file."""
