"""What a legacy sender's stored response says (sms_pipeline.adopt.responses): pure, no database."""

from __future__ import annotations

import json

import pytest

from sms_pipeline.adopt.responses import Outcome, Problem, attempted, check_id, outcome, parse_response

TID = "6305583318236810379"  # the provider's documented example: 19 digits, not a float's rounding
FLOAT_ROUNDED = str(int(float(TID)))  # 6305583318236810240: what a double kept of it


def answer(**fields: object) -> str:
    return json.dumps({"status": "success", "statusCode": "200", "reason": "success", "msgId": "", **fields})


def test_a_clean_id_is_kept_digit_for_digit_as_text():
    parsed = parse_response(answer(transactionId=TID, mobile="919876543210"))
    assert parsed.transaction_id == TID and parsed.problem is None and not parsed.mangled


def test_a_bare_id_and_a_json_string_id_are_usable():
    assert parse_response(TID).transaction_id == TID
    assert parse_response(f" {TID}\n").transaction_id == TID
    assert parse_response(json.dumps(TID)).transaction_id == TID


def test_a_json_number_id_is_read_from_the_text_not_through_a_float():
    raw = '{"status":"success","transactionId":%s,"mobile":"919876543210"}' % TID
    assert json.loads(raw)["transactionId"] == int(TID)  # exact in Python, but only as text here
    parsed = parse_response(raw)
    assert parsed.transaction_id == TID
    assert isinstance(parsed.transaction_id, str)


@pytest.mark.parametrize(("raw", "problem"), [
    ("6.305583318236811e+18", Problem.exponent),
    ("6.305583318236811E18", Problem.exponent),
    ('{"status":"success","transactionId":6.305583318236811e+18}', Problem.exponent),
    (answer(transactionId="6.305583318236811e+18"), Problem.exponent),
    (FLOAT_ROUNDED, Problem.float_rounded),
    (answer(transactionId=FLOAT_ROUNDED), Problem.float_rounded),
    ('{"transactionId":%s}' % FLOAT_ROUNDED, Problem.float_rounded),
    ("63055833182368", Problem.digits),  # 14 digits: cut
    ("630558331823681037900", Problem.digits),  # 21 digits
    ("6305583318236810379.0", Problem.digits),  # a decimal's print
    (answer(transactionId="12345"), Problem.digits),
])
def test_mangled_ids_are_unusable_and_say_why(raw, problem):
    parsed = parse_response(raw)
    assert parsed.transaction_id is None
    assert parsed.problem is problem
    assert parsed.mangled


def test_below_2_to_the_53_a_float_round_trip_proves_nothing():
    small = str(2**53 - 1).rjust(16, "0")  # 16 digits, exact in a double
    assert int(float(small)) == int(small)
    assert check_id(small) == (small, None)


@pytest.mark.parametrize("raw", [None, "", "   ", "0", "null", "-", answer(transactionId="0"), answer(transactionId=""),
                                 answer()])
def test_empty_and_placeholder_responses_have_no_id(raw):
    parsed = parse_response(raw)
    assert parsed.transaction_id is None and parsed.problem is Problem.empty and not parsed.mangled


@pytest.mark.parametrize("raw", ["garbage", "{not json", "[1, 2]", "true", "<html>502 Bad Gateway</html>",
                                 '{"transactionId": {"nested": 1}}', "[" * 10_000])
def test_garbage_is_unparseable_or_empty_never_an_id(raw):
    parsed = parse_response(raw)
    assert parsed.transaction_id is None
    assert parsed.problem in (Problem.unparseable, Problem.empty)


def test_an_error_answer_is_not_accepted_even_with_an_id():
    parsed = parse_response(json.dumps({"status": "error", "statusCode": "402", "transactionId": TID}))
    assert parsed.transaction_id is None and parsed.problem is Problem.not_accepted


@pytest.mark.parametrize("invalid", ["9155,+91 98765 43211", ["9155", "919876543211"], " 9155 , 09876543211"])
def test_invalid_mobile_numbers_are_normalised_and_rejected(invalid):
    raw = answer(transactionId=TID, mobile="919876543210", invalidMobile=invalid)
    parsed = parse_response(raw)
    assert parsed.invalid == {"919876543211"}
    assert parsed.invalid_unreadable == {"9155"}  # no number, kept as written: that legacy recipient is rejected
    assert outcome(parsed, True, raw, "919876543211") is Outcome.rejected
    assert outcome(parsed, True, raw, "9155") is Outcome.rejected
    assert outcome(parsed, True, raw, "919876543210") is Outcome.submitted


def test_a_recipient_the_answer_lists_nowhere_is_unknown():
    raw = answer(transactionId=TID, mobile="919876543210", invalidMobile="")
    assert outcome(parse_response(raw), True, raw, "919812345678") is Outcome.unknown


def test_sent_without_a_usable_id_is_unknown_never_submitted():
    for raw in ("", "6.305583318236811e+18", "garbage", FLOAT_ROUNDED):
        assert outcome(parse_response(raw), True, raw, "919876543210") is Outcome.unknown


def test_unsent_rows_are_unsent_unless_an_id_proves_the_provider_took_them():
    assert outcome(parse_response(None), None, None, "919876543210") is Outcome.unsent
    for raw in (None, "", "6.305583318236811e+18", answer(transactionId=TID, status="error")):
        assert not attempted(False, raw)
        assert outcome(parse_response(raw), False, raw, "919876543210") is Outcome.unsent
    # sent unset but an answer stored: the sender did send it
    assert attempted(None, TID) and outcome(parse_response(TID), None, TID, "919876543210") is Outcome.submitted
    # sent false, a clean id stored: the provider took it (cutover --include-unsent must not send it again)
    for raw in (TID, answer(transactionId=TID, mobile="919876543210")):
        assert attempted(False, raw)
        assert outcome(parse_response(raw), False, raw, "919876543210") is Outcome.submitted
