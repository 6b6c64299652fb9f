"""``sms-pipeline demo``: the whole product on the embedded default, end to end.

An in-process simulator and the application share one virtual clock that
walks through the last few provider-local days and ends at real now. Each
day's traffic is enqueued in waves and sent by the real worker; when a day
closes, the daily job (the same Definitions the schedules use) ingests,
reconciles and builds the marts for it; a final run over every day picks up
receipts that arrived late, across day boundaries.

The simulator's traffic is kept in the home (``simulator_state_file``): the
demo continues from it and saves it as it goes, and ``sms-pipeline dev``
serves it (same seed, same time zone), so a backfill in the UI replays the
demo's days. ``--fresh`` removes it with the databases.
"""

from __future__ import annotations

import logging
import os
import secrets
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager, redirect_stdout
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import psycopg
from psycopg import sql
from pydantic import SecretStr

from sms_pipeline.core.clock import VirtualClock
from sms_pipeline.core.provider_time import day_bounds
from sms_pipeline.db import connection, installation, migrate, queries
from sms_pipeline.demo import summary, traffic
from sms_pipeline.errors import UserError
from sms_pipeline.settings import Settings

if TYPE_CHECKING:  # Dagster is imported only when the pipeline runs
    import dagster as dg

    from sms_pipeline.orchestration.check_results import FailedCheck

log = logging.getLogger(__name__)

# Faults at realistic low rates: a few dropped connections and 5xx on sends,
# an occasional rate limit, duplicated and misfiled rows in day files.
DEMO_FAULTS = {
    "accept_then_drop": 0.01,
    "http_5xx": 0.01,
    "rate_limit_send": 0.005,
    "duplicate_rows": 0.002,
    "neighbour_day": 0.002,
    "unmapped_status": 0.003,
}
DEMO_PUSH_FAULTS = {"push_duplicate": 0.01, "push_reorder": 0.01}  # the push's at-least-once and out-of-order
# Pushes per second the demo registers: when its clock jumps, hours of receipts come due at once.
DEMO_PUSH_RATE = 2000
PUSHES_CAUGHT_UP_S = 60.0  # how long a wave waits for the simulator to push what its clock has passed
DAILY_TICK = timedelta(hours=2)  # the daily schedule's 02:00 provider-local
DEMO_SEED = 7  # the simulator's seed; `sms-pipeline dev` serves the saved state with it


def simulator_state_file(settings: Settings) -> Path:
    """Where the simulator's traffic (its ledger) is kept for this home."""
    return settings.home / "simulator" / "state.jsonl"


@dataclass(frozen=True)
class DemoOptions:
    days: int = 3
    messages_per_day: int = 1200
    fresh: bool = False
    seed: int = DEMO_SEED


@dataclass(frozen=True)
class DemoResult:
    days: list[summary.DaySummary]
    already_there: bool
    simulator_billed_units: int | None
    # The final daily run's asset checks (none when the demo's data was already there).
    checks_passed: int = 0
    checks_failed: tuple[FailedCheck, ...] = ()
    pushes: summary.PushSummary | None = None  # receipt pushes received and reconciled


# What the demo's traffic leaves for a person on purpose, by check: these fail
# as warnings, and the demo says why. Any other failed check is a fault.
LEFT_FOR_A_PERSON = {
    "unknown_open": "the simulator drops some send answers (accept_then_drop, 5xx): those rows stay unknown until "
                    "a receipt or the proof of non-submission decides them",
    "ambiguous_open": "some identical texts go to one number inside the correlation window: their receipts fit "
                      "two messages alike, and correlation never guesses",
    "provider_tieout_difference_is_zero": "an explained difference: the simulator's day report files a few "
                                          "messages under the neighbouring day (provider-only on one day, "
                                          "ours-only on the other), and sends whose answer was lost are "
                                          "provider-only until a receipt confirms them",
}


def _demo_days(settings: Settings, count: int) -> list[date]:
    if count < 1:
        raise UserError("--days must be at least 1")
    today = datetime.now(UTC).astimezone(settings.provider_timezone).date()
    days = [today - timedelta(days=n) for n in range(count, 0, -1)]
    # Unset, the start recorded in the database is lowered to the first day instead (run_demo).
    if settings.partition_start is not None and days[0] < settings.partition_start:
        raise UserError(f"the demo's first day {days[0]} is before SMS_PIPELINE_PARTITION_START "
                        f"{settings.partition_start}")
    return days


def reset_databases(settings: Settings) -> None:
    """``--fresh``: drop the application and Dagster databases (embedded server only)."""
    if settings.database_url:
        raise UserError("--fresh drops databases and is refused on an external server "
                        "(SMS_PIPELINE_DATABASE_URL); drop them yourself if you mean it")
    admin = connection.server_url(settings)
    with connection.connect_url(admin, autocommit=True) as conn:
        for name in (connection.APP_DATABASE, settings.dagster_database):
            queries.run(conn, "drop_database", identifiers={"database": sql.Identifier(name)})


def start_over(settings: Settings) -> None:
    """``--fresh``: drop the databases, then forget the simulator's saved traffic."""
    reset_databases(settings)
    simulator_state_file(settings).unlink(missing_ok=True)


def _has_demo_data(conn: psycopg.Connection) -> bool:
    """True when a finished demo is there; refuses a half-finished one (it cannot be resumed)."""
    if not queries.scalar(conn, "demo_tenants_present", tenants=list(traffic.TENANTS)):
        return False
    # An interrupted run cannot be resumed: its days' traffic would be sent to the simulator twice.
    if not queries.scalar(conn, "demo_marts_built"):
        raise UserError("an earlier demo stopped before it finished; start over with `sms-pipeline demo --fresh`")
    return True


@contextmanager
def _provider_environment(base_url: str) -> Iterator[None]:
    """The simulator's account in the environment for the demo's duration.

    The Dagster provider resource references the password by name
    (``EnvVar``), resolved when a run starts: it must be the simulator's.
    """
    names = {"SMS_PROVIDER_BASE_URL": base_url, "SMS_PROVIDER_USERID": "demo", "SMS_PROVIDER_PASSWORD": "demo"}
    saved = {k: os.environ.get(k) for k in names}
    os.environ.update(names)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


class _Pipeline:
    """Jobs of the project's Definitions, run in this process on the virtual clock.

    At each day's close only ingest and reconciliation run (what a person
    would watch happen overnight); the final run is the daily job itself,
    marts included, over every demo day. Each run is recorded as a run of
    the code location ``sms-pipeline dev`` serves, so the UI can re-execute
    it (:mod:`sms_pipeline.orchestration.location_runs`).
    """

    def __init__(self, settings: Settings, clock: VirtualClock, log_path: Path) -> None:
        import dagster as dg

        from sms_pipeline.definitions import definitions_for
        from sms_pipeline.orchestration import location_runs
        from sms_pipeline.orchestration.instance import prepare_dagster_home
        from sms_pipeline.orchestration.schedules import DAILY_JOB, DAY_CLOSE_JOB

        os.environ.setdefault("DAGSTER_HOME", str(prepare_dagster_home(settings)))
        self._instance = dg.DagsterInstance.get()
        defs = location_runs.in_process(definitions_for(settings))
        self._daily = defs.resolve_job_def(DAILY_JOB)
        self._day_close = defs.resolve_job_def(DAY_CLOSE_JOB)
        self._clock = clock
        self._log_path = log_path

    def close_day(self, first: date, last: date) -> None:
        self._run(self._day_close, first, last)

    def daily(self, first: date, last: date) -> Sequence[dg.AssetCheckEvaluation]:
        """The daily job over ``first..last``; its asset checks' evaluations."""
        return self._run(self._daily, first, last).get_asset_check_evaluations()

    def _run(self, job, first: date, last: date):
        from sms_pipeline.orchestration import location_runs
        from sms_pipeline.orchestration.schedules import partition_range_tags

        # dbt's console lines go to the demo's log file, not over the progress bars.
        with self._log_path.open("a", encoding="utf-8") as out, redirect_stdout(out):
            result = location_runs.run_in_process(
                job, self._instance,
                tags=partition_range_tags(first, last),
                run_config={
                    "resources": {"clock": {"config": {"frozen_at": self._clock.now().isoformat()}}},
                    "loggers": {"console": {"config": {"log_level": "ERROR"}}},
                },
            )
        if not result.success:
            failed = [e.step_key for e in result.all_events if e.is_step_failure]
            raise UserError(f"the daily run for {first}..{last} failed at {', '.join(failed) or 'a step'}; "
                            f"see the run {result.run_id} in `sms-pipeline dev`")
        return result


def run_demo(settings: Settings, options: DemoOptions, progress=None) -> DemoResult:
    from sms_pipeline.orchestration.check_results import failed_checks
    from sms_pipeline.provider.client import ProviderClient
    from sms_pipeline.simulator.server import run_simulator
    from sms_pipeline.simulator.statefile import StateFileError
    from sms_pipeline import intake, rates

    days = _demo_days(settings, options.days)
    if options.fresh:
        start_over(settings)
    url = connection.app_url(settings)
    with connection.connect_url(url, autocommit=True) as conn:
        migrate.upgrade(conn)
        if settings.partition_start is None:
            # The demo's days are partitions, even before the month of the first upgrade
            # (a demo on the 1st): before the pipeline's modules read the start (_Pipeline).
            installation.lower_partition_start(conn, days[0])
        if _has_demo_data(conn):
            return DemoResult(summary.per_day(conn, days[0], days[-1], settings.provider_timezone.key),
                              already_there=True, simulator_billed_units=None)

    tz = settings.provider_timezone
    clock = VirtualClock(day_bounds(days[0], tz)[0])
    with connection.connect_url(url, autocommit=True) as conn:
        queries.run(conn, "demo_ensure_partitions", at=clock.now())
        card, bad = rates.parse_rate_card(traffic.DEMO_RATE_CARD.splitlines())
        assert not bad, bad  # the demo's own card is valid by construction
        rates.load_rates(conn, card)

    with ExitStack() as stack:
        try:
            sim = stack.enter_context(run_simulator(clock=clock, seed=options.seed, timezone=tz,
                                                    faults={**DEMO_FAULTS, **DEMO_PUSH_FAULTS},
                                                    state_file=simulator_state_file(settings)))
        except StateFileError as exc:
            raise UserError(f"{exc}; remove it, or start over with --fresh") from None
        stack.enter_context(_provider_environment(sim.base_url))
        billed_before = sim.state.billed_units()  # traffic of an earlier session in this home (dev)
        cfg = settings.model_copy(update={  # the simulator as provider
            "provider_base_url": sim.base_url, "provider_userid": "demo", "provider_password": SecretStr("demo")})
        (cfg.home / "logs").mkdir(parents=True, exist_ok=True)
        pipeline = _Pipeline(cfg, clock, cfg.home / "logs" / "demo-runs.log")
        with ProviderClient.from_settings(cfg) as client, \
                connection.connect_url(url, autocommit=True) as conn:
            send = _Sender(cfg, client, clock, url, intake)
            pushes = _Pushes(stack, cfg, url, sim, client, clock)
            task = progress.add_task("days", total=len(days) * (len(traffic.WAVE_HOURS) + 1) + 1) if progress else None

            def step(description: str) -> None:
                if progress:
                    progress.update(task, advance=1, description=description)

            for day in days:
                start, end = day_bounds(day, tz)
                for wave in traffic.day_waves(day, start, options.messages_per_day, options.seed):
                    _set(clock, wave.at)
                    pushes.reconcile(conn)  # what the clock's move made final
                    send.enqueue_and_send(conn, wave.records)
                    if wave.resends:
                        clock.advance(traffic.OTP_RESEND_AFTER)
                        send.enqueue_and_send(conn, wave.resends)
                    step(f"{day}: sending")
                # The day has closed: the daily tick ingests, reconciles and builds marts so far.
                _set(clock, end + DAILY_TICK)
                send.drain()
                pushes.reconcile(conn)
                pipeline.close_day(days[0], day)
                step(f"{day}: reconciled")
            # Late receipts: the last run sees every day as of real now.
            _set(clock, datetime.now(UTC) - timedelta(seconds=1))
            send.drain()
            pushes.reconcile(conn)
            checks = pipeline.daily(days[0], days[-1])
            step("all days: late receipts reconciled")
            result = summary.per_day(conn, days[0], days[-1], tz.key)
            pushed = summary.pushes(conn)
        billed = sim.state.billed_units() - billed_before
    return DemoResult(result, already_there=False, simulator_billed_units=billed,
                      checks_passed=sum(1 for c in checks if c.passed),
                      checks_failed=tuple(failed_checks(checks)), pushes=pushed)


def _set(clock: VirtualClock, at: datetime) -> None:
    """Move the virtual clock forward, never past real time (the demo's last day ends near now)."""
    clock.set(min(max(at, clock.now()), datetime.now(UTC) - timedelta(seconds=1)))


class _Pushes:
    """The provider's receipt pushes: a receiver in a thread, registered at the demo's simulator, and a
    ``reconcile recent`` pass once the simulator has pushed what its clock has passed (docs/design.md#receipt-push)."""

    def __init__(self, stack: ExitStack, settings: Settings, url: str, sim, client, clock: VirtualClock) -> None:
        from sms_pipeline.receiver import registration
        from sms_pipeline.receiver.app import ReceiverConfig
        from sms_pipeline.receiver.server import run_receiver

        secret = settings.webhook_secret or SecretStr(secrets.token_urlsafe(24))
        config = ReceiverConfig.from_settings(settings.model_copy(update={"webhook_secret": secret}), url)
        receiver = stack.enter_context(run_receiver(config))
        registration.register(client, receiver.push_url, DEMO_PUSH_RATE)
        self._settings, self._sim, self._client, self._clock = settings, sim, client, clock

    def reconcile(self, conn: psycopg.Connection) -> None:
        from sms_pipeline.ingest.delivery_codes import refresh_delivery_codes, stored_code_count
        from sms_pipeline.reconcile.pushes import reconcile_pushes

        deadline = time.monotonic() + PUSHES_CAUGHT_UP_S
        while not self._sim.pushes.snapshot()["caught_up"]:
            if time.monotonic() > deadline:
                log.warning("demo: the simulator has not pushed every due receipt within %.0f s; "
                            "the rest are reconciled later", PUSHES_CAUGHT_UP_S)
                break
            time.sleep(0.05)
        if stored_code_count(conn) == 0:
            refresh_delivery_codes(conn, self._client, self._clock)
        s = self._settings
        reconcile_pushes(conn, self._clock, provider_timezone=s.provider_timezone,
                         correlation_window_s=s.correlation_window_s,
                         campaign_send_spread_s=s.campaign_send_spread_s, hold_s=s.claim_lease_s)


class _Sender:
    """Enqueue through intake and send through the real worker (bulk + OTP strategies)."""

    def __init__(self, settings: Settings, client, clock: VirtualClock, url: str, intake) -> None:
        self._settings, self._client, self._clock, self._url = settings, client, clock, url
        self._intake = intake
        self._policy = intake.IntakePolicy.from_settings(settings)  # once: it reads the text key

    def _worker(self):
        from sms_pipeline.send.otp import OtpPolicy, otp_strategies
        from sms_pipeline.send.breaker import CircuitBreaker
        from sms_pipeline.send.loop import Worker
        from sms_pipeline.send.personalised import sms_strategies

        s = self._settings
        zone = s.provider_timezone.key
        policy = OtpPolicy.from_settings(s)
        strategies = {**sms_strategies(self._client, zone, xml_send=s.provider_xml_send,
                                       campaign_request_size=s.campaign_request_size),
                      **otp_strategies(self._client, zone, policy)}
        return Worker(lambda: connection.connect_url(self._url, autocommit=True), strategies, clock=self._clock,
                      batch_size=s.batch_size, lease=timedelta(seconds=s.claim_lease_s),
                      breaker=CircuitBreaker(s.circuit_breaker_failures, s.circuit_breaker_cooldown_s),
                      poll_interval_s=0.05, upkeep_interval_s=0.0, backoff_initial_s=0.05, backoff_max_s=0.2)

    def enqueue_and_send(self, conn: psycopg.Connection, records: list[dict]) -> None:
        messages = [self._intake.new_message(r) for r in records]
        self._intake.enqueue(conn, messages, clock=self._clock, policy=self._policy)
        self.drain()

    def drain(self) -> None:
        self._worker().run(once=True)
