"""Codes from ``secrets`` in the configured alphabet; the HMAC key from settings or a private file."""

from __future__ import annotations

import multiprocessing
import os
import stat
from pathlib import Path

import pytest

from sms_pipeline import settings as settings_module
from sms_pipeline.errors import SettingsError
from sms_pipeline.otp import codes
from sms_pipeline.send.otp import OtpPolicy


def _settings(home: Path, **env: str) -> settings_module.Settings:
    return settings_module.load({"SMS_PIPELINE_HOME": str(home), **env})


def _key(settings: settings_module.Settings) -> bytes:
    """The key for these settings, as the worker and ``otp verify`` look it up."""
    return codes.hmac_key(settings.otp_hmac_key, settings.home)


@pytest.mark.parametrize(("code_type", "allowed"), [
    ("num", set("0123456789")),
    ("alpha", set("ABCDEFGHJKLMNPQRSTUVWXYZ")),
    ("alphanum", set("ABCDEFGHJKLMNPQRSTUVWXYZ23456789")),
])
def test_codes_have_the_configured_length_and_alphabet_and_do_not_repeat(code_type, allowed):
    made = [codes.new_code(8, code_type) for _ in range(2_000)]

    assert {len(code) for code in made} == {8}
    assert set("".join(made)) == allowed  # every character of the alphabet turns up
    assert len(set(made)) > 1_990  # 2,000 draws from >= 10^8 codes: repeats are rare


def test_unknown_code_types_and_lengths_are_refused():
    with pytest.raises(ValueError, match="code type"):
        codes.new_code(6, "hex")
    with pytest.raises(ValueError, match="positive"):
        codes.new_code(0, "num")


def test_the_hmac_is_keyed_and_bound_to_tenant_and_recipient():
    key = b"k" * 32
    base = codes.code_hmac(key, "tenant-a", "919800000001", "123456")

    assert len(base) == 32 and base == codes.code_hmac(key, "tenant-a", "919800000001", "123456")
    assert base != codes.code_hmac(b"j" * 32, "tenant-a", "919800000001", "123456")
    assert base != codes.code_hmac(key, "tenant-b", "919800000001", "123456")
    assert base != codes.code_hmac(key, "tenant-a", "919800000002", "123456")
    assert base != codes.code_hmac(key, "tenant-a", "919800000001", "123457")
    # Length prefixes: moving characters between parts changes the value.
    assert codes.code_hmac(key, "ab", "c", "1") != codes.code_hmac(key, "a", "bc", "1")


def test_entered_codes_are_compared_as_sent():
    assert codes.normalise_entered("  ab12cd \n") == "AB12CD"


def test_the_key_from_settings_is_used_and_must_not_be_short(tmp_path):
    configured = _settings(tmp_path, SMS_PIPELINE_OTP_HMAC_KEY="a-long-enough-secret-key-value")
    assert _key(configured) == b"a-long-enough-secret-key-value"
    assert not (tmp_path / codes.KEY_FILE_NAME).exists()

    with pytest.raises(SettingsError, match="too short") as refused:
        _key(_settings(tmp_path, SMS_PIPELINE_OTP_HMAC_KEY="tiny-key"))
    assert "tiny-key" not in str(refused.value)


def test_without_a_key_setting_one_is_made_once_private_and_kept(tmp_path):
    settings = _settings(tmp_path / "home")

    first = _key(settings)
    path = tmp_path / "home" / codes.KEY_FILE_NAME

    assert len(first) == 64 and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert _key(settings) == first
    assert [p.name for p in path.parent.iterdir()] == [codes.KEY_FILE_NAME]  # no temporary file left
    # The same key, given as the setting, means the same key.
    assert _key(_settings(tmp_path / "other", SMS_PIPELINE_OTP_HMAC_KEY=first.decode())) == first


def _key_in_new_process(home: str, queue) -> None:
    queue.put(_key(_settings(Path(home))))


def test_processes_starting_together_agree_on_one_key(tmp_path):
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    processes = [context.Process(target=_key_in_new_process, args=(str(tmp_path), queue)) for _ in range(6)]
    for process in processes:
        process.start()
    keys = {queue.get(timeout=30) for _ in processes}
    for process in processes:
        process.join(timeout=30)

    assert keys == {(tmp_path / codes.KEY_FILE_NAME).read_text().strip().encode()}


def test_a_key_file_other_users_can_read_is_refused(tmp_path):
    settings = _settings(tmp_path)
    _key(settings)
    os.chmod(tmp_path / codes.KEY_FILE_NAME, 0o644)

    with pytest.raises(SettingsError, match="chmod 600"):
        _key(settings)


@pytest.mark.parametrize(("change", "words"), [
    ({"expiry_s": 30}, "between 60 and 1800"),
    ({"expiry_s": 3600}, "between 60 and 1800"),
    ({"code_length": 3}, "at least 4"),
    ({"code_type": "hex"}, "CODE_TYPE"),
])
def test_an_otp_policy_outside_what_the_provider_and_security_allow_is_refused(change, words):
    options = dict(code_length=6, code_type="num", expiry_s=300, max_attempts=3, hmac_key=b"k" * 32)
    with pytest.raises(SettingsError, match=words):
        OtpPolicy(**{**options, **change})
