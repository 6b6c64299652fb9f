"""The hand-over claim of provider-side campaigns (``campaign_send_candidates.sql``,
docs/design.md#provider-side-campaigns): one campaign at a time, its rows in id order off an index, so a
claim reads about as many rows as it takes however large the campaign; rows another worker holds are
skipped, never a reason to find nothing while rows remain."""

from __future__ import annotations

import json
from datetime import timedelta
from zoneinfo import ZoneInfo

import psycopg
from psycopg import sql

from sms_pipeline.db import queries
from sms_pipeline.intake import campaigns
from sms_pipeline.send.campaigns import CAMPAIGN_CANDIDATES
from tests.support.campaigns import add_campaign
from tests.support.databases import plan_nodes
from tests.support.numbers import numbers
from tests.support.worker import INTAKE_POLICY, request

KOLKATA = ZoneInfo("Asia/Kolkata")
HANDOVER_INDEX = "outbound_message_campaign_handover_idx"


def _params(now, limit: int, message_class: str = "promotional") -> dict:
    return {"channel": "sms", "message_class": message_class, "now": now, "limit": limit}


def _index_parents(db: psycopg.Connection) -> dict[str, str]:
    """Partition index name -> the parent (partitioned) index it belongs to."""
    return dict(db.execute(
        """SELECT child.relname, parent.relname
             FROM pg_inherits i
             JOIN pg_class child ON child.oid = i.inhrelid
             JOIN pg_class parent ON parent.oid = i.inhparent
            WHERE parent.relkind = 'I'""").fetchall())


def _generic_plan(db: psycopg.Connection, params: dict) -> dict:
    """The claim's generic plan, run (EXPLAIN ANALYZE). EXPLAIN of the statement with bound values plans
    for those values, whatever plan_cache_mode says; only a prepared statement's EXECUTE honours it
    (Postgres 15 has no EXPLAIN (GENERIC_PLAN)). The caller's transaction holds the SET LOCAL."""
    text = queries.load(CAMPAIGN_CANDIDATES)
    for n, name in enumerate(params, start=1):
        text = text.replace(f"%({name})s", f"${n}")
    assert "%(" not in text
    queries.run(db, "set_local_generic_plan")
    db.execute(f"PREPARE handover (msg.message_channel, text, timestamptz, bigint) AS {text}")
    # Values as literals: a utility statement's bound parameters get no types. EXECUTE passes them to the
    # prepared statement as its parameters, planned without them.
    values = sql.SQL(", ").join(map(sql.Literal, params.values()))
    (plan,) = db.execute(sql.SQL("EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE handover ({})").format(values)
                         ).fetchone()[0]
    db.execute("DEALLOCATE handover")
    assert "$3" in json.dumps(plan), "planned with the values, not generic"  # `now` stays a parameter
    return plan


def test_a_claim_reads_about_its_limit_of_a_20000_row_campaign_and_takes_its_first_rows(db, clock):
    at = clock.now() + timedelta(days=1)
    wall = f"{at.astimezone(KOLKATA):%Y-%m-%d %H:%M}"
    lines = [json.dumps(request(n, message_class="promotional")).encode() for n in range(20_000)]
    created = campaigns.create(db, lines, name="big", at=wall, tz=KOLKATA, provider_side=True, clock=clock,
                               policy=INTAKE_POLICY)
    assert created.campaign is not None and created.campaign.messages == 20_000
    # A later campaign, and an earlier one cancelled: neither is read for this claim.
    add_campaign(db, clock, numbers(50, start=30_000), at=at + timedelta(hours=1), name="later")
    add_campaign(db, clock, numbers(50, start=40_000), at=at - timedelta(hours=1), name="cancelled")
    assert campaigns.cancel(db, campaigns.find(db, "cancelled"), clock=clock).done
    db.execute("ANALYZE msg.outbound_message")
    first = [row[0] for row in db.execute(
        "SELECT id FROM msg.outbound_message WHERE campaign_id = %s ORDER BY id LIMIT 1000",
        (created.campaign.id,)).fetchall()]

    params = _params(clock.now(), 1000)
    with db.transaction():  # as the claim runs it (claim.py): one generic plan, prepared
        queries.run(db, "set_local_generic_plan")
        taken = [row[0] for row in queries.run(db, CAMPAIGN_CANDIDATES, prepare=True, **params).fetchall()]
    with db.transaction():
        plan = _generic_plan(db, params)

    assert taken == first
    parents = _index_parents(db)
    scans = [n for n in plan_nodes(plan["Plan"]) if n.get("Relation Name", "").startswith("outbound_message")]
    assert {parents.get(n.get("Index Name"), n.get("Index Name")) for n in scans} == {HANDOVER_INDEX}
    read = sum((n["Actual Rows"] + n.get("Rows Removed by Filter", 0)) * n["Actual Loops"] for n in scans)
    # The limit, and at most a row per partition the merge looks at first: not the campaign's 20,000.
    assert 1000 <= read <= 1000 + len(scans)


def test_a_second_worker_takes_the_rows_the_first_does_not_hold_and_finds_nothing_only_when_none_remain(
        db, db_url, clock):
    at = clock.now() + timedelta(days=1)
    first = add_campaign(db, clock, numbers(20), at=at, name="first")
    second = add_campaign(db, clock, numbers(10, start=100), at=at + timedelta(hours=1), name="second")
    ids = dict(db.execute("SELECT campaign_id, array_agg(id ORDER BY id) FROM msg.outbound_message "
                          "GROUP BY campaign_id").fetchall())

    def claim(conn: psycopg.Connection, limit: int) -> list[int]:
        return [row[0] for row in queries.run(conn, CAMPAIGN_CANDIDATES, **_params(clock.now(), limit)).fetchall()]

    with psycopg.connect(db_url) as one, psycopg.connect(db_url) as two, psycopg.connect(db_url) as three:
        # Each holds its locks until its transaction ends, as a worker does from its claim to its commit.
        assert claim(one, 15) == ids[first][:15]
        # The first campaign's rows the first worker does not hold, then the next campaign's.
        assert claim(two, 15) == ids[first][15:] + ids[second]
        assert claim(three, 15) == []  # every row is held: nothing left to take
        one.rollback()  # the first worker lets go (its claim failed): its rows are free again
        assert claim(three, 15) == ids[first][:15]
        three.rollback()
        two.rollback()

        # One worker holds all that is left of the earliest campaign: the next takes the next campaign's rows.
        assert claim(one, 20) == ids[first]
        assert claim(two, 20) == ids[second]
