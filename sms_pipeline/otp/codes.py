"""OTP codes: made with ``secrets``, stored only as an HMAC-SHA256.

The key is ``SMS_PIPELINE_OTP_HMAC_KEY`` when set; otherwise a random key is
made once and kept in ``$SMS_PIPELINE_HOME/otp_hmac.key`` (mode 0600), so
every worker and every ``otp verify`` on this machine use the same key.
Without the key a leaked verification table cannot be brute-forced offline,
even over a 6-digit space.

The HMAC covers the tenant and the recipient as well as the code, so two
people who happen to get the same code do not get the same stored value.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from pathlib import Path

from pydantic import SecretStr

from sms_pipeline import hmac_keys

KEY_FILE_NAME = hmac_keys.OTP_KEY.file_name
# Letters that cannot be misread (no I, O) and digits without 0 and 1 beside
# them; every character is one GSM-7 septet, so segments counted on a
# placeholder of the same length are the segments billed.
ALPHABETS = {
    "num": "0123456789",
    "alpha": "ABCDEFGHJKLMNPQRSTUVWXYZ",
    "alphanum": "ABCDEFGHJKLMNPQRSTUVWXYZ23456789",
}


def new_code(length: int, code_type: str) -> str:
    """A fresh code of ``length`` characters of the ``code_type`` alphabet."""
    if length < 1:
        raise ValueError(f"code length must be positive, got {length}")
    try:
        alphabet = ALPHABETS[code_type]
    except KeyError:
        raise ValueError(f"code type must be one of {', '.join(ALPHABETS)}, got {code_type!r}") from None
    return "".join(secrets.choice(alphabet) for _ in range(length))


def normalise_entered(code: str) -> str:
    """What a person typed, as it was sent: surrounding blanks dropped, letters upper-case."""
    return code.strip().upper()


def _part(value: str) -> bytes:
    data = value.encode("utf-8")
    return b"%d:" % len(data) + data


def code_hmac(key: bytes, tenant_id: str, recipient: str, code: str) -> bytes:
    """The 32-byte value stored for ``code`` sent to ``recipient`` of ``tenant_id``."""
    message = _part(tenant_id) + _part(recipient) + _part(code)  # length-prefixed: no ambiguous joins
    return hmac.new(key, message, hashlib.sha256).digest()


def hmac_key(configured: SecretStr | None, home: Path) -> bytes:
    """``configured`` (``SMS_PIPELINE_OTP_HMAC_KEY``), else the key kept in ``home`` (made on first use)."""
    return hmac_keys.load_key(hmac_keys.OTP_KEY, configured, home)
