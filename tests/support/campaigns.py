"""Provider-side campaign fixtures: a campaign's pending rows as intake writes them, and a worker as
``sms-pipeline worker`` builds it (campaigns handed over at its next claim)."""

from __future__ import annotations

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import psycopg

from sms_pipeline.core.clock import Clock
from sms_pipeline.intake.messages import ensure_partition_for
from sms_pipeline.provider.client import ProviderClient
from sms_pipeline.send.breaker import CircuitBreaker
from sms_pipeline.send.loop import Worker
from sms_pipeline.send.personalised import sms_strategies
from tests.support.provider import PROVIDER_ZONE

TZ = ZoneInfo(PROVIDER_ZONE)
BODY = "Spring sale: 20% off everything this weekend"


def campaign_worker(db_url: str, client: ProviderClient, clock: Clock, *, zone: str = PROVIDER_ZONE) -> Worker:
    """A worker as `sms-pipeline worker` builds it, campaigns handed over in requests of up to 10,000."""
    strategies = sms_strategies(client, zone, xml_send=True, campaign_request_size=10_000)
    return Worker(lambda: psycopg.connect(db_url, autocommit=True), strategies, clock=clock, batch_size=500,
                  lease=timedelta(minutes=5), breaker=CircuitBreaker(5, 30.0), poll_interval_s=0.05,
                  backoff_initial_s=0.01, backoff_max_s=0.05)


def add_campaign(conn: psycopg.Connection, clock: Clock, recipients: list[str], *, at: datetime,
                 provider_side: bool = True, name: str = "spring-sale", message_class: str = "promotional",
                 zone: ZoneInfo = TZ, expires_at: datetime | None = None) -> int:
    """A campaign and its pending rows (ids in the order of ``recipients``), written as intake writes them."""
    now = clock.now()
    campaign_id = conn.execute(
        """INSERT INTO msg.campaign (name, provider_side, local_time, time_zone, scheduled_for, created_at,
                                     updated_at)
           VALUES (%s, %s, %s, %s, %s, %s, %s) RETURNING id""",
        (name, provider_side, at.astimezone(zone).replace(tzinfo=None), zone.key, at, now, now)).fetchone()[0]
    ensure_partition_for(conn, now)
    conn.execute(
        """INSERT INTO msg.outbound_message (business_key, tenant_id, channel, message_class, recipient, sender_id,
                                             body, encoding, segments, scheduled_for, expires_at, campaign_id,
                                             created_at, updated_at)
           SELECT %(name)s || '-' || r.ord, 'tenant-a', 'sms', %(class)s, r.recipient, 'SGCSMS', %(body)s, 'GSM7', 1,
                  %(at)s, %(expires_at)s, %(campaign)s, %(now)s, %(now)s
             FROM unnest(%(recipients)s::text[]) WITH ORDINALITY AS r (recipient, ord)
            ORDER BY r.ord""",
        {"name": name, "class": message_class, "body": BODY, "at": at, "expires_at": expires_at,
         "campaign": campaign_id, "now": now, "recipients": recipients})
    return campaign_id
