"""Day-report archives built by hand: the parser's edge cases."""

from __future__ import annotations

import hashlib
import zipfile
from datetime import date
from pathlib import Path

import pytest

from sms_pipeline.provider import DayReportError
from sms_pipeline.provider.dayfile import verify

DAY = date(2026, 3, 5)
HEADER = ("Message Id,Transaction Id,Mobile No,Sender Name,Message,Msg Type,Submit Time,Delivery Time,"
          "Status,Cause,Error Code,Units")
ROW = ("18446744073709551615,0630558331823681037,919999999999,SGCSMS,hello,text,2026-03-05 10:00:00,"
       "2026-03-05 10:00:07,DELIVRD,Delivered,000,1")


def _archive(tmp_path: Path, text: str | bytes, *, bom: bool = True, member: str | None = None) -> Path:
    data = text.encode("utf-8") if isinstance(text, str) else text
    path = tmp_path / "report.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(member or f"dlr_report_{DAY.isoformat()}.csv", (b"\xef\xbb\xbf" if bom else b"") + data)
    return path


def _verify(path: Path):
    return verify(path, DAY, hashlib.sha256(path.read_bytes()).hexdigest())


def test_bom_crlf_and_quoted_fields(tmp_path):
    message = 'Dear "Asha", your order, no. 7,\r\nships today\nline three'
    quoted = '"' + message.replace('"', '""') + '"'
    row = ROW.replace(",hello,", f",{quoted},")
    report = _verify(_archive(tmp_path, f"{HEADER}\r\n{row}\r\n{ROW}\r\n"))

    rows = list(report.rows())
    assert report.row_count == 2
    assert rows[0]["message"] == message
    assert rows[0]["msg_id"] == "18446744073709551615"  # above 2**63, as text
    assert rows[0]["transaction_id"] == "0630558331823681037"  # leading zero kept
    assert rows[1]["message"] == "hello"
    assert set(rows[0]) == {"msg_id", "transaction_id", "mobile", "sender", "message", "msg_type", "submit_time",
                            "delivery_time", "status", "cause", "error_code", "units"}
    assert all(isinstance(v, str) for r in rows for v in r.values())


def test_without_bom_and_with_lf_only(tmp_path):
    report = _verify(_archive(tmp_path, f"{HEADER}\n{ROW}\n", bom=False))

    assert [r["units"] for r in report.rows()] == ["1"]


def test_header_names_match_regardless_of_spacing_and_case(tmp_path):
    header = HEADER.replace("Message Id", "message  id").replace("Units", " UNITS ")
    report = _verify(_archive(tmp_path, f"{header}\r\n{ROW}\r\n"))

    assert next(report.rows())["msg_id"] == "18446744073709551615"


def test_extra_column_is_ignored_and_reported(tmp_path):
    report = _verify(_archive(tmp_path, f"{HEADER},Circle\r\n{ROW},Mumbai\r\n"))

    assert report.ignored_columns == ("Circle",)
    assert "Mumbai" not in next(report.rows()).values()


def test_extra_trailing_field_without_header_is_ignored_and_counted(tmp_path):
    report = _verify(_archive(tmp_path, f"{HEADER}\r\n{ROW},\r\n{ROW}\r\n"))

    assert report.rows_with_extra_fields == 1
    assert [r["units"] for r in report.rows()] == ["1", "1"]


def test_missing_required_column_is_a_clear_error(tmp_path):
    header = HEADER.replace(",Status", "")
    row = ROW.replace(",DELIVRD", "")

    with pytest.raises(DayReportError, match=r"2026-03-05: missing required column\(s\): Status"):
        _verify(_archive(tmp_path, f"{header}\r\n{row}\r\n"))


def test_empty_day_has_only_the_header(tmp_path):
    report = _verify(_archive(tmp_path, f"{HEADER}\r\n"))

    assert report.row_count == 0
    assert list(report.rows()) == []


def test_no_header_at_all_is_an_error(tmp_path):
    with pytest.raises(DayReportError, match="no header"):
        _verify(_archive(tmp_path, "", bom=False))


def test_short_row_is_an_error_naming_its_line_when_the_rows_are_read(tmp_path):
    report = _verify(_archive(tmp_path, f"{HEADER}\r\n{ROW}\r\n919999999999,short\r\n"))  # verify reads no row

    with pytest.raises(DayReportError, match="line 3"):
        report.row_count
    with pytest.raises(DayReportError, match="line 3"):
        list(report.rows())


def test_unexpected_member_name_is_an_error(tmp_path):
    with pytest.raises(DayReportError, match="expected one member dlr_report_2026-03-05.csv"):
        _verify(_archive(tmp_path, f"{HEADER}\r\n", member="dlr_report_2026-03-06.csv"))


def test_invalid_utf8_is_an_error(tmp_path):
    with pytest.raises(DayReportError, match="UTF-8"):
        _verify(_archive(tmp_path, HEADER.encode() + b"\r\n" + ROW.encode().replace(b"hello", b"h\xffllo"))).row_count


def test_corrupt_archive_is_an_error(tmp_path):
    path = _archive(tmp_path, f"{HEADER}\r\n" + f"{ROW}\r\n" * 200)
    data = bytearray(path.read_bytes())
    middle = len(data) // 3
    data[middle:middle + 8] = bytes(b ^ 0xFF for b in data[middle:middle + 8])
    path.write_bytes(bytes(data))

    with pytest.raises(DayReportError, match="2026-03-05"):
        _verify(path)


def test_truncated_archive_is_an_error(tmp_path):
    path = _archive(tmp_path, f"{HEADER}\r\n{ROW}\r\n")
    path.write_bytes(path.read_bytes()[:-30])

    with pytest.raises(DayReportError, match="corrupt or truncated"):
        _verify(path)


def test_not_a_zip_is_an_error(tmp_path):
    path = tmp_path / "report.zip"
    path.write_bytes(b'{"response":{"status":"error","code":"500"}}')

    with pytest.raises(DayReportError, match="not a zip"):
        _verify(path)
