"""OTP events enter through intake with a purpose (and optionally a session binding)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from tests.support.otp import otp_request
from tests.support.worker import enqueue

from sms_pipeline import intake
from sms_pipeline.core.input_lines import InvalidField


def _transactional(n: int) -> dict:
    """An ordinary message with the event (hence business key) of OTP request ``n``."""
    record = otp_request(n, message_class="transactional", body="Welcome")
    del record["purpose"]
    return record


def _requests(db) -> list[tuple]:
    return db.execute(
        """SELECT m.message_class, r.purpose, r.session_binding
             FROM msg.outbound_message m
             LEFT JOIN msg.otp_request r ON r.message_id = m.id AND r.message_created_at = m.created_at
            ORDER BY m.id""").fetchall()


@pytest.mark.parametrize(("change", "field", "words"), [
    ({"purpose": None}, "purpose", "required for an OTP"),
    ({"purpose": " "}, "purpose", "must not be empty"),
    ({"purpose": 7}, "purpose", "must be a string"),
    ({"purpose": "x" * 65}, "purpose", "at most 64"),
    ({"session_binding": "a\nb"}, "session_binding", "control characters"),
    ({"message_class": "transactional", "body": "Hello"}, "purpose", "only OTP messages"),
    ({"message_class": "transactional", "body": "Hello", "purpose": None, "session_binding": "s-1"},
     "session_binding", "only OTP messages"),
])
def test_otp_fields_are_validated_by_name(change, field, words):
    record = {k: v for k, v in {**otp_request(1), **change}.items() if v is not None}

    with pytest.raises(InvalidField) as refused:
        intake.new_message(record)

    assert refused.value.field == field and words in refused.value.problem


def test_intake_records_what_each_otp_is_for_in_the_same_transaction(db, clock):
    enqueue(db, [otp_request(1), otp_request(2, purpose="payment", session_binding="session-42"),
                 _transactional(3)], clock)

    assert _requests(db) == [("otp", "login", None), ("otp", "payment", "session-42"),
                             ("transactional", None, None)]


def test_a_repeated_event_keeps_the_request_of_its_first_intake(db, clock):
    first = enqueue(db, [otp_request(1), otp_request(1, purpose="payment")], clock)
    again = enqueue(db, [otp_request(1, purpose="transfer")], clock)

    assert [e.created for e in first] == [True, False] and again[0].created is False
    assert _requests(db) == [("otp", "login", None)]


def test_an_event_first_seen_as_another_class_gets_no_otp_request(db, clock):
    enqueue(db, [_transactional(1)], clock)
    enqueue(db, [otp_request(1)], clock)  # same business key: maps to the transactional row

    assert _requests(db) == [("transactional", None, None)]


def test_retention_purges_requests_whose_message_is_done_and_keeps_waiting_ones(db, clock):
    done, waiting = enqueue(db, [otp_request(1), otp_request(2)], clock)
    db.execute("UPDATE msg.outbound_message SET state = 'claimed', claimed_at = %s WHERE id = %s",
               (clock.now(), done.message_id))
    db.execute("UPDATE msg.outbound_message SET state = 'sending' WHERE id = %s", (done.message_id,))
    db.execute("UPDATE msg.outbound_message SET state = 'rejected' WHERE id = %s", (done.message_id,))

    assert db.execute("SELECT msg.purge_otp_verifications(%s)", (clock.now(),)).fetchone() == (0,)
    assert db.execute("SELECT count(*) FROM msg.otp_request").fetchone() == (2,)  # not older than the horizon

    later = clock.now() + timedelta(days=2)
    db.execute("SELECT msg.purge_otp_verifications(%s)", (later,))

    assert db.execute("SELECT message_id FROM msg.otp_request").fetchall() == [(waiting.message_id,)]
