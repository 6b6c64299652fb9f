"""Prometheus gauges read from the database at scrape time (``sms-pipeline metrics serve``; docs/design.md#metrics).

:class:`DatabaseCollector` runs a few named queries (``sql/queries/metrics_*.sql``)
on a connection of its own per scrape, each read from a partial index or over
a recent window of an indexed time, so a scrape costs what the queue and the
window hold, never the table's history. A scrape that cannot read (the
database down, a statement over the time-out) answers
``sms_pipeline_database_up 0`` and nothing else, never an error page: a
missing reading must not look like an empty queue. Label values come only
from the fixed tuples below (the schema's own vocabularies), every
combination present (0 when empty), so an alert never waits on a series
that does not exist.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime, timedelta
from typing import get_args
from zoneinfo import ZoneInfo

import psycopg
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from sms_pipeline.core import statuses
from sms_pipeline.core.clock import Clock
from sms_pipeline.core.provider_time import day_bounds
from sms_pipeline.core.states import MessageClass, MessageState
from sms_pipeline.db import queries
from sms_pipeline.errors import DatabaseUnavailable

log = logging.getLogger(__name__)

CLASSES = tuple(c.value for c in MessageClass)
STATES = tuple(s.value for s in MessageState)
# The states of the queue's partial indexes: waiting, held by a worker, in flight, awaiting evidence.
QUEUE_STATES = ("pending", "claimed", "sending", "unknown")
# dlr.delivery_receipts' source and outcome checks.
RECEIPT_SOURCES = ("day_report", "txn_report", "getdlr", "push")
RECEIPT_OUTCOMES = get_args(statuses.Outcome)

# The recent window of the message and receipt counts: a day's traffic, the marts' grain.
WINDOW = timedelta(hours=24)
# A scrape runs six statements after connecting: with the connect time-out the
# metrics command sets (3 s) the worst case stays under Prometheus' default
# scrape time-out (10 s). The queries read indexes and take milliseconds.
STATEMENT_TIMEOUT = "1s"


def _zeros(*label_sets: Iterable[str]) -> dict[tuple[str, ...], float]:
    keys: list[tuple[str, ...]] = [()]
    for values in label_sets:
        keys = [(*key, value) for key in keys for value in values]
    return dict.fromkeys(keys, 0.0)


def _gauge(name: str, documentation: str, labels: tuple[str, ...],
           values: dict[tuple[str, ...], float]) -> GaugeMetricFamily:
    family = GaugeMetricFamily(name, documentation, labels=labels)
    for key, value in values.items():
        family.add_metric(key, value)
    return family


def _add(values: dict[tuple[str, ...], float], key: tuple[str, ...], amount: float) -> None:
    """Add to a fixed series; a value outside the fixed sets (a vocabulary grew) is logged, never exposed."""
    if key in values:
        values[key] += amount
    else:
        log.warning("metrics: label values %s are outside the fixed sets; not exposed", key)


class DatabaseCollector(Collector):
    """The queue, recent messages and receipts, and reconciliation's lag, from one connection per scrape."""

    def __init__(self, connect: Callable[[], psycopg.Connection], *, clock: Clock, zone: ZoneInfo) -> None:
        self._connect = connect
        self._clock = clock
        self._zone = zone

    def collect(self) -> Iterator[Metric]:
        started = time.perf_counter()
        try:
            with self._connect() as conn:  # a connection per scrape: the time-out ends with it
                queries.run(conn, "session_statement_timeout", timeout=STATEMENT_TIMEOUT)
                families = self._read(conn, self._clock.now())
            up = 1.0
        except (psycopg.Error, DatabaseUnavailable) as exc:
            log.warning("metrics: reading the database failed: %s: %s", type(exc).__name__,
                        str(exc).splitlines()[0] if str(exc) else "")
            families, up = [], 0.0
        yield from families
        yield GaugeMetricFamily("sms_pipeline_database_up",
                                "1 when this scrape read every database reading, 0 when it could not", value=up)
        yield GaugeMetricFamily("sms_pipeline_database_scrape_seconds", "How long this scrape's reading took",
                                value=time.perf_counter() - started)

    def _read(self, conn: psycopg.Connection, now: datetime) -> list[Metric]:
        since = now - WINDOW
        hours = f"{WINDOW.total_seconds() / 3600:g} h"

        in_queue = _zeros(CLASSES, QUEUE_STATES)
        depth = _zeros(CLASSES)
        oldest = _zeros(CLASSES)
        for message_class, state, messages, due, oldest_due_at in queries.run(conn, "metrics_queue", now=now):
            _add(in_queue, (message_class, state), messages)
            if state == "pending":
                _add(depth, (message_class,), due)
                if oldest_due_at is not None:
                    _add(oldest, (message_class,), max(0.0, (now - oldest_due_at).total_seconds()))

        recent = _zeros(CLASSES, STATES)
        for message_class, state, messages in queries.run(conn, "metrics_messages_recent", since=since, now=now):
            _add(recent, (message_class, state), messages)

        receipts = _zeros(RECEIPT_SOURCES, RECEIPT_OUTCOMES)
        for source, outcome, events in queries.run(conn, "metrics_receipts_recent", since=since, now=now):
            _add(receipts, (source, outcome), events)

        families: list[Metric] = [
            _gauge("sms_pipeline_queue_messages",
                   "Messages in a queue state (pending, claimed, sending, unknown), whatever their age",
                   ("class", "state"), in_queue),
            _gauge("sms_pipeline_queue_depth", "Pending messages due by now", ("class",), depth),
            _gauge("sms_pipeline_queue_oldest_pending_age_seconds",
                   "Seconds the oldest due pending message has waited (0 when none waits)", ("class",), oldest),
            _gauge("sms_pipeline_messages", f"Messages whose attempt time is in the last {hours}, by state now",
                   ("class", "state"), recent),
            _gauge("sms_pipeline_receipts", f"Receipt events stored in the last {hours}, by source and outcome",
                   ("source", "outcome"), receipts),
        ]

        last_receipt_s = queries.scalar(conn, "seconds_since_last_receipt", now=now)
        if last_receipt_s is not None:  # no receipt ever: no reading rather than a made-up age
            families.append(GaugeMetricFamily("sms_pipeline_receipts_last_stored_age_seconds",
                                              "Seconds since the newest receipt event was stored",
                                              value=last_receipt_s))
        pushes_waiting, oldest_push_wait_s, newest_day = queries.run(conn, "metrics_reconcile_lag").fetchone()
        families += [
            GaugeMetricFamily("sms_pipeline_push_inbox_waiting", "Receipt pushes not reconciled yet",
                              value=pushes_waiting),
            GaugeMetricFamily("sms_pipeline_push_inbox_oldest_wait_seconds",
                              "Seconds the oldest receipt push not reconciled yet has waited (0 when none)",
                              value=oldest_push_wait_s),
        ]
        if newest_day is not None:
            day_end = day_bounds(newest_day, self._zone)[1]
            families.append(GaugeMetricFamily(
                "sms_pipeline_day_report_newest_day_age_seconds",
                "Seconds since the end of the newest provider day whose day report is loaded",
                value=max(0.0, (now - day_end).total_seconds())))
        return families
