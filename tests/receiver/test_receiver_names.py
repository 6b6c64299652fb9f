"""The push's parameter names come from the settings (the provider's portal lets the customer choose them)."""

from __future__ import annotations

import pytest

from tests.receiver.receiver_support import LONG_ID, NUMBER, SECRET, form, inbox

NAMES = {"txn_id": "uuid", "msg_id": "msgId", "mobile": "to", "error_code": "err", "received_time": "submitted",
         "delivered_time": "done"}


@pytest.fixture
def receiver_variables() -> dict[str, str]:
    return {f"SMS_PIPELINE_WEBHOOK_PARAM_{field.upper()}": name for field, name in NAMES.items()}


def test_pushes_are_read_by_the_configured_names(http, db):
    renamed = {NAMES[field]: value for field, value in form().items()}

    assert http.post(f"/dlr/{SECRET}", data=renamed).text == "stored"
    assert inbox(db)[0][:4] == (LONG_ID, "000", "4412345678", NUMBER)


def test_the_default_names_are_then_unknown_parameters(http, db):
    refused = http.post(f"/dlr/{SECRET}", data=form())

    assert (refused.status_code, refused.text) == (400, "msgId missing")
    assert inbox(db) == []


def test_the_recipient_is_masked_under_its_configured_name(http, db):
    renamed = {NAMES[field]: value for field, value in form(msg_id="x").items()}

    assert http.post(f"/dlr/{SECRET}", data=renamed).status_code == 400
    (fields,) = db.execute("SELECT fields FROM dlr.receipt_push_rejects").fetchone()
    assert fields["to"] == "**********10"
