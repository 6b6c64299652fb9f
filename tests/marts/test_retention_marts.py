"""Message retention with real marts: 14 months of messages, a 400-day horizon, real dbt through Dagster.

One test on purpose (every dbt run costs seconds): the months the marts have
aggregated go, oldest first and after their OTP sidecar; a month with a day
no mart has built is kept (and, behind it, every newer one), and the plan
says why; the marts do not change; a second run drops nothing; a backfill of
a dropped day and the weekly full rebuild leave the old mart rows as they
are while the full rebuild still rebuilds the days from the horizon on; once
the missing day is built its month goes too. ``retention plan`` and
``retention apply`` (and a horizon of 0, which keeps everything) through the
real command.
"""

from __future__ import annotations

import os
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

import dagster as dg
import psycopg
import pytest

from sms_pipeline import cli
from sms_pipeline import settings as settings_module
from sms_pipeline.orchestration import reconcile_assets
from sms_pipeline.orchestration.resources import ClockResource
from tests.support.environment import TEXT_HMAC_KEY, settings_for
from tests.support.marts import Marts, mart_rows
from tests.support.rows import billed, ensure_partitions, insert_message, insert_messages

pytestmark = pytest.mark.slow

# Months 2026-01 .. 2027-02 hold messages; the clock stands 400 days after
# 2026-04-15, so the months ending on or before that (January to March) are
# wholly past the horizon. Mart days can be built up to the test's real
# yesterday (Dagster's day partitions end there): through 2026-11.
MONTHS = [date(2026 + (m - 1) // 12, (m - 1) % 12 + 1, 1) for m in range(1, 15)]
NOW = datetime(2027, 5, 20, 6, 30, tzinfo=UTC)
HORIZON = NOW - timedelta(days=400)
UNBUILT_DAY = date(2026, 2, 10)  # a day the first builds leave out
PRICED = {"billable_units": 1, "cost": Decimal("0.0079"), "cost_currency": "INR"}


def _noon_of_the_tenth(month: date) -> datetime:
    return datetime(month.year, month.month, 10, 6, 30, tzinfo=UTC)  # 12:00 in Kolkata


def _partitions(db_url: str) -> list[str]:
    with psycopg.connect(db_url) as conn:
        return [name for (name,) in conn.execute(
            "SELECT partition::text FROM msg.month_partitions('msg.outbound_message', 'outbound_message') "
            "ORDER BY month")]


def _name(month: date) -> str:
    return f"msg.outbound_message_{month:%Y_%m}"


def _retention_run(marts: Marts, retention_days: int = 400) -> dg.ExecuteInProcessResult:
    """The daily upkeep's asset, on the test's clock."""
    return dg.materialize([reconcile_assets.daily_upkeep], resources=marts.resources,
                          run_config={"ops": {"msg__daily_upkeep": {"config": {
                              "message_retention_days": retention_days, "redact_bodies_after_days": 30}}}})


def _dropped(result: dg.ExecuteInProcessResult) -> int:
    [materialization] = result.asset_materializations_for_node("msg__daily_upkeep")
    return materialization.metadata["message_partitions_dropped"].value


def _full_rebuild(marts: Marts, last: date) -> dg.ExecuteInProcessResult:
    """The weekly full rebuild's run (the job's config) for partition ``last``."""
    marts_daily = next(a for a in marts.assets if a.node_def.name == "marts_daily")
    return dg.materialize(marts.assets, selection=list(marts_daily.keys), partition_key=last.isoformat(),
                          resources=marts.resources, run_config={"ops": {"marts_daily": {"config": {
                              "full_refresh": True, "message_retention_days": 400}}}})


def _cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture, variables: dict[str, str],
         *argv: str) -> str:
    """``sms-pipeline argv`` in this process with exactly the application variables ``variables``."""
    for name in list(os.environ):
        if name.startswith(settings_module.PREFIXES):
            monkeypatch.delenv(name)
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    capsys.readouterr()
    assert cli.main(list(argv)) == 0
    return capsys.readouterr().out


def test_retention_drops_only_what_the_marts_no_longer_read(db_url, tmp_path, monkeypatch, capsys):
    variables = {"SMS_PIPELINE_HOME": str(tmp_path / "home"), "SMS_PIPELINE_DATABASE_URL": db_url,
                 "SMS_PIPELINE_LOOKBACK_DAYS": "0", "SMS_PIPELINE_PARTITION_START": "2026-01-01",
                 "SMS_PIPELINE_TEXT_HMAC_KEY": TEXT_HMAC_KEY}
    settings = settings_for(db_url, tmp_path / "home", SMS_PIPELINE_LOOKBACK_DAYS="0")
    with psycopg.connect(db_url, autocommit=True) as conn:
        ensure_partitions(conn, MONTHS[0], months_ahead=len(MONTHS) - 1)
        for month in MONTHS:
            insert_messages(conn, 3, state="delivered", latency_s=4, **billed(_noon_of_the_tenth(month), **PRICED))
            insert_messages(conn, 1, state="failed", message_class="otp",
                            **billed(_noon_of_the_tenth(month), **PRICED))
        # January's OTP sidecar: a code that expired long ago pins the month until the purge
        otp = insert_message(conn, message_class="otp", created_at=_noon_of_the_tenth(MONTHS[0]))
        conn.execute(
            """INSERT INTO msg.otp_verification
                   (message_id, message_created_at, tenant_id, recipient, purpose, code_hmac, created_at,
                    expires_at, max_attempts)
               VALUES (%s, %s, 'tenant-a', '919800000001', 'login', sha256('123456'), %s, %s, 5)""",
            (*otp, otp[1], otp[1] + timedelta(minutes=5)),
        )
    marts = Marts(settings)
    marts.resources["clock"] = ClockResource(frozen_at=NOW.isoformat())
    marts.build_views()
    # Every day but UNBUILT_DAY (lookback 0: a run builds exactly its days).
    marts.build_days(date(2026, 1, 1), UNBUILT_DAY - timedelta(days=1))
    marts.build_days(UNBUILT_DAY + timedelta(days=1), date(2026, 11, 30))
    before = mart_rows(db_url)
    assert all(before.values()), "every mart holds rows"
    all_partitions = _partitions(db_url)
    assert [_name(m) for m in MONTHS] == [p for p in all_partitions if p <= _name(MONTHS[-1])]

    # The plan: January is pinned by its OTP sidecar until the upkeep's purge, February has a day no
    # mart built, March waits behind it; the rest is within the horizon.
    plan = _cli(monkeypatch, capsys, variables, "retention", "plan", "--at", NOW.isoformat())
    lines = {line.split()[0]: line for line in plan.splitlines() if line.startswith("  msg.")}
    assert "5 rows  keep  OTP verifications or requests still reference it" in lines[_name(MONTHS[0])]
    assert "expired OTP verifications (purged first, so their months can go): 1" in plan
    assert lines[_name(MONTHS[1])].split()[3:] == [
        "keep", "the", "marts", "still", "need", "it:", "campaign_daily", "has", "not", "been", "built", "for",
        "2026-02-10", "since", "its", "rows", "last", "changed"]
    assert "keep  an older month is kept for the marts" in lines[_name(MONTHS[2])]
    assert all("keep  within the horizon" in lines[_name(m)] for m in MONTHS[3:])
    assert "400 days: months ending on or before 2026-04-15T06:30:00+00:00 may go" in plan
    assert "resolved orphans (resolved before 2027-04-20T06:30:00+00:00): 0" in plan
    assert _partitions(db_url) == all_partitions, "the plan changes nothing"

    # Kept for ever: the command drops nothing and says so.
    forever = {**variables, "SMS_PIPELINE_MESSAGE_RETENTION_DAYS": "0"}
    assert "kept for ever" in _cli(monkeypatch, capsys, forever, "retention", "plan", "--at", NOW.isoformat())
    assert _cli(monkeypatch, capsys, forever, "retention", "apply", "--at", NOW.isoformat()).startswith(
        "message partitions dropped: 0;")
    assert _dropped(_retention_run(marts, retention_days=0)) == 0
    assert _partitions(db_url) == all_partitions

    # The daily upkeep: January's sidecar purged, then January dropped; the marts are unchanged.
    result = _retention_run(marts)
    [materialization] = result.asset_materializations_for_node("msg__daily_upkeep")
    assert materialization.metadata["otp_verifications_purged"].value == 1
    assert _dropped(result) == 1
    assert _partitions(db_url) == [p for p in all_partitions if p != _name(MONTHS[0])]
    assert mart_rows(db_url) == before
    assert _dropped(_retention_run(marts)) == 0, "a second run drops nothing"

    # A backfill of January's days rebuilds nothing: its messages are gone, its mart rows stay.
    marts.build_days(date(2026, 1, 1), date(2026, 1, 31))
    assert mart_rows(db_url) == before

    # Once February's missing day is built, February and March go (oldest first).
    marts.build_days(UNBUILT_DAY, UNBUILT_DAY)
    plan = _cli(monkeypatch, capsys, variables, "retention", "plan", "--at", NOW.isoformat())
    assert [line.split()[3] for line in plan.splitlines() if line.startswith("  msg.")][:2] == ["drop", "drop"]
    built = mart_rows(db_url)
    assert _dropped(_retention_run(marts)) == 2
    assert mart_rows(db_url) == built
    dropped = {_name(m) for m in MONTHS[:3]}
    assert _partitions(db_url) == [p for p in all_partitions if p not in dropped]

    # The weekly full rebuild: from the horizon's day on, incrementally; older days keep their rows. Of
    # two messages added, the one inside its window (June) shows, the one of a kept month but before
    # the horizon's day (April 10th) does not: the rebuild starts at the horizon.
    june, april = _noon_of_the_tenth(MONTHS[5]), _noon_of_the_tenth(MONTHS[3])
    with psycopg.connect(db_url, autocommit=True) as conn:
        for at in (june, april):
            insert_messages(conn, 2, state="delivered", latency_s=4, **billed(at, **PRICED))
    _full_rebuild(marts, date(2026, 11, 30))
    after = mart_rows(db_url)
    for mart, rows in built.items():
        old = [r for r in rows if r[0] < HORIZON.date()]
        assert old and old == [r for r in after[mart] if r[0] < HORIZON.date()], mart
    with psycopg.connect(db_url) as conn:
        submitted = dict(conn.execute(
            "SELECT day, sum(messages_submitted) FROM marts.cost_daily WHERE day IN (%s, %s) GROUP BY day",
            (june.date(), april.date())).fetchall())
    assert submitted == {june.date(): 6, april.date(): 4}
