"""OTP throughput: OTP sends per second, one ``/otp`` request each, with 8 concurrent senders.

    python bench/otp_throughput.py [--otps 5000] [--senders 8]

1. **End to end**: ``--otps`` pending OTP rows (distinct numbers) in a
   scratch database; one ``sms-pipeline worker --once --class otp`` process
   with ``--senders`` send threads, each claiming OTP rows a few at a time
   (``OTP_CLAIM_LIMIT``) and sending them one request each through the real client and the
   fault proxy to the simulator (in this process, no faults): code made with
   ``secrets``, ``/otp`` generate, outcome and verification row written in
   one transaction.
2. **Client and simulator alone**: the same number of ``/otp`` generate
   requests from ``--senders`` threads of this process, no database: what
   HTTP and the simulator allow on this machine.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import secrets
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from zoneinfo import ZoneInfo

import psycopg
from pydantic import SecretStr

from sms_pipeline.otp import codes
from sms_pipeline.send.otp import OTP_CLAIM_LIMIT
from sms_pipeline.provider.client import ProviderClient
from sms_pipeline.provider.results import SendAccepted
from sms_pipeline.settings import PREFIXES
from sms_pipeline.simulator.server import run_simulator

sys.path.insert(0, str(Path(__file__).resolve().parent))
from send_support import (  # noqa: E402
    TENANT,
    ZONE,
    CpuMeter,
    enqueue,
    load_prices,
    machine_line,
    number,
    scratch_database,
)

TEMPLATE = "$otp$ is your login code. It expires in 5 minutes."
WORKER = str(Path(sys.executable).with_name("sms-pipeline"))


def _otp_records(count: int) -> list[dict]:
    return [{"tenant_id": TENANT, "event_type": "login_otp", "event_id": f"otp-{n}", "recipient": number(n),
             "body": TEMPLATE, "message_class": "otp", "channel": "sms", "sender_id": "OTPSMS", "purpose": "login"}
            for n in range(count)]


def end_to_end(url: str, otps: int, senders: int, home: Path) -> str:
    enqueue(url, _otp_records(otps))
    with run_simulator(seed=2, timezone=ZONE) as sim, psycopg.connect(url, autocommit=True) as conn:
        env = {k: v for k, v in os.environ.items() if not k.startswith(PREFIXES)}
        env.update({"SMS_PIPELINE_DATABASE_URL": url, "SMS_PIPELINE_HOME": str(home),
                    "SMS_PIPELINE_TEXT_HMAC_KEY": secrets.token_hex(32),
                    "SMS_PROVIDER_BASE_URL": sim.base_url, "SMS_PROVIDER_USERID": "demo",
                    "SMS_PROVIDER_PASSWORD": "demo", "SMS_PROVIDER_TIMEZONE": ZONE,
                    "SMS_PIPELINE_LOG_LEVEL": "WARNING"})
        meter = CpuMeter(conn).start()
        started = time.perf_counter()
        code = subprocess.call([WORKER, "worker", "--once", "--class", "otp", "--concurrency", str(senders)],
                               env=env, stdout=subprocess.DEVNULL)
        wall = time.perf_counter() - started
        meter.stop()
        assert code == 0, code
        submitted, window, verifications = conn.execute(
            """SELECT count(*), extract(epoch FROM max(submitted_at) - min(claimed_at)),
                      (SELECT count(*) FROM msg.otp_verification)
                 FROM msg.outbound_message WHERE state = 'submitted'""").fetchone()
    assert submitted == verifications == otps, (submitted, verifications)
    return (f"| end to end: 1 worker process, {senders} send threads, claims of {OTP_CLAIM_LIMIT} | "
            f"{otps / float(window):,.0f} | {wall:.1f} s | {meter.describe('bench process (simulator)', 'worker')} |")


def client_alone(otps: int, senders: int) -> str:
    with run_simulator(seed=3, timezone=ZONE) as sim, ProviderClient(
            sim.base_url, "demo", SecretStr("demo"), None, ZoneInfo(ZONE)) as client:
        def one(n: int) -> None:
            outcome = client.otp_generate(number(n), TEMPLATE, "OTPSMS", codes.new_code(6, "num"))
            assert isinstance(outcome, SendAccepted), outcome

        started = time.perf_counter()
        with ThreadPoolExecutor(max_workers=senders) as pool:
            list(pool.map(one, range(otps)))
        elapsed = time.perf_counter() - started
    return (f"| client and simulator alone, {senders} threads, no database | {otps / elapsed:,.0f} "
            f"| {elapsed:.1f} s | - |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--otps", type=int, default=5_000)
    parser.add_argument("--senders", type=int, default=8)
    args = parser.parse_args()

    print(f"machine before: {machine_line()}")
    with scratch_database("otp") as url:
        with psycopg.connect(url, autocommit=True) as conn:
            load_prices(conn)
        with tempfile.TemporaryDirectory() as home:  # the worker's HMAC key file
            lines = [end_to_end(url, args.otps, args.senders, Path(home)),
                     client_alone(args.otps, args.senders)]
    print(f"machine after: {machine_line()}")
    print(f"{args.otps:,} OTPs, one request each")
    print("| what | OTP sends/s | wall | CPU |")
    print("|---|---|---|---|")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
