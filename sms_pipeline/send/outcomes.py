"""What a provider answer does to the rows of its request (docs/design.md#send-outcomes).

Just before a request goes out, :func:`start_request` moves its rows
``claimed -> sending`` in one committed statement (rows whose ``expires_at``
passed meanwhile become ``expired`` and are left out). :func:`decide` is the
pure table; :func:`apply_outcome` writes it in one transaction with
statements from ``sql/queries/worker_*.sql``, every one of them conditional
on ``state = 'sending'`` and on the request's ids, so an answer applied twice
changes nothing the second time and a row whose lease ran out meanwhile (now
``unknown``) is left alone.

| answer                                  | rows                                   | worker            |
|-----------------------------------------|----------------------------------------|-------------------|
| accepted                                | ``invalidMobile`` rejected, those in   | breaker success   |
|                                         | neither list unknown, then the rest    |                   |
|                                         | submitted and billed (a provider-side  |                   |
|                                         | campaign's: ``scheduled``, unbilled)   |                   |
| refused 230 / 231 / 235                 | rejected (the message is wrong)        | breaker success   |
| refused 216 / 213 / 147 / 301, HTTP 4xx | released to pending (OTP included)     | stops             |
| refused 429                             | released (OTP: rejected)               | backs off         |
| refused, any other code                 | released (nothing was taken; a code we | stops             |
|                                         | cannot classify needs a person)        |                   |
| ambiguous (time-out, reset, 5xx, junk)  | unknown                                | breaker failure   |
| never connected                         | released                               | breaker failure   |

A configuration refusal (or a code nobody classified) never costs a
message, OTP included: nothing was taken, the rows go back to ``pending``
and the worker stops; when someone fixes the cause, an OTP whose
``expires_at`` has passed is expired, never sent late (the claim skips it,
:func:`start_request` expires it). An OTP the provider refused for the
message itself (230/231/235) or rate-limited (429, within the provider's
retry window for that number) is ``rejected``: a code held back that long
would be useless.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

import psycopg

from sms_pipeline.core.states import MessageClass
from sms_pipeline.db import queries
from sms_pipeline.provider.results import (
    SendAccepted,
    SendAmbiguous,
    SendNeverConnected,
    SendOutcome,
    SendRefused,
)
from sms_pipeline.send.batching import SendBatch

log = logging.getLogger(__name__)

# Our classification (state_reason) of message-level refusals.
MESSAGE_REFUSAL_REASONS = {"230": "template_mismatch", "231": "invalid_sender", "235": "no_valid_number"}
INVALID_MOBILE_REASON = "invalid_mobile"
# A recipient an accepted answer names in neither `mobile` nor `invalidMobile`.
NOT_IN_ANSWER_REASON = "not_in_answer"
# A provider-side campaign's accepted row whose transaction could not be told (send/campaigns.py).
CAMPAIGN_UNMAPPED_REASON = "campaign_unmapped"


class Action(StrEnum):
    fan_out = "fan_out"  # accepted: reject the refused numbers, submit the rest
    reject = "reject"
    release = "release"
    mark_unknown = "mark_unknown"


@dataclass(frozen=True, slots=True)
class Decision:
    action: Action
    reason: str | None  # state_reason written on the rows
    status_code: str | None = None
    cause: str | None = None  # the provider's own words
    stop_worker: bool = False
    back_off: bool = False
    breaker_failure: bool = False


@dataclass(frozen=True, slots=True)
class AppliedOutcome:
    """Rows each statement moved; all zero when the answer was already applied."""

    decision: Decision
    submitted: int = 0
    rejected: int = 0
    unknown: int = 0
    released: int = 0
    unpriced: int = 0  # of the submitted rows, those without a rate-card price
    scheduled: int = 0  # a provider-side campaign's rows the provider holds until its time

    @property
    def moved(self) -> int:
        return self.submitted + self.rejected + self.unknown + self.released + self.scheduled


def decide(outcome: SendOutcome, message_class: str) -> Decision:
    """The row outcome and worker reaction for one provider answer (pure)."""
    match outcome:
        case SendAccepted():
            return Decision(Action.fan_out, None)
        case SendRefused() if message_class == MessageClass.otp and (outcome.is_message_error
                                                                     or outcome.is_rate_limited):
            general = decide(outcome, MessageClass.transactional)
            return Decision(Action.reject, general.reason, outcome.code, outcome.reason)
        case SendRefused() if outcome.is_message_error:
            return Decision(Action.reject, MESSAGE_REFUSAL_REASONS[outcome.code], outcome.code, outcome.reason)
        case SendRefused() if outcome.is_rate_limited:
            return Decision(Action.release, "rate_limited", outcome.code, outcome.reason, back_off=True)
        case SendRefused() if outcome.is_too_many_messages:  # our planning's bug: nothing was taken
            return Decision(Action.release, "too_many_messages", outcome.code, outcome.reason, stop_worker=True)
        case SendRefused() if outcome.is_configuration_error:
            return Decision(Action.release, "configuration_refused", outcome.code, outcome.reason,
                            stop_worker=True)
        case SendRefused():
            return Decision(Action.release, "unclassified_refusal", outcome.code, outcome.reason,
                            stop_worker=True)
        case SendAmbiguous():
            return Decision(Action.mark_unknown, "send_ambiguous", breaker_failure=True)
        case SendNeverConnected():
            return Decision(Action.release, "never_connected", breaker_failure=True)
    raise TypeError(f"not a send outcome: {type(outcome).__name__}")


def _log_rows(rows: list[tuple], state: str) -> None:
    for row in rows:
        log.debug("row attempt_key=%s state=%s", row[1], state)


@dataclass(frozen=True, slots=True)
class Held:
    """An accepted answer to a request sent with a ``scheduleTime``: the provider holds the rows it took.

    ``transaction_ids``: each accepted row's transaction (row id -> uuId), or
    None when they could not be told (the rows become ``unknown``, reason
    ``campaign_unmapped``, with the campaignId kept; never guessed).
    """

    transaction_ids: Mapping[int, str] | None


@dataclass(frozen=True, slots=True)
class Started:
    """What :func:`start_request` did: the rows now ``sending`` and those expired instead."""

    sending: frozenset[int]
    expired: int


def start_request(conn: psycopg.Connection, batch: SendBatch, *, now: datetime) -> Started:
    """Move the claimed rows of ``batch`` to ``sending`` (committed), just before its request goes out.

    Rows past ``expires_at`` become ``expired / expired_unsent`` instead, and
    rows no longer ``claimed`` (the lease gave them back) are not moved: only
    the ids in ``sending`` may go into the request.
    """
    with conn.transaction():
        expired_ids, expired_keys, left_out = queries.run(
            conn, "worker_start_request", ids=batch.ids, created_ats=batch.created_ats, now=now).fetchone()
    for attempt_key in expired_keys:
        log.info("expired before its request started attempt_key=%s", attempt_key)
    if left_out:
        log.warning("request attempt_key=%s: %d of %d rows no longer claimed, left out",
                    batch.first_attempt_key, len(left_out), len(batch))
    return Started(frozenset(batch.ids).difference(expired_ids, left_out), len(expired_ids))


def apply_outcome(conn: psycopg.Connection, batch: SendBatch, outcome: SendOutcome, *,
                  now: datetime, price_time_zone: str, sent_fingerprint: bytes | None = None,
                  held: Held | None = None) -> AppliedOutcome:
    """Write ``outcome`` onto the rows of ``batch`` still ``sending`` (one transaction).

    ``now`` is the submission time (the clock's, after the answer came back);
    ``price_time_zone`` names the zone the rate card's days are read in.
    ``sent_fingerprint``: the text fingerprint of a request whose text intake
    could not know (an OTP's, made with its code), written on the rows that
    may have gone out (submitted, unknown); None keeps the one from intake.
    ``held``: the answer is a provider-side campaign's (accepted with a
    campaignId): the rows it took become ``scheduled`` instead of
    ``submitted``, not billed.
    """
    decision = decide(outcome, batch.message_class)
    base = {"ids": batch.ids, "created_ats": batch.created_ats, "now": now}
    sent = {"fingerprint": sent_fingerprint}
    with conn.transaction():
        if decision.action is Action.fan_out:
            assert isinstance(outcome, SendAccepted)
            answer = {"transaction_id": outcome.transaction_id, "status_code": outcome.status_code}
            rejected: list[tuple] = []
            unknown: list[tuple] = []
            if outcome.invalid:  # most answers refuse no number: then there is nothing to reject
                rejected = queries.run(
                    conn, "worker_reject", **base, **answer, recipients=list(outcome.invalid),
                    reason=INVALID_MOBILE_REASON, cause=None).fetchall()
            if outcome.unlisted:  # in neither list: possibly sent, so never submitted nor rejected
                # A campaign's answer names one transaction of several, not necessarily theirs.
                unknown = queries.run(conn, "worker_mark_unknown", **base, **sent, status_code=outcome.status_code,
                                      transaction_id=None if held is not None else outcome.transaction_id,
                                      campaign_id=outcome.campaign_id, recipients=list(outcome.unlisted),
                                      reason=NOT_IN_ANSWER_REASON).fetchall()
            if outcome.unmatched:
                log.warning("answer transaction_id=%s names %d number(s) that match no recipient of the request",
                            outcome.transaction_id, len(outcome.unmatched))
            submitted: list[tuple] = []
            scheduled: list[tuple] = []
            if held is None:
                submitted = queries.run(
                    conn, "worker_submit", **base, **answer, **sent, campaign_id=outcome.campaign_id,
                    created_at=outcome.create_time, price_time_zone=price_time_zone).fetchall()
            elif held.transaction_ids is None:  # the rest (still `sending`): taken, but by which transaction?
                unknown += queries.run(conn, "worker_mark_unknown", **base, **sent, recipients=None,
                                       reason=CAMPAIGN_UNMAPPED_REASON, transaction_id=None,
                                       campaign_id=outcome.campaign_id, status_code=outcome.status_code).fetchall()
            else:
                mapped = held.transaction_ids
                scheduled = queries.run(
                    conn, "campaign_send_schedule", ids=list(mapped), transaction_ids=list(mapped.values()),
                    created_ats=batch.created_ats, campaign_id=outcome.campaign_id, status_code=outcome.status_code,
                    now=now).fetchall()
            _log_rows(rejected, "rejected")
            _log_rows(unknown, "unknown")
            _log_rows(submitted, "submitted")
            _log_rows(scheduled, "scheduled")
            applied = AppliedOutcome(decision, submitted=len(submitted), rejected=len(rejected), unknown=len(unknown),
                                     unpriced=sum(1 for row in submitted if row[2]), scheduled=len(scheduled))
        elif decision.action is Action.reject:
            rejected = queries.run(
                conn, "worker_reject", **base, recipients=None, reason=decision.reason,
                status_code=decision.status_code, cause=decision.cause, transaction_id=None).fetchall()
            _log_rows(rejected, "rejected")
            applied = AppliedOutcome(decision, rejected=len(rejected))
        elif decision.action is Action.mark_unknown:
            unknown = queries.run(conn, "worker_mark_unknown", **base, **sent, recipients=None,
                                  reason=decision.reason, transaction_id=None, campaign_id=None,
                                  status_code=None).fetchall()
            _log_rows(unknown, "unknown")
            applied = AppliedOutcome(decision, unknown=len(unknown))
        else:
            released = queries.run(conn, "worker_release", **base, released_from="sending", reason=decision.reason).fetchall()
            _log_rows(released, "pending")
            applied = AppliedOutcome(decision, released=len(released))
    _log_summary(batch, outcome, applied)
    return applied


def release_unsent(conn: psycopg.Connection, batch: SendBatch, *, now: datetime, reason: str) -> int:
    """Give back claimed rows whose request was never started (the worker is stopping); returns how many."""
    with conn.transaction():
        rows = queries.run(conn, "worker_release", ids=batch.ids, created_ats=batch.created_ats, now=now,
                           released_from="claimed", reason=reason).fetchall()
    _log_rows(rows, "pending")
    log.info("released unsent attempt_key=%s rows=%d reason=%s", batch.first_attempt_key, len(rows), reason)
    return len(rows)


def _log_summary(batch: SendBatch, outcome: SendOutcome, applied: AppliedOutcome) -> None:
    detail = ""
    if isinstance(outcome, SendAccepted):
        detail = f" transaction_id={outcome.transaction_id}"
        if outcome.campaign_id is not None:
            detail += f" campaign_id={outcome.campaign_id}"
    elif isinstance(outcome, SendRefused):
        detail = f" code={outcome.code}"
    elif isinstance(outcome, SendAmbiguous | SendNeverConnected):
        detail = f" why={outcome.reason!r}"
    stale = len(batch) - applied.moved
    level = logging.WARNING if stale or applied.decision.action is not Action.fan_out else logging.INFO
    log.log(level, "outcome attempt_key=%s action=%s rows=%d submitted=%d scheduled=%d rejected=%d unknown=%d "
                   "released=%d unpriced=%d no_longer_sending=%d%s",
            batch.first_attempt_key, applied.decision.action, len(batch), applied.submitted, applied.scheduled,
            applied.rejected, applied.unknown, applied.released, applied.unpriced, stale, detail)
