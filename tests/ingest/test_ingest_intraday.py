"""The hourly getDlr asset: today's receipts, OTPs included, within the hour."""

from __future__ import annotations

from datetime import timedelta

from tests.support.ingest import INTRADAY, materialize, mobiles, send
from tests.support.rows import snapshot
from tests.support.runs import materializations

from sms_pipeline.core.provider_time import local_date
from sms_pipeline.provider import SendAccepted

CODE = "482913"


def test_todays_pull_stores_otp_receipts_without_their_code_and_replaces_itself(app_settings, clock, client, db):
    today = local_date(clock.now(), app_settings.provider_timezone)
    otp_mobile = mobiles(1)[0]
    otp = client.otp_generate(otp_mobile, "Your login code is $otp$", "SGCSMS", CODE)
    assert isinstance(otp, SendAccepted) and otp.transaction_id is None
    sms = send(client, mobiles(3))
    clock.advance(timedelta(seconds=5))

    first = materialize(app_settings, clock, [INTRADAY])

    rows = db.execute("SELECT * FROM dlr.getdlr_rows ORDER BY row_no").fetchall()
    assert len(rows) == 4 and {r[0] for r in rows} == {today}
    by_mobile = {r[4]: r for r in db.execute("SELECT row_no, msg_id, transaction_id, status, mobile "
                                             "FROM dlr.getdlr_rows").fetchall()}
    assert by_mobile[otp_mobile][2] is None  # OTP: no transaction id ("0" on the wire)
    assert {by_mobile[m][2] for m in sms.accepted} == {sms.transaction_id}
    assert CODE not in repr(rows)  # the message only as a hash
    meta = materializations(first, INTRADAY)[None]
    assert (meta["day"], meta["dagster/row_count"], meta["unchanged"]) == (today.isoformat(), 4, False)
    assert meta["dagster/table_name"] == "dlr.getdlr_rows"
    assert [c.name for c in meta["dagster/column_schema"].columns][:2] == ["report_date", "row_no"]
    stored = snapshot(db, "dlr.getdlr_rows", "report_date, row_no")
    checkpoint = snapshot(db, "dlr.report_checkpoints", "report_kind, report_date")

    again = materialize(app_settings, clock, [INTRADAY])
    assert materializations(again, INTRADAY)[None]["unchanged"] is True
    assert snapshot(db, "dlr.getdlr_rows", "report_date, row_no") == stored
    assert snapshot(db, "dlr.report_checkpoints", "report_kind, report_date") == checkpoint

    clock.advance(timedelta(hours=3))  # receipts arrived meanwhile
    later = materialize(app_settings, clock, [INTRADAY])
    assert materializations(later, INTRADAY)[None]["unchanged"] is False
    assert db.execute("SELECT count(*) FROM dlr.getdlr_rows").fetchone() == (4,)
    assert db.execute("SELECT count(*) FROM dlr.getdlr_rows WHERE provider_done_at IS NOT NULL").fetchone()[0] >= 1
