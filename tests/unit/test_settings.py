from pathlib import Path

import pytest

from sms_pipeline import settings
from sms_pipeline.errors import SettingsError


def test_defaults_follow_design():
    s = settings.load({})
    assert s.home == Path.cwd() / ".sms-pipeline"
    assert s.database_url is None
    assert str(s.provider_timezone) == "Asia/Kolkata"
    assert s.partition_start is None  # the database records one (docs/design.md#first-partition-day)
    assert (s.correlation_window_s, s.claim_lease_s, s.validity_h) == (90, 300, 96)
    assert (s.lookback_days, s.non_submission_grace_h, s.batch_size) == (5, 24, 500)
    assert s.reconcile_work_mem_mb == 256  # docs/design.md#reconciliation-memory


def test_unknown_variable_is_one_line_error_naming_it():
    with pytest.raises(SettingsError) as err:
        settings.load({"SMS_PIPELINE_BATCHSIZE": "10"})
    assert "SMS_PIPELINE_BATCHSIZE" in str(err.value)
    assert "\n" not in str(err.value)


def test_unknown_provider_variable_refused_too():
    with pytest.raises(SettingsError, match="SMS_PROVIDER_TIMEZ0NE"):
        settings.load({"SMS_PROVIDER_TIMEZ0NE": "UTC"})


@pytest.mark.parametrize(
    "name,value",
    [
        ("SMS_PIPELINE_BATCH_SIZE", "many"),
        ("SMS_PIPELINE_BATCH_SIZE", "0"),
        ("SMS_PIPELINE_BATCH_SIZE", "5.0"),
        ("SMS_PIPELINE_RECONCILE_WORK_MEM_MB", "0"),
        ("SMS_PIPELINE_RECONCILE_WORK_MEM_MB", "2097152"),  # past Postgres' limit: refused at start, not mid-run
        ("SMS_PIPELINE_RECONCILE_WORK_MEM_MB", "1GB"),
        ("SMS_PROVIDER_TIMEZONE", "Mars/Olympus"),
        ("SMS_PIPELINE_PARTITION_START", "2026-13-01"),
        ("SMS_PIPELINE_DATABASE_URL", "mysql://x"),
        ("SMS_PROVIDER_BASE_URL", "ftp://x"),
    ],
)
def test_malformed_value_is_one_line_error_naming_it(name, value):
    with pytest.raises(SettingsError) as err:
        settings.load({name: value})
    assert name in str(err.value)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("megabytes", [1, 2_097_151])
def test_the_reconciliation_memory_takes_any_size_postgres_takes(megabytes):
    s = settings.load({"SMS_PIPELINE_RECONCILE_WORK_MEM_MB": str(megabytes)})
    assert s.reconcile_work_mem_mb == megabytes


def test_secrets_never_show():
    s = settings.load({"SMS_PROVIDER_PASSWORD": "hunter2", "SMS_PIPELINE_OTP_HMAC_KEY": "k3y"})
    assert "hunter2" not in repr(s) and "k3y" not in repr(s)
    assert s.provider_password.get_secret_value() == "hunter2"


def test_database_urls_keep_their_password_out_of_reprs_and_errors():
    s = settings.load({"SMS_PIPELINE_DATABASE_URL": "postgresql://u:pw123@db/app",
                       "SMS_PIPELINE_TEST_DATABASE_URL": "postgresql://u:pw456@db/postgres",
                       "SMS_PIPELINE_TEXT_HMAC_KEY": "a-shared-text-key-0123456789"})
    assert "pw123" not in repr(s) and "pw456" not in repr(s)
    assert s.database_url == "postgresql://u:pw123@db/app"
    with pytest.raises(SettingsError) as err:
        settings.load({"SMS_PIPELINE_DATABASE_URL": "postgresq://u:hunter2@db/app"})
    assert "hunter2" not in str(err.value) and "SMS_PIPELINE_DATABASE_URL" in str(err.value)


def test_the_text_key_is_required_with_an_external_database_and_never_shown():
    with pytest.raises(SettingsError, match="SMS_PIPELINE_TEXT_HMAC_KEY is required when SMS_PIPELINE_DATABASE_URL"):
        settings.load({"SMS_PIPELINE_DATABASE_URL": "postgresql://u@db/app"})
    assert settings.load({}).text_hmac_key is None  # the embedded database: a key kept in the home
    s = settings.load({"SMS_PIPELINE_DATABASE_URL": "postgresql://u@db/app", "SMS_PIPELINE_TEXT_HMAC_KEY": "t3xtk3y"})
    assert "t3xtk3y" not in repr(s) and s.text_hmac_key.get_secret_value() == "t3xtk3y"


def test_other_variables_are_ignored():
    assert settings.load({"PATH": "/bin", "SMS_OTHER": "x"}).batch_size == 500


def test_the_claim_lease_must_outlast_the_longest_request():
    """A request in flight when the lease ran out would be written unknown and its answer lost."""
    with pytest.raises(SettingsError, match="SMS_PIPELINE_CLAIM_LEASE_S=30 must exceed the longest request"):
        settings.load({"SMS_PIPELINE_CLAIM_LEASE_S": "30"})  # 5 s connect + 30 s read
    assert settings.load({"SMS_PIPELINE_CLAIM_LEASE_S": "36"}).claim_lease_s == 36


def test_the_home_is_fixed_when_the_settings_are_read(tmp_path, monkeypatch):
    """dagster-dbt's column-metadata threads change the working directory during a dbt run: a relative home
    read then would be another folder, with another embedded server (the README's demo lost its views)."""
    monkeypatch.chdir(tmp_path)
    s = settings.load({"SMS_PIPELINE_HOME": "state"})
    monkeypatch.chdir(tmp_path.parent)
    assert s.home == tmp_path / "state" and s.home.is_absolute()
    assert settings.load({"SMS_PIPELINE_HOME": "~/x"}).home == Path.home() / "x"
