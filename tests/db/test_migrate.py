"""The migration runner against a real server, with migrations of its own."""

import re

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


def _insert_trigger(function, trigger, table):
    """A (do-nothing) trigger function ``function()`` and the trigger ``trigger`` firing it after each insert."""
    return (f"CREATE OR REPLACE FUNCTION {function}() RETURNS trigger LANGUAGE plpgsql\n"
            f"AS $$ BEGIN RETURN NULL; END $$;\n"
            f"CREATE OR REPLACE TRIGGER {trigger} AFTER INSERT ON {table}\n"
            f"    FOR EACH ROW EXECUTE FUNCTION {function}();")


def _trigger_defs(conn, table):
    """``{name: definition}`` of the table's own triggers (none internal)."""
    rows = conn.execute("SELECT tgname, pg_get_triggerdef(oid) FROM pg_trigger "
                        "WHERE tgrelid = to_regclass(%s) AND NOT tgisinternal", (table,))
    return dict(rows.fetchall())


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

    # Unchanged: not run again.
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


def test_every_repeatable_runs_again_after_a_versioned_file(blank_db, tmp_path):
    """A V file may drop what an unchanged R file defines (here: CASCADE takes the trigger along)."""
    _write(tmp_path, "V1__runs.sql", "CREATE TABLE t_runs (seq serial PRIMARY KEY, what text);\n"
                                     "CREATE TABLE t_watched (n int);")
    _write(tmp_path, "R__a_trigger.sql", _insert_trigger("f_log", "t_watched_log", "t_watched") + "\n"
                                         "INSERT INTO t_runs (what) VALUES ('a');")
    _write(tmp_path, "R__b_answer.sql", _returning("f_answer", 1) + "\n"
                                        "INSERT INTO t_runs (what) VALUES ('b');")
    migrate.upgrade(blank_db, tmp_path)
    before = {a.name: a.applied_at for a in migrate.applied_repeatables(blank_db)}

    _write(tmp_path, "V2__drop.sql", "DROP FUNCTION f_log() CASCADE;\n"
                                     "DROP FUNCTION f_answer();")
    done = migrate.upgrade(blank_db, tmp_path)
    assert [m.label for m in done] == ["V2 drop", "R a_trigger", "R b_answer"]
    assert _trigger_defs(blank_db, "t_watched") == {
        "t_watched_log": "CREATE TRIGGER t_watched_log AFTER INSERT ON public.t_watched "
                         "FOR EACH ROW EXECUTE FUNCTION f_log()"}
    assert _function_result(blank_db, "f_answer") == 1
    assert [r[0] for r in blank_db.execute("SELECT what FROM t_runs ORDER BY seq")] == ["a", "b", "a", "b"]
    after = {a.name: a.applied_at for a in migrate.applied_repeatables(blank_db)}
    assert after.keys() == before.keys() and all(after[n] > before[n] for n in before)
    assert migrate.upgrade(blank_db, tmp_path) == []


def test_after_a_versioned_file_every_repeatable_stays_pending_until_it_ran(blank_db, tmp_path):
    """The V file forgets the repeatables in its own transaction: an upgrade stopped by a failing R file
    leaves the unchanged ones after it pending too."""
    _write(tmp_path, "V1__first.sql", "CREATE TABLE t_ok (n int);")
    _write(tmp_path, "R__a_fine.sql", _returning("f_fine", 1))
    _write(tmp_path, "R__b_answer.sql", _returning("f_answer", 1))
    migrate.upgrade(blank_db, tmp_path)

    _write(tmp_path, "V2__drop.sql", "DROP FUNCTION f_answer();")
    _write(tmp_path, "R__a_fine.sql", _returning("f_fine", 2) + "\nSELECT no_such_function();")
    with pytest.raises(MigrationError, match=r"R__a_fine\.sql"):
        migrate.upgrade(blank_db, tmp_path)
    assert [a.version for a in migrate.applied(blank_db)] == [1, 2]
    assert migrate.applied_repeatables(blank_db) == []
    assert blank_db.execute("SELECT to_regproc('f_answer')").fetchone()[0] is None

    _write(tmp_path, "R__a_fine.sql", _returning("f_fine", 2))
    assert [m.label for m in migrate.upgrade(blank_db, tmp_path)] == ["R a_fine", "R b_answer"]
    assert _function_result(blank_db, "f_fine") == 2
    assert _function_result(blank_db, "f_answer") == 1


def test_a_repeatable_may_call_what_a_later_one_defines(blank_db, tmp_path):
    """Function bodies are not checked while repeatables are applied: their name order does not matter."""
    _write(tmp_path, "V1__first.sql", "CREATE TABLE t_ok (n int);")
    _write(tmp_path, "R__a_caller.sql", "CREATE OR REPLACE FUNCTION f_caller() RETURNS int LANGUAGE sql\n"
                                        "AS $$ SELECT f_callee() + 1 $$;")
    _write(tmp_path, "R__b_callee.sql", _returning("f_callee", 1))
    done = migrate.upgrade(blank_db, tmp_path)
    assert [m.label for m in done] == ["V1 first", "R a_caller", "R b_callee"]
    assert _function_result(blank_db, "f_caller") == 2
    # SET LOCAL: the session keeps checking bodies.
    assert blank_db.execute("SHOW check_function_bodies").fetchone()[0] == "on"


def test_triggers_in_a_repeatable_are_created_and_replaced(blank_db, tmp_path):
    """CREATE OR REPLACE TRIGGER on a partitioned table (its partitions follow); DROP + CREATE for a
    constraint trigger, which has no OR REPLACE."""
    _write(tmp_path, "V1__tables.sql", """
        CREATE TABLE t_parted (n int, day date) PARTITION BY RANGE (day);
        CREATE TABLE t_parted_1 PARTITION OF t_parted FOR VALUES FROM ('2024-01-01') TO ('2024-02-01');
        CREATE TABLE t_plain (n int);
        CREATE TABLE t_fired (what text);
    """)

    def triggers(events):
        return f"""
        CREATE OR REPLACE FUNCTION f_fired() RETURNS trigger LANGUAGE plpgsql
        AS $$ BEGIN INSERT INTO t_fired VALUES (TG_TABLE_NAME || ' ' || TG_OP); RETURN NULL; END $$;
        CREATE OR REPLACE TRIGGER t_parted_fired AFTER {events} ON t_parted
            FOR EACH ROW EXECUTE FUNCTION f_fired();
        DROP TRIGGER IF EXISTS t_plain_fired ON t_plain;
        CREATE CONSTRAINT TRIGGER t_plain_fired AFTER {events} ON t_plain
            FOR EACH ROW EXECUTE FUNCTION f_fired();
        """

    _write(tmp_path, "R__fired.sql", triggers("INSERT"))
    migrate.upgrade(blank_db, tmp_path)
    blank_db.execute("INSERT INTO t_parted VALUES (1, '2024-01-05')")
    blank_db.execute("INSERT INTO t_plain VALUES (1)")
    blank_db.execute("UPDATE t_parted SET n = 2")
    assert sorted(r[0] for r in blank_db.execute("SELECT what FROM t_fired")) == [
        "t_parted_1 INSERT", "t_plain INSERT"]

    _write(tmp_path, "R__fired.sql", triggers("INSERT OR UPDATE"))
    assert [m.label for m in migrate.upgrade(blank_db, tmp_path)] == ["R fired"]
    expected = "AFTER INSERT OR UPDATE ON public.{} {}FOR EACH ROW EXECUTE FUNCTION f_fired()"
    assert _trigger_defs(blank_db, "t_parted") == {
        "t_parted_fired": "CREATE TRIGGER t_parted_fired " + expected.format("t_parted", "")}
    assert _trigger_defs(blank_db, "t_parted_1") == {
        "t_parted_fired": "CREATE TRIGGER t_parted_fired " + expected.format("t_parted_1", "")}
    assert _trigger_defs(blank_db, "t_plain") == {
        "t_plain_fired": "CREATE CONSTRAINT TRIGGER t_plain_fired "
                         + expected.format("t_plain", "NOT DEFERRABLE INITIALLY IMMEDIATE ")}
    blank_db.execute("TRUNCATE t_fired")
    blank_db.execute("UPDATE t_parted SET n = 3")
    blank_db.execute("UPDATE t_plain SET n = 3")
    assert sorted(r[0] for r in blank_db.execute("SELECT what FROM t_fired")) == [
        "t_parted_1 UPDATE", "t_plain UPDATE"]


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


def test_each_project_trigger_is_defined_next_to_its_function(db):
    """Every trigger's live definition is in the R file that defines the function it fires."""
    # The function's schema always named (regproc omits public.), as the R files name it.
    rows = db.execute("SELECT tgname, format('%I.%I', n.nspname, p.proname), tgconstraint <> 0 FROM pg_trigger t "
                      "JOIN pg_proc p ON p.oid = t.tgfoid JOIN pg_namespace n ON n.oid = p.pronamespace "
                      "WHERE NOT tgisinternal AND tgparentid = 0 ORDER BY tgname").fetchall()
    assert rows, "the project has triggers"
    texts = {r.path.name: r.sql for r in migrate.discover_repeatables()}
    for trigger, function, constraint in rows:
        (home,) = [name for name, text in texts.items() if f"CREATE OR REPLACE FUNCTION {function}(" in text]
        statement = (rf"DROP TRIGGER IF EXISTS {trigger} ON [\w.]+;\s*CREATE CONSTRAINT TRIGGER {trigger}\s"
                     if constraint else rf"CREATE OR REPLACE TRIGGER {trigger}\s")
        assert re.search(statement + rf"[^;]*EXECUTE FUNCTION {re.escape(function)}\(\);", texts[home]), (
            f"{trigger} (fires {function}) is not restated in {home}")
