import hashlib
import re

import pytest

from sms_pipeline.core.keys import business_key
from sms_pipeline.core.msisdn import InvalidRecipient

BASE = ("tenant-a", "order.shipped", "8841", "+91 98765 43210")


def test_stable_hex_sha256() -> None:
    key = business_key(*BASE)
    assert re.fullmatch(r"[0-9a-f]{64}", key)
    assert key == business_key(*BASE)
    # Pinned encoding: a change would break idempotency for rows already stored.
    expected = hashlib.sha256(b"8:tenant-a" b"13:order.shipped" b"4:8841" b"12:919876543210" b"-").hexdigest()
    assert key == expected == "9c3fcc8d8063540801f882937657bffd5345d1348c3c6745edddf90d38b1eaa8"


def test_template_is_length_prefixed_utf8() -> None:
    expected = hashlib.sha256(b"1:t1:e1:112:919876543210" + b"%d:" % len("₹".encode()) + "₹".encode()).hexdigest()
    assert business_key("t", "e", "1", "9876543210", "₹") == expected


def test_tenant_sensitive() -> None:
    assert business_key(*BASE) != business_key("tenant-b", *BASE[1:])


@pytest.mark.parametrize("form", ["919876543210", "09876543210", "98765-43210", "0091 98765 43210"])
def test_recipient_form_insensitive(form: str) -> None:
    assert business_key(*BASE[:3], form) == business_key(*BASE)


def test_parts_cannot_shift_into_each_other() -> None:
    recipient = BASE[3]
    assert business_key("a|b", "c", "1", recipient) != business_key("a", "b|c", "1", recipient)
    assert business_key("a", "bc", "1", recipient) != business_key("ab", "c", "1", recipient)
    assert business_key("t", "e", "1", recipient, "x") != business_key("t", "e", "1x", recipient)


def test_template_none_differs_from_empty_and_values() -> None:
    keys = {business_key(*BASE, None), business_key(*BASE, ""), business_key(*BASE, "-"), business_key(*BASE, "T1")}
    assert len(keys) == 4


def test_invalid_recipient_raises() -> None:
    with pytest.raises(InvalidRecipient):
        business_key(*BASE[:3], "not a number")


@pytest.mark.parametrize("bad", ["", None, 42])
def test_required_parts_must_be_non_empty_strings(bad: object) -> None:
    with pytest.raises(ValueError, match="event_id"):
        business_key("t", "e", bad, BASE[3])  # type: ignore[arg-type]


def test_key_of_a_normalised_recipient_equals_the_key_of_any_written_form():
    from sms_pipeline.core.keys import business_key, business_key_of_normalised

    assert business_key_of_normalised("t", "e", "1", "919876543210", "tpl") == business_key(
        "t", "e", "1", "+91 98765 43210", "tpl")
