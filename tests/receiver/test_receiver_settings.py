"""The receiver's settings: the secret (never shown) and the push's parameter names (distinct)."""

from __future__ import annotations

import pytest

from sms_pipeline import settings
from sms_pipeline.errors import SettingsError


def test_the_defaults_are_the_contracts_names_and_no_secret():
    s = settings.load({})
    assert s.webhook_secret is None
    assert s.webhook_parameters == {"txn_id": "txn_id", "msg_id": "msg_id", "mobile": "mobile",
                                    "error_code": "error_code", "received_time": "received_time",
                                    "delivered_time": "delivered_time"}


@pytest.mark.parametrize("secret", ["short-secret", "has/a/slash/0123456789", "has space 0123456789",
                                    "percent%20encoded012345"])
def test_a_secret_that_is_short_or_needs_escaping_is_refused_unshown(secret):
    with pytest.raises(SettingsError) as refused:
        settings.load({"SMS_PIPELINE_WEBHOOK_SECRET": secret})
    message = str(refused.value)
    assert message.startswith("malformed setting SMS_PIPELINE_WEBHOOK_SECRET=***: ") and secret not in message


def test_a_good_secret_stays_out_of_reprs_and_shown_values():
    secret = "Abc_def-ghi.jkl~0123456789"
    s = settings.load({"SMS_PIPELINE_WEBHOOK_SECRET": secret})
    assert s.webhook_secret.get_secret_value() == secret
    assert secret not in repr(s)
    assert settings.shown_value("SMS_PIPELINE_WEBHOOK_SECRET", secret) == "***"


def test_two_fields_cannot_share_a_parameter_name():
    with pytest.raises(SettingsError, match="SMS_PIPELINE_WEBHOOK_PARAM_DELIVERED_TIME and "
                                            "SMS_PIPELINE_WEBHOOK_PARAM_RECEIVED_TIME name the same parameter 'time'"):
        settings.load({"SMS_PIPELINE_WEBHOOK_PARAM_RECEIVED_TIME": "time",
                       "SMS_PIPELINE_WEBHOOK_PARAM_DELIVERED_TIME": "time"})
    with pytest.raises(SettingsError, match="name the same parameter 'mobile'"):
        settings.load({"SMS_PIPELINE_WEBHOOK_PARAM_MSG_ID": "mobile"})


@pytest.mark.parametrize("name", ["msg id", "x" * 65, "tab\tname"])
def test_a_parameter_name_is_one_printable_word(name):
    with pytest.raises(SettingsError, match="SMS_PIPELINE_WEBHOOK_PARAM_MSG_ID"):
        settings.load({"SMS_PIPELINE_WEBHOOK_PARAM_MSG_ID": name})


def test_the_pool_size_is_a_positive_whole_number():
    assert settings.load({"SMS_PIPELINE_RECEIVER_POOL_SIZE": "3"}).receiver_pool_size == 3
    with pytest.raises(SettingsError, match="SMS_PIPELINE_RECEIVER_POOL_SIZE"):
        settings.load({"SMS_PIPELINE_RECEIVER_POOL_SIZE": "0"})


def test_the_keep_alive_is_a_positive_number_of_seconds():
    assert settings.load({}).receiver_keep_alive_s == 120
    assert settings.load({"SMS_PIPELINE_RECEIVER_KEEP_ALIVE_S": "75"}).receiver_keep_alive_s == 75
    with pytest.raises(SettingsError, match="SMS_PIPELINE_RECEIVER_KEEP_ALIVE_S"):
        settings.load({"SMS_PIPELINE_RECEIVER_KEEP_ALIVE_S": "0"})
