"""The migration runner against a real server, with migrations of its own."""

import pytest

from sms_pipeline.db import migrate
from sms_pipeline.errors import MigrationError


def _write(folder, name, sql):
    (folder / name).write_text(sql, encoding="utf-8")


def test_applies_in_order_and_rerun_is_noop(blank_db, tmp_path):
    _write(tmp_path, "V2__second.sql", "INSERT INTO t_order VALUES (2);")
    _write(tmp_path, "V1__first.sql", "CREATE TABLE t_order (n int);")
    _write(tmp_path, "V10__tenth.sql", "INSERT INTO t_order VALUES (10);")
    done = migrate.upgrade(blank_db, tmp_path)
    assert [m.version for m in done] == [1, 2, 10]
    assert migrate.upgrade(blank_db, tmp_path) == []
    assert [r[0] for r in blank_db.execute("SELECT n FROM t_order ORDER BY n")] == [2, 10]


def test_changed_applied_file_is_refused(blank_db, tmp_path):
    _write(tmp_path, "V1__first.sql", "CREATE TABLE t_changed (n int);")
    migrate.upgrade(blank_db, tmp_path)
    _write(tmp_path, "V1__first.sql", "CREATE TABLE t_changed (n bigint);")
    with pytest.raises(MigrationError, match="V1"):
        migrate.upgrade(blank_db, tmp_path)


def test_failed_migration_rolls_back_and_is_not_recorded(blank_db, tmp_path):
    _write(tmp_path, "V1__first.sql", "CREATE TABLE t_ok (n int);")
    _write(tmp_path, "V2__broken.sql", "CREATE TABLE t_half (n int); SELECT no_such_function();")
    with pytest.raises(Exception):
        migrate.upgrade(blank_db, tmp_path)
    versions = [a.version for a in migrate.applied(blank_db)]
    assert 1 in versions and 2 not in versions
    assert blank_db.execute("SELECT to_regclass('t_half')").fetchone()[0] is None


def test_bad_file_name_is_refused(tmp_path):
    _write(tmp_path, "V1_missing_underscore.sql", "SELECT 1;")
    with pytest.raises(MigrationError, match="V1_missing_underscore.sql"):
        migrate.discover(tmp_path)


def test_project_migrations_are_applied_to_the_template(db):
    expected = [m.version for m in migrate.discover()]
    assert [a.version for a in migrate.applied(db)] == expected
