"""HMAC keys: a configured secret, else a random key kept in ``SMS_PIPELINE_HOME``.

Two keys are read this way: the OTP codes' (``SMS_PIPELINE_OTP_HMAC_KEY``,
file ``otp_hmac.key``) and the message texts' (``SMS_PIPELINE_TEXT_HMAC_KEY``,
file ``text_hmac.key``). The file is made once (mode 0600), so every process
on one machine uses the same key. A key file is only good for one machine:
the text key is therefore required when the database is external
(``SMS_PIPELINE_DATABASE_URL``), since a worker and Dagster on different
hosts must fingerprint alike (checked by the settings).
"""

from __future__ import annotations

import os
import secrets
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

from pydantic import SecretStr

from sms_pipeline.errors import SettingsError

MIN_KEY_BYTES = 16


@dataclass(frozen=True)
class KeySource:
    variable: str  # the setting that configures the key
    file_name: str  # the file in SMS_PIPELINE_HOME that holds it otherwise


OTP_KEY = KeySource("SMS_PIPELINE_OTP_HMAC_KEY", "otp_hmac.key")
TEXT_KEY = KeySource("SMS_PIPELINE_TEXT_HMAC_KEY", "text_hmac.key")


def load_key(source: KeySource, configured: SecretStr | None, home: Path) -> bytes:
    """``configured`` (the value of ``source.variable``), else the key kept in ``home`` (made on first use)."""
    if configured is not None:
        key = configured.get_secret_value().encode("utf-8")
        if len(key) < MIN_KEY_BYTES:
            raise SettingsError(f"{source.variable} is too short: use at least {MIN_KEY_BYTES} bytes "
                                "of random text (e.g. python -c 'import secrets; print(secrets.token_hex(32))')")
        return key
    return _key_from_file(home / source.file_name)


def text_key(settings: object) -> bytes:
    """The key of the message-text fingerprints (``SMS_PIPELINE_TEXT_HMAC_KEY``) for ``settings``."""
    return load_key(TEXT_KEY, settings.text_hmac_key, settings.home)  # type: ignore[attr-defined]


def _key_from_file(path: Path) -> bytes:
    if not path.exists():
        _create_key_file(path)
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise SettingsError(f"{path} is readable by other users (mode {mode:04o}): run chmod 600 {path}")
    key = path.read_text(encoding="utf-8").strip().encode("utf-8")
    if len(key) < MIN_KEY_BYTES:
        raise SettingsError(f"{path} holds no usable key (shorter than {MIN_KEY_BYTES} bytes)")
    return key


def _create_key_file(path: Path) -> None:
    """Write a new random key, mode 0600; a concurrent creator's key wins if it came first.

    The key is written to a private temporary file and linked into place, so
    no process ever reads a half-written key, and ``link`` fails rather than
    replace a key another process made meanwhile.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)  # mode 0600
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(secrets.token_hex(32) + "\n")
            out.flush()
            os.fsync(out.fileno())
        try:
            os.link(temporary, path)
        except FileExistsError:
            pass
    finally:
        os.unlink(temporary)
