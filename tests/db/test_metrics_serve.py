"""``sms-pipeline metrics serve`` scraped over HTTP against a database with known rows: every gauge equals
its count in SQL, and a scrape whose query fails answers ``sms_pipeline_database_up 0``, never an error page."""

from __future__ import annotations

import signal
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from sms_pipeline.core.provider_time import day_bounds
from tests.support.environment import app_environ
from tests.support.metrics import CLASSES, STATES, assert_fixed_labels, samples, scrape, value
from tests.support.worker import FOREIGN_NUMBER, enqueue, make_worker, request

COMMAND = "import sys; from sms_pipeline.cli import main; sys.exit(main())"
ZONE = ZoneInfo("Asia/Kolkata")
REAL_START = datetime.now(UTC).replace(microsecond=0)
# Seconds an age may move between the test's reading and the exporter's.
AGE_SLACK_S = 15


@pytest.fixture
def start_time() -> datetime:
    """A day and a quarter ago: the first messages fall outside the exporter's 24-hour window."""
    return REAL_START - timedelta(hours=30)


def _known_rows(db, db_url, sim, client, clock) -> None:
    # Outside the window: sent 30 h ago.
    enqueue(db, [request(1), request(2), request(3, recipient=FOREIGN_NUMBER)], clock)
    make_worker(db_url, client, clock).run(once=True)
    # Inside it: sent 2 h ago, transactional and promotional; one answered 5xx (unknown).
    clock.set(REAL_START - timedelta(hours=2))
    enqueue(db, [request(10), request(11), request(12, message_class="promotional", body="Sale today"),
                 request(13, message_class="promotional", body="Sale today")], clock)
    make_worker(db_url, client, clock).run(once=True)
    sim.faults.update({"http_5xx": 1.0})
    enqueue(db, [request(20, body="Your parcel is late")], clock)
    make_worker(db_url, client, clock).run(once=True)
    # Waiting: two due an hour ago, one scheduled for tomorrow.
    clock.set(REAL_START - timedelta(hours=1))
    enqueue(db, [request(30), request(31),
                 request(32, scheduled_for=(REAL_START + timedelta(days=1)).isoformat())], clock)

    # Receipt events by source and outcome, stored an hour ago; one stored 30 h ago (outside the window).
    db.execute("SELECT dlr.ensure_partitions(now() - interval '30 hours')")
    for n, (source, outcome, word, stored_ago) in enumerate([
            ("day_report", "delivered", "DELIVRD", "1 hour"), ("day_report", "failed", "UNDELIV", "1 hour"),
            ("push", "delivered", "DELIVRD", "1 hour"), ("getdlr", "intermediate", "ACCEPTD", "1 hour"),
            ("txn_report", "expired", "EXPIRED", "1 hour"), ("day_report", "delivered", "DELIVRD", "30 hours")]):
        db.execute("""INSERT INTO dlr.delivery_receipts (provider_message_id, status_word, raw_status, outcome,
                          provider_submit_at, submit_month, source, first_seen_at)
                      VALUES (%(id)s, %(word)s, %(word)s, %(outcome)s, now() - interval '31 hours',
                              dlr.submit_month(now() - interval '31 hours'), %(source)s,
                              now() - %(ago)s::interval)""",
                   {"id": f"9{n:05}", "word": word, "outcome": outcome, "source": source, "ago": stored_ago})
    # Two pushes waiting ten minutes, one reconciled.
    for msg_id, reconciled in (("8001", None), ("8002", None), ("8003", "now()")):
        db.execute(f"""INSERT INTO dlr.receipt_push_inbox (provider_message_id, error_code, recipient,
                           provider_submit_at, report_date, received_at, reconciled_at)
                       VALUES (%s, '000', '919876543210', now() - interval '1 hour', current_date,
                               clock_timestamp() - interval '10 minutes', {reconciled or 'NULL'})""", (msg_id,))
    # The day report of two days ago loaded; yesterday's downloaded but not loaded.
    for days_ago, loaded in ((2, True), (1, False)):
        db.execute("""INSERT INTO dlr.report_checkpoints (report_kind, report_date, checksum, rows, bytes,
                          fetched_at, loaded_at)
                      VALUES ('day', %s, 'c', 0, 0, now(), CASE WHEN %s THEN now() END)""",
                   (REAL_START.astimezone(ZONE).date() - timedelta(days=days_ago), loaded))


def _expected(db) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every gauge's value, counted in SQL the plain way (the test's rows were all created at their attempt time)."""
    expected: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    recent = dict(((c, s), n) for c, s, n in db.execute(
        """SELECT message_class, state::text, count(*) FROM msg.outbound_message
            WHERE created_at >= now() - interval '24 hours' GROUP BY 1, 2"""))
    queue = dict(((c, s), n) for c, s, n in db.execute(
        "SELECT message_class, state::text, count(*) FROM msg.outbound_message GROUP BY 1, 2"))
    due = dict(db.execute("""SELECT message_class, count(*) FROM msg.outbound_message
                              WHERE state = 'pending' AND COALESCE(scheduled_for, created_at) <= now() GROUP BY 1"""))
    for cls in CLASSES:
        for state in STATES:
            expected[("sms_pipeline_messages", (("class", cls), ("state", state)))] = recent.get((cls, state), 0)
        for state in ("pending", "claimed", "sending", "unknown"):
            expected[("sms_pipeline_queue_messages", (("class", cls), ("state", state)))] = queue.get((cls, state), 0)
        expected[("sms_pipeline_queue_depth", (("class", cls),))] = due.get(cls, 0)
    receipts = dict(((s, o), n) for s, o, n in db.execute(
        """SELECT source, outcome, count(*) FROM dlr.delivery_receipts
            WHERE first_seen_at >= now() - interval '24 hours' GROUP BY 1, 2"""))
    for source in ("day_report", "txn_report", "getdlr", "push"):
        for outcome in ("delivered", "failed", "expired", "intermediate", "unmapped"):
            expected[("sms_pipeline_receipts", (("outcome", outcome), ("source", source)))] = \
                receipts.get((source, outcome), 0)
    expected[("sms_pipeline_push_inbox_waiting", ())] = 2
    expected[("sms_pipeline_database_up", ())] = 1
    return expected


def test_metrics_serve_reads_every_gauge_from_the_database_at_scrape_time(db, db_url, sim, client, clock, tmp_path):
    _known_rows(db, db_url, sim, client, clock)
    env = app_environ(SMS_PIPELINE_DATABASE_URL=db_url, SMS_PIPELINE_HOME=str(tmp_path / "home"),
                      SMS_PROVIDER_TIMEZONE=ZONE.key)
    server = subprocess.Popen([sys.executable, "-c", COMMAND, "metrics", "serve", "--host", "127.0.0.1",
                               "--port", "0"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = server.stdout.readline().split()[1]
        assert url.startswith("http://127.0.0.1:") and url.endswith("/metrics"), url

        text = scrape(url)
        found = samples(text)
        now = datetime.now(UTC)
        assert {key: value(found, key[0], **{k + "_": v for k, v in key[1]}) for key in _expected(db)} \
            == _expected(db)
        assert_fixed_labels(text)
        # What the rows say, not only what SQL says: the old rows are out of the window, the 5xx row unknown.
        assert value(found, "sms_pipeline_messages", class_="transactional", state="rejected") == 0
        assert value(found, "sms_pipeline_messages", class_="transactional", state="submitted") == 2
        assert value(found, "sms_pipeline_messages", class_="promotional", state="submitted") == 2
        assert value(found, "sms_pipeline_queue_messages", class_="transactional", state="unknown") == 1
        assert value(found, "sms_pipeline_queue_messages", class_="transactional", state="pending") == 3
        assert value(found, "sms_pipeline_queue_depth", class_="transactional") == 2
        assert value(found, "sms_pipeline_receipts", source="day_report", outcome="delivered") == 1
        # Ages: the due rows waited an hour, the newest receipt an hour, the oldest push ten minutes, and the
        # newest loaded day report ended (provider midnight) more than a day ago.
        for name, labels, expected_s in (
                ("sms_pipeline_queue_oldest_pending_age_seconds", {"class_": "transactional"},
                 (now - (REAL_START - timedelta(hours=1))).total_seconds()),
                ("sms_pipeline_receipts_last_stored_age_seconds", {}, 3600),
                ("sms_pipeline_push_inbox_oldest_wait_seconds", {}, 600),
                ("sms_pipeline_day_report_newest_day_age_seconds", {},
                 (now - day_bounds(REAL_START.astimezone(ZONE).date() - timedelta(days=2), ZONE)[1]).total_seconds())):
            assert abs(value(found, name, **labels) - expected_s) < AGE_SLACK_S, name
        assert value(found, "sms_pipeline_queue_oldest_pending_age_seconds", class_="otp") == 0
        assert "919876543210" not in text and "tenant-a" not in text and "SGCSMS" not in text

        # A query that fails (a table it reads is gone): 200, the failure gauge, and no reading at all.
        db.execute("ALTER TABLE dlr.report_checkpoints RENAME TO report_checkpoints_away")
        failed = samples(scrape(url))
        assert value(failed, "sms_pipeline_database_up") == 0
        assert not any(name.startswith("sms_pipeline_queue") for name, _ in failed)
        db.execute("ALTER TABLE dlr.report_checkpoints_away RENAME TO report_checkpoints")
        assert value(samples(scrape(url)), "sms_pipeline_database_up") == 1
    finally:
        server.send_signal(signal.SIGTERM)
        _, err = server.communicate(timeout=30)
    assert server.returncode == 0, err


def test_a_database_that_cannot_be_reached_is_database_up_0_not_an_error_page():
    from prometheus_client import CollectorRegistry, generate_latest

    from sms_pipeline.core.clock import RealClock
    from sms_pipeline.db import connection
    from sms_pipeline.db.metrics import DatabaseCollector

    registry = CollectorRegistry()
    # Port 9 (discard) refuses the connection at once, as a stopped server does.
    registry.register(DatabaseCollector(
        lambda: connection.connect_url("postgresql://postgres@127.0.0.1:9/sms_pipeline", connect_timeout_s=1),
        clock=RealClock(), zone=ZONE))
    found = samples(generate_latest(registry).decode())
    assert value(found, "sms_pipeline_database_up") == 0
    assert not any(name.startswith("sms_pipeline_queue") for name, _ in found)
