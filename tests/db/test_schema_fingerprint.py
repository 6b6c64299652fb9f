"""The guards on the text-fingerprint and evidence columns (V74, R__outbound_message_guards;
docs/design.md#text-fingerprint): each one fires."""

from __future__ import annotations

from datetime import date

import pytest
from psycopg import errors

from tests.support.rows import fetch, insert_message, update_message

GOOD = b"\x01" * 32
SHORT = b"\x01" * 31


def test_an_outbound_fingerprint_is_32_bytes_or_nothing(db):
    assert fetch(db, insert_message(db, message_fingerprint=GOOD), "message_fingerprint") == (GOOD,)
    assert fetch(db, insert_message(db), "message_fingerprint") == (None,)
    with pytest.raises(errors.CheckViolation, match="outbound_message_message_fingerprint_check"):
        insert_message(db, message_fingerprint=SHORT)


@pytest.mark.parametrize("evidence", ["msgid", "transaction", "fingerprint", "reconstruction"])
def test_each_evidence_is_allowed_on_a_matched_row(db, evidence):
    key = insert_message(db, correlation_result="matched", correlation_evidence=evidence)
    assert fetch(db, key, "correlation_evidence") == (evidence,)


@pytest.mark.parametrize(("result", "evidence"), [
    ("matched", "guess"), ("matched", "Fingerprint"), ("ambiguous", "fingerprint"), ("not_found", "msgid"),
    (None, "reconstruction"),
])
def test_other_evidence_or_evidence_on_an_unmatched_row_is_refused(db, result, evidence):
    with pytest.raises(errors.CheckViolation, match="outbound_message_correlation_evidence_check"):
        insert_message(db, correlation_result=result, correlation_evidence=evidence)


def test_a_matched_row_may_lack_evidence_but_an_unmatched_one_may_not_keep_it(db):
    key = insert_message(db, correlation_result="matched")
    with pytest.raises(errors.CheckViolation, match="outbound_message_correlation_evidence_check"):
        db.execute("UPDATE msg.outbound_message SET correlation_result = 'ambiguous', correlation_evidence = 'msgid' "
                   "WHERE id = %s AND created_at = %s", key)


def test_a_fingerprint_can_be_set_once_and_never_changed(db):
    key = insert_message(db)  # an OTP's: NULL until the worker knows the code
    update_message(db, key, message_fingerprint=GOOD)
    for value in (b"\x02" * 32, None):
        with pytest.raises(errors.CheckViolation, match="immutable once set") as refused:
            update_message(db, key, message_fingerprint=value)
        assert refused.value.diag.constraint_name == "outbound_message_fingerprint_immutable"
    update_message(db, key, message_fingerprint=GOOD)  # the same value again is no change
    assert fetch(db, key, "message_fingerprint") == (GOOD,)


def test_evidence_can_be_set_once_and_never_changed(db):
    key = insert_message(db, correlation_result="matched")
    update_message(db, key, correlation_evidence="reconstruction")
    for value in ("fingerprint", None):
        with pytest.raises(errors.CheckViolation, match="immutable once set") as refused:
            update_message(db, key, correlation_evidence=value)
        assert refused.value.diag.constraint_name == "outbound_message_evidence_immutable"
    update_message(db, key, correlation_evidence="reconstruction")
    assert fetch(db, key, "correlation_evidence") == ("reconstruction",)


def test_report_and_receipt_fingerprints_are_32_bytes(db):
    with pytest.raises(errors.CheckViolation, match="getdlr_rows_message_fingerprint_check"):
        db.execute("INSERT INTO dlr.getdlr_rows (report_date, row_no, message_fingerprint) VALUES (%s, 1, %s)",
                   (date(2026, 11, 28), SHORT))
    receipt = """INSERT INTO dlr.delivery_receipts
                     (provider_message_id, status_word, raw_status, outcome, provider_submit_at, submit_month,
                      source, first_seen_at, message_fingerprint)
                 VALUES (%s, 'DELIVRD', 'DELIVRD', 'delivered', now(), dlr.submit_month(now()), 'getdlr', now(), %s)"""
    db.execute(receipt, ("1", GOOD))
    with pytest.raises(errors.CheckViolation, match="delivery_receipts_message_fingerprint_check"):
        db.execute(receipt, ("2", SHORT))


def test_a_checkpoint_names_its_fingerprint_key_only_by_a_key_id(db):
    insert = ("INSERT INTO dlr.report_checkpoints (report_kind, report_date, checksum, rows, bytes, fetched_at, "
              "loaded_at, fingerprint_key_id) VALUES ('day', %s, 'c', 1, 1, now(), now(), %s)")
    db.execute(insert, (date(2026, 11, 27), "v1:0123456789abcdef"))
    with pytest.raises(errors.CheckViolation, match="report_checkpoints_fingerprint_key_id_check"):
        db.execute(insert, (date(2026, 11, 28), "text-fingerprint-tests-key-0123456789abcdef"))
