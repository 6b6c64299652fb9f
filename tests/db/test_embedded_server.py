"""The embedded server starts with sms-pipeline's settings, keeps an ALTER SYSTEM over them, and is never
restarted under a running command (docs/design.md#the-embedded-servers-settings)."""

import shutil

import psutil
import pytest

from sms_pipeline.db import connection, embedded


def _show(url: str, *names: str) -> dict[str, str]:
    with connection.connect_url(url, autocommit=True) as conn:
        return {name: conn.execute(f"SHOW {name}").fetchone()[0] for name in names}


def _started_at(url: str):
    with connection.connect_url(url, autocommit=True) as conn:
        return conn.execute("SELECT pg_postmaster_start_time()").fetchone()[0]


def _expected(home) -> dict[str, str]:
    wanted = embedded.server_settings(psutil.virtual_memory().total, shutil.disk_usage(home).free)
    # SHOW prints sizes in the largest whole unit
    return {name: value.replace("4096MB", "4GB").replace("2048MB", "2GB").replace("1024MB", "1GB")
            for name, value in wanted.items()}


@pytest.fixture
def home(tmp_path):
    home = tmp_path / "embedded"
    yield home
    embedded.stop(home)


def test_a_new_server_runs_with_the_settings_from_its_first_connection(home):
    url = embedded.ensure_running(home)
    expected = _expected(home)
    assert _show(url, *expected) == expected
    # stock Postgres would say 128MB / 1GB / 4MB / 5min
    assert _show(url, "shared_buffers")["shared_buffers"] != "128MB"


def test_alter_system_wins_and_a_running_server_is_not_restarted(home):
    url = embedded.ensure_running(home)
    started = _started_at(url)
    with connection.connect_url(url, autocommit=True) as conn:
        conn.execute("ALTER SYSTEM SET checkpoint_timeout = '7min'")
        conn.execute("SELECT pg_reload_conf()")
    (home / "pgdata" / embedded.SETTINGS_FILE).write_text("checkpoint_timeout = '9min'\n")  # an older file
    url = embedded.ensure_running(home)  # rewrites it and reloads, never restarts
    assert _started_at(url) == started
    assert (home / "pgdata" / embedded.SETTINGS_FILE).read_text().count("\n") == 5
    assert _show(url, "checkpoint_timeout") == {"checkpoint_timeout": "7min"}

    assert embedded.stop(home)
    url = embedded.ensure_running(home)  # a stopped server starts with them, no restart needed
    assert _show(url, "checkpoint_timeout", "wal_buffers") == {"checkpoint_timeout": "7min", "wal_buffers": "64MB"}
