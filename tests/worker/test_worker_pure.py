"""The pure parts: request grouping, the circuit breaker, request and rate-card validation."""

from __future__ import annotations

import json
import uuid
from collections import Counter
from datetime import UTC, datetime
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sms_pipeline import intake, rates
from sms_pipeline.send.batching import plan_requests
from sms_pipeline.send.breaker import BreakerState, CircuitBreaker
from sms_pipeline.send.claim import ClaimedMessage
from sms_pipeline.core.input_lines import InvalidField

NOW = datetime(2026, 3, 1, tzinfo=UTC)


def claimed(n: int, recipient: str, body: str = "hello", sender: str = "SGCSMS", tenant: str = "t") -> ClaimedMessage:
    return ClaimedMessage(
        id=n, created_at=NOW, attempt_key=uuid.uuid4(), tenant_id=tenant, channel="sms",
        message_class="transactional", recipient=recipient, sender_id=sender, body=body, encoding="GSM7",
        segments=1, template_id=None, dlt_entity_id=None, dlt_template_id=None, scheduled_for=None,
        expires_at=None, claimed_at=NOW, attempt_count=1)


@given(recipients=st.lists(st.sampled_from([f"91980000000{d}" for d in range(6)]), max_size=60),
       bodies=st.lists(st.sampled_from(["a", "b"]), min_size=60, max_size=60),
       batch_size=st.integers(1, 7))
def test_requests_never_repeat_a_number_never_mix_texts_and_never_exceed_the_size(recipients, bodies, batch_size):
    messages = [claimed(i, r, body=bodies[i]) for i, r in enumerate(recipients)]

    batches = plan_requests(messages, batch_size)

    assert sorted(m.id for b in batches for m in b.messages) == list(range(len(messages)))
    for batch in batches:
        assert 1 <= len(batch) <= batch_size
        assert len(set(batch.recipients)) == len(batch)
        assert {m.body for m in batch.messages} == {batch.body}


def test_requests_split_by_everything_the_provider_sees_besides_the_number():
    messages = [claimed(1, "1"), claimed(2, "2"), claimed(3, "3", sender="OTHERS"), claimed(4, "4", tenant="u"),
                claimed(5, "5", body="hello €")]

    batches = plan_requests(messages, 500)

    assert [b.ids for b in batches] == [[1, 2], [3], [4], [5]]
    assert [b.msg_type for b in batches] == ["text", "text", "text", "text"]
    assert Counter(b.tenant_id for b in batches) == {"t": 3, "u": 1}


def test_breaker_opens_after_repeated_failures_cools_down_then_closes_on_success():
    now = [0.0]
    breaker = CircuitBreaker(3, 10.0, now=lambda: now[0])
    breaker.record_failure()
    breaker.record_success()  # a success in between resets the count
    for _ in range(3):
        assert breaker.allow()
        breaker.record_failure()
    assert breaker.state is BreakerState.open and not breaker.allow()
    now[0] = 9.0
    assert breaker.seconds_until_retry() == pytest.approx(1.0)
    now[0] = 10.0
    assert breaker.state is BreakerState.half_open and breaker.allow()
    breaker.record_failure()  # the trial failed: open again for a full cooldown
    assert breaker.state is BreakerState.open and breaker.seconds_until_retry() == pytest.approx(10.0)
    now[0] = 20.0
    breaker.record_success()
    assert breaker.state is BreakerState.closed


GOOD = {"tenant_id": "t", "event_type": "e", "event_id": 42, "recipient": "098765 43210", "body": "Your parcel is here",
        "message_class": "promotional", "channel": "sms", "sender_id": "SGCSMS",
        "scheduled_for": "2026-03-01T09:30:00+05:30", "expires_at": "2026-03-01T10:30:00Z"}


def test_a_request_is_normalised_counted_and_keyed_once():
    m = intake.new_message(GOOD)

    assert (m.recipient, m.event_id, m.encoding, m.segments) == ("919876543210", "42", "GSM7", 1)
    assert m.scheduled_for == datetime(2026, 3, 1, 4, 0, tzinfo=UTC)
    assert m.business_key == intake.new_message({**GOOD, "recipient": "+91 98765-43210"}).business_key
    assert "9876543210" not in repr(m) and "parcel" not in repr(m)
    otp = intake.new_message({**GOOD, "message_class": "otp", "body": "Code $otp$ " + "x" * 150, "purpose": "login"},
                             otp_code_length=6)
    assert otp.segments == 2  # counted on the rendered length, not the template's


@pytest.mark.parametrize(("change", "field", "words"), [
    ({"recipient": "12345"}, "recipient", "not a valid phone number"),
    ({"body": ""}, "body", "must not be empty"),
    ({"message_class": "marketing"}, "message_class", "unknown value"),
    ({"channel": "fax"}, "channel", "unknown value"),
    ({"scheduled_for": "2026-03-01T09:30:00"}, "scheduled_for", "no time zone"),
    ({"expires_at": "2026-03-01T03:00:00Z"}, "expires_at", "later than scheduled_for"),
    ({"dlt_template_id": 1107160000000000000}, "dlt_template_id", "must be a string"),
    ({"dlt_entity_id": "0"}, "dlt_entity_id", "placeholder"),
    ({"sender": "SGCSMS"}, "sender", "unknown field"),
    ({"message_class": "otp"}, "body", "$otp$"),
])
def test_a_bad_request_names_its_field_and_never_quotes_the_value(change, field, words):
    with pytest.raises(InvalidField) as refused:
        intake.new_message({**GOOD, **change})
    assert refused.value.field == field and words in refused.value.problem
    assert "12345" not in str(refused.value)


def test_rate_card_lines_are_checked_one_by_one_and_duplicates_refused():
    card = [
        "tenant_id,channel,message_class,unit_price,currency,valid_from,valid_to",
        "t,sms,otp,0.1200,INR,2026-01-01,",
        "t,sms,otp,0.12345,INR,2026-01-01,",
        "t,fax,otp,0.1,INR,2026-01-01,",
        "t,sms,otp,0.1,inr,2026-01-01,",
        "t,sms,otp,0.1,INR,2026-02-30,",
        "t,sms,otp,0.1,INR,2026-03-01,2026-03-01",
        "t,sms,otp,0.1,INR,2026-01-01,",
        "t,sms,otp,0.1",
    ]

    parsed, bad = rates.parse_rate_card(card)

    assert [(r.unit_price, r.valid_to) for r in parsed] == [(Decimal("0.1200"), None)]
    assert [(b.line_no, b.field) for b in bad] == [
        (3, "unit_price"), (4, "channel"), (5, "currency"), (6, "valid_from"), (7, "valid_to"), (8, "valid_from"),
        (9, None)]
    assert rates.parse_rate_card(["tenant,channel"])[1][0].line_no == 1


def test_validation_in_processes_keeps_file_order_and_line_numbers(monkeypatch):
    monkeypatch.setattr(intake.messages, "_LINES_PER_BLOCK", 50)  # the parent cuts the blocks
    lines = [json.dumps({**GOOD, "event_id": f"e-{n}"}).encode() + b"\n" for n in range(130)]
    lines[5], lines[75], lines[129] = b"{broken\n", b"\xff\xfe\n", b"\n"
    read: list[int] = []

    in_processes = list(intake.validate_lines(lines, workers=2, on_bytes=read.append))

    assert in_processes == list(intake.validate_lines(lines, workers=1))
    assert len(in_processes) == 129 and sum(read) == sum(map(len, lines))
    assert [(b.line_no, b.problem) for b in in_processes if not isinstance(b, intake.NewMessage)] == [
        (6, "not valid JSON (Expecting property name enclosed in double quotes at column 2)"),
        (76, "not UTF-8 text")]
    assert [m.event_id for m in in_processes[:7] if isinstance(m, intake.NewMessage)] == [
        "e-0", "e-1", "e-2", "e-3", "e-4", "e-6"]
