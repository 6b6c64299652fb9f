"""Credentials never appear in logs, exception texts, outcome reasons or reprs."""

from __future__ import annotations

import logging
from datetime import timedelta

from pydantic import SecretStr
import pytest

from sms_pipeline.core.provider_time import local_date
from sms_pipeline.provider import ProviderCallError, ProviderClient, ReportError


def _exercise(provider: ProviderClient, sim, tmp_path) -> list[str]:
    """Calls of every kind, good and failing; returns the texts they produced."""
    texts = [repr(provider), str(provider.__dict__)]
    texts.append(repr(provider.send(["919876543210"], "hello", "SGCSMS")))
    day = local_date(sim.clock.now(), sim.state.timezone)
    provider.day_report(day, tmp_path)  # GET: the password travels in the query string
    provider.campaign_read("123")
    sim.faults.update({"stall": 1.0, "rate_limit_report": 1.0})
    texts.append(repr(provider.send(["919876543210"], "hello", "SGCSMS")))
    for call in (lambda: provider.day_report(day, tmp_path), lambda: provider.summary(day, day)):
        with pytest.raises(ReportError) as err:
            call()
        texts += [str(err.value), repr(err.value)]
    sim.faults.clear()
    sim.faults.update({"refuse_connection": 1.0})
    texts.append(repr(provider.send(["919876543210"], "hello", "SGCSMS")))
    with pytest.raises(ProviderCallError) as err:
        provider.otp_verify("919876543210", "123456")
    texts.append(str(err.value))
    return texts


@pytest.mark.parametrize("auth", ["password", "api_key"])
def test_credentials_stay_secret(make_client, sim, account, tmp_path, caplog, auth):
    caplog.set_level(logging.DEBUG)
    for name in ("httpx", "httpcore", "sms_pipeline"):
        logging.getLogger(name).setLevel(logging.DEBUG)
    options = {"password": SecretStr(account.password), "api_key": None} if auth == "password" else {
        "password": None, "api_key": SecretStr(account.api_key)}
    provider = make_client(read_timeout=1.0, max_retries=1, **options)

    texts = _exercise(provider, sim, tmp_path)

    assert "HTTP Request" in caplog.text  # httpx did log the requests
    if auth == "password":
        assert "password=***" in caplog.text  # the GET URLs were logged, masked
    for secret in (account.password, account.api_key):
        assert secret not in caplog.text
        assert all(secret not in text for text in texts)


def test_missing_credentials_is_a_clear_error(account):
    with pytest.raises(ProviderCallError, match="credentials missing"):
        ProviderClient("http://127.0.0.1:9/SMSApi", account.userid, None, None, account.timezone)


def test_from_settings_reads_provider_settings(sim, account):
    from sms_pipeline import settings as settings_module

    cfg = settings_module.load({
        "SMS_PROVIDER_BASE_URL": sim.base_url, "SMS_PROVIDER_USERID": account.userid,
        "SMS_PROVIDER_PASSWORD": account.password, "SMS_PROVIDER_TIMEZONE": "Asia/Kolkata",
        "SMS_PROVIDER_READ_TIMEOUT_S": "3",
    })
    with ProviderClient.from_settings(cfg) as provider:
        assert provider.base_url == sim.base_url
        assert provider.send(["919876543210"], "hello", "SGCSMS").accepted == ("919876543210",)
        assert account.password not in repr(provider)
    sim.clock.advance(timedelta(seconds=1))
