"""Recipient numbers to E.164 digits (no '+'), via ``phonenumbers``."""

from __future__ import annotations

import re

import phonenumbers

# Digits with common separators and an optional leading '+'. Anything else is
# refused up front: phonenumbers would turn letters into keypad digits.
_ALLOWED = re.compile(r"\+?[0-9 ().\-]+")


class InvalidRecipient(ValueError):
    """A recipient that is not a valid phone number."""


class NotMobile(InvalidRecipient):
    """A valid phone number that cannot receive an SMS: a landline, a toll-free or premium number..."""


# Number types an SMS can reach. FIXED_LINE_OR_MOBILE is where a numbering plan
# does not tell them apart (the US, Canada): such a number is given the benefit.
_MOBILE_TYPES = frozenset({phonenumbers.PhoneNumberType.MOBILE, phonenumbers.PhoneNumberType.FIXED_LINE_OR_MOBILE})


def _parse_valid(text: str, region: str | None) -> phonenumbers.PhoneNumber | None:
    try:
        number = phonenumbers.parse(text, region)
    except phonenumbers.NumberParseException:
        return None
    if phonenumbers.is_possible_number(number) and phonenumbers.is_valid_number(number):
        return number
    return None


def normalise_mobile(raw: str, default_region: str = "IN") -> str:
    """:func:`normalise`, refusing (:class:`NotMobile`) a valid number that is not a mobile's."""
    digits = normalise(raw, default_region)
    if phonenumbers.number_type(phonenumbers.parse("+" + digits)) not in _MOBILE_TYPES:
        # The number stays out of the message: callers may log it.
        raise NotMobile("not a mobile number (a landline or a special service number)")
    return digits


def normalise(raw: str, default_region: str = "IN") -> str:
    """Return the E.164 digits of ``raw`` without the '+', e.g. ``"919876543210"``.

    Rule for input without '+':

    1. parse it as dialled in ``default_region``; this covers national forms
       ("09876543210", "98765-43210"), the region's international prefix
       ("0091 ...") and the country code written without '+'
       ("919876543210"), which phonenumbers strips when the rest is valid;
    2. only if that gives no valid number, parse it with '+' prepended, so
       e.g. "16502530000" is read as a US number.

    The first valid interpretation wins, so a valid national reading is never
    overridden. Input with '+' is parsed as international only.
    """
    if not isinstance(raw, str):
        raise InvalidRecipient(f"recipient must be a string, got {type(raw).__name__}: {raw!r}")
    text = raw.strip()
    number = None
    if _ALLOWED.fullmatch(text) and any(ch.isdigit() for ch in text):
        if text.startswith("+"):
            number = _parse_valid(text, None)
        else:
            number = _parse_valid(text, default_region) or _parse_valid("+" + text, None)
    if number is None:
        raise InvalidRecipient(f"not a valid phone number (default region {default_region}): {raw!r}")
    return phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.E164)[1:]
