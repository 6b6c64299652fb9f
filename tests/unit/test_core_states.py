import itertools

import pytest

from sms_pipeline.core.states import (
    BILLABLE_STATES,
    LEGAL_TRANSITIONS,
    REPLAYABLE,
    TERMINAL,
    Channel,
    CorrelationResult,
    MessageClass,
    MessageState,
    is_legal,
)

EXPECTED = {
    ("pending", "claimed"),
    ("pending", "expired"),
    ("claimed", "pending"),
    ("claimed", "sending"),
    ("claimed", "expired"),
    ("sending", "submitted"),
    ("sending", "rejected"),
    ("sending", "unknown"),
    ("sending", "pending"),
    ("sending", "scheduled"),
    ("scheduled", "submitted"),
    ("scheduled", "expired"),
    ("scheduled", "unknown"),
    ("submitted", "delivered"),
    ("submitted", "failed"),
    ("submitted", "expired"),
    ("unknown", "submitted"),
    ("unknown", "failed"),
    ("failed", "superseded"),
    ("rejected", "superseded"),
    ("expired", "superseded"),
}


def test_transition_table_is_exact() -> None:
    assert LEGAL_TRANSITIONS == EXPECTED
    assert all(type(old) is str and type(new) is str for old, new in LEGAL_TRANSITIONS)


@pytest.mark.parametrize("old, new", list(itertools.product(MessageState, MessageState)))
def test_is_legal_matches_table(old: MessageState, new: MessageState) -> None:
    assert is_legal(old, new) is ((old.value, new.value) in EXPECTED)
    assert is_legal(old.value, new.value) is is_legal(old, new)


def test_never_back_to_pending_from_unknown_and_no_self_loops() -> None:
    assert not is_legal("unknown", "pending")
    assert not any(is_legal(s, s) for s in MessageState)


def test_unknown_state_name_raises() -> None:
    with pytest.raises(ValueError):
        is_legal("pending", "sent")


def test_terminal_and_replayable() -> None:
    no_exit = {s for s in MessageState if not any(old == s for old, _ in LEGAL_TRANSITIONS)}
    assert no_exit == {MessageState.delivered, MessageState.superseded}
    assert REPLAYABLE == {"failed", "rejected", "expired"}
    assert TERMINAL == no_exit | REPLAYABLE
    # A replayable state leaves only by an operator's replay.
    assert {new for old, new in LEGAL_TRANSITIONS if old in REPLAYABLE} == {"superseded"}


def test_billable_states_exclude_never_sent_states() -> None:
    assert BILLABLE_STATES.isdisjoint({"pending", "claimed", "sending", "scheduled", "rejected", "unknown"})
    assert {"submitted", "delivered"} <= BILLABLE_STATES


def test_vocabularies_match_database_labels() -> None:
    assert [c.value for c in MessageClass] == ["otp", "transactional", "promotional"]
    assert [c.value for c in Channel] == ["sms", "whatsapp", "voice", "rcs", "telegram"]
    assert [c.value for c in CorrelationResult] == ["matched", "not_found", "ambiguous"]
    assert str(MessageState.pending) == "pending"
