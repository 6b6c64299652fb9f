"""The whole transition table (docs/design.md#message-states), enforced by the database."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime

import pytest
from psycopg import errors

from tests.support.rows import any_state_columns, fetch, insert_message
from sms_pipeline.core.states import LEGAL_TRANSITIONS, MessageState

STATES = [s.value for s in MessageState]

# The table of docs/design.md#message-states, written out again so a change to either copy shows up here.
DESIGN_TABLE = {
    ("pending", "claimed"), ("pending", "expired"),
    ("claimed", "pending"), ("claimed", "sending"), ("claimed", "expired"),
    ("sending", "submitted"), ("sending", "rejected"), ("sending", "unknown"), ("sending", "pending"),
    ("sending", "scheduled"), ("scheduled", "submitted"), ("scheduled", "expired"), ("scheduled", "unknown"),
    ("submitted", "delivered"), ("submitted", "failed"), ("submitted", "expired"),
    ("unknown", "submitted"), ("unknown", "failed"),
    ("failed", "superseded"), ("rejected", "superseded"), ("expired", "superseded"),
}  # fmt: skip


def test_the_database_enum_has_exactly_the_core_states(db):
    labels = db.execute("SELECT unnest(enum_range(NULL::msg.message_state))::text").fetchall()
    assert [label for (label,) in labels] == STATES


def test_core_and_design_tables_agree():
    assert LEGAL_TRANSITIONS == DESIGN_TABLE


def _consistent_in(state: str, at: datetime) -> dict:
    """Columns that make a row consistent in ``state``: a `scheduled` row names its provider transaction and
    campaign and is not submitted yet; every other state takes the clocks and billing of any_state_columns."""
    columns = {**any_state_columns(at), "provider_txn_id": "6305583318236810379",
               "provider_campaign_id": "6305583318236810380", "scheduled_for": at}
    return {**columns, "submitted_at": None} if state == "scheduled" else columns


def test_every_pair_of_states_is_allowed_exactly_when_the_table_says(db):
    at = datetime.now(UTC).replace(microsecond=0)
    outcomes: dict[tuple[str, str], bool] = {}
    for old, new in itertools.product(STATES, STATES):
        key = insert_message(db, state=old, **_consistent_in(old, at))
        try:
            db.execute("UPDATE msg.outbound_message SET state = %s, submitted_at = %s WHERE id = %s AND created_at = %s",
                       (new, _consistent_in(new, at)["submitted_at"], *key))
        except errors.CheckViolation as error:
            assert error.diag.constraint_name == "outbound_message_state_transition"
            assert f"id={key[0]}: {old} -> {new}" in error.diag.message_primary
            assert fetch(db, key, "state") == (old,)
            outcomes[(old, new)] = False
        else:
            assert fetch(db, key, "state") == (new,)
            outcomes[(old, new)] = True
    allowed = {pair for pair, ok in outcomes.items() if ok}
    assert allowed == DESIGN_TABLE | {(s, s) for s in STATES}


def test_the_transitions_that_must_never_happen(db):
    at = datetime.now(UTC)
    forbidden = [("unknown", "pending")]
    # Only a started request has an outcome: a `claimed` row never left, so the
    # provider cannot have accepted, refused or half-taken it.
    forbidden += [("claimed", "submitted"), ("claimed", "rejected"), ("claimed", "unknown")]
    # A started request never goes back to "not started", nor expires unsent.
    forbidden += [("sending", "claimed"), ("sending", "expired")]
    forbidden += [("delivered", s) for s in STATES if s != "delivered"]
    forbidden += [("superseded", s) for s in STATES if s != "superseded"]
    for old, new in forbidden:
        key = insert_message(db, state=old, **any_state_columns(at))
        with pytest.raises(errors.CheckViolation, match=f"{old} -> {new}"):
            db.execute("UPDATE msg.outbound_message SET state = %s WHERE id = %s AND created_at = %s", (new, *key))


def test_one_illegal_row_aborts_the_whole_statement(db):
    at = datetime.now(UTC)
    legal = insert_message(db, state="submitted", **any_state_columns(at))
    illegal = insert_message(db, state="delivered", **any_state_columns(at))
    with pytest.raises(errors.CheckViolation):
        db.execute(
            "UPDATE msg.outbound_message SET state = 'failed' WHERE id = ANY(%s)", ([legal[0], illegal[0]],)
        )
    assert fetch(db, legal, "state") == ("submitted",)
