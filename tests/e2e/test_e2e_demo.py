"""The demo, run as a person runs it, and its figures checked against the database."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from decimal import Decimal
from pathlib import Path

import psycopg
import pytest

from tests.support.environment import TEXT_HMAC_KEY
from sms_pipeline.db import connection

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def _run_demo(env: dict[str, str], summary: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "sms_pipeline.cli", "demo", "--days", "2", "--messages-per-day", "240",
         "--summary-json", str(summary), *extra],
        env=env, capture_output=True, text=True, timeout=900,
    )


@pytest.fixture
def demo_env(db_url: str, pg_admin_url: str, tmp_path: Path):
    dagster_db = f"dagster_{uuid.uuid4().hex[:10]}"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SMS_PIPELINE_", "SMS_PROVIDER_", "DAGSTER_"))}
    env.update(SMS_PIPELINE_HOME=str(tmp_path / "home"), SMS_PIPELINE_DATABASE_URL=db_url,
               SMS_PIPELINE_TEXT_HMAC_KEY=TEXT_HMAC_KEY,
               SMS_PIPELINE_DAGSTER_DATABASE=dagster_db)
    yield env
    with connection.connect_url(pg_admin_url, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{dagster_db}" WITH (FORCE)')


def test_demo_figures_agree_with_the_database_and_the_provider(demo_env, db_url, tmp_path):
    first = _run_demo(demo_env, tmp_path / "first.json")
    assert first.returncode == 0, first.stderr[-3000:]
    figures = json.loads((tmp_path / "first.json").read_text())
    assert len(figures["days"]) == 2 and not figures["already_there"]
    assert all(day["sent"] > 0 and day["delivered"] > 0 for day in figures["days"])
    # The final run's checks: the healthy data passes them; what fails is a warning the demo leaves on purpose.
    from sms_pipeline.demo.run import LEFT_FOR_A_PERSON
    assert figures["checks_passed"] >= 20
    assert {c["severity"] for c in figures["checks_failed"]} <= {"WARN"}
    assert {c["check"] for c in figures["checks_failed"]} <= set(LEFT_FOR_A_PERSON)
    assert "asset checks of the last run" in first.stdout

    with psycopg.connect(db_url) as conn:
        row_cost, row_units = conn.execute(
            "SELECT sum(cost), sum(billable_units) FROM msg.outbound_message WHERE submitted_at IS NOT NULL"
        ).fetchone()
        mart_cost, mart_units = conn.execute("SELECT sum(cost), sum(billable_units) FROM marts.cost_daily").fetchone()
        # Each billed row priced by the rate card valid at its submission, recomputed independently.
        rated = conn.execute(
            """SELECT sum(m.billable_units * r.unit_price)
                 FROM msg.outbound_message m
                 JOIN msg.rate_card r ON (r.tenant_id, r.channel::text, r.message_class)
                                        = (m.tenant_id, m.channel::text, m.message_class)
                WHERE m.submitted_at IS NOT NULL"""
        ).fetchone()[0]
        tieout_gap = conn.execute("SELECT COALESCE(sum(provider_units - our_units), 0) FROM marts.provider_tieout_daily"
                                  ).fetchone()[0]
        unknown_segments = conn.execute(
            "SELECT COALESCE(sum(segments), 0) FROM msg.outbound_message WHERE state = 'unknown'").fetchone()[0]
        # What finance sees at risk: the units of the rows still unknown at the rate of their claim,
        # recomputed from the rows and the rate card (the mart prices through msg.unit_price).
        at_risk_rows = conn.execute(
            """SELECT sum(coalesce(m.billable_units, m.segments) * r.unit_price)
                 FROM msg.outbound_message m
                 JOIN msg.rate_card r ON (r.tenant_id, r.channel::text, r.message_class)
                                        = (m.tenant_id, m.channel::text, m.message_class)
                WHERE m.state = 'unknown'"""
        ).fetchone()[0] or Decimal("0")
        at_risk_mart = conn.execute("SELECT COALESCE(sum(unknown_cost_at_risk), 0) FROM marts.cost_daily"
                                    ).fetchone()[0]
        receipts, ambiguous = conn.execute(
            "SELECT count(*), count(*) FILTER (WHERE correlation_result = 'ambiguous') FROM dlr.delivery_receipts"
        ).fetchone()
        residuals = conn.execute("SELECT COALESCE(sum(abs(residual)), 0) FROM marts.provider_tieout_daily"
                                 ).fetchone()[0]
    total_cost = Decimal(figures["total_cost"])
    assert total_cost == mart_cost == row_cost == rated
    assert figures["total_billable_units"] == mart_units == row_units
    # Every unit the provider billed beyond ours shows in the tie-out, and can only
    # belong to rows still `unknown` (a send whose answer was lost: possibly billed, never guessed).
    gap = figures["simulator_billed_units"] - row_units
    assert gap == tieout_gap
    assert 0 <= gap <= unknown_segments
    assert at_risk_mart == at_risk_rows
    # The text fingerprint tells two OTPs to one number apart: hardly anything stays ambiguous,
    # and every day ties out or is explained, nothing is left unexplained.
    assert ambiguous <= 0.005 * receipts, (ambiguous, receipts)
    assert residuals == 0
    assert all(day["tieout"] == "ok" or day["tieout"].startswith("explained") for day in figures["days"]), \
        [day["tieout"] for day in figures["days"]]

    again = _run_demo(demo_env, tmp_path / "second.json")
    assert again.returncode == 0, again.stderr[-3000:]
    second = json.loads((tmp_path / "second.json").read_text())
    assert second["already_there"] and second["days"] == figures["days"]
