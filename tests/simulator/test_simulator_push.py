"""The simulator's receipt push (docs/provider-contract.md#dlr-push-webhook), over real HTTP both ways.

A small HTTP server in the test stands for our receiver: it records every
push and can answer 500, answer too late, or be stopped. The virtual clock
starts days in the past (tests/simulator/conftest.py: reproducible), so it
can be moved past every receipt's final time.
"""

from __future__ import annotations

import csv
import io
import threading
import time
import zipfile
from collections import Counter
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, NamedTuple
from urllib.parse import parse_qsl

import httpx
import pytest

from sms_pipeline.core.clock import VirtualClock
from sms_pipeline.simulator import run_simulator
from tests.support.provider import REPRODUCIBLE_SEED, REPRODUCIBLE_START

AUTH = {"userid": "demo", "password": "demo"}
DAY = "2025-06-10"  # the provider-local day of REPRODUCIBLE_START
ALL_FINAL_S = 4 * 86_400  # past the longest receipt delay (72 h)
FIELDS = ("txn_id", "msg_id", "mobile", "error_code", "received_time", "delivered_time")


class Seen(NamedTuple):
    at: float  # monotonic time the push reached the receiver
    fields: dict[str, str]
    status: int  # what the receiver answered
    path: str
    content_type: str


class Receiver:
    """A real HTTP server that records form pushes; it answers ``status`` after ``delay_s``, or is stopped."""

    def __init__(self) -> None:
        self.seen: list[Seen] = []
        self.status = 200
        self.delay_s = 0.0
        self.port = 0
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/dlr/s3cret"

    def start(self) -> None:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (the standard library's name)
                body = self.rfile.read(int(self.headers.get("content-length", "0"))).decode()
                status, delay = receiver.status, receiver.delay_s
                if delay:
                    time.sleep(delay)
                with receiver._lock:
                    receiver.seen.append(Seen(time.monotonic(), dict(parse_qsl(body, keep_blank_values=True)),
                                              status, self.path, self.headers.get("content-type", "")))
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def acknowledged(self) -> list[dict[str, str]]:
        with self._lock:
            return [s.fields for s in self.seen if 200 <= s.status < 300]

    def all_seen(self) -> list[Seen]:
        with self._lock:
            return list(self.seen)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    server = Receiver()
    yield server
    server.stop()


# ----- helpers -----------------------------------------------------------------


def _register(http: httpx.Client, url: str, rate: int | None = 1000) -> dict[str, Any]:
    data = {**AUTH, "smswebhook": url}
    if rate is not None:
        data["smswebhookrate"] = str(rate)
    return http.post("/webhook/create", data=data).json()["response"]


def _send(http: httpx.Client, count: int, first: int = 0) -> dict[str, Any]:
    mobiles = ",".join(f"9198{first + n:08d}" for n in range(count))
    answer = http.post("/send", data={**AUTH, "senderid": "SGCSMS", "msgType": "text", "msg": "hello",
                                      "mobile": mobiles, "output": "json"}).json()
    assert answer["status"] == "success", answer
    return answer


def _otp(http: httpx.Client, mobile: str) -> dict[str, Any]:
    answer = http.post("/otp", data={**AUTH, "sendMethod": "generate", "mobile": mobile, "senderid": "SGCSMS",
                                     "msg": "code $otp$", "codeExpiry": "60"}).json()
    assert answer["status"] == "success", answer
    return answer


def _advance(admin: httpx.Client, seconds: float) -> None:
    response = admin.post("/clock", json={"advance_s": seconds})
    assert response.status_code == 200, response.text


def _pushes(admin: httpx.Client) -> dict[str, Any]:
    return admin.get("/pushes").json()


def _wait(admin: httpx.Client, condition: Callable[[dict[str, Any]], bool], timeout_s: float = 30) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while True:
        snapshot = _pushes(admin)
        if condition(snapshot):
            return snapshot
        assert time.monotonic() < deadline, f"pushes never got there: {snapshot}"
        time.sleep(0.05)


def _caught_up(admin: httpx.Client, timeout_s: float = 30) -> dict[str, Any]:
    return _wait(admin, lambda s: s["caught_up"], timeout_s)


def _day_rows(http: httpx.Client, day: str = DAY) -> dict[str, dict[str, str]]:
    """The simulator's own day report, by msgId."""
    response = http.get("/report/day", params={**AUTH, "date": day})
    assert response.headers["content-type"] == "application/zip"
    with zipfile.ZipFile(io.BytesIO(response.content)) as archive:
        text = archive.read(archive.namelist()[0]).decode("utf-8-sig")
    return {row["Message Id"]: row for row in csv.DictReader(io.StringIO(text))}


def _code_table(http: httpx.Client) -> dict[str, str]:
    answer = http.get("/info/deliverycodes", params=AUTH).json()["response"]
    assert answer["status"] == "success"
    return {entry["code"]: entry["status"] for entry in answer["deliveryCodes"]}


def _registered_rows(http: httpx.Client, unregistered_txn: str) -> dict[str, dict[str, str]]:
    return {msg_id: row for msg_id, row in _day_rows(http).items() if row["Transaction Id"] != unregistered_txn}


def _final(rows: dict[str, dict[str, str]]) -> dict[str, dict[str, str]]:
    return {msg_id: row for msg_id, row in rows.items() if row["Delivery Time"]}


# ----- registration --------------------------------------------------------------


def test_webhook_registration_read_update_delete(http, receiver):
    def read() -> dict[str, Any]:
        return http.get("/webhook/read", params=AUTH).json()["response"]

    assert read()["status"] == "error" and read()["code"] == "404"
    created = _register(http, receiver.url, rate=None)
    assert created["status"] == "success" and created["code"] == "200"
    assert read()["smswebhook"] == receiver.url and read()["smswebhookrate"] == "10"  # the default rate

    again = _register(http, "https://example.org/other", rate=5)
    assert again["status"] == "error" and again["code"] == "409"
    assert read()["smswebhook"] == receiver.url

    updated = http.post("/webhook/update", data={**AUTH, "smswebhookrate": "25"}).json()["response"]
    assert updated["status"] == "success" and read()["smswebhookrate"] == "25"
    http.post("/webhook/update", data={**AUTH, "smswebhook": "https://example.org/hook"})
    assert (read()["smswebhook"], read()["smswebhookrate"]) == ("https://example.org/hook", "25")
    assert http.post("/webhook/update", data=AUTH).json()["response"]["code"] == "400"

    assert http.post("/webhook/delete", data=AUTH).json()["response"]["status"] == "success"
    assert read()["code"] == "404"
    assert http.post("/webhook/delete", data=AUTH).json()["response"]["code"] == "404"
    assert http.post("/webhook/update", data={**AUTH, "smswebhookrate": "5"}).json()["response"]["code"] == "404"


@pytest.mark.parametrize(("url", "rate"), [
    ("ftp://example.org/hook", "10"),
    ("example.org/hook", "10"),
    ("https://", "10"),
    ("https://example.org/a b", "10"),
    ("", "10"),
    ("https://example.org/hook", "0"),
    ("https://example.org/hook", "-3"),
    ("https://example.org/hook", "fast"),
    ("https://example.org/hook", "2.5"),
])
def test_registration_refuses_a_bad_url_or_rate(http, url, rate):
    answer = http.post("/webhook/create", data={**AUTH, "smswebhook": url, "smswebhookrate": rate}).json()

    assert answer["response"]["status"] == "error" and answer["response"]["code"] == "400"
    assert http.get("/webhook/read", params=AUTH).json()["response"]["code"] == "404"


def test_registration_needs_credentials(http, receiver):
    answer = http.post("/webhook/create", data={"userid": "demo", "password": "wrong", "smswebhook": receiver.url})

    assert answer.json()["response"]["code"] == "216"
    assert http.get("/webhook/read", params=AUTH).json()["response"]["code"] == "404"


# ----- what is pushed ---------------------------------------------------------------


def test_every_final_receipt_is_pushed_once_with_the_day_reports_word(http, admin, receiver):
    admin.post("/faults", json={"unmapped_status": 0.3})  # the reports' odd words: the codes must follow them
    unregistered = _send(http, 5, first=900)["transactionId"]  # billed before the registration: never pushed
    _register(http, receiver.url)
    answers = [_send(http, 150), _send(http, 50, first=150)]
    _otp(http, "919812345678")
    table = _code_table(http)

    _advance(admin, 60)  # some receipts final, some still intermediate
    _caught_up(admin)
    rows = _registered_rows(http, unregistered)
    pushed = {fields["msg_id"]: fields for fields in receiver.acknowledged()}
    assert set(pushed) == set(_final(rows))
    assert any(row["Status"] in ("ACCEPTD", "ENROUTE") for row in rows.values())  # shown, never pushed

    _advance(admin, ALL_FINAL_S)
    snapshot = _caught_up(admin)
    rows = _registered_rows(http, unregistered)
    seen = receiver.acknowledged()
    pushed = {fields["msg_id"]: fields for fields in seen}
    assert len(seen) == len(pushed)  # no duplicates without the fault
    final = _final(rows)
    assert set(pushed) == set(final) and len(final) < len(rows)  # never-final messages: no push
    assert snapshot["acknowledged"] == len(pushed) and snapshot["queued"] == 0 and snapshot["outstanding"] == 0
    assert {row["Transaction Id"] for row in final.values()} >= {a["transactionId"] for a in answers} | {"0"}
    for msg_id, fields in pushed.items():
        row = final[msg_id]
        assert set(fields) == set(FIELDS)
        assert table[fields["error_code"]] == row["Status"].strip().upper()  # the report's word, from the table
        assert fields["error_code"] == row["Error Code"]
        assert (fields["txn_id"], fields["mobile"]) == (row["Transaction Id"], row["Mobile No"])
        assert (fields["received_time"], fields["delivered_time"]) == (row["Submit Time"], row["Delivery Time"])
    codes = Counter(fields["error_code"] for fields in seen)
    assert codes["000"] > 0 and set(codes) - {"000"}, codes  # failures too, each with a delivered time
    assert {"006", "007"} & set(codes)  # the unmapped_status words have codes of their own


def test_code_table_covers_each_final_status_once(http):
    table = _code_table(http)

    assert table["000"] == "DELIVRD"
    assert set(table.values()) >= {"DELIVRD", "UNDELIV", "EXPIRED", "REJECTD"}
    assert list(table.values()).count("UNDELIV") == 3  # one code per failure cause
    assert not set(table.values()) & {"ACCEPTD", "ENROUTE", "SUBMITTED"}


def test_pushes_go_out_in_receipt_order_at_the_registered_rate(http, admin, receiver):
    rate, count = 20, 40
    _register(http, receiver.url, rate=rate)
    _send(http, count)

    _advance(admin, ALL_FINAL_S)
    snapshot = _caught_up(admin)

    seen = receiver.all_seen()
    assert len(seen) == snapshot["acknowledged"] >= 30
    assert all(s.content_type == "application/x-www-form-urlencoded" for s in seen)
    assert {s.path for s in seen} == {"/dlr/s3cret"}
    delivered = [s.fields["delivered_time"] for s in seen]
    assert delivered == sorted(delivered)
    span = seen[-1].at - seen[0].at
    assert span >= 0.8 * (len(seen) - 1) / rate, span  # never faster than the rate (generous bound)


def test_parameter_names_can_be_changed(http, admin, receiver):
    assert admin.post("/pushes", json={"param_names": {"msg_id": "MessageId", "error_code": "err"}}).status_code == 200
    assert admin.post("/pushes", json={"param_names": {"status": "x"}}).status_code == 400
    assert admin.post("/pushes", json={"param_names": {"mobile": "txn_id"}}).status_code == 400
    assert admin.post("/pushes", json={"timeout_s": 0}).status_code == 400
    _register(http, receiver.url)
    _send(http, 10)

    _advance(admin, ALL_FINAL_S)
    _caught_up(admin)

    seen = receiver.acknowledged()
    assert seen and all(set(fields) == {"txn_id", "MessageId", "mobile", "err", "received_time", "delivered_time"}
                        for fields in seen)


# ----- faults -------------------------------------------------------------------------


def test_duplicate_and_unmapped_code_faults(http, admin, receiver):
    admin.post("/faults", json={"push_duplicate": 0.3, "push_unmapped_code": 0.2})
    _register(http, receiver.url)
    _send(http, 100)
    table = _code_table(http)

    _advance(admin, ALL_FINAL_S)
    snapshot = _caught_up(admin)

    seen = receiver.acknowledged()
    copies = Counter(fields["msg_id"] for fields in seen)
    twice = [msg_id for msg_id, n in copies.items() if n == 2]
    assert set(copies.values()) == {1, 2} and len(twice) == snapshot["duplicates_sent"]
    for msg_id in twice:
        first, second = (fields for fields in seen if fields["msg_id"] == msg_id)
        assert first == second
    unmapped = [fields for fields in seen if fields["error_code"] not in table]
    assert unmapped and {fields["error_code"] for fields in unmapped} == {"099"}
    assert len({f["msg_id"] for f in unmapped}) == snapshot["faults"]["push_unmapped_code"]
    rows = _day_rows(http)
    assert all(rows[f["msg_id"]]["Status"] in table.values() for f in unmapped)  # the report keeps the real word


def test_reorder_fault_sends_a_later_receipt_first(http, admin, receiver):
    admin.post("/faults", json={"push_reorder": 0.3})
    _register(http, receiver.url)
    _send(http, 100)

    _advance(admin, ALL_FINAL_S)
    snapshot = _caught_up(admin)

    seen = receiver.acknowledged()
    delivered = [fields["delivered_time"] for fields in seen]
    assert delivered != sorted(delivered)
    assert len({fields["msg_id"] for fields in seen}) == len(seen) == snapshot["acknowledged"]
    assert snapshot["faults"]["push_reorder"] > 0


def test_early_push_arrives_before_the_send_answer(http, admin, receiver):
    admin.post("/faults", json={"push_early": 1.0})
    _register(http, receiver.url)

    answer = _send(http, 20)
    answered_at = time.monotonic()
    _otp(http, "919812345678")
    otp_answered_at = time.monotonic()

    seen = receiver.all_seen()
    for_send = [s for s in seen if s.fields["txn_id"] == answer["transactionId"]]
    for_otp = [s for s in seen if s.fields["txn_id"] == "0"]
    assert len(for_send) >= 15 and all(s.at < answered_at for s in for_send)  # no clock move needed
    assert len(for_otp) == 1 and answered_at < for_otp[0].at < otp_answered_at
    assert all(s.fields["received_time"] == s.fields["delivered_time"] for s in seen)
    rows = _day_rows(http)  # the reports agree: final at once
    assert {s.fields["msg_id"] for s in seen} == set(_final(rows))
    assert all(rows[s.fields["msg_id"]]["Delivery Time"] == s.fields["delivered_time"] for s in seen)
    assert _pushes(admin)["faults"]["push_early"] == len(seen)


# ----- retries ---------------------------------------------------------------------------


@pytest.mark.parametrize("failure", ["http_500", "time_out", "stopped"])
def test_failed_pushes_are_retried_until_acknowledged(http, admin, receiver, failure):
    _register(http, receiver.url)
    if failure == "http_500":
        receiver.status = 500
    elif failure == "time_out":
        admin.post("/pushes", json={"timeout_s": 0.1})
        receiver.delay_s = 0.3
    else:
        receiver.stop()
    _send(http, 8)

    _advance(admin, ALL_FINAL_S)
    first = _wait(admin, lambda s: s["caught_up"] and s["due"] > 0 and s["retrying"] == s["due"])
    for _ in range(10):  # ten minutes down: every retry fails again
        _advance(admin, 60)
        _caught_up(admin)
    assert _pushes(admin)["acknowledged"] == 0

    receiver.status, receiver.delay_s = 200, 0.0
    if failure == "stopped":
        receiver.start()
    _advance(admin, 3600)
    done = _wait(admin, lambda s: s["caught_up"] and s["retrying"] == 0)

    assert done["acknowledged"] == first["due"] == done["due"] and done["dropped"] == 0
    assert done["failed_attempts"] >= 2 * first["due"]
    rows = _final(_day_rows(http))
    assert {fields["msg_id"] for fields in receiver.acknowledged()} == set(rows)


def test_a_push_is_dropped_after_24_hours_of_failures(http, admin, receiver):
    receiver.status = 500
    _register(http, receiver.url)
    _send(http, 3)

    _advance(admin, ALL_FINAL_S)
    snapshot = _wait(admin, lambda s: s["caught_up"] and s["due"] > 0)
    due = snapshot["due"]
    for _ in range(40):  # an hour at a time: one attempt per receipt per step once the backoff reaches 1 h
        if snapshot["retrying"] == 0:
            break
        _advance(admin, 3600)
        snapshot = _caught_up(admin)
    attempts = len(receiver.all_seen())
    _advance(admin, 7200)
    later = _caught_up(admin)

    assert snapshot["dropped"] == due and snapshot["acknowledged"] == 0 and snapshot["retrying"] == 0
    assert 20 * due <= attempts == snapshot["attempts"] <= 30 * due
    assert len(receiver.all_seen()) == attempts and later["dropped"] == due  # nothing after the drop


# ----- reset, deletion, the state file ---------------------------------------------------


def test_reset_and_delete_forget_the_queue(http, admin, receiver):
    _register(http, receiver.url)
    _send(http, 20)
    assert _pushes(admin)["queued"] > 0

    admin.post("/reset")
    assert http.get("/webhook/read", params=AUTH).json()["response"]["code"] == "404"
    assert _pushes(admin)["queued"] == 0

    _register(http, receiver.url)
    _send(http, 20, first=100)
    http.post("/webhook/delete", data=AUTH)
    _advance(admin, ALL_FINAL_S)
    time.sleep(0.3)
    assert receiver.all_seen() == [] and _pushes(admin)["queued"] == 0


def test_the_state_file_keeps_the_registration_and_the_receipts_still_to_come(tmp_path, receiver):
    path = tmp_path / "simulator.state"
    clock = VirtualClock(REPRODUCIBLE_START)

    def serve() -> Any:
        return run_simulator(clock=clock, seed=REPRODUCIBLE_SEED, state_file=path)

    with serve() as sim, httpx.Client(base_url=sim.base_url) as http, \
            httpx.Client(base_url=sim.admin_url) as admin:
        _register(http, receiver.url)
        _send(http, 60)
        _advance(admin, 20)
        _caught_up(admin)
    before = {fields["msg_id"] for fields in receiver.acknowledged()}

    with serve() as sim, httpx.Client(base_url=sim.base_url) as http, \
            httpx.Client(base_url=sim.admin_url) as admin:
        assert http.get("/webhook/read", params=AUTH).json()["response"]["smswebhook"] == receiver.url
        _advance(admin, ALL_FINAL_S)
        _caught_up(admin)
        rows = _final(_day_rows(http))
    after = [fields["msg_id"] for fields in receiver.acknowledged()][len(before):]

    assert before and after and not before & set(after)
    assert before | set(after) == set(rows)
