"""What a provider answer does to the rows of its request (docs/design.md#send-outcomes).

:func:`decide` is the pure table; :func:`apply_outcome` writes it in one
transaction with statements from ``sql/queries/worker_*.sql``, every one of
them conditional on ``state = 'claimed'`` and on the request's ids, so an
answer applied twice changes nothing the second time and a row whose lease
ran out meanwhile (now ``unknown``) is left alone.

| answer                                  | rows                                   | worker            |
|-----------------------------------------|----------------------------------------|-------------------|
| accepted                                | ``invalidMobile`` rejected, then the   | breaker success   |
|                                         | rest submitted and billed              |                   |
| refused 230 / 231 / 235                 | rejected (the message is wrong)        | breaker success   |
| refused 216 / 213 / 147 / 301, HTTP 4xx | released to pending                    | stops             |
| refused 429                             | released                               | backs off         |
| refused, any other code                 | released (nothing was taken; a code we | stops             |
|                                         | cannot classify needs a person)        |                   |
| ambiguous (time-out, reset, 5xx, junk)  | unknown                                | breaker failure   |
| never connected                         | released                               | breaker failure   |

An OTP that the provider refused, for whatever reason, is ``rejected``, never
released: by the time someone fixed the cause its code would be useless
(the worker still stops on a configuration refusal).
"""

from __future__ import annotations

import logging
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

    @property
    def moved(self) -> int:
        return self.submitted + self.rejected + self.unknown + self.released


def decide(outcome: SendOutcome, message_class: str) -> Decision:
    """The row outcome and worker reaction for one provider answer (pure)."""
    match outcome:
        case SendAccepted():
            return Decision(Action.fan_out, None)
        case SendRefused() if message_class == MessageClass.otp:
            general = decide(outcome, MessageClass.transactional)
            return Decision(Action.reject, general.reason, outcome.code, outcome.reason,
                            stop_worker=general.stop_worker)
        case SendRefused() if outcome.is_message_error:
            return Decision(Action.reject, MESSAGE_REFUSAL_REASONS[outcome.code], outcome.code, outcome.reason)
        case SendRefused() if outcome.is_rate_limited:
            return Decision(Action.release, "rate_limited", outcome.code, outcome.reason, back_off=True)
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


def apply_outcome(conn: psycopg.Connection, batch: SendBatch, outcome: SendOutcome, *,
                  now: datetime, price_time_zone: str) -> AppliedOutcome:
    """Write ``outcome`` onto the still-claimed rows of ``batch`` (one transaction).

    ``now`` is the submission time (the clock's, after the answer came back);
    ``price_time_zone`` names the zone the rate card's days are read in.
    """
    decision = decide(outcome, batch.message_class)
    base = {"ids": batch.ids, "created_ats": batch.created_ats, "now": now}
    with conn.transaction():
        if decision.action is Action.fan_out:
            assert isinstance(outcome, SendAccepted)
            rejected: list[tuple] = []
            if outcome.invalid:  # most answers refuse no number: then there is nothing to reject
                rejected = queries.run(
                    conn, "worker_reject", **base, recipients=list(outcome.invalid), reason=INVALID_MOBILE_REASON,
                    status_code=None, cause=None, transaction_id=outcome.transaction_id).fetchall()
            submitted = queries.run(
                conn, "worker_submit", **base, transaction_id=outcome.transaction_id,
                campaign_id=outcome.campaign_id, price_time_zone=price_time_zone).fetchall()
            _log_rows(rejected, "rejected")
            _log_rows(submitted, "submitted")
            applied = AppliedOutcome(decision, submitted=len(submitted), rejected=len(rejected),
                                     unpriced=sum(1 for row in submitted if row[2]))
        elif decision.action is Action.reject:
            rejected = queries.run(
                conn, "worker_reject", **base, recipients=None, reason=decision.reason,
                status_code=decision.status_code, cause=decision.cause, transaction_id=None).fetchall()
            _log_rows(rejected, "rejected")
            applied = AppliedOutcome(decision, rejected=len(rejected))
        elif decision.action is Action.mark_unknown:
            unknown = queries.run(conn, "worker_mark_unknown", **base, reason=decision.reason).fetchall()
            _log_rows(unknown, "unknown")
            applied = AppliedOutcome(decision, unknown=len(unknown))
        else:
            released = queries.run(conn, "worker_release", **base, reason=decision.reason).fetchall()
            _log_rows(released, "pending")
            applied = AppliedOutcome(decision, released=len(released))
    _log_summary(batch, outcome, applied)
    return applied


def release_unsent(conn: psycopg.Connection, batch: SendBatch, *, now: datetime, reason: str) -> int:
    """Give back rows whose request was never made (the worker is stopping); returns how many."""
    with conn.transaction():
        rows = queries.run(conn, "worker_release", ids=batch.ids, created_ats=batch.created_ats, now=now,
                           reason=reason).fetchall()
    _log_rows(rows, "pending")
    log.info("released unsent attempt_key=%s rows=%d reason=%s", batch.first_attempt_key, len(rows), reason)
    return len(rows)


def _log_summary(batch: SendBatch, outcome: SendOutcome, applied: AppliedOutcome) -> None:
    detail = ""
    if isinstance(outcome, SendAccepted):
        detail = f" transaction_id={outcome.transaction_id}"
    elif isinstance(outcome, SendRefused):
        detail = f" code={outcome.code}"
    elif isinstance(outcome, SendAmbiguous | SendNeverConnected):
        detail = f" why={outcome.reason!r}"
    stale = len(batch) - applied.moved
    level = logging.WARNING if stale or applied.decision.action is not Action.fan_out else logging.INFO
    log.log(level, "outcome attempt_key=%s action=%s rows=%d submitted=%d rejected=%d unknown=%d "
                   "released=%d unpriced=%d no_longer_claimed=%d%s",
            batch.first_attempt_key, applied.decision.action, len(batch), applied.submitted, applied.rejected,
            applied.unknown, applied.released, applied.unpriced, stale, detail)
