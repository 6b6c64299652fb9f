"""Message state machine and the other closed vocabularies of the model.

The values equal the Postgres enum labels; the transition table here is the
same one the database trigger enforces.
"""

from __future__ import annotations

from enum import StrEnum


class MessageState(StrEnum):
    pending = "pending"
    claimed = "claimed"  # a worker holds it; its request has provably not started
    sending = "sending"  # its request started: it may have reached the provider
    scheduled = "scheduled"  # the provider holds it until its scheduleTime (provider-side campaign); not billed
    submitted = "submitted"
    rejected = "rejected"
    delivered = "delivered"
    failed = "failed"
    unknown = "unknown"
    expired = "expired"
    superseded = "superseded"


class MessageClass(StrEnum):
    otp = "otp"
    transactional = "transactional"
    promotional = "promotional"


class Channel(StrEnum):
    sms = "sms"
    whatsapp = "whatsapp"
    voice = "voice"
    rcs = "rcs"
    telegram = "telegram"


class CorrelationResult(StrEnum):
    matched = "matched"
    not_found = "not_found"
    ambiguous = "ambiguous"


_S = MessageState

LEGAL_TRANSITIONS: frozenset[tuple[str, str]] = frozenset(
    (old.value, new.value)
    for old, new in (
        (_S.pending, _S.claimed),
        (_S.pending, _S.expired),  # scheduled window passed unclaimed
        (_S.claimed, _S.pending),  # released, or the lease ran out: its request never started
        (_S.claimed, _S.sending),  # committed just before the request goes out
        (_S.claimed, _S.expired),  # expires_at passed before the request started
        (_S.sending, _S.submitted),
        (_S.sending, _S.rejected),
        (_S.sending, _S.unknown),  # ambiguous outcome or lease ran out
        (_S.sending, _S.pending),  # only when the provider provably took nothing
        (_S.sending, _S.scheduled),  # a provider-side campaign: accepted with a scheduleTime
        (_S.scheduled, _S.submitted),  # its time has passed (or a report shows it sent): billed then
        (_S.scheduled, _S.expired),  # cancelled before its time
        (_S.scheduled, _S.unknown),  # the provider no longer lists its transaction
        (_S.submitted, _S.delivered),
        (_S.submitted, _S.failed),
        (_S.submitted, _S.expired),
        (_S.unknown, _S.submitted),  # reconciliation evidence only
        (_S.unknown, _S.failed),  # proof of non-submission
        (_S.failed, _S.superseded),  # operator replay
        (_S.rejected, _S.superseded),
        (_S.expired, _S.superseded),
    )
)
# Note what is absent: unknown -> pending would re-send a possibly billed message.

TERMINAL: frozenset[MessageState] = frozenset(
    {_S.delivered, _S.superseded, _S.failed, _S.rejected, _S.expired}
)
# Terminal, but an operator may replay them (superseded + a new row).
REPLAYABLE: frozenset[MessageState] = frozenset({_S.failed, _S.rejected, _S.expired})

# States a billed row can be in. A row is billed iff it reached `submitted`
# (submitted_at set): `failed` by proof of non-submission and `expired` from
# `pending` are in these states but were never billed. `unknown` is a possible
# charge (exposure), not a cost, until reconciliation decides.
BILLABLE_STATES: frozenset[MessageState] = frozenset(
    {_S.submitted, _S.delivered, _S.failed, _S.expired, _S.superseded}
)


def is_legal(old: str, new: str) -> bool:
    """Whether ``old -> new`` is in the transition table.

    Unknown state names raise ValueError rather than returning False, so a
    typo is not mistaken for a refused transition.
    """
    return (MessageState(old).value, MessageState(new).value) in LEGAL_TRANSITIONS
