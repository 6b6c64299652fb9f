"""The alert sensor, evaluated for real on a real instance: one alert per problem (a check's per partition)
until it clears, then one "resolved"; a notice that could not be delivered is sent again at the next tick, and
a destination that hangs neither keeps the tick past its deadline nor makes the others hear a notice twice."""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Iterator
from datetime import timedelta

import dagster as dg
import pytest
from dagster._core.execution.backfill import BulkActionStatus, PartitionBackfill
from pydantic import SecretStr

from sms_pipeline.definitions import ASSET_CHECKS, ASSETS, JOBS, definitions_for, defs
from sms_pipeline.ops.alerts import NO_DESTINATION, TIMEOUT_S
from sms_pipeline.orchestration.alerts import TICK_DEADLINE_S, alert_sensor_for
from sms_pipeline.orchestration.schedules import HOURLY_JOB
from tests.support.alerts import SECRET_PATH, Webhook, smtp_server, webhook_server
from tests.support.reconcile import SENDER, World
from tests.support.runs import resources_for

UI = "http://ui.example:3000"


@pytest.fixture
def hook() -> Iterator[Webhook]:
    with webhook_server() as server:
        yield server


class Sensor:
    """The alert sensor of ``settings`` in ``defs``, ticked by hand with its cursor carried over."""

    def __init__(self, settings, instance: dg.DagsterInstance, defs_for, deadline_s: float = TICK_DEADLINE_S):
        self.sensor = alert_sensor_for(settings, deadline_s=deadline_s)
        self.defs = defs_for(self.sensor)
        self.instance = instance
        self.cursor: str | None = None

    def tick(self) -> str:
        context = dg.build_sensor_context(instance=self.instance, cursor=self.cursor, definitions=self.defs)
        data = self.sensor.evaluate_tick(context)
        assert not data.run_requests
        self.cursor = data.cursor
        return data.skip_message


# ----- the test: receipts stop, on a virtual clock, the real hourly job --------------------------------

def _store_receipt(world: World) -> None:
    """A receipt event stored now (receipts flow)."""
    now = world.clock.now()
    world.conn.execute(
        """INSERT INTO dlr.delivery_receipts (provider_message_id, status_word, raw_status, outcome,
               provider_submit_at, submit_month, source, first_seen_at)
           VALUES (%s, 'DELIVRD', 'DELIVRD', 'delivered', %s, dlr.submit_month(%s), 'getdlr', %s)""",
        (uuid.uuid4().hex, now, now, now))


def _run_hourly(world: World, sensor: Sensor) -> str:
    result = sensor.defs.resolve_job_def(HOURLY_JOB).execute_in_process(
        instance=sensor.instance,
        run_config={"resources": {"clock": {"config": {"frozen_at": world.clock.now().isoformat()}}}})
    assert result.success
    return result.run_id


def test_a_stopped_receipt_flow_alerts_once_until_receipts_flow_again_then_resolves(world, dagster_instance, hook):
    settings = world.settings.model_copy(update={"alert_webhook_url": SecretStr(hook.url), "ui_url": UI})
    sensor = Sensor(settings, dagster_instance, lambda s: dg.Definitions(
        assets=ASSETS, asset_checks=ASSET_CHECKS, jobs=JOBS, sensors=[s],
        resources=resources_for(world.settings, world.clock)))
    _store_receipt(world)  # 10:00: the last receipt
    world.move_to(world.clock.now() + timedelta(minutes=90))
    recipients = ["919800000101", "919800000102", "919800000103"]
    for recipient in recipients:  # sent at 11:30; the provider will never report them
        key = world._insert(recipient, "Your order has shipped", SENDER, "transactional", state="sending",
                            claimed_at=world.clock.now())
        world.answer_written(key, "txn-never-reported")
    world.move_to(world.clock.now() + timedelta(minutes=90))  # 13:00: 3 h silent (error after 2 h)

    run_id = _run_hourly(world, sensor)
    assert sensor.tick().startswith("1 notice(s) delivered")
    (alert,) = hook.take()
    assert alert["status"] == "firing" and alert["severity"] == "ERROR"
    assert (alert["check"], alert["asset"], alert["partition"]) == ("receipts_flowing", "dlr/receipts", None)
    assert alert["value"] == {"seconds_since_last_receipt": 3 * 3600, "messages_awaiting_receipt": 3}
    assert alert["threshold"].startswith("no receipt stored for 3 h while 3 message(s)")
    assert alert["run_id"] == run_id and alert["run_url"] == f"{UI}/runs/{run_id}"
    assert "receipts_flowing" in alert["text"] and f"<{UI}/runs/{run_id}|" in alert["text"]
    assert not any(recipient in json.dumps(alert) for recipient in recipients) and "shipped" not in json.dumps(alert)

    assert sensor.tick().startswith("0 notice(s) delivered") and hook.take() == []  # still failing: quiet
    world.move_to(world.clock.now() + timedelta(minutes=5))  # (before the sends count as still pending)
    _run_hourly(world, sensor)
    assert sensor.tick().startswith("0 notice(s) delivered") and hook.take() == []

    _store_receipt(world)  # receipts flow again
    world.move_to(world.clock.now() + timedelta(minutes=5))
    _run_hourly(world, sensor)
    sensor.tick()
    (resolved,) = hook.take()
    assert (resolved["status"], resolved["key"], resolved["check"]) == ("resolved", alert["key"], "receipts_flowing")
    assert resolved["text"].startswith("✅ RESOLVED")
    sensor.tick()
    assert hook.take() == []


# ----- failed runs ----------------------------------------------------------------------------------------------

DAYS = dg.DailyPartitionsDefinition(start_date="2026-11-01")


class Flaky:
    fail = True


@dg.op
def maybe_fail() -> None:
    if Flaky.fail:
        raise RuntimeError("the provider answered 500")


@dg.job(partitions_def=DAYS)
def flaky_job():
    maybe_fail()


def _run_flaky(sensor: Sensor, day: str, *, fail: bool) -> str:
    Flaky.fail = fail
    result = sensor.defs.resolve_job_def("flaky_job").execute_in_process(
        instance=sensor.instance, partition_key=day, raise_on_error=False)
    assert result.success is not fail
    return result.run_id


def _run_sensor(settings, instance, deadline_s: float = TICK_DEADLINE_S) -> Sensor:
    return Sensor(settings, instance, lambda s: dg.Definitions(jobs=[flaky_job], sensors=[s]), deadline_s)


def test_a_failed_run_is_mailed_once_and_resolved_when_its_partition_succeeds(settings, dagster_instance):
    with smtp_server() as mailbox:
        mail = settings.model_copy(update={"alert_smtp_url": SecretStr(mailbox.url), "ui_url": UI,
                                           "alert_email_to": "oncall@example.com, finance@example.com"})
        sensor = _run_sensor(mail, dagster_instance)
        assert sensor.tick().startswith("0 notice(s) delivered")  # nothing failed yet
        failed = _run_flaky(sensor, "2026-11-28", fail=True)
        sensor.tick()
        (message,) = mailbox.messages
        assert message["Subject"] == "[FIRING] run of flaky_job for 2026-11-28 failed"
        assert message["X-Envelope-To"] == "oncall@example.com, finance@example.com"
        assert message["From"] == settings.alert_email_from
        body = message.get_payload(decode=True).decode()
        assert f"{UI}/runs/{failed}" in body and '"partition": "2026-11-28"' in body
        assert "the provider answered 500" not in body  # what failed is in the run, not the mail

        _run_flaky(sensor, "2026-11-28", fail=True)  # the same problem: no second mail
        _run_flaky(sensor, "2026-11-27", fail=False)  # another day's success clears nothing
        sensor.tick()
        assert len(mailbox.messages) == 1
        _run_flaky(sensor, "2026-11-28", fail=False)
        sensor.tick()
        assert [m["Subject"] for m in mailbox.messages[1:]] == ["[RESOLVED] run of flaky_job for 2026-11-28 failed"]
        sensor.tick()
        assert len(mailbox.messages) == 2


def test_a_notice_the_webhook_refuses_is_logged_without_its_secret_and_sent_next_tick(
        settings, dagster_instance, hook, caplog):
    sensor = _run_sensor(settings.model_copy(update={"alert_webhook_url": SecretStr(hook.url)}), dagster_instance)
    _run_flaky(sensor, "2026-11-20", fail=True)
    hook.answer = 500
    with caplog.at_level(logging.WARNING, logger="sms_pipeline"):
        assert sensor.tick().startswith("0 notice(s) delivered, 1 not delivered")
    assert len(hook.take()) == 1  # one attempt a tick: the next tick is the retry
    delivery = [r for r in caplog.records if r.name == "sms_pipeline.ops.alerts"]
    assert [r.levelname for r in delivery] == ["WARNING", "ERROR"]
    assert "HTTP 500" in delivery[0].getMessage() and "webhook 127.0.0.1" in delivery[0].getMessage()
    assert "1 notice(s) wait for the next tick (not delivered to webhook 127.0.0.1)" in caplog.text
    assert SECRET_PATH not in caplog.text and "s3cr3t" not in caplog.text

    hook.answer = 200
    assert sensor.tick().startswith("1 notice(s) delivered")
    (alert,) = hook.take()
    assert alert["status"] == "firing" and alert["partition"] == "2026-11-20"
    sensor.tick()
    assert hook.take() == []


def test_a_mail_server_that_is_down_does_not_stop_the_webhook_or_the_sensor(settings, dagster_instance, hook):
    with smtp_server() as mailbox:
        down = mailbox.url
    both = settings.model_copy(update={"alert_webhook_url": SecretStr(hook.url), "alert_smtp_url": SecretStr(down),
                                       "alert_email_to": "oncall@example.com"})
    sensor = _run_sensor(both, dagster_instance)
    _run_flaky(sensor, "2026-11-21", fail=True)
    assert sensor.tick().startswith("1 notice(s) delivered, 1 not delivered")
    assert len(hook.take()) == 1
    assert sensor.tick().startswith("0 notice(s) delivered, 1 not delivered")  # the mail only, again
    assert hook.take() == []


def test_a_webhook_that_hangs_costs_the_tick_one_timeout_and_the_mail_is_not_sent_twice(
        settings, dagster_instance, hook):
    with smtp_server() as mailbox:
        both = settings.model_copy(update={"alert_webhook_url": SecretStr(hook.url),
                                           "alert_smtp_url": SecretStr(mailbox.url),
                                           "alert_email_to": "oncall@example.com"})
        sensor = _run_sensor(both, dagster_instance)
        days = ["2026-11-05", "2026-11-06", "2026-11-07"]
        for day in days:
            _run_flaky(sensor, day, fail=True)
        hook.delay_s = 120  # takes the post, never answers
        started = time.monotonic()
        assert sensor.tick().startswith("3 notice(s) delivered, 3 not delivered")
        # One timeout, then the webhook is left alone for the tick (three tries per notice took 3 x 16 s).
        assert time.monotonic() - started < 2 * TIMEOUT_S
        assert len(hook.take()) == 1
        assert sorted(m["Subject"] for m in mailbox.messages) == [
            f"[FIRING] run of flaky_job for {day} failed" for day in days]
        assert [e["delivered_to"] for e in json.loads(sensor.cursor)["open"].values()] == [["mail"]] * 3

        assert sensor.tick().startswith("0 notice(s) delivered, 3 not delivered")  # still hanging
        assert len(hook.take()) == 1 and len(mailbox.messages) == 3
        hook.delay_s = 0
        assert sensor.tick().startswith("3 notice(s) delivered, 0 not delivered")
        assert sorted(p["partition"] for p in hook.take()) == days and len(mailbox.messages) == 3


def test_deliveries_left_at_the_tick_deadline_go_at_the_next_tick_and_none_twice(settings, dagster_instance, hook):
    sensor = _run_sensor(settings.model_copy(update={"alert_webhook_url": SecretStr(hook.url)}), dagster_instance,
                         deadline_s=3.0)
    days = [f"2026-11-1{n}" for n in range(6)]
    for day in days:
        _run_flaky(sensor, day, fail=True)
    hook.delay_s = 1.0  # six notices take 6 s: more than the deadline
    started = time.monotonic()
    sensor.tick()
    assert time.monotonic() - started < 3.0 + 1.0 + 2.0  # the last delivery started before the deadline
    first = [p["partition"] for p in hook.take()]
    assert 0 < len(first) < len(days)
    assert json.loads(sensor.cursor)["open"].keys() >= {f"run:flaky_job:{day}" for day in days}
    hook.delay_s = 0
    assert sensor.tick().startswith(f"{len(days) - len(first)} notice(s) delivered, 0 not delivered")
    rest = [p["partition"] for p in hook.take()]
    assert sorted(first + rest) == days


# ----- failed checks, one problem per partition ----------------------------------------------------------------

class Tieout:
    failing: set[str] = set()


@dg.asset(partitions_def=DAYS, check_specs=[dg.AssetCheckSpec("ties_out", asset="day_totals")])
def day_totals(context) -> dg.MaterializeResult:  # (a string annotation is refused by Dagster)
    return dg.MaterializeResult(check_results=[dg.AssetCheckResult(
        passed=context.partition_key not in Tieout.failing, severity=dg.AssetCheckSeverity.ERROR,
        metadata={"days_off": 1})])


def _evaluate(sensor: Sensor, day: str, *, passes: bool) -> None:
    Tieout.failing = set() if passes else {day}
    assert dg.materialize([day_totals], instance=sensor.instance, partition_key=day).success


def test_a_failed_check_is_a_problem_of_its_partition_cleared_only_by_a_pass_on_that_partition(
        settings, dagster_instance, hook):
    sensor = Sensor(settings.model_copy(update={"alert_webhook_url": SecretStr(hook.url)}), dagster_instance,
                    lambda s: dg.Definitions(assets=[day_totals], sensors=[s]))
    _evaluate(sensor, "2026-11-10", passes=False)
    sensor.tick()
    (alert,) = hook.take()
    assert (alert["status"], alert["check"], alert["asset"], alert["partition"]) == (
        "firing", "ties_out", "day_totals", "2026-11-10")
    assert alert["key"] == "check:day_totals:ties_out:2026-11-10" and alert["value"] == {"days_off": 1}
    assert alert["title"] == "check ties_out failed on day_totals for 2026-11-10"

    _evaluate(sensor, "2026-11-11", passes=True)  # the next day passes: the 10th is still wrong
    sensor.tick()
    sensor.tick()
    assert hook.take() == []
    _evaluate(sensor, "2026-11-12", passes=False)  # another day fails: its own problem
    sensor.tick()
    assert [(p["status"], p["partition"]) for p in hook.take()] == [("firing", "2026-11-12")]

    _evaluate(sensor, "2026-11-10", passes=True)
    sensor.tick()
    assert [(p["status"], p["partition"]) for p in hook.take()] == [("resolved", "2026-11-10")]
    sensor.tick()
    assert hook.take() == []
    assert list(json.loads(sensor.cursor)["open"]) == ["check:day_totals:ties_out:2026-11-12"]


def test_without_a_destination_the_sensor_skips_and_says_why(settings, dagster_instance):
    sensor = _run_sensor(settings, dagster_instance)
    assert sensor.tick() == NO_DESTINATION


def test_a_failed_backfill_alerts_once_and_its_runs_are_not_told_one_by_one(settings, dagster_instance, hook):
    sensor = _run_sensor(settings.model_copy(update={"alert_webhook_url": SecretStr(hook.url), "ui_url": UI}),
                         dagster_instance)
    backfill_id = "bkfailed"
    Flaky.fail = True
    run = sensor.defs.resolve_job_def("flaky_job").execute_in_process(
        instance=dagster_instance, partition_key="2026-11-02", tags={"dagster/backfill": backfill_id},
        raise_on_error=False)
    assert not run.success
    dagster_instance.add_backfill(PartitionBackfill(
        backfill_id, BulkActionStatus.COMPLETED_FAILED, from_failure=False, tags={},
        backfill_timestamp=time.time() - 60, partition_names=["2026-11-01", "2026-11-03", "2026-11-02"],
        backfill_end_timestamp=time.time()))
    sensor.tick()
    (alert,) = hook.take()
    assert alert["key"] == f"backfill:{backfill_id}" and alert["partition"] == "2026-11-01...2026-11-03"
    assert alert["run_url"] == f"{UI}/runs/b/{backfill_id}"
    assert alert["title"] == f"backfill {backfill_id} (2026-11-01...2026-11-03) failed"
    sensor.tick()
    assert hook.take() == []
    assert json.loads(sensor.cursor)["open"] == {}  # told once: nothing left to resolve


def test_a_backfill_stored_failed_after_a_tick_that_its_end_time_precedes_is_still_told_once(
        settings, dagster_instance, hook):
    sensor = _run_sensor(settings.model_copy(update={"alert_webhook_url": SecretStr(hook.url)}), dagster_instance)
    long_ago = time.time() - 2 * 86400  # before a first tick's look back
    dagster_instance.add_backfill(PartitionBackfill(
        "bkancient", BulkActionStatus.COMPLETED_FAILED, from_failure=False, tags={},
        backfill_timestamp=long_ago - 60, partition_names=["2026-11-01"], backfill_end_timestamp=long_ago))
    sensor.tick()
    ended = time.time() - 120  # it ended two minutes ago, but its failure is stored only now, after the tick
    dagster_instance.add_backfill(PartitionBackfill(
        "bklate", BulkActionStatus.COMPLETED_FAILED, from_failure=False, tags={},
        backfill_timestamp=ended - 60, partition_names=["2026-11-04"], backfill_end_timestamp=ended))
    sensor.tick()
    assert [p["key"] for p in hook.take()] == ["backfill:bklate"]
    assert json.loads(sensor.cursor)["backfills_told"] == {"bklate": ended}
    sensor.tick()
    assert hook.take() == []


def test_the_pipeline_carries_the_sensor_on_by_default(settings):
    for definitions in (defs, definitions_for(settings)):
        (sensor,) = definitions.get_repository_def().sensor_defs
        assert (sensor.name, sensor.default_status, sensor.minimum_interval_seconds) == (
            "alert_sensor", dg.DefaultSensorStatus.RUNNING, 60)
