"""What an erased recipient leaves behind: a tombstone, a marker, and the forms its number was stored in.

The tombstone is HMAC-SHA256 of the number's E.164 digits under the text key
(``SMS_PIPELINE_TEXT_HMAC_KEY``), with a label of its own so it never equals
the fingerprint of a text that happens to be the number. Whoever holds the
key can test a guess against it, nobody can read it. The marker that stands
where the number was is derived from it: ``erased:`` and 16 hex digits,
which no phone number can be, the same for every erasure of one number and
different for two numbers, so correlation by transaction + recipient still
tells two erased recipients apart (docs/design.md#redaction-and-erasure).
"""

from __future__ import annotations

import hashlib
import hmac

import phonenumbers

_LABEL = b"sms-pipeline erased recipient\x00"
MARKER_PREFIX = "erased:"


def tombstone(key: bytes, e164_digits: str) -> bytes:
    """The 32-byte tombstone of a normalised number (``core.msisdn.normalise``'s digits)."""
    return hmac.new(key, _LABEL + e164_digits.encode("ascii"), hashlib.sha256).digest()


def marker(tombstone_digest: bytes) -> str:
    """What stands in every number column where the erased number was."""
    return MARKER_PREFIX + tombstone_digest[:8].hex()


def stored_forms(e164_digits: str) -> list[str]:
    """The digit strings the number may be stored as: E.164, national, national with the trunk 0.

    Raw report columns keep the provider's text; compared after removing every non-digit
    (so ``+91 98765-43210`` matches too).
    """
    number = phonenumbers.parse("+" + e164_digits)
    national = phonenumbers.national_significant_number(number)
    return sorted({e164_digits, national, "0" + national})
