"""Day files built by hand, loaded through the COPY of their own bytes: what Python's csv read, exactly.

The oracle is the file as ``DayReport.rows()`` parses it (Python's csv, the
reading the loads always had), each time read with ``LocalTimeParser`` and
``consistent_done_time``, each text fingerprinted by ``core.fingerprint``.
"""

from __future__ import annotations

import hashlib
import logging
import unicodedata
import zipfile
from datetime import UTC, date, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from psycopg import sql

from sms_pipeline.core.clock import FrozenClock
from sms_pipeline.core.fingerprint import text_fingerprint
from sms_pipeline.core.ids import SENTINELS
from sms_pipeline.core.provider_time import InvalidLocalTime
from sms_pipeline.db import queries
from sms_pipeline.ingest import day_report
from sms_pipeline.ingest.day_report import DayLoadError, load_day_report
from sms_pipeline.ingest.times import LocalTimeParser, consistent_done_time
from sms_pipeline.orchestration.ingest_assets import day_report_metadata
from sms_pipeline.provider import DayReportError
from sms_pipeline.provider.dayfile import DayReport, verify
from tests.support.databases import plan_nodes
from tests.support.rows import snapshot
from tests.support.worker import TEXT_KEY

DAY = date(2026, 10, 25)  # the clocks go back in London: 01:00-02:00 happens twice
KOLKATA = ZoneInfo("Asia/Kolkata")
LONDON = ZoneInfo("Europe/London")
NOW = datetime(2026, 10, 27, 3, 0, tzinfo=UTC)
HEADER = "Message Id,Transaction Id,Mobile No,Sender Name,Message,Msg Type,Submit Time,Delivery Time,Status,Cause,Error Code,Units"
MOBILE = "919812345678"
STORED = ("msg_id, transaction_id, mobile, sender_name, msg_type, submit_time_local, delivery_time_local, status, "
          "cause, error_code, units, line_no, message_fingerprint, provider_submit_at, provider_done_at")


def _row(n: int, message: str = "hello", submit: str = "2026-10-25 10:00:00", done: str = "2026-10-25 10:00:07",
         *, mobile: str = MOBILE, extra: str = "") -> str:
    return f"{n},{9000 + n},{mobile},SGCSMS,{message},text,{submit},{done},DELIVRD,Delivered,000,1{extra}"


class FileSource:
    """A provider whose day report is the archive given, verified as the client verifies a download."""

    def __init__(self, path: Path, *, damage_after_verify: bool = False) -> None:
        self.path = path
        self._damage = damage_after_verify

    def day_report(self, day: date, dest_dir) -> DayReport:
        report = verify(self.path, day, hashlib.sha256(self.path.read_bytes()).hexdigest())
        if self._damage:  # one letter of the last text changed: only the CRC, checked at the stream's end, tells
            data = bytearray(self.path.read_bytes())
            data[data.rindex(b"hello")] ^= 0x01
            self.path.write_bytes(bytes(data))
        return report


def _archive(tmp_path: Path, csv: str | bytes, *, bom: bool = False, name: str = "day.zip") -> Path:
    data = csv.encode("utf-8") if isinstance(csv, str) else csv
    path = tmp_path / name
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as archive:  # stored: a changed byte only fails the CRC
        archive.writestr(f"dlr_report_{DAY.isoformat()}.csv", (b"\xef\xbb\xbf" if bom else b"") + data)
    return path


def _load(db, path: Path, tz: ZoneInfo = KOLKATA, **kwargs):
    return load_day_report(db, FileSource(path, **kwargs), DAY, tz, FrozenClock(NOW), text_key=TEXT_KEY)


def _stored(db) -> list[tuple]:
    return db.execute(f"SELECT {STORED} FROM dlr.day_report_rows WHERE report_date = %s ORDER BY line_no",
                      (DAY,)).fetchall()


def _instant(parser: LocalTimeParser, text: str) -> datetime | None:
    stripped = text.strip()
    if stripped in SENTINELS:
        return None
    try:
        return parser.parse(stripped)
    except InvalidLocalTime:
        return None


def _expected(path: Path, tz: ZoneInfo) -> list[tuple]:
    """What the Python load stored for this file."""
    parser = LocalTimeParser(tz)
    report = verify(path, DAY, "")
    rows = []
    for line_no, r in enumerate(report.rows(), start=1):
        submit_at, done_at = _instant(parser, r["submit_time"]), _instant(parser, r["delivery_time"])
        rows.append((r["msg_id"], r["transaction_id"], r["mobile"], r["sender"], r["msg_type"], r["submit_time"],
                     r["delivery_time"], r["status"], r["cause"], r["error_code"], r["units"], line_no,
                     text_fingerprint(TEXT_KEY, r["message"]), submit_at,
                     consistent_done_time(submit_at, done_at, tz)))
    return rows


def test_a_file_with_bom_crlf_and_quoted_fields_loads_what_python_read(db, tmp_path):
    quoted = '"Dear ""Asha"", your order, no. 7,\r\nships today\nline three"'
    lines = [HEADER, _row(1, quoted), _row(2, '""', submit="", done='""'), _row(3, done="soon"),
             _row(4, "hi", submit="0", done="null"), _row(5, "hi", submit=" 2026-10-25 10:00:00 ", done="-")]
    path = _archive(tmp_path, "\r\n".join(lines) + "\r\n", bom=True)

    load = _load(db, path)

    assert _stored(db) == _expected(path, KOLKATA)
    assert _stored(db)[0][:2] == ("1", "9001")  # the BOM went with the header
    assert (load.rows, load.unparsed_times) == (5, 4)  # "soon", and the sentinels (as the stats query counts)


def test_rows_longer_than_the_header_blank_lines_and_mixed_line_ends_are_tolerated(db, tmp_path):
    """Python's csv accepts them (the provider's files were always read so): staged again through it."""
    text = f"{HEADER}\r\n{_row(1, extra=',')}\r\n\r\n{_row(2)}\n{_row(3, extra=',x,y')}\r\n"
    path = _archive(tmp_path, text)

    load = _load(db, path)

    assert load.rows == 3 and verify(path, DAY, "").rows_with_extra_fields == 2
    assert _stored(db) == _expected(path, KOLKATA)
    assert load.checksum == hashlib.sha256(text.encode()).hexdigest()


def test_the_loaded_day_has_statistics_for_the_reconciliation_that_reads_it_next(db, tmp_path):
    """Analyzed in the load: a partition never analyzed is planned from its size with a default guess
    (7 rows of these 3,000; 2,540 of the bench's 1,010,099)."""
    lines = [HEADER, *(_row(n) for n in range(1, 3001))]
    _load(db, _archive(tmp_path, "\n".join(lines) + "\n"))

    plan = db.execute("EXPLAIN (FORMAT JSON) SELECT * FROM dlr.day_report_rows WHERE report_date = %s",
                      (DAY,)).fetchone()[0][0]["Plan"]
    assert plan["Plan Rows"] == 3000
    assert db.execute("SELECT count(*) FROM pg_stats WHERE schemaname = 'dlr' AND tablename = %s",
                      (f"day_report_rows_{DAY:%Y%m%d}",)).fetchone()[0] > 0


def test_an_unknown_column_is_staged_and_ignored(db, tmp_path):
    header = HEADER.replace("Msg Type", "Circle,Msg Type")
    row = _row(1).replace(",text,", ",Mumbai,text,")
    path = _archive(tmp_path, f"{header}\n{row}\n")

    load = _load(db, path)

    assert load.ignored_columns == ("Circle",)
    assert _stored(db) == _expected(path, KOLKATA)


def test_an_ambiguous_delivery_time_takes_the_reading_after_its_submit_time(db, tmp_path):
    rows = [_row(1, submit="2026-10-25 01:50:00", done="2026-10-25 01:10:00"),  # second 01:10 only
            _row(2, submit="2026-10-25 01:05:00", done="2026-10-25 01:10:00"),  # first 01:10
            _row(3, submit="2026-10-25 02:30:00", done="2026-10-25 01:10:00")]  # before either: kept as read
    path = _archive(tmp_path, "\n".join([HEADER, *rows]) + "\n")

    _load(db, path, LONDON)

    stored = _stored(db)
    assert stored == _expected(path, LONDON)
    assert [r[-1] for r in stored] == [datetime(2026, 10, 25, 1, 10, tzinfo=UTC),
                                       datetime(2026, 10, 25, 0, 10, tzinfo=UTC),
                                       datetime(2026, 10, 25, 0, 10, tzinfo=UTC)]


TRICKY_TEXTS = {
    "composed": "caf\u00e9 \u00e0 7",
    "decomposed": "cafe\u0301 a\u0300 7",
    "nbsp and ideographic space around": "\u00a0\u3000 code 123456 \u3000\u00a0",
    "separators around": "\x1c\x1d\x1e\x1f\x85\u2028\u2029 code 123456\u2007\u202f\u205f",
    "emoji": "\U0001f600 ok \U0001f44d\U0001f3fd",
    "blank": " \u3000\u00a0 ",
    "empty quoted": "",
    "quote and comma": 'say "yes", then "no"',
}


def test_message_fingerprints_equal_core_fingerprint_for_tricky_texts(db, tmp_path):
    quoted = ['"' + text.replace('"', '""') + '"' for text in TRICKY_TEXTS.values()]
    path = _archive(tmp_path, "\n".join([HEADER, *(_row(n, q) for n, q in enumerate(quoted, start=1))]) + "\n")

    _load(db, path)

    stored = dict(zip(TRICKY_TEXTS, (r[12] for r in _stored(db))))
    assert stored == {name: text_fingerprint(TEXT_KEY, text) for name, text in TRICKY_TEXTS.items()}
    assert stored["composed"] == stored["decomposed"] == text_fingerprint(
        TEXT_KEY, unicodedata.normalize("NFC", TRICKY_TEXTS["decomposed"]))
    assert stored["blank"] is None and stored["empty quoted"] is None
    assert stored["nbsp and ideographic space around"] == text_fingerprint(TEXT_KEY, "code 123456")


def test_the_checksum_is_the_sha256_of_the_csv_member_and_an_equal_one_writes_nothing(db, tmp_path):
    text = f"{HEADER}\r\n{_row(1)}\r\n{_row(2)}\r\n"
    first = _load(db, _archive(tmp_path, text, bom=True, name="a.zip"))
    member = b"\xef\xbb\xbf" + text.encode()
    assert first.checksum == hashlib.sha256(member).hexdigest()  # the value content_checksum stored
    assert db.execute("SELECT checksum FROM dlr.report_checkpoints WHERE report_date = %s",
                      (DAY,)).fetchone()[0] == first.checksum
    before = snapshot(db, "dlr.day_report_rows", "line_no")

    again = _load(db, _archive(tmp_path, text, bom=True, name="b.zip"))  # the same CSV zipped again

    assert again.skipped_same_checksum and again.checksum == first.checksum
    assert snapshot(db, "dlr.day_report_rows", "line_no") == before


def _strict_only(monkeypatch) -> None:
    """The rows may not be parsed in Python: the member's own bytes must be what COPY stages."""
    def refuse(self, raw):
        raise AssertionError("the rows were parsed in Python")

    monkeypatch.setattr(DayReport, "data_rows", refuse)


def test_a_plain_file_is_not_parsed_in_python(db, tmp_path, monkeypatch):
    _strict_only(monkeypatch)
    path = _archive(tmp_path, f"{HEADER}\r\n{_row(1)}\r\n")

    assert _load(db, path).rows == 1


def _previous_load(db, tmp_path) -> list[tuple]:
    _load(db, _archive(tmp_path, f"{HEADER}\n{_row(1)}\n{_row(2)}\n", name="good.zip"))
    return [snapshot(db, "dlr.day_report_rows", "line_no"), snapshot(db, "dlr.report_checkpoints", "report_date")]


def test_a_member_failing_its_crc_loads_nothing(db, tmp_path):
    before = _previous_load(db, tmp_path)
    path = _archive(tmp_path, f"{HEADER}\n{_row(1)}\n{_row(2)}\n{_row(3)}\n")

    with pytest.raises(DayReportError, match=r"2026-10-25: corrupt or truncated archive \(BadZipFile: Bad CRC-32"):
        _load(db, path, damage_after_verify=True)

    assert [snapshot(db, "dlr.day_report_rows", "line_no"),
            snapshot(db, "dlr.report_checkpoints", "report_date")] == before


@pytest.mark.parametrize(("blank_line_before", "problem"), [
    (False, "the row on line 4 has fewer fields than the header"),  # from the COPY error's CONTEXT
    (True, "row ending on line 5 has 4 fields, the header has 12"),  # the blank line: Python's csv reads it
], ids=["copy", "lenient"])
def test_a_short_row_names_its_line_and_nothing_of_its_content(db, tmp_path, blank_line_before, problem):
    before = _previous_load(db, tmp_path)
    short = "7,9007,919800000007,SGCSMS"
    lines = [HEADER, _row(1), *([""] if blank_line_before else []), _row(2), short, _row(3)]
    path = _archive(tmp_path, "\r\n".join(lines) + "\r\n")

    with pytest.raises(DayReportError, match=f"^day report 2026-10-25: {problem}$") as err:
        _load(db, path)

    assert "919800000007" not in str(err.value) and "SGCSMS" not in str(err.value)
    assert [snapshot(db, "dlr.day_report_rows", "line_no"),
            snapshot(db, "dlr.report_checkpoints", "report_date")] == before


def test_bytes_that_are_not_utf8_name_their_line_and_load_nothing(db, tmp_path):
    before = _previous_load(db, tmp_path)
    good = "".join(f"{_row(n)}\n" for n in range(1, 201))  # beyond what verify decodes to read the header
    data = f"{HEADER}\n{good}".encode() + _row(201, "h\xffllo").encode("latin-1") + b"\n"

    with pytest.raises(DayReportError, match="2026-10-25: line 202 is not valid UTF-8"):
        _load(db, _archive(tmp_path, data))

    assert [snapshot(db, "dlr.day_report_rows", "line_no"),
            snapshot(db, "dlr.report_checkpoints", "report_date")] == before


def test_a_nul_byte_is_refused_by_the_database_naming_its_line(db, tmp_path):
    before = _previous_load(db, tmp_path)
    data = "\n".join([HEADER, _row(1), _row(2, "he\x00llo")]) + "\n"

    with pytest.raises(DayLoadError, match=r"2026-10-25: load failed and was rolled back.*0x00, line 3 of the file\)$"):
        _load(db, _archive(tmp_path, data))

    assert [snapshot(db, "dlr.day_report_rows", "line_no"),
            snapshot(db, "dlr.report_checkpoints", "report_date")] == before


def test_a_long_message_loads_with_its_fingerprint(db, tmp_path):
    """Longer than a btree entry may be, and incompressible: the day still loads (the text is never indexed)."""
    long_text = "".join(chr(0x0900 + (n * 7919) % 0x7F) + str(n) for n in range(3000))
    path = _archive(tmp_path, "\n".join([HEADER, _row(1, long_text), _row(2)]) + "\n")

    load = _load(db, path)

    assert load.rows == 2
    assert _stored(db)[0][12] == text_fingerprint(TEXT_KEY, long_text)


def test_a_lone_carriage_return_in_a_file_staged_through_python_loads(db, tmp_path):
    """The lenient pass re-writes every value quoted, so a value holding a lone \\r reaches COPY intact."""
    old_mac = '"old\rmac"'
    text = f'{HEADER}\n{_row(1, old_mac)}\n\n{_row(2, extra=",x")}\n'
    path = _archive(tmp_path, text)

    load = _load(db, path)

    assert load.rows == 2
    assert _stored(db) == _expected(path, KOLKATA)


@pytest.mark.parametrize("chunk", [1, 2, 3, 7, day_report._CHUNK], ids=lambda size: f"chunk{size}")
def test_well_formed_quoted_fields_still_take_the_copy_of_the_file(db, tmp_path, monkeypatch, chunk):
    """Quotes only opening a field, doubled or closing one: Postgres reads them as Python's csv, at any chunking."""
    monkeypatch.setattr(day_report, "_CHUNK", chunk)
    header = '"Message Id",' + HEADER.split(",", 1)[1].replace("Units", '"Units"')
    lines = [header, _row(1, '"Dear ""Asha"", order, no. 7,\r\nships\nsoon"'), _row(2, '""""'),
             _row(3, '""', done='""'), '"4",' + _row(4).split(",", 1)[1], _row(5, '"a "","""" b"'),
             _row(6).rsplit(",", 1)[0] + ',"1"']
    path = _archive(tmp_path, "\r\n".join(lines) + "\r\n", bom=True)
    expected = _expected(path, KOLKATA)
    _strict_only(monkeypatch)

    load = _load(db, path)

    assert load.rows == 6
    assert _stored(db) == expected


@pytest.mark.parametrize("chunk", [1, 2, 3, day_report._CHUNK], ids=lambda size: f"chunk{size}")
def test_a_quote_inside_an_unquoted_field_is_kept_as_python_read_it(db, tmp_path, monkeypatch, chunk):
    """Postgres opens a quoted section at any quote: a stray one dropped its quotes or merged rows 2-4 into one."""
    monkeypatch.setattr(day_report, "_CHUNK", chunk)
    rows = [_row(1, 'He said "hi"'), _row(2, 'size 5" screen'), _row(3), _row(4, 'size 7" tab'), _row(5, '"ok"')]
    path = _archive(tmp_path, "\n".join([HEADER, *rows]) + "\n")

    load = _load(db, path)

    assert load.rows == 5
    assert _stored(db) == _expected(path, KOLKATA)
    assert _stored(db)[0][12] == text_fingerprint(TEXT_KEY, 'He said "hi"')


@pytest.mark.parametrize(("lines", "reason"), [
    ([HEADER, "\n", _row(1), "\n", _row(2, 'size 5" screen'), "\n"],
     "a quote Python's csv keeps as text or refuses"),
    ([HEADER, "\r\n", _row(1), "\n", _row(2, "size 7 tab"), "\n"],
     "Postgres' CSV parser refused its shape (unquoted newline found in data)"),
], ids=["stray-quote", "mixed-line-ends"])
def test_the_slower_path_is_shown_with_its_reason_and_nothing_of_the_row(db, tmp_path, caplog, lines, reason):
    """On-call reads why a day's load took Python's csv, in the asset's metadata and the log: the file's
    shape, never a value."""
    path = _archive(tmp_path, "".join(lines))

    with caplog.at_level(logging.INFO, logger=day_report.__name__):
        load = _load(db, path)

    assert day_report_metadata(db, load)["slower_path"] == reason
    (line,) = [r.getMessage() for r in caplog.records if "Python's csv" in r.getMessage()]
    assert line == f"day report 2026-10-25 staged through Python's csv, the slower path: {reason}"


def test_a_file_python_refuses_too_is_not_reported_as_staged(db, tmp_path, caplog):
    path = _archive(tmp_path, "\n".join([HEADER, _row(1, 'size 5" screen'), _row(2, '"ab"c')]) + "\n")

    with caplog.at_level(logging.INFO, logger=day_report.__name__), pytest.raises(DayReportError):
        _load(db, path)

    assert not [r for r in caplog.records if "Python's csv" in r.getMessage()]


def test_a_file_both_parsers_read_alike_logs_no_slower_path(db, tmp_path, caplog):
    path = _archive(tmp_path, "\n".join([HEADER, _row(1, '"ok, quoted"'), _row(2)]) + "\n")

    with caplog.at_level(logging.INFO, logger=day_report.__name__):
        load = _load(db, path)

    assert load.slower_path_reason is None
    assert not [r for r in caplog.records if "Python's csv" in r.getMessage()]


def test_a_closing_quote_followed_by_text_is_refused_as_python_refused_it(db, tmp_path):
    """Postgres would have stored "ab"c as abc; the loads' csv reading refuses it (strict)."""
    before = _previous_load(db, tmp_path)
    path = _archive(tmp_path, "\n".join([HEADER, _row(1), _row(2, '"ab"c'), _row(3)]) + "\n")

    with pytest.raises(DayReportError, match=r"^day report 2026-10-25: malformed CSV on line 3 "):
        _load(db, path)

    assert [snapshot(db, "dlr.day_report_rows", "line_no"),
            snapshot(db, "dlr.report_checkpoints", "report_date")] == before


@pytest.mark.parametrize("blank", ["\n", "\r\n", "\r\n\r\n"], ids=["lf", "crlf", "two"])
@pytest.mark.parametrize("bom", [False, True], ids=["", "bom"])
def test_a_blank_line_before_the_header_does_not_load_the_header_as_a_row(db, tmp_path, blank, bom):
    """HEADER true skips the first line only; Python's csv skipped the blank lines first."""
    text = blank + "\r\n".join([HEADER, _row(1), _row(2)]) + "\r\n"
    path = _archive(tmp_path, text, bom=bom)

    load = _load(db, path)

    assert load.rows == 2
    assert [r[0] for r in _stored(db)] == ["1", "2"]
    assert _stored(db) == _expected(path, KOLKATA)
    assert load.checksum == hashlib.sha256((b"\xef\xbb\xbf" if bom else b"") + text.encode()).hexdigest()


@pytest.mark.parametrize("chunk", [1, 2, day_report._CHUNK], ids=lambda size: f"chunk{size}")
def test_an_end_of_data_line_is_a_short_row_not_the_end_of_the_file(db, tmp_path, monkeypatch, chunk):
    """Before Postgres 18, a line holding only \\. ended a CSV COPY: the rows after it were dropped silently."""
    monkeypatch.setattr(day_report, "_CHUNK", chunk)
    path = _archive(tmp_path, "\n".join([HEADER, _row(1), "\\.", _row(2), _row(3)]) + "\n")

    with pytest.raises(DayReportError, match=r"^day report 2026-10-25: row ending on line 3 has 1 fields, "):
        _load(db, path)

    assert _stored(db) == []


def test_a_backslash_dot_inside_a_text_loads_as_python_read_it(db, tmp_path):
    path = _archive(tmp_path, "\n".join([HEADER, _row(1, "see C:\\.cache"), _row(2, "\\.")]) + "\n")

    load = _load(db, path)

    assert load.rows == 2
    assert _stored(db) == _expected(path, KOLKATA)


# (file, whether Postgres' CSV parser reads its quotes as Python's csv does)
QUOTINGS = [
    (b'a,b\n"x""y",z\n', True),
    (b'a,b\n"a,\r\nb",c\r\n', True),
    (b'a,b\n"",""\n"ab"', True),  # the last quote closes at the end of the file
    (b'a,b\n"ab"c,d\n', False),  # text after a closing quote
    (b'a,b\n"ab" ,d\n', False),
    (b'a,b\nab"c,d\n', False),  # a quote inside an unquoted field
    (b'a,b\nx,"a""b"c\n', False),
]


@pytest.mark.parametrize(("data", "agree"), QUOTINGS, ids=[repr(d) for d, _ in QUOTINGS])
def test_the_quote_check_gives_one_answer_however_the_file_is_chunked(data, agree):
    for size in range(1, len(data) + 1):
        check = day_report._QuoteCheck()
        chunks = [data[i:i + size] for i in range(0, len(data), size)]
        assert all(check.agree(chunk) for chunk in chunks) is agree, f"chunks of {size}"


def test_duplicates_count_the_rows_repeating_a_msgid_and_status_word_as_written(db, tmp_path):
    """The provider's duplicated rows: a (msgId, status) pair seen again, the word as the file spells it
    (another status of the same msgId is a new event; so, for this figure, is another spelling)."""
    lines = [HEADER, _row(1), _row(1), _row(1, done="2026-10-25 10:00:09"),  # the pair twice more
             _row(1).replace("DELIVRD", "ACCEPTD"),  # another status of msgId 1
             _row(1).replace("DELIVRD", "delivrd"),  # another spelling of it, as written
             _row(2), _row(3), _row(3)]
    load = _load(db, _archive(tmp_path, "\n".join(lines) + "\n"))

    assert (load.rows, load.duplicates) == (8, 3)
    assert dict(load.statuses.by_word) == {"ACCEPTD": 1, "DELIVRD": 7}


@pytest.mark.parametrize("statement", ["ingest_day_report_stats", "ingest_day_report_status_counts"])
def test_the_load_statistics_are_planned_on_the_day_partitions_own_statistics(db, tmp_path, statement):
    """The load analyzes the day's partition, never the partitioned parent (autovacuum does not either): a
    statement through dlr.day_report_rows would estimate its groups on the planner's defaults, and took a
    million (msgId, status) pairs for 40,000 (docs/design.md "Day report load"). 300 rows of one pair
    here: planned as one group, where through the parent the defaults give 200."""
    _load(db, _archive(tmp_path, "\n".join([HEADER] + [_row(1)] * 300) + "\n"))
    partition = sql.Identifier(*queries.scalar(db, "ingest_day_report_partition", report_date=DAY))

    ((plan,),) = db.execute(sql.SQL("EXPLAIN (FORMAT JSON) ")
                            + queries.statement(statement, {"partition": partition})).fetchall()

    assert [node["Plan Rows"] for node in plan_nodes(plan[0]["Plan"]) if node.get("Group Key")] == [1]
