"""The receiver over real HTTP on a real database: what it stores, refuses, counts and answers."""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, date, datetime
from urllib.parse import urlsplit

import httpx
import psycopg
import pytest

from sms_pipeline.receiver.app import MAX_BODY_BYTES
from tests.receiver.receiver_support import LONG_ID, NUMBER, PATH, SECRET, form, inbox, rejects


def counts(http: httpx.Client) -> dict[str, int]:
    return http.get("/healthz").json()["counts"]


def test_a_valid_push_is_stored_as_sent_and_answered_200(http, db):
    response = http.post(PATH, data=form())

    assert (response.status_code, response.text) == (200, "stored")
    # Times are provider-local (Kolkata, +05:30): the report day is the received time's local day.
    assert inbox(db) == [(LONG_ID, "000", "4412345678", NUMBER, datetime(2026, 11, 30, 18, 29, 58, tzinfo=UTC),
                          datetime(2026, 11, 30, 18, 30, 4, tzinfo=UTC), date(2026, 11, 30))]
    assert counts(http)["stored"] == 1


@pytest.mark.parametrize("txn_id", ["0", "", "null", None])
def test_an_otp_push_has_no_transaction(http, db, txn_id):
    assert http.post(PATH, data=form(txn_id=txn_id)).status_code == 200
    assert inbox(db)[0][2] is None


@pytest.mark.parametrize("delivered_time", ["", "0", "0000-00-00 00:00:00"])
def test_a_push_without_a_delivered_time_is_stored_without_one(http, db, delivered_time):
    assert http.post(PATH, data=form(delivered_time=delivered_time)).status_code == 200
    assert inbox(db)[0][5] is None


def test_ids_keep_leading_zeros_and_the_number_is_normalised(http, db):
    assert http.post(PATH, data=form(msg_id="000123", txn_id="0099", mobile="+91 98765-43210")).status_code == 200
    assert inbox(db)[0][:4] == ("000123", "000", "0099", NUMBER)


def test_a_repeated_push_is_answered_200_and_stored_once(http, db):
    first, second = http.post(PATH, data=form()), http.post(PATH, data=form())

    assert (first.status_code, first.text, second.status_code, second.text) == (200, "stored", 200, "duplicate")
    assert len(inbox(db)) == 1
    assert {k: v for k, v in counts(http).items() if v} == {"stored": 1, "duplicate": 1}


def test_the_same_message_with_another_code_is_a_second_push(http, db):
    assert http.post(PATH, data=form(error_code="000")).text == "stored"
    assert http.post(PATH, data=form(error_code="009")).text == "stored"
    assert [(row[0], row[1]) for row in inbox(db)] == [(LONG_ID, "000"), (LONG_ID, "009")]


def test_parameters_in_the_query_string_are_read_too(http, db):
    params = form()
    body = {"error_code": params.pop("error_code")}
    assert http.post(PATH, params=params, data=body).text == "stored"
    assert inbox(db)[0][:2] == (LONG_ID, "000")


def test_a_multipart_form_is_read_like_a_plain_one(http, db):
    response = http.post(PATH, files={name: (None, value) for name, value in form().items()})
    assert response.text == "stored"
    assert len(inbox(db)) == 1


@pytest.mark.parametrize("request_args,status", [
    (dict(method="POST", url="/dlr/not-the-secret-0123456789"), 403),
    (dict(method="POST", url=f"/dlr/{SECRET[:-1]}"), 403),
    (dict(method="POST", url=f"/dlr/{SECRET}x"), 403),
    (dict(method="POST", url="/dlr/"), 404),
    (dict(method="POST", url=f"/dlr/{SECRET}/more"), 404),
    (dict(method="POST", url=f"/dlr/{SECRET}/"), 404),  # not a redirect: its Location would repeat the secret
    (dict(method="POST", url=f"/{SECRET}"), 404),
    (dict(method="POST", url="/"), 404),
    (dict(method="GET", url=PATH), 405),
    (dict(method="PUT", url=PATH), 405),
])
def test_anything_but_a_post_to_the_secret_path_is_refused_and_nothing_stored(http, db, request_args, status):
    response = http.request(**request_args, data=form())

    assert response.status_code == status
    assert SECRET not in response.text and SECRET not in response.headers.get("location", "")
    assert inbox(db) == [] and rejects(db) == []
    assert counts(http)["forbidden"] == (1 if status == 403 else 0)


MALFORMED = {
    "a msgId with a letter": (form(msg_id="12a45"), "msg_id is not a message id (digits only)"),
    "a msgId in exponent notation": (form(msg_id="1.8446744073709552e+19"),
                                     "msg_id is not a message id (digits only)"),
    "a msgId of 0": (form(msg_id="0"), "msg_id is not a message id (digits only)"),
    "a negative transaction id": (form(txn_id="-44"), "txn_id is not a transaction id (digits only)"),
    "a missing msgId": (form(msg_id=None), "msg_id missing"),
    "a missing number": (form(mobile=None), "mobile missing"),
    "a missing error code": (form(error_code=None), "error_code missing"),
    "a missing received time": (form(received_time=None), "received_time missing"),
    "a number that is none": (form(mobile="98765"), "mobile is not a valid phone number"),
    "a number with letters": (form(mobile="9876S43210"), "mobile is not a valid phone number"),
    "an error code too long": (form(error_code="0" * 17), "error_code is not 1 to 16 letters or digits"),
    "an error code with a space": (form(error_code="00 1"), "error_code is not 1 to 16 letters or digits"),
    "an ISO time": (form(received_time="2026-11-30T23:59:58"), "received_time is not a time YYYY-MM-DD HH:MM:SS"),
    "a time with an offset": (form(received_time="2026-11-30 23:59:58+05:30"),
                              "received_time is not a time YYYY-MM-DD HH:MM:SS"),
    "a day that does not exist": (form(delivered_time="2026-02-30 10:00:00"),
                                  "delivered_time is not a valid date and time"),
    "delivered before received": (form(delivered_time="2026-11-30 23:59:57"),
                                  "delivered_time is before received_time"),
    "a year no zone can hold": (form(received_time="0001-01-01 00:00:00"),
                                "received_time is not a valid date and time"),
    "a NUL in an id": (form(msg_id="123\x00456"), "msg_id is not a message id (digits only)"),
    "a NUL in a parameter nobody reads": ({**form(msg_id="12a45"), "note": "a\x00b"},
                                          "msg_id is not a message id (digits only)"),
    "a number in groups under another name": ({**form(mobile=None), "phone": "98 76 54 32 10"}, "mobile missing"),
}


@pytest.mark.parametrize("case", MALFORMED)
def test_a_malformed_push_gets_400_and_is_kept_redacted_and_counted(http, db, case):
    data, reason = MALFORMED[case]

    response = http.post(PATH, data=data)

    assert (response.status_code, response.text) == (400, reason)
    assert inbox(db) == []
    ((stored_reason, fields),) = rejects(db)
    assert stored_reason == reason
    assert set(fields) == set(data)
    kept = json.dumps(fields)
    assert "9876543210" not in kept and "98765" not in kept and LONG_ID[:-2] not in kept
    if "mobile" in data:
        assert fields["mobile"].endswith(data["mobile"][-2:]) and "*" in fields["mobile"]
    assert fields.get("received_time") == data.get("received_time")  # times stay readable
    assert {k: v for k, v in counts(http).items() if v} == {"malformed": 1}


def test_a_parameter_given_twice_with_two_values_is_malformed(http, db):
    response = http.post(PATH, params={"msg_id": "111"}, data=form(msg_id="222"))

    assert (response.status_code, response.text) == (400, "msg_id given twice with different values")
    assert rejects(db)[0][1]["msg_id"] == ["111", "222"]
    # The same value twice is one value.
    assert http.post(PATH, params={"msg_id": "222"}, data=form(msg_id="222")).text == "stored"


def test_unknown_parameters_are_ignored_but_kept_masked_with_a_refused_push(http, db):
    assert http.post(PATH, data=form(operator="Airtel")).text == "stored"
    assert http.post(PATH, data=form(msg_id=None, note="call 919812345678")).status_code == 400
    assert rejects(db)[0][1]["note"] == "call **********78"


def test_a_body_too_large_gets_413_and_nothing_is_stored(http, db):
    response = http.post(PATH, data=form(padding="x" * MAX_BODY_BYTES))

    assert response.status_code == 413
    assert inbox(db) == [] and rejects(db) == []
    assert counts(http)["too_large"] == 1

    def chunks():  # no Content-Length: the limit holds on the bytes read
        yield b"msg_id=1&padding="
        for _ in range(MAX_BODY_BYTES // 1024 + 1):
            yield b"x" * 1024

    chunked = http.post(PATH, content=chunks(), headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert chunked.status_code == 413


def test_a_push_is_committed_before_its_answer(receiver, db_url):
    """The moment each answer arrives, another connection sees the row: nothing is acknowledged uncommitted."""

    def push_and_look(n: int) -> tuple[int, int]:
        with httpx.Client(base_url=receiver.base_url, timeout=10) as client, \
                psycopg.connect(db_url, autocommit=True) as look:
            status = client.post(PATH, data=form(msg_id=str(1000 + n))).status_code
            seen = look.execute("SELECT count(*) FROM dlr.receipt_push_inbox WHERE provider_message_id = %s",
                                (str(1000 + n),)).fetchone()[0]
            return status, seen

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(push_and_look, range(64)))

    assert results == [(200, 1)] * 64


def test_the_database_down_gets_503_and_the_receiver_recovers(http, db_url, pg_admin_url):
    assert http.post(PATH, data=form(msg_id="1")).text == "stored"
    name = urlsplit(db_url).path.lstrip("/")
    with psycopg.connect(pg_admin_url, autocommit=True) as admin:
        admin.execute(f'ALTER DATABASE "{name}" WITH ALLOW_CONNECTIONS false')
        admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", (name,))
        try:
            down = [http.post(PATH, data=form(msg_id=str(n))) for n in (2, 3)]
            malformed = http.post(PATH, data=form(msg_id="x"))
            health = http.get("/healthz")
        finally:
            admin.execute(f'ALTER DATABASE "{name}" WITH ALLOW_CONNECTIONS true')

    assert [r.status_code for r in down] == [503, 503]
    assert down[0].headers["retry-after"] == "5"
    assert malformed.status_code == 503  # a refused push is kept before it is answered: the provider tries again
    assert health.status_code == 200 and health.json()["counts"]["unavailable"] == 3
    # The pool reconnects by itself (backing off): the provider's retries are then stored.
    answer = None
    for _ in range(60):
        answer = http.post(PATH, data=form(msg_id="2"))
        if answer.status_code == 200:
            break
        time.sleep(0.5)
    assert answer is not None and answer.text == "stored"
    with psycopg.connect(db_url, autocommit=True) as conn:
        assert [row[0] for row in inbox(conn)] == ["1", "2"]


def test_health_shows_counts_and_the_wait_for_a_connection(http):
    for n in range(5):
        http.post(PATH, data=form(msg_id=str(n + 1)))
    http.post(PATH, data=form(msg_id="1"))

    health = http.get("/healthz").json()

    assert health["counts"] == {"stored": 5, "duplicate": 1, "malformed": 0, "forbidden": 0, "too_large": 0,
                                "unavailable": 0}
    waits = health["pool_wait"]
    assert waits["count"] == 6
    assert 0 <= waits["p50_ms"] <= waits["p95_ms"] <= waits["max_ms"] and waits["mean_ms"] <= waits["max_ms"]
    assert health["pool"]["size"] == 4


def test_a_push_the_tables_rules_refuse_is_malformed_too(http, db):
    """A valid Niue number has 7 digits, fewer than the inbox takes: refused as malformed, nothing breaks."""
    response = http.post(PATH, data=form(mobile="+683 7290"))

    assert response.status_code == 400
    assert response.text == "refused by the database (receipt_push_inbox_recipient_check)"
    assert inbox(db) == []
    assert rejects(db)[0][1]["mobile"] == "+*** **90"
    assert http.post(PATH, data=form()).text == "stored"  # and the receiver goes on
