"""The text fingerprint's normal form and key (docs/design.md#text-fingerprint)."""

from __future__ import annotations

import stat

from pydantic import SecretStr

from sms_pipeline import hmac_keys
from sms_pipeline.core.fingerprint import key_id, normal_form, text_fingerprint
from sms_pipeline.otp import codes

KEY = b"unit-test-text-key-0123456789"


def test_the_normal_form_is_nfc_without_surrounding_whitespace():
    decomposed = "Caf\u0065\u0301 code 123456"  # e + combining acute
    assert normal_form(f" \t{decomposed}\r\n") == "Caf\u00e9 code 123456"
    assert text_fingerprint(KEY, f"{decomposed}\n") == text_fingerprint(KEY, "Caf\u00e9 code 123456")
    assert text_fingerprint(KEY, "code  123456") != text_fingerprint(KEY, "code 123456")  # inside: unchanged


def test_a_fingerprint_is_keyed_and_a_blank_text_has_none():
    assert len(text_fingerprint(KEY, "Your code is 123456")) == 32
    assert text_fingerprint(KEY, "Your code is 123456") != text_fingerprint(KEY + b"x", "Your code is 123456")
    assert text_fingerprint(KEY, "  \n") is None and text_fingerprint(KEY, None) is None


def test_the_key_id_names_the_key_without_giving_it_away():
    assert key_id(KEY) == key_id(KEY) != key_id(KEY + b"x")
    assert key_id(KEY).startswith("v1:") and KEY.hex() not in key_id(KEY)


def test_without_a_configured_key_each_home_keeps_its_own_text_key_apart_from_the_otp_key(tmp_path):
    home = tmp_path / "home"
    text_key = hmac_keys.load_key(hmac_keys.TEXT_KEY, None, home)
    assert hmac_keys.load_key(hmac_keys.TEXT_KEY, None, home) == text_key  # made once, then read
    assert text_key != codes.hmac_key(None, home)
    assert stat.S_IMODE((home / "text_hmac.key").stat().st_mode) == 0o600
    assert hmac_keys.load_key(hmac_keys.TEXT_KEY, None, tmp_path / "other") != text_key
    assert hmac_keys.load_key(hmac_keys.TEXT_KEY, SecretStr("configured-text-key-0123"), home) == \
        b"configured-text-key-0123"
