"""Provider status words, normalised to one canonical SMPP word and an outcome.

The day report uses SMPP words (DELIVRD); the by-transaction report uses long
forms (DELIVERED). Both map to the SMPP word so that (msgId, word) is one
receipt event key whatever the source.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

from sms_pipeline.core.states import MessageState

Outcome = Literal["delivered", "failed", "expired", "intermediate", "unmapped"]

UNKNOWN_WORD = "UNKNOWN"

# Canonical word -> outcome. Words not listed are unmapped.
STATUS_OUTCOMES: Mapping[str, Outcome] = MappingProxyType(
    {
        "DELIVRD": "delivered",
        "UNDELIV": "failed",
        "REJECTD": "failed",
        "DELETED": "failed",
        "EXPIRED": "expired",
        "ACCEPTD": "intermediate",
        "ENROUTE": "intermediate",
        "SUBMITTED": "intermediate",
        "PENDING": "intermediate",
    }
)

# Other spellings of the same status -> canonical word.
STATUS_ALIASES: Mapping[str, str] = MappingProxyType(
    {
        "DELIVERED": "DELIVRD",
        "UNDELIVERED": "UNDELIV",
        "REJECTED": "REJECTD",
        "ACCEPTED": "ACCEPTD",
        "SUBMITD": "SUBMITTED",
    }
)

_FINAL_STATE: Mapping[str, MessageState] = MappingProxyType(
    {
        "delivered": MessageState.delivered,
        "failed": MessageState.failed,
        "expired": MessageState.expired,
    }
)


@dataclass(frozen=True, slots=True)
class NormalisedStatus:
    raw: str | None  # as received, kept for the receipt row
    word: str  # canonical, upper case; part of the receipt event key
    outcome: Outcome

    @property
    def is_final(self) -> bool:
        return self.outcome in _FINAL_STATE

    @property
    def final_state(self) -> MessageState | None:
        """The state a `submitted` row moves to, or None (never moves state)."""
        return _FINAL_STATE.get(self.outcome)


def normalise_status(raw: str | None) -> NormalisedStatus:
    """Canonicalise a status word; never raises on an unexpected word.

    Case and surrounding whitespace are ignored; a missing or blank word
    becomes UNKNOWN. Anything not in the table (UNKNOWN, BLACKLST, NCPR, ...)
    is ``unmapped``: stored and counted, but it never moves a message's state.
    """
    word = (raw or "").strip().upper() or UNKNOWN_WORD
    word = STATUS_ALIASES.get(word, word)
    return NormalisedStatus(raw=raw, word=word, outcome=STATUS_OUTCOMES.get(word, "unmapped"))
