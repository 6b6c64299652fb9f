"""A provider-side campaign row's attempt time is its scheduled time (msg.attempt_at, V80;
docs/design.md#proof-of-non-submission, docs/design.md#correlation).

The worker hands the rows over on day H (claimed_at on H) for a time on S = H + 2; when the hand-over
cannot be mapped (campaign/read refused) they become `unknown` (campaign_unmapped) without a transaction
id. Through the real worker, simulator and daily assets: H's reconciliation leaves them alone, S's proves
the ones S's complete report does not show and matches (by reconstruction) the ones it shows. And the
reconcile queries still run on the indexes rebuilt on the function.

A throttled provider sends a large campaign over hours after its time (the simulator's
late_scheduled_send_s): a handed-over row's line is looked for up to SMS_PIPELINE_CAMPAIGN_SEND_SPREAD_S
after its time, and its proof waits for the complete reports that far; an ordinary row keeps ± the window.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from zoneinfo import ZoneInfo

import psycopg
import pytest

from sms_pipeline.core.provider_time import local_date
from sms_pipeline.db import queries
from sms_pipeline.orchestration.schedules import daily_days
from sms_pipeline.provider.client import ProviderClient
from sms_pipeline.settings import Settings
from tests.support.campaigns import add_campaign, campaign_worker
from tests.support.databases import reconciliation_planner
from tests.support.numbers import numbers
from tests.support.reconcile import world_for
from tests.support.rows import ensure_partitions


def _reconcile(world) -> None:
    """What the daily schedule runs at the clock's time: yesterday and the lookback days."""
    first, last = daily_days(world.clock.now(), world.tz, world.settings.partition_start,
                             world.settings.lookback_days)
    world.run_daily(first, last)


def _hand_over_unmapped(world, recipients: list[str], *, at: datetime, name: str, drop: bool = False,
                        late: timedelta = timedelta(0)) -> None:
    """A provider-side campaign handed over now whose campaign/read is refused: its rows go `unknown`
    (campaign_unmapped, no transaction id); ``drop``: the provider then silently loses its transaction;
    ``late``: the provider sends it that long after its time."""
    add_campaign(world.conn, world.clock, recipients, at=at, name=name, zone=world.tz)
    world.sim.faults.update({"rate_limit_report": 1.0, "drop_scheduled_transaction": 1.0 if drop else 0.0,
                             "late_scheduled_send_s": int(late.total_seconds())})
    try:
        with ProviderClient.from_settings(world.settings, backoff_s=0.01, max_retries=0) as client:
            summary = campaign_worker(world.db_url, client, world.clock, zone=world.tz.key).run(once=True)
    finally:
        world.sim.faults.update({"rate_limit_report": 0.0, "drop_scheduled_transaction": 0.0,
                                 "late_scheduled_send_s": 0})
    assert (summary.requests, summary.unknown, summary.scheduled) == (1, len(recipients), 0)


def _rows(world, recipients: list[str]) -> list[dict]:
    cur = world.conn.execute(
        """SELECT recipient, state::text, state_reason, provider_txn_id, provider_message_id,
                  correlation_result::text, correlation_evidence::text, claimed_at, scheduled_for, submitted_at,
                  billable_units, cost
             FROM msg.outbound_message WHERE recipient = ANY(%s) ORDER BY id""", (recipients,))
    names = [c.name for c in cur.description]
    return [dict(zip(names, row)) for row in cur.fetchall()]



def _assert_found_and_billed(world, recipients, sent_at) -> None:
    """Each row matched to its own msgId by reconstruction, moved on from unknown, billed at ``sent_at``."""
    for row in _rows(world, recipients):
        msg_id = world.msg_id_of(row["recipient"])
        assert (row["provider_message_id"], row["correlation_result"], row["correlation_evidence"]) == (
            msg_id, "matched", "reconstruction")
        assert row["state"] == world.expected_state(msg_id, world.clock.now()) != "unknown"
        assert row["state_reason"] != "not_submitted"
        assert (row["submitted_at"], row["billable_units"], row["cost"]) == (sent_at, 1, Decimal("0.0079"))

def test_a_handed_over_unknown_row_is_proved_or_matched_by_its_scheduled_days_report(world):
    hand_over = world.day
    due = hand_over + timedelta(days=2)
    lost, sent, ordinary = numbers(4, start=0), numbers(3, start=10), numbers(2, start=20)

    # An ordinary ambiguous send of H: H's reconciliation proves it, so H's proof does run.
    world.sim.faults.update({"http_5xx": 1.0})
    try:
        world.send(ordinary, message_class="promotional")  # promotional: proof re-sends nothing
    finally:
        world.sim.faults.update({"http_5xx": 0.0})
    _hand_over_unmapped(world, lost, at=world.at(due, 14), name="lost", drop=True)
    _hand_over_unmapped(world, sent, at=world.at(due, 15), name="sent", drop=False)
    for row in _rows(world, lost + sent):
        assert (row["state"], row["state_reason"], row["provider_txn_id"]) == ("unknown", "campaign_unmapped", None)
        assert row["claimed_at"] == world.at(hand_over, 10) and row["scheduled_for"] > row["claimed_at"]

    # H's complete report (downloaded after close + grace), the provider still holding the campaigns:
    # it proves H's own unknown row and leaves the handed-over ones alone, whose day is S.
    world.move_to(world.at(hand_over + timedelta(days=2), 2, 30))
    _reconcile(world)
    assert {(r["state"], r["state_reason"]) for r in _rows(world, ordinary)} == {("failed", "not_submitted")}
    assert {(r["state"], r["correlation_result"]) for r in _rows(world, lost + sent)} == {("unknown", None)}

    # S's complete report: the lost campaign is not on it (proved, never billed); the sent one is, under
    # the split transaction's uuId that no row carries, so reconstruction around S's time finds it.
    world.move_to(world.at(due + timedelta(days=2), 2, 30))
    _reconcile(world)
    for row in _rows(world, lost):
        assert (row["state"], row["state_reason"], row["correlation_result"]) == (
            "failed", "not_submitted", "not_found")
        assert (row["provider_message_id"], row["submitted_at"], row["billable_units"], row["cost"]) == (
            None, None, None, None)
    for row in _rows(world, sent):
        msg_id = world.msg_id_of(row["recipient"])
        assert (row["provider_message_id"], row["correlation_result"], row["correlation_evidence"]) == (
            msg_id, "matched", "reconstruction")
        assert row["state"] == world.expected_state(msg_id, world.clock.now()) != "unknown"
        # billed as reconciliation bills a confirmed submission: at the provider's submit time
        assert (row["submitted_at"], row["billable_units"], row["cost"]) == (
            world.at(due, 15), 1, Decimal("0.0079"))
    assert not [e for e in world.ledger() if e.mobile in lost]  # the provider really never sent them


SPREAD = timedelta(seconds=Settings.model_fields["campaign_send_spread_s"].default)


def test_a_handed_over_row_sent_20_minutes_late_is_matched_and_an_ordinary_row_20_minutes_off_is_not(world):
    hand_over = world.day
    due = hand_over + timedelta(days=2)
    late, ordinary = numbers(3, start=30), numbers(1, start=40)

    # An ordinary row whose request reached the provider 20 minutes after its claim (its answer lost,
    # no transaction id): the provider's line lies 20 minutes after the row's attempt time.
    world.sim.faults.update({"accept_then_drop": 1.0})
    try:
        (ordinary_key,) = world.send(ordinary, message_class="promotional")  # promotional: proof re-sends nothing
    finally:
        world.sim.faults.update({"accept_then_drop": 0.0})
    world.conn.execute("UPDATE msg.outbound_message SET claimed_at = claimed_at - interval '20 minutes' "
                       "WHERE id = %s AND created_at = %s", ordinary_key)
    _hand_over_unmapped(world, late, at=world.at(due, 15), name="late", late=timedelta(minutes=20))

    # H's complete report: the ordinary row's line is 20 minutes off, outside ± the window: not matched.
    world.move_to(world.at(hand_over + timedelta(days=2), 2, 30))
    _reconcile(world)
    (row,) = _rows(world, ordinary)
    assert (row["provider_message_id"], row["correlation_result"]) == (None, "not_found")
    assert world.msg_id_of(ordinary[0])  # though the provider sent it
    assert {(r["state"], r["correlation_result"]) for r in _rows(world, late)} == {("unknown", None)}

    # S's complete report shows the campaign 20 minutes after its time: matched, billed then, never proved.
    world.move_to(world.at(due + timedelta(days=2), 2, 30))
    _reconcile(world)
    _assert_found_and_billed(world, late, world.at(due, 15, 20))


def test_two_late_campaigns_to_one_number_within_the_spread_are_ambiguous_never_guessed(world):
    due = world.day + timedelta(days=2)
    (number,) = numbers(1, start=50)
    _hand_over_unmapped(world, [number], at=world.at(due, 14), name="first", late=timedelta(minutes=20))
    _hand_over_unmapped(world, [number], at=world.at(due, 15), name="second", late=timedelta(minutes=20))

    # The 15:20 line lies in both rows' spread (the 14:00 row is a candidate of both lines): both rows are
    # ambiguous, neither matched nor proved.
    world.move_to(world.at(due + timedelta(days=2), 2, 30))
    _reconcile(world)
    rows = _rows(world, [number])
    assert [(r["state"], r["correlation_result"], r["provider_message_id"]) for r in rows] == [
        ("unknown", "ambiguous", None)] * 2
    window_ms = {w for (w,) in world.conn.execute(
        "SELECT correlation_window_ms FROM msg.outbound_message WHERE recipient = %s", (number,))}
    assert window_ms == {SPREAD // timedelta(milliseconds=1)}  # how far reconstruction looked for them


def test_a_handed_over_row_whose_line_is_beyond_the_spread_is_proved_only_once_its_reports_are_complete(world):
    due = world.day + timedelta(days=2)
    beyond = numbers(2, start=60)
    # Due at 20:00 of S, sent at 03:00 of S + 1: its spread (to 02:00 of S + 1) reaches into S + 1.
    _hand_over_unmapped(world, beyond, at=world.at(due, 20), name="beyond", late=SPREAD + timedelta(hours=1))

    # S's complete report, S + 1's not yet: not found within the spread, not proved (S + 1 may still show it).
    world.move_to(world.at(due + timedelta(days=2), 2, 30))
    _reconcile(world)
    for row in _rows(world, beyond):
        assert (row["state"], row["correlation_result"], row["provider_message_id"]) == ("unknown", "not_found", None)
    window_ms = {w for (w,) in world.conn.execute(
        "SELECT correlation_window_ms FROM msg.outbound_message WHERE recipient = ANY(%s)", (beyond,))}
    assert window_ms == {SPREAD // timedelta(milliseconds=1)}

    # S + 1's complete report, loaded by the run that reconciles S first: S + 1's lines are not matched
    # when S's pass runs, so S's pass proves nothing; S + 1's pass, once its lines are matched, retries S's
    # proof: the line, 7 hours after the row's time, is beyond the spread; proved in that same run.
    world.move_to(world.at(due + timedelta(days=3), 2, 30))
    _reconcile(world)
    for row in _rows(world, beyond):
        assert (row["state"], row["state_reason"], row["correlation_result"]) == (
            "failed", "not_submitted", "not_found")


@pytest.fixture
def week_old_world(db_url, tmp_path):
    """A world a day further back than the default: the test below runs the daily job of day + 6 at 02:30
    provider-local, which with the default (six days back) is still ahead of real time between the provider's
    midnight and 02:30 there (18:30-21:00 UTC for Asia/Kolkata)."""
    yield from world_for(db_url, tmp_path,
                         day=local_date(datetime.now(UTC), ZoneInfo("Asia/Kolkata")) - timedelta(days=7))


def test_a_handed_over_row_sent_after_midnight_waits_for_the_following_days_reconciliation(week_old_world):
    world = week_old_world
    due = world.day + timedelta(days=2)
    after_midnight = numbers(2, start=70)
    # Due at 22:00 of S, sent at 01:00 of S + 1, within the spread: its line is on S + 1's report.
    _hand_over_unmapped(world, after_midnight, at=world.at(due, 22), name="midnight", late=timedelta(hours=3))

    # The daily run of S + 2 did not happen (an outage): the first run to download S + 1's report, the one
    # at S + 3, finds it complete already. It downloads every day, then reconciles them in ascending order:
    # S's pass comes first, when S + 1's report is complete but its lines are not matched yet, so S's proof
    # must wait; S + 1's pass then finds the row (reconstruction of S + 1's line against S's row). The next
    # day's run, re-running S after S + 1's reconciliation, keeps it.
    for run_day in (due + timedelta(days=3), due + timedelta(days=4)):
        world.move_to(world.at(run_day, 2, 30))
        _reconcile(world)
        _assert_found_and_billed(world, after_midnight, world.at(due + timedelta(days=1), 1))
        window_ms = {w for (w,) in world.conn.execute(
            "SELECT correlation_window_ms FROM msg.outbound_message WHERE recipient = ANY(%s)", (after_midnight,))}
        assert window_ms == {SPREAD // timedelta(milliseconds=1)}  # how far reconstruction looked for them
        assert not world.conn.execute(
            "SELECT 1 FROM dlr.delivery_receipts WHERE provider_message_id = ANY(%s) AND message_id IS NULL",
            ([world.msg_id_of(n) for n in after_midnight],)).fetchall()  # no orphaned line


# ----- the plans ---------------------------------------------------------------

NOW = datetime.now(UTC).replace(microsecond=0)
DAY_START, DAY_END = NOW - timedelta(days=3), NOW - timedelta(days=2)

# 40 days of traffic, 2,000 rows a day; one in fifty unknown, one in five without a transaction id, one in
# a hundred handed over a day ahead of its time.
SEED = """
INSERT INTO msg.outbound_message
    (business_key, tenant_id, channel, message_class, recipient, sender_id, body, encoding, segments,
     state, provider_txn_id, provider_message_id, created_at, claimed_at, scheduled_for, submitted_at,
     billable_units, updated_at)
SELECT 'plan-' || g, 'tenant-a', 'sms', 'promotional', '9198' || lpad((g %% 20000)::text, 8, '0'), 'SGCSMS',
       'body', 'GSM7', 1, CASE WHEN unknown THEN 'unknown' ELSE 'delivered' END::msg.message_state,
       CASE WHEN g %% 5 <> 0 THEN 'txn-' || (g / 50) END, CASE WHEN NOT unknown THEN 'm' || g END,
       at - interval '1 second', at, CASE WHEN g %% 100 = 0 THEN at + interval '1 day' END,
       CASE WHEN NOT unknown THEN at END, CASE WHEN NOT unknown THEN 1 END, at
  FROM (SELECT g, g %% 50 = 0 AS unknown, %(now)s::timestamptz - g * interval '43.2 seconds' AS at
          FROM generate_series(1, 80000) AS g) s
"""


def _index_parents(conn: psycopg.Connection) -> dict[str, str]:
    return dict(conn.execute(
        """SELECT child.relname, parent.relname FROM pg_inherits i
             JOIN pg_class child ON child.oid = i.inhrelid JOIN pg_class parent ON parent.oid = i.inhparent
            WHERE parent.relkind = 'I'""").fetchall())


def _indexes(conn: psycopg.Connection, query: str, params: dict) -> set[str]:
    """The parent indexes the plan of ``query`` scans."""
    (plan,) = conn.execute("EXPLAIN (FORMAT JSON) " + query, params).fetchone()[0]
    parents, found, nodes = _index_parents(conn), set(), [plan["Plan"]]
    while nodes:
        node = nodes.pop()
        nodes.extend(node.get("Plans", []))
        if "Index Name" in node:
            found.add(parents.get(node["Index Name"], node["Index Name"]))
    return found


def _day_loaded(conn: psycopg.Connection) -> None:
    """The work tables the correlation passes of a loaded day leave: 300 report rows without a match."""
    conn.execute(
        """CREATE UNLOGGED TABLE reconcile_work.reconcile_uncorrelated AS
           SELECT 'msg-' || g AS msg_id, NULL::text AS txn_id, '9198' || lpad((g * 61 %% 20000)::text, 8, '0')
                      AS recipient, 'SGCSMS'::text AS sender_name,
                  %(start)s::timestamptz + g * interval '4 minutes' AS submit_at, NULL::timestamptz AS alt_submit_at,
                  NULL::bytea AS fingerprint
             FROM generate_series(1, 300) AS g""", {"start": DAY_START})
    conn.execute("CREATE UNLOGGED TABLE reconcile_work.reconcile_pairs_by_msgid "
                 "(msg_id text, message_id bigint, message_created_at timestamptz, pass smallint)")
    for table in ("reconcile_pairs_by_transaction", "reconcile_decisions"):
        conn.execute(f"CREATE UNLOGGED TABLE reconcile_work.{table} (LIKE reconcile_work.reconcile_pairs_by_msgid)")
    for table in ("reconcile_uncorrelated", "reconcile_pairs_by_msgid", "reconcile_pairs_by_transaction",
                  "reconcile_decisions"):
        conn.execute(f"ANALYZE reconcile_work.{table}")


@pytest.mark.parametrize("plan_cache_mode", ["auto", "force_generic_plan"])
def test_the_reconcile_queries_run_on_the_indexes_built_on_the_attempt_time(db, plan_cache_mode):
    ensure_partitions(db, NOW - timedelta(days=70), 4)
    db.execute(SEED, {"now": NOW})
    db.execute("ANALYZE msg.outbound_message")
    _day_loaded(db)
    day = {"day_start": DAY_START, "day_end": DAY_END, "now": NOW}
    expected = [
        ("reconcile_correlate_by_reconstruction", "outbound_message_correlate_idx",
         {"window": timedelta(seconds=90), "spread": timedelta(hours=6)}),
        ("reconcile_correlate_not_found_rows", "outbound_message_open_idx",
         {**day, "window_ms": 90_000, "spread_ms": 21_600_000}),
        ("reconcile_non_submission", "outbound_message_open_idx",
         {**day, "spread": timedelta(hours=6), "complete_until": DAY_END}),
        ("reconcile_resend_candidates", "outbound_message_attempt_at_idx",
         {**day, "classes": ["transactional"], "created_after": DAY_START - timedelta(days=3)}),
    ]  # fmt: skip
    db.execute(f"SET plan_cache_mode = {plan_cache_mode}")
    try:
        for name, index, params in expected:
            with reconciliation_planner(db, name):
                assert index in _indexes(db, queries.load(name), params), name
    finally:
        db.execute("RESET plan_cache_mode")
