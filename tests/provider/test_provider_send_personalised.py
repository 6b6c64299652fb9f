"""The XML multi-message send, client against the simulator over HTTP, and answer matching for both sends.

docs/provider-contract.md#send-one-body-per-recipient-xml: each message billed by its own body, the
1,000-message limit (414, nothing billed), invalid numbers, answers that write our numbers in
another form or leave one out, XML special characters and unicode bodies, entity tricks refused.
"""

from __future__ import annotations

import httpx
import pytest

from sms_pipeline.core.segments import count_segments
from sms_pipeline.provider import PersonalisedSms, SendAccepted, SendRefused
from sms_pipeline.send.outcomes import Action, decide

A, B, C, D = "919876543210", "918765432109", "917654321098", "916543210987"
FOREIGN = "16502530000"  # a valid number the simulator refuses (it takes Indian mobiles only)


def _texts(sim) -> list[tuple[str, str, int]]:
    """(mobile, text, units) of every billed message, in billing order."""
    view = sim.state.view()
    ledger = view.ledger
    return [(ledger.mobiles[row], req.text, req.units)
            for req in ledger.requests[:view.request_count]
            for row in range(req.first_row, req.first_row + req.count)]


def _sms(*pairs: tuple[str, str]) -> list[PersonalisedSms]:
    return [PersonalisedSms(mobile, text, "1107000000000000001") for mobile, text in pairs]


def test_each_message_is_billed_by_its_own_body_under_one_transaction(client, sim):
    long_text = "Your order 4413 has shipped and will arrive on Tuesday between ten and two. " * 3
    outcome = client.send_personalised(
        _sms((A, "Your order 4411 has shipped"), (B, "Your order 4412 has shipped"), (C, long_text)),
        "SGCSMS", dlt_entity_id="1101000000000000001")

    assert isinstance(outcome, SendAccepted)
    assert (outcome.accepted, outcome.invalid, outcome.unlisted) == ((A, B, C), (), ())
    assert outcome.status_code == "200" and outcome.transaction_id is not None
    assert _texts(sim) == [(A, "Your order 4411 has shipped", 1), (B, "Your order 4412 has shipped", 1),
                           (C, long_text, count_segments(long_text).segments)]
    entries = list(sim.state.ledger_entries())
    assert {e.transaction_id for e in entries} == {outcome.transaction_id}
    assert len({e.msg_id for e in entries}) == 3
    assert sim.state.billed_units() == 2 + count_segments(long_text).segments


def test_xml_special_characters_and_unicode_bodies_round_trip(client, sim):
    tricky = 'Price <b>5 & 6</b> "quoted" \'single\' ]]> &amp; &#65; \r\nline two\ttab'
    hindi = "आपका ऑर्डर 4411 भेज दिया गया है 🙏"
    outcome = client.send_personalised(_sms((A, tricky), (B, hindi)), "SGCSMS", msg_type="unicode")

    assert isinstance(outcome, SendAccepted) and outcome.accepted == (A, B)
    assert _texts(sim) == [(A, tricky, count_segments(tricky).segments),
                           (B, hindi, count_segments(hindi).segments)]


def test_the_limit_is_1000_messages_and_1001_is_refused_unbilled(client, sim):
    numbers = [f"9170000{n:05d}" for n in range(1001)]
    messages = [PersonalisedSms(number, f"Your code is {n}") for n, number in enumerate(numbers)]

    too_many = client.send_personalised(messages, "SGCSMS")

    assert isinstance(too_many, SendRefused) and too_many.code == "414" and too_many.is_too_many_messages
    assert not too_many.is_message_error and not too_many.is_configuration_error
    decision = decide(too_many, "transactional")
    assert decision.action is Action.release and decision.stop_worker  # our bug: nothing taken, a person looks
    assert sim.state.ledger_size() == 0

    at_limit = client.send_personalised(messages[:1000], "SGCSMS")

    assert isinstance(at_limit, SendAccepted) and len(at_limit.accepted) == 1000 and at_limit.unlisted == ()
    assert sim.state.ledger_size() == 1000


def test_invalid_numbers_are_listed_and_not_billed(client, sim):
    outcome = client.send_personalised(_sms((A, "one"), ("917", "two"), (FOREIGN, "three"), (B, "four")), "SGCSMS")

    assert isinstance(outcome, SendAccepted)
    assert (outcome.accepted, outcome.invalid, outcome.unlisted) == ((A, B), ("917", FOREIGN), ())
    assert [mobile for mobile, _, _ in _texts(sim)] == [A, B]


def test_only_invalid_numbers_is_refused_235(client, sim):
    outcome = client.send_personalised(_sms(("917", "two"), (FOREIGN, "three")), "SGCSMS")

    assert isinstance(outcome, SendRefused) and outcome.code == "235"
    assert sim.state.ledger_size() == 0


def test_a_body_the_provider_refuses_lists_that_message_as_invalid(client, sim):
    outcome = client.send_personalised(_sms((A, "Dear {#var#}, hello"), (B, "fine")), "SGCSMS")

    assert isinstance(outcome, SendAccepted) and (outcome.accepted, outcome.invalid) == ((B,), (A,))
    assert sim.state.ledger_size() == 1


@pytest.mark.parametrize("styles", [
    ["answer_plus_prefix"], ["answer_leading_zero"], ["answer_spaces"],
    ["answer_plus_prefix", "answer_spaces"], ["answer_leading_zero", "answer_spaces"],
])
@pytest.mark.parametrize("xml", [True, False], ids=["xml", "quick"])
def test_numbers_written_differently_in_the_answer_are_matched_to_ours(client, sim, styles, xml):
    sim.state.faults.update(dict.fromkeys(styles, 1.0))
    numbers = [A, "917", B, FOREIGN, C]

    if xml:
        outcome = client.send_personalised(_sms(*((n, f"text for {n}") for n in numbers)), "SGCSMS")
    else:
        outcome = client.send(numbers, "same text", "SGCSMS")

    assert isinstance(outcome, SendAccepted)
    assert (outcome.accepted, outcome.invalid, outcome.unlisted, outcome.unmatched) == (
        (A, B, C), ("917", FOREIGN), (), ())
    assert sim.state.faults.fired()[styles[0]] == 1


@pytest.mark.parametrize("xml", [True, False], ids=["xml", "quick"])
def test_a_recipient_missing_from_both_lists_is_unlisted_never_accepted_or_invalid(client, sim, xml):
    sim.state.faults.update({"answer_omits_recipient": 1.0})
    numbers = [A, B, "917"]

    if xml:
        outcome = client.send_personalised(_sms(*((n, f"text for {n}") for n in numbers)), "SGCSMS")
    else:
        outcome = client.send(numbers, "same text", "SGCSMS")

    assert isinstance(outcome, SendAccepted)
    assert (outcome.accepted, outcome.invalid, outcome.unlisted) == ((), (), (A, B, "917"))
    assert sim.state.ledger_size() == 2  # the provider billed them all the same: they are unknown, not unsent


def test_some_recipients_missing_partition_the_request(client, sim):
    sim.state.faults.update({"answer_omits_recipient": 0.5, "answer_plus_prefix": 1.0})
    numbers = [f"9170000{n:05d}" for n in range(40)]

    outcome = client.send_personalised([PersonalisedSms(n, f"hi {n}") for n in numbers], "SGCSMS")

    assert isinstance(outcome, SendAccepted)
    assert 0 < len(outcome.unlisted) < 40
    assert sorted(outcome.accepted + outcome.unlisted) == numbers and outcome.invalid == ()
    assert outcome.unlisted == tuple(n for n in numbers if n in set(outcome.unlisted))  # request order


def test_a_number_sent_twice_gets_two_messages_and_duplicatecheck_drops_one_unlisted(client, sim):
    kept = client.send_personalised(_sms((A, "first"), (A, "second")), "SGCSMS")
    deduped = client.send_personalised(_sms((B, "first"), (B, "second")), "SGCSMS", duplicate_check=True)

    assert isinstance(kept, SendAccepted) and (kept.accepted, kept.unlisted) == ((A, A), ())
    assert isinstance(deduped, SendAccepted) and (deduped.accepted, deduped.unlisted) == ((B,), (B,))
    entries = list(sim.state.ledger_entries())
    assert [e.mobile for e in entries] == [A, A, B]
    assert len({e.msg_id for e in entries}) == 3


def test_the_password_travels_in_the_xml_and_a_wrong_one_is_refused(make_client, sim):
    from pydantic import SecretStr

    with make_client(password=SecretStr("wrong"), api_key=None) as wrong:
        outcome = wrong.send_personalised(_sms((A, "hello")), "SGCSMS")

    assert isinstance(outcome, SendRefused) and outcome.code == "216"
    assert sim.state.ledger_size() == 0


def test_a_body_xml_cannot_carry_is_refused_before_sending(client, sim):
    with pytest.raises(ValueError, match="XML cannot carry"):
        client.send_personalised(_sms((A, "nul \x00 here")), "SGCSMS")


_BILLION_LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE data [
 <!ENTITY lol "lol">
 <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
]>
<data><userid>demo</userid><password>demo</password><senderid>SGCSMS</senderid><msgType>text</msgType>
<sms><mobile>919876543210</mobile><msg>&lol3;</msg></sms></data>"""
_EXTERNAL_ENTITY = b"""<?xml version="1.0"?>
<!DOCTYPE data [<!ENTITY secret SYSTEM "file:///etc/passwd">]>
<data><userid>demo</userid><password>demo</password><senderid>SGCSMS</senderid><msgType>text</msgType>
<sms><mobile>919876543210</mobile><msg>&secret;</msg></sms></data>"""


@pytest.mark.parametrize("body", [_BILLION_LAUGHS, _EXTERNAL_ENTITY, b"<data><sms>", b"<other/>"],
                         ids=["entity-expansion", "external-entity", "malformed", "wrong-root"])
def test_the_simulator_refuses_entity_tricks_and_malformed_xml_unbilled(sim, body):
    with httpx.Client(base_url=sim.base_url, timeout=5) as http:
        response = http.post("/send", content=body, headers={"Content-Type": "application/xml"})

    answer = response.json()
    assert (response.status_code, answer["status"], answer["statusCode"]) == (200, "error", "400")
    assert sim.state.ledger_size() == 0
