"""Where the code location's day partitions start (docs/design.md#first-partition-day).

``sms_pipeline.orchestration.partitions`` resolves the first day when it is
imported, as every Dagster process does: ``SMS_PIPELINE_PARTITION_START``
when set, else the day the database recorded. Each case imports it in a
process of its own (this one has the test deployment's fixed day).
"""

from __future__ import annotations

import subprocess
import sys
from datetime import date

import psycopg

from sms_pipeline.db import installation
from tests.support.databases import PROJECT_ROOT, scratch_database
from tests.support.environment import app_environ

PRINT_FIRST_DAY = ("from sms_pipeline.orchestration.partitions import DAY_PARTITIONS, FIRST_DAY; "
                   "print(FIRST_DAY.isoformat(), DAY_PARTITIONS.start.date().isoformat())")


def _import_partitions(tmp_path, **variables: str) -> subprocess.CompletedProcess:
    env = app_environ(SMS_PIPELINE_HOME=str(tmp_path / "home"), **variables)
    if "SMS_PIPELINE_PARTITION_START" not in variables:
        del env["SMS_PIPELINE_PARTITION_START"]
    return subprocess.run([sys.executable, "-c", PRINT_FIRST_DAY], env=env, cwd=PROJECT_ROOT,
                          capture_output=True, text=True, timeout=120)


def test_unset_the_partitions_start_at_the_day_the_database_recorded(db_url, tmp_path):
    with psycopg.connect(db_url, autocommit=True) as conn:
        assert installation.lower_partition_start(conn, date(2025, 3, 17)) == date(2025, 3, 1)
    done = _import_partitions(tmp_path, SMS_PIPELINE_DATABASE_URL=db_url)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["2025-03-01", "2025-03-01"]


def test_set_the_variable_wins_and_no_database_is_read(tmp_path):
    done = _import_partitions(tmp_path, SMS_PIPELINE_PARTITION_START="2026-02-14",
                              SMS_PIPELINE_DATABASE_URL="postgresql://nobody@127.0.0.1:9/none")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["2026-02-14", "2026-02-14"]


def test_unset_on_a_database_never_upgraded_the_import_says_to_upgrade(pg_admin_url, tmp_path):
    for url in scratch_database(pg_admin_url, "template0"):
        done = _import_partitions(tmp_path, SMS_PIPELINE_DATABASE_URL=url)
    assert done.returncode != 0
    assert "run `sms-pipeline db upgrade`" in done.stderr
