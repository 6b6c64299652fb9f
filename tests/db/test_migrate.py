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


# ----- repeatable migrations (R__<what>.sql) -----------------------------------


def _function_result(conn, name):
    return conn.execute(f"SELECT {name}()").fetchone()[0]


def _returning(name, n):
    """A function ``name()`` returning ``n``."""
    return f"CREATE OR REPLACE FUNCTION {name}() RETURNS int LANGUAGE sql AS $$ SELECT {n} $$;"


def test_repeatables_run_after_every_versioned_file_in_name_order(blank_db, tmp_path):
    _write(tmp_path, "V1__log.sql", "CREATE TABLE t_log (seq serial PRIMARY KEY, what text);")
    _write(tmp_path, "V2__late.sql", "CREATE TABLE t_late (n int);")
    # Each reads what the last V file made (a SQL function's body is checked when it is created).
    _write(tmp_path, "R__b_view.sql", "CREATE OR REPLACE VIEW v_late AS SELECT n FROM t_late;\n"
                                      "INSERT INTO t_log (what) VALUES ('b');")
    _write(tmp_path, "R__a_function.sql", "CREATE OR REPLACE FUNCTION f_late() RETURNS bigint LANGUAGE sql\n"
                                          "AS $$ SELECT count(*) FROM t_late $$;\n"
                                          "INSERT INTO t_log (what) VALUES ('a');")
    done = migrate.upgrade(blank_db, tmp_path)
    assert [m.label for m in done] == ["V1 log", "V2 late", "R a_function", "R b_view"]
    assert [r[0] for r in blank_db.execute("SELECT what FROM t_log ORDER BY seq")] == ["a", "b"]
    assert [a.name for a in migrate.applied_repeatables(blank_db)] == ["a_function", "b_view"]
    assert _function_result(blank_db, "f_late") == 0


def test_a_repeatable_is_applied_again_only_when_its_content_changes(blank_db, tmp_path):
    _write(tmp_path, "V1__runs.sql", "CREATE TABLE t_runs (n int);")
    _write(tmp_path, "R__answer.sql", _returning("f_answer", 1) + "\n"
                                      "INSERT INTO t_runs VALUES (1);")
    migrate.upgrade(blank_db, tmp_path)
    (first,) = migrate.applied_repeatables(blank_db)

    # Unchanged: not run again, even when a new V file is applied.
    _write(tmp_path, "V2__more.sql", "CREATE TABLE t_more (n int);")
    assert [m.label for m in migrate.upgrade(blank_db, tmp_path)] == ["V2 more"]
    assert migrate.upgrade(blank_db, tmp_path) == []
    assert blank_db.execute("SELECT count(*) FROM t_runs").fetchone()[0] == 1
    assert migrate.applied_repeatables(blank_db) == [first]

    # Changed: run again, and the new checksum recorded.
    _write(tmp_path, "R__answer.sql", _returning("f_answer", 2) + "\n"
                                      "INSERT INTO t_runs VALUES (2);")
    assert [m.label for m in migrate.upgrade(blank_db, tmp_path)] == ["R answer"]
    assert _function_result(blank_db, "f_answer") == 2
    assert blank_db.execute("SELECT count(*) FROM t_runs").fetchone()[0] == 2
    (second,) = migrate.applied_repeatables(blank_db)
    assert second.checksum == migrate.discover_repeatables(tmp_path)[0].checksum != first.checksum
    assert migrate.upgrade(blank_db, tmp_path) == []


def test_an_edited_applied_versioned_file_is_refused_before_any_repeatable_runs(blank_db, tmp_path):
    _write(tmp_path, "V1__first.sql", "CREATE TABLE t_edited (n int);")
    _write(tmp_path, "R__answer.sql", _returning("f_answer", 1))
    migrate.upgrade(blank_db, tmp_path)
    _write(tmp_path, "V1__first.sql", "CREATE TABLE t_edited (n bigint);")
    _write(tmp_path, "R__answer.sql", _returning("f_answer", 2))
    with pytest.raises(MigrationError, match="V1"):
        migrate.upgrade(blank_db, tmp_path)
    assert _function_result(blank_db, "f_answer") == 1


def test_a_failing_repeatable_rolls_back_is_reported_and_is_not_recorded(blank_db, tmp_path):
    _write(tmp_path, "V1__first.sql", "CREATE TABLE t_ok (n int);")
    _write(tmp_path, "R__a_fine.sql", _returning("f_fine", 1))
    _write(tmp_path, "R__b_broken.sql", _returning("f_half", 1) + "\n"
                                        "SELECT no_such_function();")
    with pytest.raises(MigrationError, match=r"R__b_broken\.sql.*no_such_function"):
        migrate.upgrade(blank_db, tmp_path)
    assert blank_db.execute("SELECT to_regproc('f_half')").fetchone()[0] is None
    assert [a.name for a in migrate.applied_repeatables(blank_db)] == ["a_fine"]
    assert [a.version for a in migrate.applied(blank_db)] == [1]

    # Fixed: the next upgrade applies just that one.
    _write(tmp_path, "R__b_broken.sql", _returning("f_half", 1))
    assert [m.label for m in migrate.upgrade(blank_db, tmp_path)] == ["R b_broken"]
    assert _function_result(blank_db, "f_half") == 1


def test_bad_repeatable_file_name_is_refused(tmp_path):
    _write(tmp_path, "R_missing_underscore.sql", "SELECT 1;")
    with pytest.raises(MigrationError, match="R_missing_underscore.sql"):
        migrate.discover_repeatables(tmp_path)


def test_the_fingerprint_covers_repeatables(tmp_path):
    _write(tmp_path, "V1__first.sql", "CREATE TABLE t (n int);")
    without = migrate.fingerprint(tmp_path)
    _write(tmp_path, "R__answer.sql", _returning("f_answer", 1))
    with_one = migrate.fingerprint(tmp_path)
    _write(tmp_path, "R__answer.sql", _returning("f_answer", 2))
    assert len({without, with_one, migrate.fingerprint(tmp_path)}) == 3


def test_project_repeatables_are_applied_to_the_template(db):
    expected = {r.name: r.checksum for r in migrate.discover_repeatables()}
    assert expected, "the project keeps its functions in R__<what>.sql files"
    assert {a.name: a.checksum for a in migrate.applied_repeatables(db)} == expected
