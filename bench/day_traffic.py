"""Provider days of synthetic traffic for the reconciliation benchmarks.

A simulator runs in its own (spawned) process on a virtual clock, so its
ledger and its day-zip building never count against the benchmark
process's memory. It bills the days in-process (the ``SimulatorState.submit``
and ``otp_generate`` the HTTP endpoints call) and writes, for every billed
recipient, the outbound row our side would hold after the worker's send, as
a COPY text file; then it serves HTTP until told to stop. The benchmark
loads that file into ``msg.outbound_message`` (through the real triggers)
and downloads the day reports over HTTP like the pipeline does.

The mix of one day of ``n`` messages (fractions of requests / messages):

* bulk requests of 500 recipients: ``submitted`` rows with the
  transaction id (correlated by transaction + recipient);
* 1 in 20 bulk requests also lists 2 numbers the provider refuses: our
  rows ``rejected``, no receipt;
* 1 in 200 bulk requests went ``unknown`` on our side (the answer never
  arrived): no transaction id, only ``claimed_at`` (correlated by
  reconstruction, then confirmed as submitted and billed);
* 1 in 500 bulk requests has no outbound row at all (sent by something
  else): its receipts become orphans;
* 1% of messages are OTP sends of one recipient (no transaction id:
  reconstruction);
* simulator row faults: 1% duplicated rows, 0.5% unmapped status words;
* the report is downloaded ``download_lag`` after the day closed, so the
  messages sent late in the day still show intermediate statuses.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import secrets
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, date, datetime, time as clock_time, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import psycopg

from sms_pipeline.core import fingerprint

BATCH = 500
SENDER = "SGCSMS"
TENANT = "tenant-bench"
UNIT_PRICE = "0.0079"
TZ_NAME = "Asia/Kolkata"
SEED = 9
FAULTS = {"duplicate_rows": 0.01, "unmapped_status": 0.005}
BODIES = (
    "Your order {n} has shipped and will arrive tomorrow. Track it in the app.",
    "Payment of INR {n} received. Thank you for banking with us.",
    "Sale! 20% off everything this weekend only, code {n}. Reply STOP to opt out.",
)
OTP_TEMPLATE = "Your login code is $otp$. It expires in 5 minutes."
_SPREAD_S = 80_000  # sends spread over ~22 h of the local day


@dataclass(frozen=True)
class TrafficDay:
    day: date
    messages: int  # billed recipients wanted (the ledger holds about this many)


@dataclass(frozen=True)
class Traffic:
    base_url: str
    outbound_file: Path  # COPY text of every outbound row (see OUTBOUND_COLUMNS)
    billed: int  # recipients in the simulator's ledger
    outbound_rows: int
    simulator_pid: int  # the process serving base_url (its CPU is the provider's work, not the pipeline's)


OUTBOUND_COLUMNS = ("business_key", "message_class", "recipient", "body", "encoding", "segments", "state",
                    "provider_txn_id", "attempt_ms")


def local_instant(day: date, at: clock_time) -> datetime:
    from sms_pipeline.core.provider_time import localise
    return localise(datetime.combine(day, at), ZoneInfo(TZ_NAME))


def _fill(days: list[TrafficDay], download_at: datetime, outbound_file: Path, conn) -> None:
    """Child process: bill the days, write the outbound rows, serve until the pipe says stop."""
    from sms_pipeline.core.clock import VirtualClock
    from sms_pipeline.core.segments import count_segments
    from sms_pipeline.simulator import run_simulator
    from sms_pipeline.simulator.state import SendRequest

    start = local_instant(days[0].day, clock_time(0, 0))
    billed = rows = 0
    with run_simulator(clock=VirtualClock(start), seed=SEED, timezone=TZ_NAME, faults=FAULTS) as sim, \
            outbound_file.open("w", encoding="utf-8") as out:
        state = sim.state
        counter = 0
        for traffic in days:
            sim.clock.set(local_instant(traffic.day, clock_time(0, 30)))
            otp_sends = traffic.messages // 100
            bulk_requests = max(1, (traffic.messages - otp_sends) // BATCH)
            step = timedelta(seconds=_SPREAD_S / (bulk_requests + otp_sends))
            otp_done = 0
            for i in range(bulk_requests):
                counter += 1
                body = BODIES[counter % len(BODIES)].format(n=counter)
                shape = count_segments(body)
                mobiles = [f"919{(counter * BATCH + k) % 10**9:09d}" for k in range(BATCH)]
                invalid = ["91000"] * 2 if i % 20 == 0 else []
                fingerprint = f"bench-{traffic.day}-{i}"
                receipt = state.submit(SendRequest(SENDER, "text", body, mobiles + invalid, False, None, False),
                                       fingerprint, state.arrival(fingerprint))
                billed += len(receipt.accepted)
                attempt_ms = int(receipt.request_time.timestamp() * 1000)
                if i % 500 != 7:  # else: not ours, the receipts become orphans
                    went_unknown = i % 200 == 3
                    our_state, txn = ("unknown", "\\N") if went_unknown else ("submitted", receipt.transaction_id)
                    klass = "promotional" if counter % len(BODIES) == 2 else "transactional"
                    for k, mobile in enumerate(receipt.accepted):
                        out.write(f"b{counter}-{k}\t{klass}\t{mobile}\t{body}\t{shape.encoding}\t{shape.segments}"
                                  f"\t{our_state}\t{txn}\t{attempt_ms}\n")
                    for k, mobile in enumerate(receipt.invalid):
                        out.write(f"r{counter}-{k}\t{klass}\t{mobile}\t{body}\t{shape.encoding}\t{shape.segments}"
                                  f"\trejected\t\\N\t{attempt_ms}\n")
                    rows += len(receipt.accepted) + len(receipt.invalid)
                sim.clock.advance(step)
                while otp_done < (i + 1) * otp_sends // bulk_requests:  # spread evenly between bulk requests
                    counter += 1
                    mobile = f"918{counter % 10**9:09d}"
                    code = f"{counter % 1_000_000:06d}"
                    fingerprint = f"bench-otp-{traffic.day}-{otp_done}"
                    otp = state.otp_generate(mobile=mobile, sender=SENDER, msg_type="text", template=OTP_TEMPLATE,
                                             code=code, expiry_s=300, fingerprint=fingerprint,
                                             arrival=state.arrival(fingerprint))
                    shape = count_segments(OTP_TEMPLATE.replace("$otp$", code))
                    out.write(f"o{counter}\totp\t{mobile}\t{OTP_TEMPLATE}\t{shape.encoding}\t{shape.segments}"
                              f"\tsubmitted\t\\N\t{int(otp.create_time.timestamp() * 1000)}\n")
                    billed += 1
                    rows += 1
                    otp_done += 1
                    sim.clock.advance(step)
        sim.clock.set(download_at)
        out.flush()
        conn.send(Traffic(sim.base_url, outbound_file, billed, rows, os.getpid()))
        conn.recv()  # stop


@contextmanager
def simulated_traffic(days: list[TrafficDay], download_at: datetime, workdir: Path) -> Iterator[Traffic]:
    """A simulator process holding ``days``' traffic, its clock at ``download_at``."""
    context = multiprocessing.get_context("spawn")
    parent, child = context.Pipe()
    process = context.Process(target=_fill, args=(days, download_at, workdir / "outbound.tsv", child), daemon=True)
    process.start()
    try:
        if not parent.poll(3600):
            raise RuntimeError("the simulator process did not finish billing within an hour")
        yield parent.recv()
    finally:
        if process.is_alive():
            parent.send("stop")
            process.join(30)
        if process.is_alive():
            process.kill()


def prepare_database(conn: psycopg.Connection, first_day: date) -> None:
    """Partitions around the days and a rate card for the tenant."""
    start = local_instant(first_day, clock_time(0, 0)) - timedelta(days=40)
    conn.execute("SELECT msg.ensure_partitions(%s, 3), dlr.ensure_partitions(%s, 3)", (start, start))
    for message_class in ("otp", "transactional", "promotional"):
        conn.execute(
            "INSERT INTO msg.rate_card (tenant_id, channel, message_class, unit_price, currency, valid_from) "
            "VALUES (%s, 'sms', %s, %s, 'INR', %s)",
            (TENANT, message_class, UNIT_PRICE, first_day - timedelta(days=60)),
        )


@contextmanager
def staged_outbound_rows(conn: psycopg.Connection, traffic: Traffic,
                         text_key: bytes) -> Iterator[Callable[[date | None], int]]:
    """The outbound rows staged in temporary tables; yields ``insert(day)``, which puts the rows of one
    provider-local day (``None``: every day) into ``msg.outbound_message``, through the parent's
    triggers, as the worker leaves them after sending, each with the fingerprint of its text under
    ``text_key`` as intake and the OTP strategy store it."""
    conn.execute(f"CREATE TEMPORARY TABLE bench_outbound ({', '.join(c + ' text' for c in OUTBOUND_COLUMNS)})")
    with conn.cursor() as cur, cur.copy(f"COPY bench_outbound ({', '.join(OUTBOUND_COLUMNS)}) FROM STDIN") as sink, \
            traffic.outbound_file.open("rb") as source:
        while chunk := source.read(1 << 20):
            sink.write(chunk)
    conn.execute("CREATE TEMPORARY TABLE bench_fingerprint (body text PRIMARY KEY, fingerprint bytea)")
    bodies = [body for (body,) in conn.execute("SELECT DISTINCT body FROM bench_outbound")]
    with conn.cursor() as cur, cur.copy("COPY bench_fingerprint (body, fingerprint) FROM STDIN") as sink:
        for body in bodies:
            sink.write_row((body, fingerprint.text_fingerprint(text_key, body)))

    def insert(day: date | None) -> int:
        (inserted,) = conn.execute(
            """WITH staged AS (
                   SELECT b.*, to_timestamp(b.attempt_ms::bigint / 1000.0) AS attempt_at FROM bench_outbound b),
               inserted AS (
                   INSERT INTO msg.outbound_message (
                       business_key, tenant_id, channel, message_class, recipient, sender_id, body, encoding,
                       segments, state, state_reason, attempt_count, provider_txn_id, created_at, claimed_at,
                       submitted_at, billable_units, cost, cost_currency, updated_at, message_fingerprint)
                   SELECT s.business_key, %(tenant)s, 'sms', s.message_class, s.recipient, %(sender)s, s.body,
                          s.encoding, s.segments::smallint, s.state::msg.message_state,
                          CASE s.state WHEN 'rejected' THEN 'invalid_number' WHEN 'unknown' THEN 'no_answer' END,
                          1, s.provider_txn_id, s.attempt_at - interval '2 seconds', s.attempt_at - interval '1 second',
                          CASE WHEN s.state = 'submitted' THEN s.attempt_at END,
                          CASE WHEN s.state = 'submitted' THEN s.segments::smallint END,
                          CASE WHEN s.state = 'submitted' THEN s.segments::smallint * %(price)s::numeric END,
                          CASE WHEN s.state = 'submitted' THEN 'INR' END,
                          s.attempt_at, f.fingerprint
                     FROM staged s
                     LEFT JOIN bench_fingerprint f USING (body)
                    WHERE %(day)s::date IS NULL OR (s.attempt_at AT TIME ZONE %(zone)s)::date = %(day)s::date
                   RETURNING 1)
               SELECT count(*) FROM inserted""",
            {"tenant": TENANT, "sender": SENDER, "price": UNIT_PRICE, "day": day, "zone": TZ_NAME},
        ).fetchone()
        return inserted

    try:
        yield insert
    finally:
        conn.execute("DROP TABLE bench_outbound, bench_fingerprint")


def load_outbound_rows(conn: psycopg.Connection, traffic: Traffic, text_key: bytes) -> int:
    """Every day's outbound rows (see :func:`staged_outbound_rows`), then the table's statistics."""
    with staged_outbound_rows(conn, traffic, text_key) as insert:
        inserted = insert(None)
    conn.execute("ANALYZE msg.outbound_message")
    return inserted


def settings_environ(database_url: str, base_url: str, partition_start: date) -> dict[str, str]:
    return {
        "SMS_PIPELINE_DATABASE_URL": database_url,
        "SMS_PIPELINE_TEXT_HMAC_KEY": secrets.token_hex(32),  # required with the URL; one run, one key
        "SMS_PIPELINE_PARTITION_START": partition_start.isoformat(),
        "SMS_PIPELINE_REPORT_REQUESTS_PER_S": "1000",
        "SMS_PROVIDER_BASE_URL": base_url,
        "SMS_PROVIDER_USERID": "demo",
        "SMS_PROVIDER_PASSWORD": "demo",
        "SMS_PROVIDER_TIMEZONE": TZ_NAME,
        "SMS_PROVIDER_READ_TIMEOUT_S": "600",
        # the settings refuse a lease shorter than the longest request (nothing is sent here)
        "SMS_PIPELINE_CLAIM_LEASE_S": "900",
    }


def utc_now() -> datetime:
    return datetime.now(UTC)
