"""Which days a marts run rebuilds once message retention is in play (pure: no database)."""

from __future__ import annotations

from datetime import UTC, date, datetime
from zoneinfo import ZoneInfo

from sms_pipeline.orchestration.marts_assets import MartsBuildConfig, build_window
from sms_pipeline.orchestration.partitions import FIRST_DAY

KOLKATA = ZoneInfo("Asia/Kolkata")
DAILY = MartsBuildConfig()
FULL = MartsBuildConfig(full_refresh=True, message_retention_days=400)


def _days(window) -> tuple[date, date] | None:
    return None if window is None else (window.first_day, window.last_day)


def test_the_first_partition_is_the_tests():
    assert FIRST_DAY == date(2026, 1, 1)


def test_a_daily_run_never_rebuilds_a_day_whose_messages_retention_dropped():
    now = datetime(2027, 5, 20, tzinfo=UTC)

    def run(first, last, rebuildable_from):
        window, recreate = build_window(first, last, KOLKATA, config=DAILY, lookback_days=5, now=now,
                                        rebuildable_from=rebuildable_from)
        assert not recreate
        return _days(window)

    assert run(date(2026, 6, 10), date(2026, 6, 12), None) == (date(2026, 6, 5), date(2026, 6, 12))
    # the lookback stops at the first rebuildable day; a range before it rebuilds nothing
    assert run(date(2026, 6, 10), date(2026, 6, 12), date(2026, 6, 8)) == (date(2026, 6, 8), date(2026, 6, 12))
    assert run(date(2026, 6, 1), date(2026, 6, 12), date(2026, 6, 8)) == (date(2026, 6, 8), date(2026, 6, 12))
    assert run(date(2026, 6, 1), date(2026, 6, 7), date(2026, 6, 8)) is None


def test_the_full_rebuild_starts_at_the_horizon_and_recreates_only_a_whole_history():
    def run(now, rebuildable_from, config=FULL):
        window, recreate = build_window(date(2026, 11, 30), date(2026, 11, 30), KOLKATA, config=config,
                                        lookback_days=5, now=now, rebuildable_from=rebuildable_from)
        return _days(window), recreate

    young = datetime(2026, 12, 1, tzinfo=UTC)  # 400 days back is before the first partition
    assert run(young, None) == ((FIRST_DAY, date(2026, 11, 30)), True)
    old = datetime(2027, 5, 20, 6, 30, tzinfo=UTC)  # horizon 2026-04-15 (12:00 in Kolkata)
    assert run(old, None) == ((date(2026, 4, 15), date(2026, 11, 30)), False)
    assert run(old, date(2026, 5, 2)) == ((date(2026, 5, 2), date(2026, 11, 30)), False)
    # kept for ever: the whole history, recreated only while nothing was ever dropped
    forever = MartsBuildConfig(full_refresh=True, message_retention_days=0)
    assert run(old, None, forever) == ((FIRST_DAY, date(2026, 11, 30)), True)
    assert run(old, date(2026, 2, 1), forever) == ((date(2026, 2, 1), date(2026, 11, 30)), False)
