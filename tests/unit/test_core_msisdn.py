import pytest

from sms_pipeline.core.msisdn import InvalidRecipient, normalise


@pytest.mark.parametrize(
    "raw",
    [
        "+91 98765 43210",
        "+919876543210",
        "919876543210",
        "09876543210",
        "9876543210",
        "98765-43210",
        "0091 98765 43210",
        "+91 (98765) 43210",
        "  98765.43210 ",
    ],
)
def test_forms_of_one_indian_number_agree(raw: str) -> None:
    assert normalise(raw) == "919876543210"


@pytest.mark.parametrize(
    "raw, region, expected",
    [
        ("+44 7911 123456", "IN", "447911123456"),
        ("07911 123456", "GB", "447911123456"),
        ("447911123456", "IN", "447911123456"),  # country code without '+'
        ("16502530000", "IN", "16502530000"),  # invalid as Indian, valid as +1
        ("(650) 253-0000", "US", "16502530000"),
    ],
)
def test_other_regions(raw: str, region: str, expected: str) -> None:
    assert normalise(raw, default_region=region) == expected


@pytest.mark.parametrize(
    "raw",
    [
        "abc",
        "123",
        "+1 555",
        "",
        "   ",
        "+",
        "98765ABCDE",  # phonenumbers alone would read letters as keypad digits
        "9876543210 ext. 12",
        "+91 98765",
        "+999 1234567",
        "9876543210123",
        "0000000000",
        "+44 7700 900123",  # possible, but a reserved (fictional) range
    ],
)
def test_garbage_raises_naming_input(raw: str) -> None:
    with pytest.raises(InvalidRecipient) as err:
        normalise(raw)
    assert repr(raw) in str(err.value)


@pytest.mark.parametrize("raw", [None, 919876543210])
def test_non_strings_raise(raw: object) -> None:
    with pytest.raises(InvalidRecipient):
        normalise(raw)  # type: ignore[arg-type]
