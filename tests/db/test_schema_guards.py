"""Column guards: provider id sentinels, long ids, immutable money, honest updated_at."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from psycopg import errors

from tests.support.rows import DEFAULTS, any_state_columns, fetch, insert_message, update_message

SENTINELS = ["0", "", "null", "NULL", "-", " 42", "42 ", "4\t2"]
MESSAGE_ID_COLUMNS = ["provider_txn_id", "provider_message_id", "provider_campaign_id", "dlt_entity_id", "dlt_template_id"]
TWENTY_DIGITS = "18446744073709551617"  # above 2**64, leading digits of a simulator msgId


@pytest.mark.parametrize("column", MESSAGE_ID_COLUMNS)
def test_placeholder_ids_are_refused_on_insert_and_update(db, column):
    key = insert_message(db)
    for value in SENTINELS:
        # The check on the row, or (msgId) on its registry entry written first.
        with pytest.raises(errors.CheckViolation, match=f"{column}(_registry)?_clean"):
            insert_message(db, **{column: value})
        with pytest.raises(errors.CheckViolation):
            db.execute(f"UPDATE msg.outbound_message SET {column} = %s WHERE id = %s", (value, key[0]))
    db.execute(f"UPDATE msg.outbound_message SET {column} = '0042' WHERE id = %s", (key[0],))
    assert fetch(db, key, column) == ("0042",)


@pytest.mark.parametrize("value", ["0", ""], ids=repr)
def test_placeholder_ids_are_refused_in_receipts_and_orphans(db, value):
    receipt = """INSERT INTO dlr.delivery_receipts
                     (provider_message_id, provider_txn_id, status_word, raw_status, outcome,
                      provider_submit_at, submit_month, source, first_seen_at)
                 VALUES (%(msg)s, %(txn)s, 'DELIVRD', 'DELIVRD', 'delivered', now(),
                         dlr.submit_month(now()), 'getdlr', now())"""
    with pytest.raises(errors.CheckViolation, match="provider_message_id_clean"):
        db.execute(receipt, {"msg": value, "txn": None})
    with pytest.raises(errors.CheckViolation, match="provider_txn_id_clean"):
        db.execute(receipt, {"msg": "1", "txn": value})
    with pytest.raises(errors.CheckViolation, match="provider_message_id_clean"):
        db.execute(
            """INSERT INTO dlr.orphaned_receipts (provider_message_id, status_word, raw_status, raw_payload, received_at)
               VALUES (%s, 'DELIVRD', 'DELIVRD', '{}', now())""",
            (value,),
        )


def test_a_twenty_digit_id_survives_insert_select_json_parse(db):
    key = insert_message(db, provider_message_id=TWENTY_DIGITS, provider_txn_id="0" + TWENTY_DIGITS)
    row = db.execute(
        """SELECT json_build_object('msgId', provider_message_id, 'txn', provider_txn_id)::text
             FROM msg.outbound_message WHERE id = %s""",
        (key[0],),
    ).fetchone()[0]
    parsed = json.loads(row)
    assert parsed == {"msgId": TWENTY_DIGITS, "txn": "0" + TWENTY_DIGITS}
    assert json.loads(json.dumps(parsed))["msgId"] == TWENTY_DIGITS
    found = db.execute(
        "SELECT message_id FROM msg.provider_message_id_registry WHERE provider_message_id = %s", (parsed["msgId"],)
    ).fetchone()
    assert found == (key[0],)


@pytest.mark.parametrize(
    ("billed", "change"),
    [
        ({"cost": Decimal("0.1800"), "cost_currency": "INR"}, {"cost": Decimal("0.1900")}),
        ({"cost": Decimal("0.1800"), "cost_currency": "INR"}, {"cost_currency": "USD"}),
        ({"billable_units": 2}, {"billable_units": 3}),
    ],
)
def test_money_can_be_set_once_and_never_changed(db, billed, change):
    key = insert_message(db)
    update_message(db, key, **billed)  # from NULL: the submission writes it
    (column,) = change
    for value in (change[column], None):
        with pytest.raises(errors.CheckViolation, match="immutable once set"):
            update_message(db, key, **{column: value})
    update_message(db, key, **billed)  # the same values again are no change
    assert fetch(db, key, *billed) == tuple(billed.values())


def test_segments_never_change_and_are_never_missing(db):
    key = insert_message(db, segments=2)
    with pytest.raises(errors.CheckViolation, match="immutable once set"):
        db.execute("UPDATE msg.outbound_message SET segments = 3 WHERE id = %s", (key[0],))
    with pytest.raises(errors.NotNullViolation):
        insert_message(db, segments=None)
    with pytest.raises(errors.CheckViolation):
        insert_message(db, segments=0)


def test_a_cost_comes_with_its_currency(db):
    with pytest.raises(errors.CheckViolation, match="cost_has_currency"):
        insert_message(db, cost=Decimal("1"))
    with pytest.raises(errors.CheckViolation, match="cost_has_currency"):
        insert_message(db, cost_currency="INR")


def test_identity_columns_never_change(db):
    key = insert_message(db)
    for assignment in ("business_key = 'other'", "tenant_id = 'other'", "attempt_key = gen_random_uuid()",
                       "created_at = created_at + interval '1 second'"):  # fmt: skip
        with pytest.raises(errors.CheckViolation, match="never change"):
            db.execute(f"UPDATE msg.outbound_message SET {assignment} WHERE id = %s", (key[0],))


def test_an_update_that_changes_nothing_leaves_updated_at_alone(db):
    created = datetime.now(UTC) - timedelta(hours=1)
    key = insert_message(db, state="submitted", updated_at=created, **any_state_columns(created))
    statement = "UPDATE msg.outbound_message SET state = %s, state_reason = %s, updated_at = %s WHERE id = %s"

    db.execute(statement, ("submitted", None, datetime.now(UTC), key[0]))
    assert fetch(db, key, "updated_at") == (created,)
    db.execute("UPDATE msg.outbound_message SET state = state WHERE id = %s", (key[0],))
    assert fetch(db, key, "updated_at") == (created,)

    # A real change takes the statement's clock, or now() when it gave none.
    app_clock = created + timedelta(minutes=5)
    db.execute(statement, ("delivered", None, app_clock, key[0]))
    assert fetch(db, key, "updated_at") == (app_clock,)
    db.execute("UPDATE msg.outbound_message SET delivered_at = %s WHERE id = %s", (app_clock, key[0]))
    (moved,) = fetch(db, key, "updated_at")
    assert moved > app_clock


REFUSED_ROWS = [
    ({"state": "claimed"}, "outbound_message_claimed_at_check"),
    ({"state": "sending"}, "outbound_message_claimed_at_check"),
    ({"state": "submitted", "claimed_at": datetime.now(UTC), "billable_units": 1}, "outbound_message_submitted_at_check"),
    ({"state": "delivered", "claimed_at": datetime.now(UTC), "billable_units": 1}, "outbound_message_submitted_at_check"),
    ({"state": "failed", "submitted_at": datetime.now(UTC)}, "outbound_message_billed_at_submission_check"),
    ({"state": "scheduled", "claimed_at": datetime.now(UTC)}, "outbound_message_scheduled_check"),
    ({"state": "scheduled", "claimed_at": datetime.now(UTC), "scheduled_for": datetime.now(UTC),
      "provider_txn_id": "6305583318236810379", "provider_campaign_id": "6305583318236810380",
      "billable_units": 1, "cost": Decimal("0.0079"), "cost_currency": "INR"}, "outbound_message_scheduled_check"),
    ({"message_class": "marketing"}, "outbound_message_class_check"),
    ({"encoding": "UTF8"}, "outbound_message_encoding_check"),
    ({"body": ""}, "outbound_message_body_check"),
]


def test_rows_the_state_machine_cannot_produce_are_refused(db):
    for columns, constraint in REFUSED_ROWS:
        with pytest.raises(errors.CheckViolation) as raised:
            insert_message(db, **columns)
        assert raised.value.diag.constraint_name == constraint


def test_failed_by_proof_of_non_submission_is_not_billed(db):
    # unknown -> failed without submitted_at: no billable units required.
    key = insert_message(db, state="unknown", claimed_at=datetime.now(UTC))
    db.execute(
        "UPDATE msg.outbound_message SET state = 'failed', state_reason = 'not_submitted' WHERE id = %s", (key[0],)
    )
    assert fetch(db, key, "state", "billable_units") == ("failed", None)


def _compared_columns(text: str) -> set[str]:
    """The columns a guard compares between OLD and NEW (``x IS [NOT] DISTINCT FROM y`` on the same column)."""
    return {a.lower() for a, b in re.findall(r"(?:old|new)\.(\w+) IS (?:NOT )?DISTINCT FROM (?:old|new)\.(\w+)",
                                             text, flags=re.IGNORECASE) if a.lower() == b.lower()}


def test_the_guards_fast_path_compares_every_column_the_function_guards(db):
    # The trigger's WHEN clause lets an update past the function only when none of the columns the function
    # guards changed: a guard added to the function but not to that clause would be skipped on the fast path.
    (function,) = db.execute("SELECT pg_get_functiondef('msg.outbound_message_before_update()'::regprocedure)"
                             ).fetchone()
    (trigger,) = db.execute("SELECT pg_get_triggerdef(oid) FROM pg_trigger "
                            "WHERE tgname = 'outbound_message_guard' AND tgrelid = 'msg.outbound_message'::regclass"
                            ).fetchone()
    guarded = _compared_columns(function)
    assert {"tenant_id", "cost", "segments", "message_fingerprint", "correlation_evidence", "body",
            "recipient"} <= guarded
    # The clause also reads what makes an update a real change with a new clock (state, reconciled_at,
    # updated_at); the function reads the state through the transition rule.
    assert _compared_columns(trigger) == guarded | {"state", "reconciled_at", "updated_at"}


# Every column the function guards, changed inside an update shape the WHEN clause otherwise lets past
# (the reconciliation's: submitted -> delivered with reconciled_at and updated_at stamped), and the
# function's refusal for it.
GUARDED_CHANGES = [
    ("tenant_id = 'other'", "never change"),
    ("business_key = 'other'", "never change"),
    ("attempt_key = gen_random_uuid()", "never change"),
    ("created_at = created_at + interval '1 second'", "never change"),
    ("adopted_from = 'legacy:1'", "never change"),
    ("segments = 2", "immutable once set"),
    ("billable_units = 2", "immutable once set"),
    ("cost = 0.5", "immutable once set"),
    ("cost_currency = 'USD'", "immutable once set"),
    ("message_fingerprint = decode(repeat('00', 32), 'hex')", "message_fingerprint is immutable"),
    ("correlation_evidence = 'msgid'", "correlation_evidence is immutable"),
    ("body = 'another text'", "a body only goes"),
    ("body_length = 3", "a body only goes"),
    ("body_redacted_at = now()", "a body only goes"),
    ("recipient = '919800000002'", "a recipient only becomes"),
]


def _reconciled_shape(db, assignment: str) -> tuple[tuple[int, datetime], datetime]:
    submitted = datetime.now(UTC) - timedelta(hours=1)
    key = insert_message(db, state="submitted", **any_state_columns(submitted), cost=Decimal("0.1800"),
                         cost_currency="INR", message_fingerprint=b"\x01" * 32, correlation_result="matched",
                         correlation_evidence="transaction", body_length=len(DEFAULTS["body"]))
    later = submitted + timedelta(minutes=30)
    db.execute("UPDATE msg.outbound_message SET state = 'delivered', final_status = 'DELIVRD', "
               f"reconciled_at = %(at)s, updated_at = %(at)s{', ' + assignment if assignment else ''} "
               "WHERE id = %(id)s AND created_at = %(created_at)s",
               {"at": later, "id": key[0], "created_at": key[1]})
    return key, later


@pytest.mark.parametrize(("assignment", "refusal"), GUARDED_CHANGES, ids=[a for a, _ in GUARDED_CHANGES])
def test_the_fast_path_shape_still_refuses_each_guarded_change(db, assignment, refusal):
    with pytest.raises(errors.CheckViolation, match=refusal):
        _reconciled_shape(db, assignment)


def test_the_reconciliations_update_shape_goes_through_with_its_clock(db):
    key, later = _reconciled_shape(db, "provider_message_id = 'm-1', conflicting_final_status = 'UNDELIV'")
    assert fetch(db, key, "state", "updated_at", "reconciled_at", "provider_message_id") == (
        "delivered", later, later, "m-1")
    # The same shape from a state it cannot leave that way is refused.
    with pytest.raises(errors.CheckViolation, match="illegal state transition"):
        db.execute("UPDATE msg.outbound_message SET state = 'submitted', reconciled_at = %s, updated_at = %s "
                   "WHERE id = %s", (later + timedelta(minutes=1), later + timedelta(minutes=1), key[0]))


def test_the_request_started_step_is_refused_if_it_changes_anything_else(db):
    claimed_at = datetime.now(UTC) - timedelta(minutes=1)
    later = claimed_at + timedelta(seconds=30)
    statement = "UPDATE msg.outbound_message SET state = 'sending', updated_at = %s, {} WHERE id = %s"
    for assignment, refusal in (("tenant_id = 'other'", "never change"), ("segments = 2", "immutable"),
                                ("body = NULL", "a body only goes")):
        key = insert_message(db, state="claimed", claimed_at=claimed_at)
        with pytest.raises(errors.CheckViolation, match=refusal):
            db.execute(statement.format(assignment), (later, key[0]))
    # The step alone goes through, with the statement's clock; from a state other than claimed it is refused.
    key = insert_message(db, state="claimed", claimed_at=claimed_at)
    db.execute("UPDATE msg.outbound_message SET state = 'sending', updated_at = %s WHERE id = %s", (later, key[0]))
    assert fetch(db, key, "state", "updated_at", "queue_state") == ("sending", later, "claimed")
    pending = insert_message(db)
    with pytest.raises(errors.CheckViolation, match="illegal state transition"):
        db.execute("UPDATE msg.outbound_message SET state = 'sending', updated_at = %s WHERE id = %s",
                   (later, pending[0]))
