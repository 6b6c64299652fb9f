import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sms_pipeline.core.segments import (
    GSM7_BASIC,
    GSM7_EXTENSION,
    EmptyBody,
    SegmentCount,
    count_segments,
    is_gsm7,
)

# Segment counts as the air counts them, one JSON object a line: text, encoding, units, segments, note.
VECTORS = Path(__file__).resolve().parents[1] / "data" / "segment_vectors.jsonl"


def _vectors() -> list:
    lines = [json.loads(line) for line in VECTORS.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [pytest.param(v, id=f"{n}-{v['note'] or v['encoding']}") for n, v in enumerate(lines)]


@pytest.mark.parametrize("vector", _vectors())
def test_segment_vector(vector: dict) -> None:
    expected = SegmentCount(vector["encoding"], vector["units"], vector["segments"])
    assert count_segments(vector["text"]) == expected


def test_gsm_tables() -> None:
    assert len(GSM7_BASIC) == 127  # 128 codes minus the escape
    assert GSM7_EXTENSION == set("\f^{}\\[]~|€")
    assert not GSM7_BASIC & GSM7_EXTENSION


@pytest.mark.parametrize(
    "text, expected",
    [
        ("a" * 153 * 2, SegmentCount("GSM7", 306, 2)),
        ("€" * 76 + "a", SegmentCount("GSM7", 153, 1)),
        ("a" * 152 + "[" + "a" * 7, SegmentCount("GSM7", 161, 2)),
        ("ы" * 67 * 3, SegmentCount("UCS2", 201, 3)),
        ("ы" * 66 + "😀" + "ы", SegmentCount("UCS2", 69, 1)),
    ],
)
def test_boundaries(text: str, expected: SegmentCount) -> None:
    assert count_segments(text) == expected


def test_empty_body_refused() -> None:
    with pytest.raises(EmptyBody):
        count_segments("")


# Mix GSM basic, extension and a few UCS-2-only characters (incl. non-BMP) so
# examples cross the interesting boundaries often.
_ALPHABET = st.sampled_from(sorted(GSM7_BASIC)[:20] + sorted(GSM7_EXTENSION) + ["ç", "`", "\t", "ы", "😀", "𝄞"])
_TEXTS = st.one_of(st.text(_ALPHABET, min_size=1, max_size=400), st.text(min_size=1, max_size=200))


@given(_TEXTS, st.one_of(_ALPHABET, st.characters()))
def test_segments_never_decrease_when_appending(text: str, char: str) -> None:
    assert count_segments(text + char).segments >= count_segments(text).segments


@given(_TEXTS)
def test_encoding_decided_by_whole_text(text: str) -> None:
    all_gsm = all(ch in GSM7_BASIC or ch in GSM7_EXTENSION for ch in text)
    result = count_segments(text)
    assert (result.encoding == "GSM7") is all_gsm is is_gsm7(text)


@given(_TEXTS)
def test_units_and_capacity(text: str) -> None:
    result = count_segments(text)
    if result.encoding == "GSM7":
        assert result.units == len(text) + sum(ch in GSM7_EXTENSION for ch in text)
        single, multi = 160, 153
    else:
        assert result.units == len(text.encode("utf-16-le", "surrogatepass")) // 2
        single, multi = 70, 67
    if result.units <= single:
        assert result.segments == 1
    else:
        # Never fewer than a perfect packing; at most one unit lost per boundary.
        assert -(-result.units // multi) <= result.segments <= -(-result.units // (multi - 1))
