"""The receipt-push registration and the code table through the client, and ``sms-pipeline webhook``."""

from __future__ import annotations

import pytest

from sms_pipeline.provider import ReportError
from sms_pipeline.provider.results import DeliveryCode, WebhookRegistration
from tests.provider.conftest import ACCOUNT
from tests.support.environment import provider_variables

SECRET = "webhook-Secret-0123456789abcdef"
URL = f"https://receiver.example/dlr/{SECRET}"


def test_a_webhook_is_registered_read_changed_and_deleted(client):
    assert client.webhook_read() is None

    client.webhook_create(URL, 25)
    assert client.webhook_read() == WebhookRegistration(URL, 25)
    client.webhook_update(rate=50)
    assert client.webhook_read() == WebhookRegistration(URL, 50)
    client.webhook_update(url=URL + "-2")
    assert client.webhook_read() == WebhookRegistration(URL + "-2", 50)

    client.webhook_delete()
    assert client.webhook_read() is None


def test_without_a_rate_the_provider_default_applies(client):
    client.webhook_create(URL)
    assert client.webhook_read() == WebhookRegistration(URL, 10)


def test_refusals_are_one_line_errors_without_credentials(client):
    client.webhook_create(URL)
    with pytest.raises(ReportError) as second:
        client.webhook_create(URL)
    with pytest.raises(ReportError) as bad:
        client.webhook_update(url="ftp://receiver.example/dlr/x")
    client.webhook_delete()
    with pytest.raises(ReportError) as nothing:
        client.webhook_delete()
    for error in (second, bad, nothing):
        text = str(error.value)
        assert "\n" not in text and ACCOUNT.password not in text


def test_the_code_table_maps_codes_to_report_words(client):
    codes = client.delivery_codes()

    by_code = {code.code: code for code in codes}
    assert all(isinstance(code, DeliveryCode) for code in codes) and len(by_code) == len(codes) > 1
    assert by_code["000"].status == "DELIVRD"
    assert all(code.status.strip() == code.status != "" for code in codes)


@pytest.fixture
def provider(sim) -> dict[str, str]:
    return provider_variables(sim.base_url, userid=ACCOUNT.userid, password=ACCOUNT.password)


def test_the_cli_registers_shows_and_deletes_without_showing_the_secret(run, provider):
    code, out, _ = run("webhook", "show", **provider)
    assert (code, out) == (1, "no webhook registered\n")

    code, out, err = run("webhook", "register", "--url", URL, "--rate", "20", **provider)
    assert code == 0, err
    assert out.startswith("webhook registered: https://receiver.example/dlr/*** at 20/s")
    code, out, _ = run("webhook", "register", "--url", URL + "x", **provider)
    assert code == 0 and out.startswith("webhook changed (was https://receiver.example/dlr/***): "
                                        "https://receiver.example/dlr/***")
    code, out, _ = run("webhook", "show", **provider)
    assert (code, out) == (0, "webhook: https://receiver.example/dlr/*** at 20/s\n")
    code, out, _ = run("webhook", "delete", **provider)
    assert code == 0 and out.startswith("webhook deleted")
    code, out, err = run("webhook", "delete", **provider)
    assert code == 2 and err.startswith("sms-pipeline: error: provider webhook delete failed")


def test_the_configured_secret_is_masked_wherever_it_appears(run, provider):
    code, out, err = run("webhook", "register", "--url", f"https://receiver.example/push?key={SECRET}",
                         SMS_PIPELINE_WEBHOOK_SECRET=SECRET, **provider)
    assert code == 0, err
    assert SECRET not in out and "key=***" in out
