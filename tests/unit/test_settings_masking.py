"""Secrets are never echoed: a database URL is shown with only its password masked, well-formed or not (issue 18, 8)."""

from __future__ import annotations

import pytest

from sms_pipeline import cli, settings
from sms_pipeline.core.redaction import mask_url_password
from sms_pipeline.db import connection
from sms_pipeline.errors import DatabaseUnavailable, SettingsError
from tests.support.environment import TEXT_HMAC_KEY, app_environ

PASSWORD = "s3cr#t/pw"  # unencoded '#' and '/': the URL is malformed, its password still a secret
TEXT_KEY = {"SMS_PIPELINE_TEXT_HMAC_KEY": TEXT_HMAC_KEY}  # required with SMS_PIPELINE_DATABASE_URL


@pytest.mark.parametrize(("url", "shown"), [
    ("postgresql://app:hunter2@db.example:5432/sms", "postgresql://app:***@db.example:5432/sms"),
    ("postgresql://app:hunter2@db.example:54x2/sms", "postgresql://app:***@db.example:54x2/sms"),
    ("postgresql://app:hunter2@db.example:99999/sms", "postgresql://app:***@db.example:99999/sms"),
    (f"postgresql://app:{PASSWORD}@db.example:5432/sms", "postgresql://app:***@db.example:5432/sms"),
    ("postgresql://app:p@ss@db.example/sms", "postgresql://app:***@db.example/sms"),
    ("postgresql://db.example/sms?user=app&password=hunter2", "postgresql://db.example/sms?user=app&password=***"),
    ("postgresql://app@db.example/sms", "postgresql://app@db.example/sms"),
    ("postgresql:/app:hunter2@db.example/sms", "postgresql:/***@db.example/sms"),
    # the host forgotten: "user:password" would read as host:port, and is masked
    ("postgresql://app:hunter2", "postgresql://***"),
    ("postgresql://app:hunter2/sms", "postgresql://***/sms"),
    # no credentials: nothing to mask
    ("postgresql://[::1]:5432/sms", "postgresql://[::1]:5432/sms"),
    ("postgresql://h1:5432,h2:5433/sms", "postgresql://h1:5432,h2:5433/sms"),
    ("postgresql:///sms?host=/var/run/postgresql", "postgresql:///sms?host=/var/run/postgresql"),
    # libpq's key=value form, its quoted values (blanks, escaped quotes) and blanks around '='
    ("host=db password=hunter2 dbname=sms", "host=db password=*** dbname=sms"),
    ("host=db password='hunter 2' dbname=sms", "host=db password=*** dbname=sms"),
    ("host=db password = 'it\\'s hunter2' dbname=sms", "host=db password=*** dbname=sms"),
    ("host=db dbname=sms password='hunter 2", "host=db dbname=sms password=***"),
])
def test_a_url_is_shown_with_only_its_password_masked(url, shown):
    assert mask_url_password(url) == shown == connection.redact(url)


@pytest.mark.parametrize("variable", ["SMS_PIPELINE_DATABASE_URL", "SMS_PIPELINE_TEST_DATABASE_URL"])
@pytest.mark.parametrize(("url", "shown", "reason"), [
    ("postgresql://app:hunter2@db.example:54x2/sms", "postgresql://app:***@db.example:54x2/sms", "port"),
    ("postgresql://app:hunter2@[::1]:70000/sms", "postgresql://app:***@[::1]:70000/sms", "port"),
    ("postgresq://app:hunter2@db.example/sms", "postgresq://app:***@db.example/sms", "postgresql://"),
])
def test_a_malformed_database_url_is_refused_with_its_password_masked(variable, url, shown, reason):
    with pytest.raises(SettingsError) as refused:
        settings.load({variable: url})

    message = str(refused.value)
    assert message.startswith(f"malformed setting {variable}='{shown}': ") and reason in message
    assert "hunter2" not in message


def test_multi_host_urls_and_unix_sockets_are_not_malformed():
    for url in ("postgresql://app:pw@h1:5432,h2:5433/sms?target_session_attrs=read-write",
                "postgresql:///sms?host=/var/run/postgresql", "postgresql://[::1]:5432/sms"):
        assert settings.load({"SMS_PIPELINE_DATABASE_URL": url, **TEXT_KEY}).database_url == url


def test_the_settings_command_and_the_cli_error_show_the_url_masked(monkeypatch, capsys, tmp_path):
    for name, value in app_environ(SMS_PIPELINE_HOME=str(tmp_path / "home")).items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("SMS_PIPELINE_DATABASE_URL", f"postgresql://app:{PASSWORD}@db.example:5432/sms")
    monkeypatch.setenv("SMS_PIPELINE_TEST_DATABASE_URL", "postgresql://app:hunter2@db.example/postgres")
    monkeypatch.setenv("SMS_PROVIDER_PASSWORD", "provider-pw")

    assert cli.main(["settings"]) == 0
    out = capsys.readouterr().out
    assert "current: postgresql://app:***@db.example:5432/sms" in out
    assert "current: postgresql://app:***@db.example/postgres" in out
    assert "(set, hidden)" in out  # the provider password: not a URL, not shown at all
    assert "s3cr" not in out and "hunter2" not in out and "provider-pw" not in out

    monkeypatch.setenv("SMS_PIPELINE_DATABASE_URL", "postgresql://app:hunter2@db.example:54x2/sms")
    assert cli.main(["settings"]) == 2
    err = capsys.readouterr().err
    assert "postgresql://app:***@db.example:54x2/sms" in err and "hunter2" not in err


def test_a_connection_failure_names_the_server_with_the_password_masked():
    with pytest.raises(DatabaseUnavailable) as failed:
        connection.connect_url("postgresql://app:hunter2@127.0.0.1:99999/sms")

    assert "postgresql://app:***@127.0.0.1:99999/sms" in str(failed.value) and "hunter2" not in str(failed.value)
