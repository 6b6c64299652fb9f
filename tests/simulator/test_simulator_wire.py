"""The simulator's wire format, checked with a plain HTTP client."""

from __future__ import annotations

import io
import json
import zipfile
from datetime import timedelta

import httpx
import pytest

AUTH = {"userid": "demo", "password": "demo"}
A, B = "919876543210", "918765432109"


def _send(http, **params):
    body = {**AUTH, "senderid": "SGCSMS", "sendMethod": "quick", "msgType": "text", "msg": "hello",
            "mobile": A, "output": "json", **params}
    return http.post("/send", data=body)


def test_send_answers_http_200_text_html_with_quoted_codes(http):
    response = _send(http, mobile=f"{A},{B},12")

    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    body = json.loads(response.text)  # plain JSON: numbers would show here as ints
    assert body["statusCode"] == "200" and body["status"] == "success"
    assert body["mobile"] == f"{A},{B}" and body["invalidMobile"] == "12"
    assert body["msgId"] == "" and body["transactionId"].isdigit()


def test_send_works_as_get_too(http, sim):
    response = http.get("/send", params={**AUTH, "senderid": "SGCSMS", "msg": "hi", "mobile": A})

    assert response.json()["status"] == "success"
    assert sim.state.ledger_size() == 1


@pytest.mark.parametrize(
    ("params", "code"),
    [
        ({"userid": "demo", "password": "wrong"}, "216"),
        ({"userid": "someone", "password": "demo"}, "216"),
        ({"userid": "demo"}, "216"),
        ({"password": "demo"}, "213"),
        ({**AUTH, "duplicatecheck": "yes"}, "147"),
        ({**AUTH, "testMessage": "TRUE"}, "147"),
    ],
)
def test_application_errors_are_http_200_with_a_code(http, sim, params, code):
    response = http.post("/send", data={"senderid": "SGCSMS", "msg": "hi", "mobile": A, **params})

    assert response.status_code == 200 and response.headers["content-type"].startswith("text/html")
    assert response.json()["status"] == "error" and response.json()["statusCode"] == code
    assert sim.state.ledger_size() == 0


def test_api_key_header(http):
    good = http.post("/send", data={"userid": "demo", "senderid": "SGCSMS", "msg": "hi", "mobile": A},
                     headers={"apiKey": "demo-key"})
    bad = http.post("/send", data={"userid": "demo", "senderid": "SGCSMS", "msg": "hi", "mobile": A},
                    headers={"apiKey": "other"})

    assert good.json()["status"] == "success"
    assert bad.json()["statusCode"] == "216"


def test_test_message_is_checked_but_not_billed(http, sim):
    assert _send(http, testMessage="true").json()["status"] == "success"
    assert sim.state.ledger_size() == 0


def test_otp_answers_transaction_zero_and_ms_create_time(http, sim):
    body = http.post("/otp", data={**AUTH, "sendMethod": "generate", "mobile": A, "senderid": "SGCSMS",
                                   "msgType": "text", "msg": "Code $otp$", "codeLength": "6"}).json()

    assert body["transactionId"] == "0" and body["retryAfter"] == "30" and body["type"] == "new"
    assert body["createTime"] == str(int(sim.clock.now().timestamp() * 1000))
    [entry] = sim.state.ledger_entries()
    assert entry.transaction_id == "0"


def test_both_spellings_of_the_status_report(http, sim):
    txn = _send(http, mobile=f"{A},{B}").json()["transactionId"]
    day = sim.clock.now().date().isoformat()

    plural = http.post("/reports/status", data={**AUTH, "uuid": txn, "fromdate": day, "todate": day}).json()
    singular = http.get("/report/status", params={**AUTH, "uuId": txn, "fromDate": day, "toDate": day}).json()

    assert plural == singular
    assert len(plural["response"]["reports_statusList"]) == 2
    assert set(plural["response"]["reports_statusList"][0]["status"]) == {"Status", "Cause"}


def test_getdlr_paging_and_total(http, sim):
    for i in range(3):
        _send(http, mobile=f"{A},{B}", msg=f"message {i}")
    day = sim.clock.now().date().isoformat()

    def page(number):
        return http.post("/report/status", data={**AUTH, "method": "getDlr", "fromdate": day, "todate": day,
                                                 "pageLimit": "4", "pageNo": str(number)}).json()["response"]

    first, second, third = page(1), page(2), page(3)
    assert first["totalRecords"] == second["totalRecords"] == "6"
    assert [len(p["reports_dlrList"]) for p in (first, second, third)] == [4, 2, 0]
    ids = [r["msgId"] for p in (first, second) for r in p["reports_dlrList"]]
    assert ids == [e.msg_id for e in sim.state.ledger_entries()]
    assert all(r["deliveryTime"] == "0" for p in (first, second) for r in p["reports_dlrList"])


def _day_zip(http, day):
    response = http.get("/report/day", params={**AUTH, "date": day})
    assert response.status_code == 200 and response.headers["content-type"] == "application/zip"
    archive = zipfile.ZipFile(io.BytesIO(response.content))
    assert archive.testzip() is None
    [name] = archive.namelist()
    return name, archive.read(name)


def test_day_zip_format(http, sim):
    _send(http, mobile=f"{A},{B}", msg='Hi "you", a,b\nnext line')
    http.post("/otp", data={**AUTH, "sendMethod": "generate", "mobile": A, "senderid": "SGCSMS",
                            "msg": "Code $otp$", "otp": "4321"})
    sim.clock.advance(timedelta(hours=1))
    day = "2025-06-10"

    name, data = _day_zip(http, day)

    assert name == "dlr_report_2025-06-10.csv"
    assert data.startswith(b"\xef\xbb\xbf")
    text = data[3:].decode("utf-8")
    lines = text.split("\r\n")
    assert lines[0] == ("Message Id,Transaction Id,Mobile No,Sender Name,Message,Msg Type,Submit Time,"
                        "Delivery Time,Status,Cause,Error Code,Units")
    assert text.endswith("\r\n") and "\r\n" not in text.replace("\r\n", "")  # CRLF only as line ends
    assert '"Hi ""you"", a,b\nnext line"' in text
    assert ",2025-06-10 10:00:00," in text  # provider-local submit time
    otp_line = next(line for line in lines if "Code 4321" in line)
    assert otp_line.split(",")[1] == "0"


def test_day_zip_for_a_day_without_traffic_is_header_only(http):
    _, data = _day_zip(http, "2025-06-01")

    assert data == ("\ufeffMessage Id,Transaction Id,Mobile No,Sender Name,Message,Msg Type,Submit Time,"
                    "Delivery Time,Status,Cause,Error Code,Units\r\n").encode()


@pytest.mark.parametrize(("day", "code"), [("2025-06-11", "400"), ("2025-03-11", "404"), ("10-06-2025", "400")])
def test_day_zip_refuses_future_old_and_malformed_dates(http, day, code):
    response = http.get("/report/day", params={**AUTH, "date": day})

    assert response.status_code == 200 and response.json()["response"]["code"] == code


def test_day_report_is_get_only(http):
    assert http.post("/report/day", data={**AUTH, "date": "2025-06-10"}).status_code == 405


def test_rate_limited_report_is_http_429_with_code(http, sim):
    sim.faults.update({"rate_limit_report": 1.0})

    response = http.post("/report/summary", data={**AUTH, "fromdate": "2025-06-10", "todate": "2025-06-10"})

    assert response.status_code == 429 and response.json()["response"]["code"] == "429"


def test_admin_ledger_json_and_csv(http, admin):
    txn = _send(http, mobile=f"{A},{B}").json()["transactionId"]
    _send(http, mobile=A, msg="other")

    everything = admin.get("/ledger").json()
    one = admin.get("/ledger", params={"transaction_id": txn}).json()
    csv_text = admin.get("/ledger", params={"format": "csv"}).text

    assert everything["count"] == 3 and everything["units"] == 3
    assert [e["mobile"] for e in one["entries"]] == [A, B]
    assert all(isinstance(e["msg_id"], str) and len(e["fingerprint"]) == 64 for e in everything["entries"])
    assert csv_text.splitlines()[0].startswith("transaction_id,msg_id,mobile,units")
    assert len(csv_text.splitlines()) == 4


def test_admin_clock_read_set_advance(admin, sim, start_time):
    assert admin.get("/clock").json()["now"] == start_time.isoformat()

    advanced = admin.post("/clock", json={"advance_s": 90}).json()
    moved = admin.post("/clock", json={"set": (start_time + timedelta(hours=2)).isoformat()}).json()
    back = admin.post("/clock", json={"set": start_time.isoformat()})
    ahead = admin.post("/clock", json={"advance_s": 10 * 365 * 86400})

    assert advanced["now"] == (start_time + timedelta(seconds=90)).isoformat()
    assert moved["provider_local"] == "2025-06-10 12:00:00"
    assert back.status_code == 400 and ahead.status_code == 400  # never backwards, never past real time
    assert sim.clock.now() == start_time + timedelta(hours=2)


def test_admin_faults_and_reset(http, admin, sim):
    assert admin.post("/faults", json={"http_5xx": 1.0, "summary_units_offset": -3}).status_code == 200
    assert _send(http).status_code in (500, 502, 503)
    snapshot = admin.get("/faults").json()
    assert snapshot["rates"]["http_5xx"] == 1.0 and snapshot["summary_units_offset"] == -3
    assert snapshot["fired"]["http_5xx"] == 1

    assert admin.post("/faults", json={"bogus": 1}).status_code == 400
    assert admin.post("/faults", json={"stall": 2}).status_code == 400
    admin.post("/faults", json={"clear": True})
    assert _send(http).json()["status"] == "success"

    admin.post("/reset")
    assert sim.state.ledger_size() == 0


def test_admin_refuse_connection_takes_effect_before_the_answer(http, admin):
    _send(http)  # a kept-alive connection exists
    admin.post("/faults", json={"refuse_connection": 1.0})

    with pytest.raises(httpx.ConnectError):
        _send(http)
    admin.post("/faults", json={"refuse_connection": 0.0})
    assert _send(http).json()["status"] == "success"


def test_admin_credits(http, admin):
    admin.post("/credits", json={"credits": 1})

    assert _send(http).json()["status"] == "success"
    assert _send(http).json()["statusCode"] == "301"
    assert admin.get("/credits").json() == {"credits": 0}
