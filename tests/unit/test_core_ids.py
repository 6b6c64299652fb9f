import unicodedata
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sms_pipeline.core.ids import (
    SENTINELS,
    InvalidIdentifier,
    InvalidTimestamp,
    clean_epoch_ms,
    clean_id,
)


@pytest.mark.parametrize("value", [None, "", "0", "null", "NULL", "-", "  0 ", "\t\n", " - ", 0])
def test_sentinels_are_none(value: object) -> None:
    assert clean_id(value) is None
    assert clean_epoch_ms(value) is None


def test_sentinel_set_is_exactly_documented() -> None:
    assert SENTINELS == {"", "0", "null", "NULL", "-"}


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("18446744073709551615", "18446744073709551615"),  # 20 digits, above 2**64 - 1
        ("9308878062554710043", "9308878062554710043"),  # 19 digits, above 2**63
        ("09308878062554710043", "09308878062554710043"),  # leading zero kept
        ("  6305583318236810379 ", "6305583318236810379"),
        ("00", "00"),  # not a documented sentinel: kept as the opaque text it is
        ("abc-DEF_1", "abc-DEF_1"),
        (6305583318236810379, "6305583318236810379"),
    ],
)
def test_ids_are_kept_as_text(raw: object, expected: str) -> None:
    assert clean_id(raw) == expected


@pytest.mark.parametrize("raw", ["12 34", "12\t34", "12\x0034", "12\x7f34", "12\x0b34", "12\u200b34", "12\u00a034",
                                 True, 1.5, b"123", ["1"]])
def test_malformed_ids_raise(raw: object) -> None:
    with pytest.raises(InvalidIdentifier, match="provider id"):
        clean_id(raw)


@given(st.text(max_size=12) | st.text(alphabet=st.characters(max_codepoint=0x7F), max_size=12))
def test_ids_are_refused_exactly_for_inner_whitespace_or_control_characters(raw: str) -> None:
    """The ASCII shortcut agrees with the character-by-character rule on every text."""
    stripped = raw.strip()
    mangled = any(ch.isspace() or unicodedata.category(ch).startswith("C") for ch in stripped)
    if stripped in SENTINELS:
        assert clean_id(raw) is None
    elif mangled:
        with pytest.raises(InvalidIdentifier):
            clean_id(raw)
    else:
        assert clean_id(raw) == stripped


@given(st.text(alphabet="0123456789", min_size=1, max_size=30))
def test_digit_ids_never_lose_characters(digits: str) -> None:
    assert clean_id(digits) == (None if digits == "0" else digits)


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("1700117933163", datetime(2023, 11, 16, 6, 58, 53, 163000, tzinfo=UTC)),
        ("1", datetime(1970, 1, 1, 0, 0, 0, 1000, tzinfo=UTC)),
        (" 1562974594713 ", datetime(2019, 7, 12, 23, 36, 34, 713000, tzinfo=UTC)),
        (1700117941022, datetime(2023, 11, 16, 6, 59, 1, 22000, tzinfo=UTC)),
    ],
)
def test_epoch_ms_is_exact_utc(raw: object, expected: datetime) -> None:
    value = clean_epoch_ms(raw)
    assert value == expected
    assert value is not None and value.utcoffset() is not None


@given(st.integers(min_value=1, max_value=253_402_300_799_999))
def test_epoch_ms_round_trips_exactly(ms: int) -> None:
    value = clean_epoch_ms(str(ms))
    assert value is not None
    assert (value - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(milliseconds=1) == ms


@pytest.mark.parametrize(
    "raw", ["abc", "-5", "1.7e12", "1700117933163.0", "17001 17933163", "١٢٣", "99999999999999999999", True]
)
def test_malformed_epoch_raises_naming_value(raw: object) -> None:
    with pytest.raises(InvalidTimestamp) as err:
        clean_epoch_ms(raw)
    assert repr(raw) in str(err.value)
