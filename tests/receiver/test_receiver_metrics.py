"""The receiver's ``GET /metrics``: its answers to pushes by outcome, over real HTTP on a real database."""

from __future__ import annotations

from tests.receiver.receiver_support import LONG_ID, NUMBER, PATH, form, inbox
from tests.support.metrics import assert_fixed_labels, samples, scrape, value


def test_metrics_count_the_pushes_by_outcome_and_agree_with_the_inbox(receiver, http, db):
    assert http.post(PATH, data=form()).text == "stored"
    assert http.post(PATH, data=form(msg_id="7001", error_code="009")).text == "stored"
    assert http.post(PATH, data=form()).text == "duplicate"
    assert http.post(PATH, data=form(mobile="not a number")).status_code == 400
    assert http.post("/dlr/another-secret-0123456789", data=form()).status_code == 403

    text = scrape(receiver.base_url + "/metrics")

    found = samples(text)
    pushes = {outcome: value(found, "sms_pipeline_receiver_pushes_total", outcome=outcome)
              for outcome in ("stored", "duplicate", "malformed", "forbidden", "too_large", "unavailable")}
    assert pushes == {"stored": 2, "duplicate": 1, "malformed": 1, "forbidden": 1, "too_large": 0,
                      "unavailable": 0}
    assert pushes["stored"] == len(inbox(db))
    assert_fixed_labels(text)
    # Nothing of a push reaches the metrics: no number, no id, no secret.
    assert NUMBER not in text and LONG_ID not in text and "7001" not in text and PATH.split("/")[-1] not in text
