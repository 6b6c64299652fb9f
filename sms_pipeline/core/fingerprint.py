"""The keyed fingerprint of a message text: HMAC-SHA256 of its normal form.

Both sides of correlation compute it: the worker over the text it sends
(an OTP's template with the code filled in), the report loads over the
report's ``Message``. The normal form is Unicode NFC, then surrounding
whitespace removed (``str.strip``): the provider may recompose accents or
trim a trailing line break, and neither changes what the person read.
Keyed, because a 6-digit OTP text has only a million values: an unkeyed hash
gives the codes away to anyone who reads the table.
"""

from __future__ import annotations

import hashlib
import hmac
import unicodedata

FINGERPRINT_BYTES = 32
# Bump when the normal form or the construction changes: stored fingerprints
# of another version (or key) are then recomputed (see key_id).
VERSION = 1


def normal_form(text: str) -> str:
    """``text`` as fingerprinted: NFC, without surrounding whitespace."""
    return unicodedata.normalize("NFC", text).strip()


def text_fingerprint(key: bytes, text: str | None) -> bytes | None:
    """The 32-byte HMAC-SHA256 of ``text``'s normal form under ``key``.

    None for a missing or blank text: a report without the text is no
    evidence, and must not exclude every candidate as a different text.
    """
    normal = normal_form(text or "")
    if not normal:
        return None
    return hmac.new(key, normal.encode("utf-8"), hashlib.sha256).digest()


def key_id(key: bytes) -> str:
    """A public name for (``key``, ``VERSION``): equal ids mean equal fingerprints; the key is not recoverable."""
    return f"v{VERSION}:" + hmac.new(key, b"sms-pipeline text fingerprint key id", hashlib.sha256).hexdigest()[:16]
