"""``adopt inspect`` and the ``adopt`` command line: what a backfill would make of a legacy table (read only),
the closing report, and one-line errors that never show a password."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import psycopg
import pytest

from sms_pipeline.adopt import backfill as adoption, legacy
from sms_pipeline.adopt.inspect import inspect_table
from sms_pipeline.adopt.mapping import load_column_map
from sms_pipeline.errors import UserError
from tests.adopt.test_adopt_backfill import (  # noqa: F401 (fixtures)
    MANGLED, TENANT, Killed, legacy_url, load_prices, map_file, run_backfill)
from tests.support.cli import cli_database_url, cli_variables, run  # noqa: F401 (fixtures)

BACKFILL = ("--table", "sends", "--tenant", TENANT, "--class", "transactional", "--sender", "SHOPCO",
            "--event-type", "order_update", "--pause-ms", "0")


def legacy_snapshot(url: str) -> list[tuple]:
    with psycopg.connect(url) as conn:
        return conn.execute("SELECT * FROM sends ORDER BY id").fetchall()


def test_inspect_counts_what_the_backfill_would_make_of_each_row(legacy_url, map_file):
    with legacy.connect(legacy_url) as conn:
        found = inspect_table(conn, load_column_map("sends", map_file))
    assert (found.legacy_rows, found.unsent_rows, found.comma_lists) == (8, 1, 1)
    assert dict(found.recipients) == {"submitted": 4, "rejected": 1, "unknown": 2, "unsent": 0, "refused": 1}
    assert dict(found.problems) == {"exponent": 1, "empty": 1} and found.mangled == 1
    assert found.examples["exponent"] == 2
    assert (found.duplicate_events, found.duplicate_recipients) == (1, 1)


def test_inspect_from_the_command_line_reads_only(run, legacy_url, map_file):
    before = legacy_snapshot(legacy_url)
    code, out, err = run("adopt", "inspect", "--from-url", legacy_url, "--table", "sends", "--tenant", TENANT,
                         "--map", str(map_file))
    assert (code, err) == (0, "")
    assert "event       <- order_ref" in out
    assert "submitted=4, rejected=1, unknown=2; refused (not a mobile, or a body that cannot be stored): 1" in out
    assert "exponent" in out and "e.g. legacy id 2" in out
    assert "duplicate business events: 1 events, 1 more recipients" in out
    assert MANGLED not in out
    assert legacy_snapshot(legacy_url) == before


def test_without_a_map_inspect_names_the_seed_columns_and_skips_duplicates(run, legacy_url):
    code, out, _ = run("adopt", "inspect", "--from-url", legacy_url, "--table", "sends", "--tenant", TENANT)
    assert code == 0
    assert "phone       <- phone" in out and "no duplicate detection" in out
    assert "duplicate business events" not in out


def test_backfill_from_the_command_line_reports_and_names_the_days_past_the_report_horizon(
        run, db, legacy_url, map_file):
    load_prices(db)
    old = datetime.now(UTC) - timedelta(days=120)
    with psycopg.connect(legacy_url, autocommit=True) as conn:
        conn.execute("INSERT INTO sends (id, phone, message, sent, response, created_at) "
                     "VALUES (9, '9876543219', 'Old news', true, '4410982270615538999', %s)", (old,))
    start = f"{old:%Y-%m}-01"
    code, out, err = run("adopt", "backfill", "--from-url", legacy_url, *BACKFILL, "--map", str(map_file),
                         "--batch", "4", SMS_PIPELINE_PARTITION_START=start)
    assert code == 0, err
    assert "legacy rows read: 9 (never sent, skipped: 1)" in out
    assert "wrote: submitted=4 rejected=1 unknown=2 superseded=1; already adopted: 0" in out
    assert "1 days" in out and "older than the provider's report horizon (90 days)" in out
    assert "bad numbers=1" in err and "legacy ids 5" in err and "12345" not in err
    code, out, _ = run("adopt", "backfill", "--from-url", legacy_url, *BACKFILL, "--map", str(map_file),
                       SMS_PIPELINE_PARTITION_START=start)
    # a complete run left no checkpoint: the re-run reads everything again and adopts nothing twice
    assert code == 0 and "legacy rows read: 9" in out and "submitted=0 " in out and "already adopted: 8" in out
    assert db.execute("SELECT count(*) FROM msg.outbound_message WHERE state = 'pending'").fetchone() == (0,)


def test_a_day_before_the_partition_start_is_one_line_naming_the_setting(run, db, legacy_url, map_file):
    code, out, err = run("adopt", "backfill", "--from-url", legacy_url, *BACKFILL, "--map", str(map_file),
                         SMS_PIPELINE_PARTITION_START="2026-11-01")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "SMS_PIPELINE_PARTITION_START=2026-10-01" in err and "--since" in err
    assert db.execute("SELECT count(*) FROM msg.outbound_message").fetchone() == (0,)


@pytest.mark.parametrize("dsn", ["postgresql://adopter:s3cret-pw@127.0.0.1:1/legacy",
                                 "host=127.0.0.1 port=1 password=s3cret-pw dbname=legacy",
                                 "postgresql://adopter:s3cret-pw@[bad/legacy",
                                 "host=127.0.0.1 password=s3cret-pw nonsense"])
def test_a_bad_legacy_dsn_is_one_line_with_the_password_masked(run, dsn):
    for command in (("inspect", "--tenant", TENANT), ("backfill", *BACKFILL[2:])):
        code, out, err = run("adopt", command[0], "--from-url", dsn, "--table", "sends", *command[1:])
        assert code == 2 and out == ""
        assert err.count("\n") == 1 and "s3cret-pw" not in err and err.startswith("sms-pipeline: error:")


def test_a_wrong_table_or_map_is_one_line(run, legacy_url, tmp_path):
    code, _, err = run("adopt", "inspect", "--from-url", legacy_url, "--table", "nosuch", "--tenant", TENANT)
    assert code == 2 and err.count("\n") == 1 and "nosuch" in err
    bad_map = tmp_path / "bad.toml"
    bad_map.write_text('[columns]\nmobile = "phone"\n', encoding="utf-8")
    code, _, err = run("adopt", "inspect", "--from-url", legacy_url, "--table", "sends", "--tenant", TENANT,
                       "--map", str(bad_map))
    assert code == 2 and err.count("\n") == 1 and "unknown column key 'mobile'" in err
    wrong_column = tmp_path / "wrong.toml"
    wrong_column.write_text('[columns]\nevent = "no_such_column"\n', encoding="utf-8")
    code, _, err = run("adopt", "inspect", "--from-url", legacy_url, "--table", "sends", "--tenant", TENANT,
                       "--map", str(wrong_column))
    assert code == 2 and err.count("\n") == 1 and "no_such_column" in err


def test_load_column_map_refuses_what_it_does_not_know(tmp_path):
    path = tmp_path / "m.toml"
    path.write_text('[columns]\nid = "send_id"\n[extra]\n', encoding="utf-8")
    with pytest.raises(UserError, match="unknown table or key 'extra'"):
        load_column_map("sends", path)
    path.write_text('[columns]\nid = "x"\nphone = "x"\n', encoding="utf-8")
    with pytest.raises(UserError, match="same legacy column"):
        load_column_map("sends", path)
    path.write_text('[columns]\nid = "send_id"\nevent = "order_ref"\n', encoding="utf-8")
    assert load_column_map("sends", path).columns()["id"] == "send_id"


def test_inspect_shows_an_unfinished_backfill_of_the_tenant(run, db, db_url, legacy_url, map_file):
    load_prices(db)
    run("adopt", "backfill", "--from-url", legacy_url, *BACKFILL, "--map", str(map_file), "--batch", "3",
        SMS_PIPELINE_PARTITION_START="2026-09-01")
    code, out, _ = run("adopt", "inspect", "--from-url", legacy_url, "--table", "sends", "--tenant", TENANT)
    assert code == 0 and "unfinished backfill" not in out  # it ran to the end

    def stop(counts: adoption.AdoptCounts) -> None:
        raise Killed

    with pytest.raises(Killed):
        run_backfill(db_url, legacy_url, map_file, batch=3, since=date(2026, 11, 1), on_batch=stop)
    # however the table is spelled, it is the same table
    code, out, _ = run("adopt", "inspect", "--from-url", legacy_url, "--table", "public.sends", "--tenant", TENANT)
    assert code == 0 and "unfinished backfill for tenant tenant-a: up to legacy id 7 (rows since 2026-11-01)" in out
    _, out, _ = run("adopt", "inspect", "--from-url", legacy_url, "--table", "sends", "--tenant", "other")
    assert "unfinished backfill" not in out


def test_inspect_counts_duplicates_by_event_and_recipient_as_the_backfill_keys_them(db, db_url, legacy_url, map_file):
    with psycopg.connect(legacy_url, autocommit=True) as conn:  # one event, two recipients: no duplicate
        conn.execute("INSERT INTO sends (id, phone, message, sent, response, created_at, order_ref) VALUES "
                     "(9, '9876543290', 'Hi', true, '', now(), 'o-9'), "
                     "(10, '9876543291', 'Hi', true, '', now(), 'o-9')")
    with legacy.connect(legacy_url) as conn:
        found = inspect_table(conn, load_column_map("sends", map_file))
    counts = run_backfill(db_url, legacy_url, map_file)
    assert (found.duplicate_events, found.duplicate_recipients) == (1, counts.duplicates) == (1, 1)
