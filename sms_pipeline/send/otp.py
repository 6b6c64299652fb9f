"""The worker's send strategy for OTP rows (``message_class = 'otp'``).

- **One recipient per request**, always, through ``/otp`` ``generate``: the
  path has no transaction id (``"0"``), so batching would leave nothing to
  tell the recipients' messages apart (docs/design.md#otp).
- **The code is made here**, just before the call, with ``secrets``, and
  passed as ``otp``; the row's body stays the template with ``$otp$``
  (segments were counted at intake on the rendered length). The code lives
  only in memory for the request; what is kept is its HMAC, and the keyed
  fingerprint of the text sent (the template with the code filled in), so
  the reports' texts can tell two OTPs to one number apart.
- **One transaction** writes the outcome (the worker's own statements,
  conditional on the row still being ``sending``) and, when the row became
  ``submitted`` or ``unknown``, the ``msg.otp_verification`` row. The stored
  ``provider_txn_id`` stays NULL.
- **Refusals**: a 429 (the provider's retry window for that number) or a
  refusal of the message itself (230/231/235) makes the row ``rejected`` (a
  code held back that long is useless); a configuration refusal
  (216/213/147/301) or a code nobody classified releases the row to
  ``pending`` and stops the worker, like any other class: nothing was taken,
  and a wrong password must not cost a user their code. When the worker
  comes back, a row past its ``expires_at`` is expired, never sent late. See
  :func:`sms_pipeline.send.outcomes.decide`. No verification row for any
  refusal, since no code went out.
- **Expiry**: a row whose ``expires_at`` passed after it was claimed becomes
  ``expired`` when the request would start (the worker's start statement),
  and no code is made for it.
- **Ambiguous answers** (time-out, reset, 5xx, junk): the row becomes
  ``unknown`` *and* the verification row is written. The code may well have
  reached the phone; refusing it would fail a user who did everything right,
  and accepting it adds no guessing chance (the attempt limit holds). The
  same for a code that did not arrive: nobody knows it.
- **Never connected**: the row goes back to ``pending`` and a new code is
  made on the next attempt; nothing is written for the one not sent.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

import psycopg

from sms_pipeline.core import fingerprint, otp
from sms_pipeline.core.states import Channel, MessageClass
from sms_pipeline.db import queries
from sms_pipeline import hmac_keys
from sms_pipeline.errors import SettingsError
from sms_pipeline.otp import codes
from sms_pipeline.provider.client import ProviderClient
from sms_pipeline.provider.results import SendAccepted
from sms_pipeline.send.batching import SendBatch, plan_requests
from sms_pipeline.send.claim import ClaimedMessage
from sms_pipeline.send.loop import QueueKey, Sent, SendStrategy
from sms_pipeline.send.outcomes import AppliedOutcome, apply_outcome
from sms_pipeline.settings import Settings

log = logging.getLogger(__name__)

# The provider's documented range for codeExpiry.
PROVIDER_EXPIRY_RANGE_S = (60, 1800)
# Shorter codes are too easy to guess within a few attempts.
MIN_CODE_LENGTH = 4


@dataclass(frozen=True)
class OtpPolicy:
    """How codes are made and how long they live (``SMS_PIPELINE_OTP_*``; the edge builds it from settings)."""

    code_length: int
    code_type: str
    expiry_s: int
    max_attempts: int
    hmac_key: bytes = field(repr=False)
    # SMS_PIPELINE_TEXT_HMAC_KEY; None: the rows get no text fingerprint (reconstruction without it).
    text_key: bytes | None = field(default=None, repr=False)

    @classmethod
    def from_settings(cls, settings: Settings) -> OtpPolicy:
        return cls(settings.otp_code_length, settings.otp_code_type, settings.otp_expiry_s,
                   settings.otp_max_attempts, codes.hmac_key(settings.otp_hmac_key, settings.home),
                   text_key=hmac_keys.text_key(settings))

    def __post_init__(self) -> None:
        low, high = PROVIDER_EXPIRY_RANGE_S
        if not low <= self.expiry_s <= high:
            raise SettingsError(f"SMS_PIPELINE_OTP_EXPIRY_S must be between {low} and {high} seconds "
                                f"(the provider's codeExpiry range), got {self.expiry_s}")
        if self.code_length < MIN_CODE_LENGTH:
            raise SettingsError(f"SMS_PIPELINE_OTP_CODE_LENGTH must be at least {MIN_CODE_LENGTH}, "
                                f"got {self.code_length}")
        if self.code_type not in codes.ALPHABETS:
            raise SettingsError(f"SMS_PIPELINE_OTP_CODE_TYPE must be one of {', '.join(codes.ALPHABETS)}")


@dataclass(frozen=True, slots=True)
class OtpSent(Sent):
    """A made OTP request: the answer, the HMAC of the code it carried and the fingerprint of its text (never the code)."""

    code_hmac: bytes = field(repr=False)
    text_fingerprint: bytes | None = field(default=None, repr=False)


# One request per row, and a claim takes only the next request's rows: an
# OTP claim looks at one due row and claims it.
OTP_CLAIM_LIMIT = 1


@dataclass(frozen=True)
class OtpStrategy:
    """SMS OTP: one ``/otp`` generate request per row, code made by us."""

    client: ProviderClient
    price_time_zone: str  # the zone the rate card's days are read in
    policy: OtpPolicy
    # OTPs go out one request each, and a claim takes only the next request:
    # looking at more due rows than one would only lock rows it leaves.
    claim_limit: int | None = OTP_CLAIM_LIMIT

    def plan(self, messages: Sequence[ClaimedMessage], batch_size: int) -> list[SendBatch]:
        return plan_requests(messages, 1)  # one recipient per request, whatever the batch size

    def send(self, batch: SendBatch) -> OtpSent:
        (message,) = batch.messages
        policy = self.policy
        code = codes.new_code(policy.code_length, policy.code_type)
        outcome = self.client.otp_generate(
            message.recipient, batch.body, batch.sender_id or "", code, code_expiry_s=policy.expiry_s,
            code_length=policy.code_length, code_type=policy.code_type, msg_type=batch.msg_type)
        sent_text = None if policy.text_key is None else \
            fingerprint.text_fingerprint(policy.text_key, otp.render(batch.body, code))
        return OtpSent(batch, outcome, codes.code_hmac(policy.hmac_key, message.tenant_id, message.recipient, code),
                       sent_text)

    def record(self, conn: psycopg.Connection, sent: Sent, *, now: datetime) -> AppliedOutcome:
        assert isinstance(sent, OtpSent)
        (message,) = sent.batch.messages
        retry_after_s = sent.outcome.retry_after_s if isinstance(sent.outcome, SendAccepted) else None
        with conn.transaction():
            applied = apply_outcome(conn, sent.batch, sent.outcome, now=now, price_time_zone=self.price_time_zone,
                                    sent_fingerprint=sent.text_fingerprint)
            if applied.submitted or applied.unknown:
                written = queries.run(
                    conn, "otp_record_verification", id=message.id, created_at=message.created_at,
                    code_hmac=sent.code_hmac, now=now, expiry_s=self.policy.expiry_s, retry_after_s=retry_after_s,
                    max_attempts=self.policy.max_attempts).fetchall()
                if not written:
                    # Only a row enqueued around intake (no msg.otp_request) gets here.
                    log.error("OTP attempt_key=%s went out but has no OTP request: it cannot be verified",
                              message.attempt_key)
        return applied


def otp_strategies(client: ProviderClient, price_time_zone: str, policy: OtpPolicy) -> dict[QueueKey, SendStrategy]:
    """The strategies this package adds to the worker: SMS OTP."""
    strategy = OtpStrategy(client, price_time_zone, policy)
    return {(Channel.sms.value, MessageClass.otp.value): strategy}
