"""Pure pieces of the marts: the run window, dbt's arguments and environment, the summary reduction."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest

from sms_pipeline.errors import UserError
from sms_pipeline.marts.cost_report import DayTotal
from sms_pipeline.marts.dbt_env import dbt_env_for_url
from sms_pipeline.marts.provider_summary import SenderSummary, SummaryMismatch, summarise_by_sender
from sms_pipeline.orchestration.marts_assets import day_totals_metadata, dbt_build_args
from sms_pipeline.orchestration.windows import dbt_vars, marts_window
from sms_pipeline.provider.results import SummaryRow

KOLKATA = ZoneInfo("Asia/Kolkata")
LONDON = ZoneInfo("Europe/London")
START = date(2026, 1, 1)


def test_daily_window_is_the_day_plus_the_lookback_half_open():
    w = marts_window(date(2026, 3, 10), date(2026, 3, 10), KOLKATA, lookback_days=5, history_start=START)
    assert (w.first_day, w.last_day) == (date(2026, 3, 5), date(2026, 3, 10))
    assert w.start == datetime(2026, 3, 4, 18, 30, tzinfo=UTC)  # 00:00 on the 5th in Kolkata
    assert w.end == datetime(2026, 3, 10, 18, 30, tzinfo=UTC)  # 00:00 on the 11th: excluded


def test_range_run_covers_the_range_and_one_lookback():
    w = marts_window(date(2026, 3, 1), date(2026, 3, 31), KOLKATA, lookback_days=5, history_start=START)
    assert (w.first_day, w.last_day) == (date(2026, 2, 24), date(2026, 3, 31))


def test_lookback_never_reaches_before_the_first_partition():
    w = marts_window(date(2026, 1, 3), date(2026, 1, 3), KOLKATA, lookback_days=5, history_start=START)
    assert w.first_day == START


def test_full_refresh_rebuilds_from_the_first_partition():
    w = marts_window(date(2026, 3, 10), date(2026, 3, 12), KOLKATA, lookback_days=5, history_start=START,
                     full_refresh=True)
    assert (w.first_day, w.last_day) == (START, date(2026, 3, 12))


def test_window_over_a_dst_change_keeps_local_midnights():
    w = marts_window(date(2026, 3, 29), date(2026, 3, 29), LONDON, lookback_days=1, history_start=START)
    v = dbt_vars(w, LONDON)
    assert v["window_start"] == "2026-03-28T00:00:00+00:00"  # GMT
    assert v["window_end"] == "2026-03-29T23:00:00+00:00"  # midnight BST
    assert (v["first_day"], v["last_day"]) == ("2026-03-28", "2026-03-29")


def test_negative_lookback_refused():
    with pytest.raises(ValueError):
        marts_window(date(2026, 3, 10), date(2026, 3, 10), KOLKATA, lookback_days=-1, history_start=START)


def test_dbt_build_args_carry_the_vars_as_json():
    args = dbt_build_args({"window_end": "b", "window_start": "a"}, full_refresh=True)
    assert args[:2] == ["build", "--vars"]
    assert json.loads(args[2]) == {"window_start": "a", "window_end": "b"}
    assert args[3:] == ["--exclude-resource-type", "unit_test", "--full-refresh"]
    assert "--full-refresh" not in dbt_build_args({})


def test_dbt_env_from_an_embedded_socket_url():
    env = dbt_env_for_url("postgresql://postgres:@/sms_pipeline?host=/srv/home/pgdata")
    assert env == {"DBT_SMS_HOST": "/srv/home/pgdata", "DBT_SMS_PORT": "5432", "DBT_SMS_USER": "postgres",
                   "DBT_SMS_PASSWORD": "", "DBT_SMS_DBNAME": "sms_pipeline"}


def test_dbt_env_from_an_external_url_with_tls():
    env = dbt_env_for_url("postgresql://finance:s3cret@db.example:6432/sms?sslmode=require")
    assert env["DBT_SMS_HOST"] == "db.example" and env["DBT_SMS_PORT"] == "6432"
    assert env["DBT_SMS_PASSWORD"] == "s3cret" and env["PGSSLMODE"] == "require"


def test_dbt_env_refuses_what_the_profile_cannot_carry_without_showing_the_password():
    with pytest.raises(UserError) as err:
        dbt_env_for_url("postgresql://u:s3cret@h/db?target_session_attrs=read-write")
    assert "target_session_attrs" in str(err.value) and "s3cret" not in str(err.value)


def test_summary_rows_add_up_per_sender_and_keep_a_missing_sender():
    day = date(2026, 5, 20)
    rows = [SummaryRow(day, "AAA", 3, 2, 1, 0, 3), SummaryRow(day, "AAA", 1, 1, 0, 0, 2),
            SummaryRow(None, None, 4, 0, 0, 4, 4)]
    assert summarise_by_sender(day, rows) == [SenderSummary("", 4, 0, 0, 4, 4), SenderSummary("AAA", 4, 3, 1, 0, 5)]


def test_summary_for_another_day_refused():
    with pytest.raises(SummaryMismatch):
        summarise_by_sender(date(2026, 5, 20), [SummaryRow(date(2026, 5, 21), "AAA", 1, 1, 0, 0, 1)])


def test_day_totals_metadata_keeps_amounts_exact():
    table = day_totals_metadata([DayTotal(date(2026, 3, 10), "INR", 1000, 1000, Decimal("7.9000"), 2, 0,
                                          Decimal("0.3950"), 0, 0, Decimal("0.0000"))])
    [record] = [r.data for r in table.records]
    assert record["cost"] == "7.9000" and record["cost_of_failed"] == "0.3950"
    assert not any(isinstance(v, float) for v in record.values())
