"""Intake refuses what no worker sends, line by line; one bad line never sinks a file (issue 18, 4 and 6).

Hostile lines (a NUL, a lone surrogate, five million characters, a landline,
a control character, bad ids, an unsendable channel) are refused by line and
field before any database write can fail on them; the good lines around them
load, the command exits non-zero, and a re-run adds nothing. Rows get a
default expiry at intake, so nothing goes out late after a worker outage; a
second OTP inside the provider's retry-after is refused at intake.
"""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
from tests.support.cli import write_lines
from tests.support.environment import provider_variables
from tests.support.otp import TEMPLATE, otp_request
from tests.support.worker import TEXT_KEY, enqueue, ledger, make_worker, request, states

from sms_pipeline import intake, rates
from sms_pipeline.core.channels import SENDABLE_CHANNELS
from sms_pipeline.core.fingerprint import text_fingerprint
from sms_pipeline.core.input_lines import InvalidField
from sms_pipeline.core.states import Channel
from sms_pipeline.send.personalised import sms_strategies
from sms_pipeline.send.otp import OtpPolicy, otp_strategies
from sms_pipeline.simulator.server import run_simulator

LANDLINE = "+91 11 2345 6789"  # Delhi: a valid number, not a mobile's
BOM = "\ufeff"


def hostile_file(path: Path) -> tuple[Path, dict[int, str], list[int]]:
    """A file of good lines with every hostile line between them: (path, {line: field refused}, good lines)."""
    good = {n: json.dumps(request(n)) for n in range(1, 8)}
    bad = {
        "nul": ("body", json.dumps(request(101, body="before\u0000after"))),
        "surrogate": ("body", json.dumps(request(102, body="broken \ud800 text"))),  # JSON's "\ud800" escape
        "five_million": ("body", json.dumps(request(103, body="x" * 5_000_000))),
        "landline": ("recipient", json.dumps(request(104, recipient=LANDLINE))),
        "control": ("body", json.dumps(request(105, body="ring \u0007 the bell"))),
        "sender_short": ("sender_id", json.dumps(request(106, sender_id="AB"))),
        "sender_dash": ("sender_id", json.dumps(request(107, sender_id="SGC-SMS"))),
        "template": ("template_id", json.dumps(request(108, template_id="tmpl-7"))),
        "dlt_entity": ("dlt_entity_id", json.dumps(request(109, dlt_entity_id="12x4"))),
        "dlt_template": ("dlt_template_id", json.dumps(request(110, dlt_template_id="1" * 31))),
        "whatsapp": ("channel", json.dumps(request(111, channel="whatsapp"))),
        "event_nul": ("event_type", json.dumps(request(112, event_type="order\u0000shipped"))),
        "surrogate_key": (None, '{"tenant_id": "tenant-a", "\\udfff": 1}'),
        # what makes Python's JSON parser itself fail other than by a syntax error
        "deep": (None, "[" * 100_000 + "]" * 100_000),
        "huge_int": (None, '{"tenant_id": "tenant-a", "event_id": ' + "9" * 5_000 + "}"),
        # an id too long for an index row
        "long_tenant": ("tenant_id", json.dumps(request(113, tenant_id="t" * 5_000))),
    }
    lines: list[str] = []
    refused: dict[int, str] = {}
    good_lines: list[int] = []
    good_items, bad_items = list(good.values()), list(bad.values())
    lines.append(BOM + good_items.pop(0))  # a BOM on the first line, as Windows editors write it
    good_lines.append(1)
    while bad_items or good_items:
        if bad_items:
            field, text = bad_items.pop(0)
            lines.append(text)
            refused[len(lines)] = field
        if good_items:
            lines.append(good_items.pop(0))
            good_lines.append(len(lines))
    return write_lines(path, lines), refused, good_lines


def test_a_file_of_hostile_lines_loads_every_good_line_and_refuses_each_bad_one_by_line_and_field(
        run, db, tmp_path):
    path, refused, good_lines = hostile_file(tmp_path / "hostile.jsonl")

    code, out, err = run("enqueue", str(path), "--chunk-size", "2", "--workers", "1")

    assert code == 1
    printed = [line for line in err.splitlines() if line.startswith("hostile.jsonl: line ")]
    assert len(printed) == len(refused)  # one line each, and nothing else (no traceback)
    assert "Traceback" not in err
    for line_no, field in refused.items():
        expected = f"hostile.jsonl: line {line_no}: {field}: " if field else f"hostile.jsonl: line {line_no}: "
        assert any(p.startswith(expected) for p in printed), (line_no, field, printed)
    reasons = "\n".join(printed)
    for words in ("NUL character", "lone surrogate", "longer than 10 segments", "not a mobile number",
                  "control character (U+0007)", "3 to 11 letters or digits", "1 to 30 digits",
                  "whatsapp has no send strategy"):
        assert words in reasons
    assert "2345 6789" not in err and "broken" not in err and "xxxx" not in err  # values never quoted
    assert f"{len(good_lines)} requests: {len(good_lines)} new, 0 already enqueued; {len(refused)} bad lines" in out
    # every good line whole, nothing of a bad one
    assert states(db) == {"pending": len(good_lines)}
    assert db.execute("SELECT array_agg(body ORDER BY id), max(length(body)) FROM msg.outbound_message"
                      ).fetchone() == (["Your order has shipped"] * len(good_lines), 22)

    code, out, err = run("enqueue", str(path), "--chunk-size", "2", "--workers", "1")

    assert code == 1 and f"{len(good_lines)} requests: 0 new, {len(good_lines)} already enqueued" in out
    assert states(db) == {"pending": len(good_lines)}


@pytest.mark.parametrize(("change", "field", "words"), [
    ({"body": "a\u0000b"}, "body", "NUL"),
    ({"body": "a\ud800b"}, "body", "lone surrogate"),
    ({"body": "a\u001bb"}, "body", "control character (U+001B)"),
    ({"body": "a\u0085b"}, "body", "control character (U+0085)"),
    ({"body": "x" * 1531}, "body", "longer than 10 segments"),
    ({"body": "€" * 766}, "body", "11 GSM7 segments"),  # extension characters cost two septets
    ({"body": "अ" * 671}, "body", "11 UCS2 segments"),
    ({"recipient": LANDLINE}, "recipient", "not a mobile number"),
    ({"sender_id": "AB"}, "sender_id", "3 to 11"),
    ({"sender_id": "ABCDEFGHIJKL"}, "sender_id", "3 to 11"),
    ({"sender_id": "ÄBCDEF"}, "sender_id", "3 to 11"),
    ({"template_id": "T1"}, "template_id", "1 to 30 digits"),
    ({"dlt_entity_id": "١٢٣"}, "dlt_entity_id", "1 to 30 digits"),  # Arabic-Indic digits are digits to Python
    ({"dlt_template_id": "1" * 31}, "dlt_template_id", "1 to 30 digits"),
    ({"channel": "voice"}, "channel", "no send strategy"),
    ({"channel": "rcs"}, "channel", "no send strategy"),
    ({"channel": "telegram"}, "channel", "no send strategy"),
    ({"event_type": "a\tb"}, "event_type", "control character"),
    ({"tenant_id": "t\ud800"}, "tenant_id", "lone surrogate"),
])
def test_each_hostile_field_is_refused_by_name(change, field, words):
    with pytest.raises(InvalidField) as refused:
        intake.new_message(request(1, **change))

    assert refused.value.field == field and words in refused.value.problem


def test_what_a_body_may_hold_up_to_the_limit():
    assert intake.new_message(request(1, body="line one\r\nline two\ttabbed")).segments == 1
    assert intake.new_message(request(1, body="x" * 1530)).segments == 10
    assert intake.new_message(request(1, body="x" * 1530 + "y"), max_body_segments=11).segments == 11
    assert intake.new_message(request(1, template_id="1", dlt_entity_id="1" * 30, sender_id="ABC")).sender_id == "ABC"
    with pytest.raises(InvalidField, match="longer than 1 segments"):
        intake.new_message(request(1, body="x" * 161), max_body_segments=1)


def test_the_sendable_channels_are_the_channels_of_the_worker_strategies():
    policy = OtpPolicy(code_length=6, code_type="num", expiry_s=300, max_attempts=3, hmac_key=b"k" * 32)
    no_client = None  # the strategies are only listed, never used
    strategies = {**sms_strategies(no_client, "Asia/Kolkata", xml_send=True, campaign_request_size=10_000),  # type: ignore[arg-type]
                  **otp_strategies(no_client, "Asia/Kolkata", policy)}  # type: ignore[arg-type]

    assert {Channel(channel) for channel, _ in strategies} == SENDABLE_CHANNELS


def test_rate_card_currencies_are_iso_4217_codes():
    header = "tenant_id,channel,message_class,unit_price,currency,valid_from,valid_to"
    card = [header] + [f"t{n},sms,otp,0.1,{currency},2026-01-01," for n, currency in
                       enumerate(["INR", "USD", "EUR", "XYZ", "inr", "ABC", "IN", "RUR", " JPY "])]

    parsed, bad = rates.parse_rate_card(card)

    assert [r.currency for r in parsed] == ["INR", "USD", "EUR", "JPY"]
    assert [(b.line_no, b.field) for b in bad] == [(5, "currency"), (6, "currency"), (7, "currency"),
                                                   (8, "currency"), (9, "currency")]
    assert "ISO 4217" in bad[0].problem
    assert rates.parse_rate_card([BOM + header, "t,sms,otp,0.1,INR,2026-01-01,"])[1] == []


# ----- expiry ---------------------------------------------------------------------


def test_intake_gives_each_row_a_default_expiry(db, clock):
    now = clock.now()
    scheduled = now + timedelta(hours=3)
    given = now + timedelta(hours=1)
    enqueue(db, [otp_request(1), request(2), request(3, message_class="promotional"),
                 request(4, scheduled_for=scheduled.isoformat()), request(5, expires_at=given.isoformat())], clock)
    policy = intake.IntakePolicy(otp_expiry_s=60, max_send_delay_h=2)
    intake.enqueue(db, [intake.new_message(request(6))], clock=clock, policy=policy)

    expiries = [row[0] for row in db.execute("SELECT expires_at FROM msg.outbound_message ORDER BY id")]

    assert expiries == [now + timedelta(seconds=300), now + timedelta(hours=24), now + timedelta(hours=24),
                        scheduled + timedelta(hours=24), given, now + timedelta(hours=2)]


def test_enqueue_takes_the_expiry_settings(run, db, tmp_path):
    path = write_lines(tmp_path / "a.jsonl", [json.dumps(request(1)), json.dumps(otp_request(2))])

    code, _, _ = run("enqueue", str(path), SMS_PIPELINE_MAX_SEND_DELAY_H="2", SMS_PIPELINE_OTP_EXPIRY_S="90")

    assert code == 0
    assert db.execute("SELECT array_agg(extract(epoch FROM expires_at - created_at)::int ORDER BY id) "
                      "FROM msg.outbound_message").fetchone()[0] == [7200, 90]


def test_enqueue_stores_each_fixed_bodys_text_fingerprint_and_none_for_an_otp(run, db, tmp_path):
    bodies = ["Your order has shipped", "Your parcel is late", "Your order has shipped"]
    lines = [json.dumps(request(n, body=body)) for n, body in enumerate(bodies)] + [json.dumps(otp_request(9))]
    code, _, _ = run("enqueue", str(write_lines(tmp_path / "a.jsonl", lines)))

    assert code == 0
    rows = db.execute("SELECT body, message_fingerprint FROM msg.outbound_message ORDER BY id").fetchall()
    # under the settings' key; an OTP's text exists only once its code is made, at send
    assert rows == [(body, text_fingerprint(TEXT_KEY, body)) for body in bodies] + [(TEMPLATE, None)]


def test_an_otp_enqueued_before_a_worker_outage_longer_than_its_expiry_expires_unsent(run, db, clock):
    # Enqueued on the test's clock, six hours behind real time: the outage is those hours.
    [row] = enqueue(db, [otp_request(1)], clock)
    assert db.execute("SELECT expires_at FROM msg.outbound_message").fetchone()[0] == (
        row.created_at + timedelta(seconds=300))  # SMS_PIPELINE_OTP_EXPIRY_S's default

    with run_simulator() as sim:  # real time, like the command
        code, out, err = run("worker", "--once", **provider_variables(sim.base_url))

        assert code == 0, err
        assert "submitted=0" in out and ("pending_expired=1" in out or "expired_unsent=1" in out)
        assert states(db) == {"expired": 1}
        assert ledger(sim) == []


def test_a_transactional_row_past_the_max_send_delay_expires_unsent(db, db_url, sim, client, clock):
    policy = intake.IntakePolicy(max_send_delay_h=2)  # the clock stands six hours behind real time, at most
    intake.enqueue(db, [intake.new_message(request(1)), intake.new_message(
        request(2, scheduled_for=(clock.now() + timedelta(hours=2)).isoformat()))], clock=clock, policy=policy)
    clock.advance(timedelta(hours=3))  # the worker was down for three hours

    summary = make_worker(db_url, client, clock).run(once=True)

    assert (summary.submitted, summary.pending_expired) == (1, 1)
    assert [row[0] for row in db.execute("SELECT state::text FROM msg.outbound_message ORDER BY id")] == [
        "expired", "submitted"]  # the scheduled row is due later, so its delay has not run out
    assert len(ledger(sim)) == 1


# ----- OTP retry-after -------------------------------------------------------------


def test_a_second_otp_to_the_same_number_and_purpose_inside_the_retry_after_is_refused(run, db, tmp_path):
    path = write_lines(tmp_path / "otp.jsonl", [
        json.dumps(otp_request(1)),
        json.dumps(otp_request(1, event_id="login-1-again")),  # same number and purpose: too soon
        json.dumps(otp_request(1, event_id="login-1-pay", purpose="payment")),  # another purpose
        json.dumps(otp_request(2)),
        json.dumps(otp_request(1)),  # the first event repeated: the same row, not a second OTP
    ])

    code, out, err = run("enqueue", str(path))

    assert code == 1
    assert err.splitlines() == [
        "otp.jsonl: line 2: recipient: another OTP to this number for this purpose was requested less than "
        "30 s ago (SMS_PIPELINE_OTP_RETRY_AFTER_S); the provider would refuse it"]
    assert "4 requests: 3 new, 1 already enqueued; 1 bad lines" in out

    code, out, err = run("enqueue", str(path))  # a re-run adds nothing and refuses the same line
    assert code == 1 and "4 requests: 0 new, 4 already enqueued; 1 bad lines" in out and "line 2: recipient" in err

    later = write_lines(tmp_path / "later.jsonl", [json.dumps(otp_request(1, event_id="login-1-later"))])
    code, _, err = run("enqueue", str(later))
    assert code == 1 and "line 1: recipient: another OTP" in err  # from the database, not the same file
    assert run("enqueue", str(later), SMS_PIPELINE_OTP_RETRY_AFTER_S="0")[0] == 0  # 0: no check at intake
    assert states(db) == {"pending": 4}


def test_the_retry_after_counts_from_the_first_otp_and_refuses_the_whole_batch_in_code(db, clock):
    policy = intake.IntakePolicy(otp_retry_after_s=30)
    intake.enqueue(db, [intake.new_message(otp_request(1))], clock=clock, policy=policy)
    clock.advance(timedelta(seconds=29))

    with pytest.raises(intake.OtpTooSoon):
        intake.enqueue(db, [intake.new_message(otp_request(2)),
                            intake.new_message(otp_request(1, event_id="login-1-resend"))], clock=clock, policy=policy)
    assert states(db) == {"pending": 1}  # nothing of the refused batch

    clock.advance(timedelta(seconds=2))
    [resend] = intake.enqueue(db, [intake.new_message(otp_request(1, event_id="login-1-resend"))], clock=clock,
                              policy=policy)
    assert resend.created and states(db) == {"pending": 2}
