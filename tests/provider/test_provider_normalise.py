"""The contract's documented sample bodies, and the traps, through the normalisation layer."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime
from zoneinfo import ZoneInfo

import pytest

from sms_pipeline.provider import normalise
from sms_pipeline.provider.results import SendAccepted, SendAmbiguous, SendRefused

IST = ZoneInfo("Asia/Kolkata")

SEND_SUCCESS = b"""{"status":"success","mobile":"919999999999,919888888888","invalidMobile":"917",
 "transactionId":"6305583318236810379","statusCode":"200","reason":"success",
 "msgId":"","requestTime":"2026-07-17 00:20:09"}"""
SEND_ERROR = b"""{"status":"error","statusCode":"230","reason":"Template mismatch",
 "transactionId":"","mobile":"","invalidMobile":""}"""
OTP_SUCCESS = b"""{"status":"success","statusCode":"200","reason":"OTP sent","mobile":"919999999999",
 "transactionId":"0","createTime":"1700117933163","retryAfter":"30","type":"new"}"""
GETDLR = b"""{"response":{"api":"report","action":"status","status":"success","code":"200",
 "msg":"ok","totalRecords":"2","reports_dlrList":[
  {"msgId":"9308878062554710043","uuId":"6305583318236810379",
   "mobileNo":"919999999999","senderName":"SGCSMS","text":"Your order ...",
   "status":"DELIVRD","cause":"Delivered","errorCode":"000",
   "submitTime":"1700117933163","deliveryTime":"1700117941022"}]}}"""
BY_TRANSACTION = b"""{"response":{"status":"success","code":"200","reports_statusList":[
  {"msgId":"9308878062554710043","mobileNo":"919999999999","senderName":"SGCSMS",
   "status":{"Status":"DELIVERED","Cause":"Success"},
   "submitTime":"July 13, 2019 03:44:48","deliveryTime":"July 13, 2019 03:44:52"}]}}"""
SUMMARY = b"""{"response":{"status":"success","code":"200","reports_summaryList":[
  {"date":"2026-11-28","senderid":"SGCSMS","total":"1200","delivered":"1100",
   "failed":"60","pending":"40","units":"1450"}]}}"""
CAMPAIGN = b"""{"response":{"status":"success","campaignList":[{"campaign":{"uuId":"5718742519829975000",
  "status":"completed","total":"2500","timestamp":"1562974594713",
  "scheduledTimestamp":"1562974594713","lastupdatedTimestamp":"0"}}]}}"""


def _ms(value: int) -> datetime:
    return datetime.fromtimestamp(value // 1000, UTC).replace(microsecond=value % 1000 * 1000)


def test_send_success_sample():
    outcome = normalise.send_outcome(200, SEND_SUCCESS, IST)

    assert outcome == SendAccepted(
        transaction_id="6305583318236810379",
        accepted=("919999999999", "919888888888"),
        invalid=("917",),
        campaign_id=None,
        request_time=datetime(2026, 7, 16, 18, 50, 9, tzinfo=UTC),
        status_code="200",
    )


def test_send_answer_is_matched_to_the_request_whatever_the_number_format():
    body = (b'{"status":"success","statusCode":"200","transactionId":"6305583318236810379",'
            b'"mobile":"+91 99999 99999,09888888888,919000000000","invalidMobile":"+917"}')

    outcome = normalise.send_outcome(200, body, IST, ["917", "919888888888", "919999999999", "919777777777"])

    assert isinstance(outcome, SendAccepted)
    assert outcome.accepted == ("919999999999", "919888888888")
    assert outcome.invalid == ("917",)
    assert outcome.unlisted == ("919777777777",)  # in neither list: possibly sent
    assert outcome.unmatched == ("919000000000",)  # not ours: kept for the log


def test_send_error_sample():
    outcome = normalise.send_outcome(200, SEND_ERROR, IST)

    assert outcome == SendRefused("230", "Template mismatch")
    assert outcome.is_message_error


@pytest.mark.parametrize("code", ['"216"', "216"])
def test_status_code_as_string_or_number(code):
    body = f'{{"status":"error","statusCode":{code},"reason":"Invalid credentials"}}'.encode()

    outcome = normalise.send_outcome(200, body, IST)

    assert outcome == SendRefused("216", "Invalid credentials") and outcome.is_configuration_error


def test_envelope_code_as_number():
    ans = normalise.answer(200, b'{"response":{"status":"success","code":200,"reports_summaryList":[]}}')

    assert ans.ok and ans.code == "200"


def test_otp_sample_transaction_zero_is_absent():
    outcome = normalise.otp_outcome(200, OTP_SUCCESS)

    assert outcome == SendAccepted(transaction_id=None, accepted=("919999999999",), invalid=(),
                                   retry_after_s=30, create_time=_ms(1700117933163), status_code="200")


def test_getdlr_sample_keeps_ids_as_text():
    ans = normalise.answer(200, GETDLR)
    [row] = [normalise.dlr_row(item) for item in normalise.items(ans, normalise.DLR_LIST_KEY)]

    assert row.msg_id == "9308878062554710043"
    assert row.transaction_id == "6305583318236810379"
    assert (row.status, row.cause, row.error_code) == ("DELIVRD", "Delivered", "000")
    assert row.submit_time == _ms(1700117933163)
    assert row.delivery_time == _ms(1700117941022)
    assert normalise.count(ans.content, normalise.DLR_TOTAL_KEY) == 2


def test_getdlr_delivery_time_zero_means_not_yet():
    row = normalise.dlr_row({"msgId": "1", "deliveryTime": "0", "submitTime": "1700117933163"})

    assert row.delivery_time is None


def test_by_transaction_sample_nested_status_and_local_times():
    ans = normalise.answer(200, BY_TRANSACTION)
    [row] = normalise.txn_rows(normalise.items(ans, normalise.TXN_LIST_KEY), IST)

    assert row.msg_id == "9308878062554710043"
    assert (row.status, row.cause) == ("DELIVERED", "Success")
    assert row.submit_time == datetime(2019, 7, 12, 22, 14, 48, tzinfo=UTC)  # 03:44:48 in Kolkata
    assert row.delivery_time == datetime(2019, 7, 12, 22, 14, 52, tzinfo=UTC)


def test_by_transaction_times_use_the_configured_zone():
    item = {"msgId": "1", "status": {"Status": "DELIVERED", "Cause": "Success"},
            "submitTime": "July 13, 2019 03:44:48", "deliveryTime": ""}

    [row] = normalise.txn_rows([item], ZoneInfo("America/New_York"))

    assert row.submit_time == datetime(2019, 7, 13, 7, 44, 48, tzinfo=UTC)  # EDT, UTC-4
    assert row.delivery_time is None


def test_by_transaction_rows_sharing_a_time_text_each_read_it_alike(monkeypatch: pytest.MonkeyPatch):
    """An answer's times are parsed once per distinct text: repeated, distinct, sentinel and bad texts
    each come out as they would alone."""
    parsed: list[str] = []
    parse_human = normalise.parse_human
    monkeypatch.setattr(normalise, "parse_human", lambda text, tz: parsed.append(text) or parse_human(text, tz))

    def item(n: int, submit: str, delivered: str) -> dict[str, object]:
        return {"msgId": str(n), "status": {"Status": "DELIVERED", "Cause": "Success"},
                "submitTime": submit, "deliveryTime": delivered}

    rows = normalise.txn_rows([item(1, "July 13, 2019 03:44:48", "July 13, 2019 03:44:50"),
                               item(2, "July 13, 2019 03:44:48", "0"),
                               item(3, "July 13, 2019 03:44:50", "July 13, 2019 03:44:48")], IST)

    at_48, at_50 = datetime(2019, 7, 12, 22, 14, 48, tzinfo=UTC), datetime(2019, 7, 12, 22, 14, 50, tzinfo=UTC)
    assert [(r.msg_id, r.submit_time, r.delivery_time) for r in rows] == [
        ("1", at_48, at_50), ("2", at_48, None), ("3", at_50, at_48)]
    assert sorted(parsed) == ["July 13, 2019 03:44:48", "July 13, 2019 03:44:50"]  # once each
    with pytest.raises(normalise.MalformedBody, match="Julio"):
        normalise.txn_rows([item(1, "July 13, 2019 03:44:48", "0"), item(2, "Julio 13, 2019 03:44:48", "0")], IST)


def test_summary_sample_units_as_int():
    ans = normalise.answer(200, SUMMARY)
    [row] = [normalise.summary_row(item) for item in normalise.items(ans, normalise.SUMMARY_LIST_KEY)]

    assert (row.day, row.sender_id, row.total, row.delivered, row.failed, row.pending, row.units) == (
        date(2026, 11, 28), "SGCSMS", 1200, 1100, 60, 40, 1450)


def test_campaign_sample_last_updated_zero_is_never():
    ans = normalise.answer(200, CAMPAIGN)
    [row] = [normalise.campaign_row(item) for item in normalise.items(ans, normalise.CAMPAIGN_LIST_KEY)]

    assert row.transaction_id == "5718742519829975000"
    assert (row.status, row.total) == ("completed", 2500)
    assert row.scheduled_for == _ms(1562974594713)
    assert row.last_updated is None


@pytest.mark.parametrize("raw", ["18446744073709551615", "00012345678901234567", "9308878062554710043"])
def test_ids_survive_unchanged_even_as_json_numbers(raw):
    quoted = json.dumps({"status": "success", "statusCode": "200", "transactionId": raw}).encode()
    bare = b'{"status":"success","statusCode":"200","transactionId":' + raw.lstrip("0").encode() + b"}"

    assert normalise.send_outcome(200, quoted, IST).transaction_id == raw
    assert normalise.send_outcome(200, bare, IST).transaction_id == raw.lstrip("0")


@pytest.mark.parametrize("sentinel", ["0", "", "null", "NULL", "-"])
def test_sentinel_transaction_ids_become_none(sentinel):
    body = json.dumps({"status": "success", "statusCode": "200", "transactionId": sentinel}).encode()

    assert normalise.send_outcome(200, body, IST).transaction_id is None


def test_http_429_and_body_429_are_the_same_answer():
    body = b'{"status":"error","statusCode":"429","reason":"Too many requests"}'

    by_status = normalise.send_outcome(429, b"<html>slow down</html>", IST)
    by_body = normalise.send_outcome(200, body, IST)

    assert isinstance(by_status, SendRefused) and by_status.is_rate_limited
    assert isinstance(by_body, SendRefused) and by_body.is_rate_limited
    assert normalise.report_verdict(429, b"")[0] == normalise.report_verdict(200, b'{"response":'
                                                                             b'{"status":"error","code":429}}')[0] == "retry"


@pytest.mark.parametrize(
    ("status", "body", "expected"),
    [
        (200, b"<html>gateway says hi</html>", SendAmbiguous),
        (200, b'["not", "an", "object"]', SendAmbiguous),
        (200, b'{"status":"maybe"}', SendAmbiguous),
        (500, b"", SendAmbiguous),
        (503, b'{"status":"success","statusCode":"200"}', SendAmbiguous),  # the status decides first
        (408, b"", SendAmbiguous),
    ],
)
def test_unparseable_or_5xx_answers_are_ambiguous(status, body, expected):
    assert isinstance(normalise.send_outcome(status, body, IST), expected)


def test_other_http_errors_are_configuration_refusals():
    outcome = normalise.send_outcome(404, b"Not Found", IST)

    assert isinstance(outcome, SendRefused) and outcome.code == "HTTP 404"
    assert outcome.is_configuration_error and not outcome.is_rate_limited


def test_report_verdicts():
    assert normalise.report_verdict(200, SUMMARY)[0] == "ok"
    assert normalise.report_verdict(502, b"")[0] == "retry"
    verdict, _, why = normalise.report_verdict(200, b'{"response":{"status":"error","code":"404","msg":"gone"}}')
    assert verdict == "error" and "404" in why
    assert normalise.report_verdict(200, b"not json")[0] == "error"
