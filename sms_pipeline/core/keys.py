"""The business key: should this message exist at all?"""

from __future__ import annotations

import hashlib

from sms_pipeline.core.msisdn import normalise

# A present part always starts with a digit, so this can never equal one.
_ABSENT = b"-"


def _encode(part: str) -> bytes:
    data = part.encode("utf-8")
    return b"%d:" % len(data) + data


def business_key(
    tenant_id: str,
    event_type: str,
    event_id: str,
    recipient: str,
    template_id: str | None = None,
    *,
    default_region: str = "IN",
) -> str:
    """Hex SHA-256 of the length-prefixed parts; stable across processes.

    Length prefixes keep ("a|b", "c") and ("a", "b|c") apart, and a missing
    template is encoded differently from an empty one. The recipient is
    normalised first, so any written form of one number gives one key.
    """
    return business_key_of_normalised(tenant_id, event_type, event_id, normalise(recipient, default_region),
                                      template_id)


def business_key_of_normalised(
    tenant_id: str, event_type: str, event_id: str, recipient_e164: str, template_id: str | None = None
) -> str:
    """:func:`business_key` for a recipient already through ``msisdn.normalise``.

    Intake has normalised the number once already; phonenumbers is the
    costliest step of intake, so it should not run twice per line.
    """
    # Channel is not a part: resending one event over another channel must hit
    # the idempotency guard; a deliberate second send needs a new event id.
    parts = {"tenant_id": tenant_id, "event_type": event_type, "event_id": event_id}
    for name, value in parts.items():
        if not isinstance(value, str) or not value:
            raise ValueError(f"{name} must be a non-empty string, got {value!r}")
    if template_id is not None and not isinstance(template_id, str):
        raise ValueError(f"template_id must be a string or None, got {template_id!r}")
    digest = hashlib.sha256()
    for part in (tenant_id, event_type, event_id, recipient_e164):
        digest.update(_encode(part))
    digest.update(_ABSENT if template_id is None else _encode(template_id))
    return digest.hexdigest()
