"""The dual write of an adoption (issue 23): the legacy trigger, sync, verify and cutover, through the CLI.

The legacy database is the test's second database, with the seed's ``sends``
table; the "old sender" writes rows and marks them sent with a provider
answer written by hand (docs/provider-contract.md#send). The end-to-end run
against the simulator is tests/adopt/test_adopt_end_to_end.py.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import date, datetime
from decimal import Decimal
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

from tests.support.environment import app_environ

from sms_pipeline import rates
from sms_pipeline.adopt import dual_write
from sms_pipeline.adopt.mapping import ColumnMap
from sms_pipeline.core import keys

SENDS = """
CREATE TABLE sends (id bigserial primary key, phone text, message text, sent boolean default false,
                    response text, created_at timestamptz default now())"""
TENANT = "acme"
ADOPTION = ("--tenant", TENANT, "--class", "transactional", "--sender", "ACMEIN", "--event-type", "legacy_send")
TXN = "6305583318236810379"
# The legacy DSN's password: the test server trusts local connections and ignores it, and it appears in no
# other text, so finding it in a command's output means the DSN leaked.
SECRET = "Zq7-legacy-dsn-secret-41d9"

Run = Callable[..., tuple[int, str, str]]


def answer(txn: str, accepted: str, invalid: str = "") -> str:
    """A send answer as the provider writes it, stored raw by the old sender."""
    return json.dumps({"status": "success", "statusCode": "200", "reason": "success", "msgId": "",
                       "transactionId": txn, "mobile": accepted, "invalidMobile": invalid,
                       "requestTime": "2026-12-02 10:00:00"})


class OldSender:
    """The legacy application: inserts a row, then records the send on it."""

    def __init__(self, conn: psycopg.Connection) -> None:
        self.conn = conn

    def queue(self, phone: str, message: str) -> int:
        return self.conn.execute("INSERT INTO sends (phone, message) VALUES (%s, %s) RETURNING id",
                                 (phone, message)).fetchone()[0]

    def record(self, legacy_id: int, response: str | None) -> None:
        self.conn.execute("UPDATE sends SET sent = true, response = %s WHERE id = %s", (response, legacy_id))

    def send(self, phone: str, message: str, response: str | None) -> int:
        legacy_id = self.queue(phone, message)
        self.record(legacy_id, response)
        return legacy_id


@pytest.fixture
def legacy(second_db_url: str) -> Iterator[psycopg.Connection]:
    with psycopg.connect(second_db_url, autocommit=True) as conn:
        conn.execute(SENDS)
        yield conn


@pytest.fixture
def legacy_url(second_db_url: str) -> str:
    """The legacy database's DSN with a password in it."""
    parts = urlsplit(second_db_url)
    host = parts.netloc.rpartition("@")[2]
    with_secret = urlunsplit(parts._replace(netloc=f"{parts.username}:{SECRET}@{host}"))
    assert SECRET in with_secret
    return with_secret


@pytest.fixture
def adopt(run: Run) -> Run:
    """``sms-pipeline adopt ...``, asserting the legacy DSN's password is in neither output."""

    def run_adopt(*args: str) -> tuple[int, str, str]:
        code, out, err = run("adopt", *args)
        assert SECRET not in out + err
        return code, out, err

    return run_adopt


def outbox_ids(legacy: psycopg.Connection) -> list[int]:
    return [r[0] for r in legacy.execute("SELECT legacy_id FROM sms_pipeline_adopt_outbox ORDER BY seq")]


def adopted(db: psycopg.Connection) -> dict[tuple[str, str], str]:
    """(adopted_from, recipient) -> state of the tenant's adopted rows."""
    rows = db.execute("SELECT adopted_from, recipient, state::text FROM msg.outbound_message "
                      "WHERE tenant_id = %s AND adopted_from IS NOT NULL", (TENANT,)).fetchall()
    return {(source, recipient): state for source, recipient, state in rows}


def test_dual_write_from_trigger_to_cutover(adopt: Run, legacy: psycopg.Connection, legacy_url: str,
                                            db: psycopg.Connection) -> None:
    at = ("--from-url", legacy_url, "--table", "sends")
    old = OldSender(legacy)
    before = old.send("919800000001", "sent before the trigger", answer("6305583318236810001", "919800000001"))

    # Expand: the trigger, twice (idempotent: one trigger, one outbox).
    assert adopt("install-trigger", *at)[0] == 0
    code, out, _ = adopt("install-trigger", *at)
    assert code == 0
    assert legacy.execute("SELECT count(*) FROM pg_trigger WHERE tgrelid = 'sends'::regclass "
                          "AND NOT tgisinternal").fetchone() == (1,)
    assert outbox_ids(legacy) == []  # rows sent before the trigger are the backfill's

    # The old sender keeps sending during the expand phase.
    listed = old.send("9876543210,9123456780", "Your order has shipped",
                      answer(TXN, "919876543210", invalid="919123456780"))
    lost = old.send("919700000002", "Answer lost", "")  # sent, no usable id: unknown
    unsent = old.queue("919700000003", "Never sent")
    two_steps = old.queue("919700000004", "Recorded in two statements")
    # A usable id stored before the flag counts as sent already (recorded), and the flag records it again.
    legacy.execute("UPDATE sends SET response = %s WHERE id = %s",
                   (answer("6305583318236810002", "919700000004"), two_steps))
    legacy.execute("UPDATE sends SET sent = true WHERE id = %s", (two_steps,))
    inserted_sent = legacy.execute(
        "INSERT INTO sends (phone, message, sent, response) VALUES (%s, %s, true, %s) RETURNING id",
        ("919700000005", "Inserted as sent", answer("6305583318236810003", "919700000005"))).fetchone()[0]
    legacy.execute("UPDATE sends SET message = 'edited' WHERE id = %s", (lost,))  # not about the send
    legacy.execute("UPDATE sends SET sent = true WHERE id = %s", (listed,))  # the send did not change
    assert outbox_ids(legacy) == [listed, lost, two_steps, two_steps, inserted_sent]

    # Sync moves them, with the backfill's states; nothing pending.
    code, out, err = adopt("sync", *at, *ADOPTION, "--once")
    assert code == 0, err
    assert outbox_ids(legacy) == []
    assert adopted(db) == {
        (f"public.sends:{listed}", "919876543210"): "submitted",
        (f"public.sends:{listed}", "919123456780"): "rejected",
        (f"public.sends:{lost}", "919700000002"): "unknown",
        (f"public.sends:{two_steps}", "919700000004"): "submitted",
        (f"public.sends:{inserted_sent}", "919700000005"): "submitted",
    }
    assert db.execute("SELECT provider_txn_id FROM msg.outbound_message WHERE adopted_from = %s AND state = "
                      "'submitted'", (f"public.sends:{listed}",)).fetchone() == (TXN,)

    # At least once: an entry recorded again (a crash between our commit and the delete reads it again) adopts
    # nothing twice.
    old.record(lost, "still nothing usable")
    assert outbox_ids(legacy) == [lost]
    code, out, _ = adopt("sync", *at, *ADOPTION, "--once")
    assert code == 0 and "already adopted=1" in out
    assert len(adopted(db)) == 5 and outbox_ids(legacy) == []

    # Verify: the row sent before the trigger differs until the backfill adopts it.
    code, out, err = adopt("verify", *at, "--tenant", TENANT)
    assert code == 1 and "DIFFERS" in out and "1 of 1 days differ" in err
    assert adopt("backfill", *at, *ADOPTION, "--pause-ms", "0")[0] == 0
    code, out, _ = adopt("verify", *at, "--tenant", TENANT)
    assert code == 0 and "no difference over 1 days" in out
    assert (f"public.sends:{before}", "919800000001") in adopted(db)

    # A send recorded but not yet synced shows as a difference, and the cutover names every step not done.
    late = old.send("919700000006", "Sent late", answer("6305583318236810004", "919700000006"))
    code, out, _ = adopt("verify", *at, "--tenant", TENANT)
    assert code == 1 and "DIFFERS" in out
    code, _, err = adopt("cutover", *at, "--tenant", TENANT, "--quiet-minutes", "60")
    assert code == 1
    failed = {line.split(": ")[2] for line in err.splitlines() if line.startswith("sms-pipeline: adopt cutover:")}
    assert failed == {"quiet", "outbox drained", "trigger removed", "verify clean"}

    # Contract: trigger removed, outbox drained, both sides equal; no quiet period asked.
    code, out, _ = adopt("remove-trigger", *at)
    assert code == 0 and "1 recorded sends wait" in out
    old.send("919700000007", "After the trigger went", answer("6305583318236810005", "919700000007"))
    assert outbox_ids(legacy) == [late]
    assert adopt("sync", *at, *ADOPTION, "--once")[0] == 0
    code, _, err = adopt("cutover", *at, "--tenant", TENANT, "--quiet-minutes", "0")
    assert code == 1 and "verify clean" in err and "outbox drained" not in err  # the send after the trigger
    assert adopt("backfill", *at, *ADOPTION, "--pause-ms", "0")[0] == 0
    code, out, err = adopt("cutover", *at, "--tenant", TENANT, "--quiet-minutes", "0")
    assert code == 0, err
    assert not db.execute("SELECT count(*) FROM msg.outbound_message WHERE state = 'pending'").fetchone()[0]

    # --include-unsent: the row never sent becomes pending, once.
    code, out, err = adopt("cutover", *at, "--tenant", TENANT, "--quiet-minutes", "0", "--include-unsent",
                         *ADOPTION[2:])
    assert code == 0, err
    assert "1 recipients enqueued as pending, 0 already there" in out
    code, out, _ = adopt("cutover", *at, "--tenant", TENANT, "--quiet-minutes", "0", "--include-unsent",
                       *ADOPTION[2:])
    assert code == 0 and "0 recipients enqueued as pending, 1 already there" in out
    pending = db.execute("SELECT recipient, business_key FROM msg.outbound_message WHERE state = 'pending'")
    assert pending.fetchall() == [("919700000003", keys.business_key_of_normalised(
        TENANT, "legacy_send", f"legacy:public.sends:{unsent}", "919700000003"))]


def test_install_trigger_quotes_mapped_names(adopt: Run, second_db_url: str, legacy_url: str, tmp_path) -> None:
    """Legacy names that need quoting (spaces, capitals, a schema) reach the trigger intact."""
    with psycopg.connect(second_db_url, autocommit=True) as legacy:
        legacy.execute('CREATE SCHEMA "Old App"')
        legacy.execute('CREATE TABLE "Old App"."Sends" ("Send Id" bigserial primary key, "To" text, body text, '
                       '"Done" boolean default false, "Answer" text, "At" timestamptz default now())')
        mapping = tmp_path / "map.toml"
        mapping.write_text('[columns]\nid = "Send Id"\nphone = "To"\nmessage = "body"\nsent = "Done"\n'
                           'response = "Answer"\ncreated_at = "At"\n', encoding="utf-8")
        at = ("--from-url", legacy_url, "--table", "Old App.Sends", "--map", str(mapping))
        assert adopt("install-trigger", *at)[0] == 0
        legacy_id = legacy.execute('INSERT INTO "Old App"."Sends" ("To", body) VALUES (%s, %s) RETURNING "Send Id"',
                                   ("919700000008", "hello")).fetchone()[0]
        legacy.execute('UPDATE "Old App"."Sends" SET "Done" = true, "Answer" = %s WHERE "Send Id" = %s',
                       (answer("6305583318236810006", "919700000008"), legacy_id))
        recorded = legacy.execute("SELECT legacy_id, phone, message, sent FROM sms_pipeline_adopt_outbox").fetchall()
        assert recorded == [(legacy_id, "919700000008", "hello", True)]
        assert adopt("remove-trigger", *at)[0] == 0
        assert legacy.execute("SELECT count(*) FROM pg_trigger WHERE tgname = 'sms_pipeline_adopt_capture'"
                              ).fetchone() == (0,)


def test_install_trigger_refuses_a_wrong_map_and_never_fails_the_old_sender(adopt: Run, legacy: psycopg.Connection,
                                                                          legacy_url: str, tmp_path) -> None:
    at = ("--from-url", legacy_url, "--table", "sends")
    mapping = tmp_path / "map.toml"
    mapping.write_text('[columns]\nphone = "msisdn"\n', encoding="utf-8")
    code, _, err = adopt("install-trigger", *at, "--map", str(mapping))
    assert code == 2 and "has no column msisdn" in err
    assert legacy.execute("SELECT to_regclass('sms_pipeline_adopt_outbox')").fetchone() == (None,)

    assert adopt("install-trigger", *at)[0] == 0
    # The old sender's role may not write the outbox: the function runs as its owner.
    role = f"sms_adopt_old_sender_{legacy.info.backend_pid}"  # roles are server-wide: one per test session
    legacy.execute(f"CREATE ROLE {role}")
    try:
        legacy.execute(f"GRANT SELECT, INSERT, UPDATE ON sends TO {role}")
        legacy.execute(f"GRANT USAGE ON SEQUENCE sends_id_seq TO {role}")
        legacy.execute(f"SET ROLE {role}")
        sent = OldSender(legacy).send("919700000009", "as the old sender", answer(TXN, "919700000009"))
        legacy.execute("RESET ROLE")
        assert outbox_ids(legacy) == [sent]
        # A copy the outbox refuses never fails the old sender's write (verify shows the gap).
        legacy.execute("ALTER TABLE sms_pipeline_adopt_outbox ADD CONSTRAINT refuse_all CHECK (false) NOT VALID")
        kept = OldSender(legacy).send("919700000010", "outbox refusing", answer(TXN, "919700000010"))
        assert legacy.execute("SELECT sent FROM sends WHERE id = %s", (kept,)).fetchone() == (True,)
        assert outbox_ids(legacy) == [sent]
    finally:
        legacy.execute("RESET ROLE")
        legacy.execute(f"DROP OWNED BY {role}")
        legacy.execute(f"DROP ROLE {role}")


def test_sync_loop_adopts_as_sends_arrive_and_stops_on_sigterm(adopt: Run, legacy: psycopg.Connection,
                                                               legacy_url: str, db: psycopg.Connection,
                                                               db_url: str, tmp_path) -> None:
    assert adopt("install-trigger", "--from-url", legacy_url, "--table", "sends")[0] == 0
    env = app_environ(SMS_PIPELINE_DATABASE_URL=db_url, SMS_PIPELINE_HOME=str(tmp_path / "home"))
    command = "import sys; from sms_pipeline.cli import main; sys.exit(main())"
    sync = subprocess.Popen([sys.executable, "-c", command, "adopt", "sync", "--from-url", legacy_url,
                             "--table", "sends", *ADOPTION, "--interval-s", "0.2"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        old = OldSender(legacy)
        sent = [old.send(f"91970000002{n}", f"loop {n}", answer(f"630558331823681100{n}", f"91970000002{n}"))
                for n in range(3)]
        deadline = time.monotonic() + 60
        while len(adopted(db)) < 3 and sync.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        sync.send_signal(signal.SIGTERM)
        out, err = sync.communicate(timeout=30)
    finally:
        if sync.poll() is None:
            sync.kill()
    assert sync.returncode == 0, err
    assert "SIGTERM: stopping after this batch" in err and "synced" in out and SECRET not in out + err
    assert set(adopted(db).values()) == {"submitted"}
    assert {source for source, _ in adopted(db)} == {f"public.sends:{legacy_id}" for legacy_id in sent}
    assert outbox_ids(legacy) == []


def load_prices(db: psycopg.Connection, today: date) -> None:
    """The card's price changed today: a row sent yesterday is billed at the old one."""
    card = ["tenant_id,channel,message_class,unit_price,currency,valid_from,valid_to",
            f"{TENANT},sms,transactional,0.20,INR,2026-01-01,{today.isoformat()}",
            f"{TENANT},sms,transactional,0.35,INR,{today.isoformat()},"]
    parsed, bad = rates.parse_rate_card(card)
    assert not bad
    rates.load_rates(db, parsed)


def test_sync_upgrades_an_answer_recorded_later_and_reports_a_second_send(
        adopt: Run, legacy: psycopg.Connection, legacy_url: str, db: psycopg.Connection, settings) -> None:
    at = ("--from-url", legacy_url, "--table", "sends")
    load_prices(db, datetime.now(settings.provider_timezone).date())
    assert adopt("install-trigger", *at)[0] == 0
    old = OldSender(legacy)
    late, resent, rejected = (old.queue(f"91970000003{n}", f"two statements {n}") for n in range(3))
    legacy.execute("UPDATE sends SET created_at = now() - interval '1 day'")
    # The old sender flags them sent; sync runs before it stores the answers: adopted unknown.
    legacy.execute("UPDATE sends SET sent = true")
    assert adopt("sync", *at, *ADOPTION, "--once")[0] == 0
    assert set(adopted(db).values()) == {"unknown"}

    old.record(late, answer("6305583318236810101", "919700000030"))
    old.record(resent, answer("6305583318236810102", "919700000031"))
    old.record(rejected, answer("6305583318236810103", "", invalid="919700000032"))
    code, out, err = adopt("sync", *at, *ADOPTION, "--once")
    assert code == 0, err
    assert "upgraded (unknown -> submitted)=2 sent again (not adopted)=0" in out
    assert "1 unknown recipients were later rejected" in err  # unknown -> rejected is not a legal move
    assert adopted(db) == {("public.sends:" + str(late), "919700000030"): "submitted",
                           ("public.sends:" + str(resent), "919700000031"): "submitted",
                           ("public.sends:" + str(rejected), "919700000032"): "unknown"}
    upgraded = db.execute("SELECT provider_txn_id, submitted_at = created_at, billable_units, cost, cost_currency "
                          "FROM msg.outbound_message WHERE adopted_from = %s", (f"public.sends:{late}",)).fetchone()
    assert upgraded == ("6305583318236810101", True, 1, Decimal("0.20"), "INR")  # the price at created_at

    # The old sender sends one row again, and another twice before a sync: the second ids are not adopted.
    twice = old.queue("919700000034", "sent twice before a sync")
    old.record(twice, answer("6305583318236810104", "919700000034"))
    old.record(twice, answer("6305583318236810105", "919700000034"))
    old.record(resent, answer("6305583318236810106", "919700000031"))
    code, out, err = adopt("sync", *at, *ADOPTION, "--once")
    assert code == 0, err
    assert "sent again (not adopted)=2" in out
    assert {line for line in err.splitlines() if "was sent again" in line} == {
        f"sms-pipeline: adopt sync: legacy id {legacy_id} was sent again: transaction <not printed> not adopted "
        "(verify shows it until a person settles it)" for legacy_id in (resent, twice)}
    assert db.execute("SELECT provider_txn_id FROM msg.outbound_message WHERE adopted_from = %s",
                      (f"public.sends:{twice}",)).fetchall() == [("6305583318236810104",)]

    # Verify sees both in the legacy table (the outbox is drained), and the cutover refuses.
    code, out, err = adopt("verify", *at, "--tenant", TENANT)
    assert code == 1 and "DIFFERS" in out
    assert {line.split(":")[2] for line in err.splitlines() if "is not adopted" in line} == {
        f" legacy id {resent}", f" legacy id {twice}"}
    assert "6305583318236810106" not in out + err and "6305583318236810105" not in out + err
    assert adopt("remove-trigger", *at)[0] == 0
    code, _, err = adopt("cutover", *at, "--tenant", TENANT, "--quiet-minutes", "0")
    assert code == 1 and "verify clean" in err


def test_verify_judges_rows_as_the_backfill_does(adopt: Run, legacy: psycopg.Connection, legacy_url: str) -> None:
    """A blank body and a number without its country code: verify counts what the backfill writes."""
    at = ("--from-url", legacy_url, "--table", "sends")
    old = OldSender(legacy)
    old.send("919700000040", "   ", answer("6305583318236810201", "919700000040"))
    old.send("9700000041,12345", "local number", answer("6305583318236810202", "919700000041"))
    assert adopt("backfill", *at, *ADOPTION, "--pause-ms", "0")[0] == 0
    code, out, err = adopt("verify", *at, "--tenant", TENANT)
    assert code == 0, out + err
    day = [line for line in out.splitlines() if line[:1].isdigit()]
    assert len(day) == 1 and day[0].split("|")[1].split() == ["1", "1", "1"] and day[0].split("|")[3].strip() == "2"


def test_install_trigger_gives_up_on_a_busy_legacy_table(legacy: psycopg.Connection, second_db_url: str) -> None:
    """CREATE TRIGGER waiting behind a long transaction would queue the old sender's writes behind it."""
    legacy_id = OldSender(legacy).queue("919700000050", "held")
    with psycopg.connect(second_db_url) as holder, psycopg.connect(second_db_url, autocommit=True) as installer:
        holder.execute("UPDATE sends SET message = 'held longer' WHERE id = %s", (legacy_id,))  # not committed
        started = time.monotonic()
        with pytest.raises(dual_write.LegacyTableBusy, match="the legacy table sends is busy; retry"):
            dual_write.install_trigger(installer, ColumnMap("sends"), lock_timeout="300ms")
        assert time.monotonic() - started < 10
        holder.rollback()
    assert legacy.execute("SELECT to_regclass('sms_pipeline_adopt_outbox')").fetchone() == (None,)


def test_sync_and_cutover_warn_when_the_outbox_falls_behind(adopt: Run, legacy: psycopg.Connection,
                                                            legacy_url: str, monkeypatch) -> None:
    at = ("--from-url", legacy_url, "--table", "sends")
    assert adopt("install-trigger", *at)[0] == 0
    old = OldSender(legacy)
    for n in range(3):
        old.send(f"91970000006{n}", f"backlog {n}", answer(f"630558331823681030{n}", f"91970000006{n}"))
    monkeypatch.setattr(dual_write, "BACKLOG_WARNING", 2)
    code, _, err = adopt("cutover", *at, "--tenant", TENANT)
    assert code == 1 and "3 recorded sends wait in sms_pipeline_adopt_outbox (more than 2): sync is falling " \
                         "behind" in err
    code, _, err = adopt("sync", *at, *ADOPTION, "--once")
    assert code == 0 and "sync is falling behind" in err
    code, _, err = adopt("sync", *at, *ADOPTION, "--once")
    assert code == 0 and "falling behind" not in err
