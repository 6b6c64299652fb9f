"""Alert delivery to real local servers: ``sms-pipeline alerts test``, mail with a login from the URL,
and what a failed delivery says."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import quote

import pytest

from sms_pipeline.ops.alerts import ATTEMPTS
from tests.support.alerts import SECRET_PATH, Webhook, self_signed_certificate, smtp_server, webhook_server


# aiosmtpd warns when it allows a login without STARTTLS: over plain text (a server without a certificate, fine
# on 127.0.0.1) and under smtps, whose whole session is TLS.
NO_TLS_NOTE = pytest.mark.filterwarnings("ignore:Requiring AUTH while not requiring TLS")


@pytest.fixture
def hook() -> Iterator[Webhook]:
    with webhook_server() as server:
        yield server


def test_alerts_test_posts_one_test_alert_to_the_webhook(run, hook):
    code, out, _ = run("alerts", "test", SMS_PIPELINE_ALERT_WEBHOOK_URL=hook.url)
    assert (code, out) == (0, "webhook 127.0.0.1: delivered\n")
    (alert,) = hook.take()
    assert (alert["key"], alert["status"]) == ("test", "firing")
    assert alert["text"].startswith("🔴 FIRING [INFO] test alert from sms-pipeline")


@NO_TLS_NOTE
def test_alerts_test_mails_through_a_server_that_wants_the_urls_login(run):
    password = "p@ss:word/1"  # percent-encoded in the URL, as a URL needs
    with smtp_server(login=("alerts", password)) as mailbox:
        url = mailbox.url.replace("smtp://", f"smtp://alerts:{quote(password, safe='')}@")
        code, out, _ = run("alerts", "test", SMS_PIPELINE_ALERT_SMTP_URL=url,
                           SMS_PIPELINE_ALERT_EMAIL_TO="oncall@example.com",
                           SMS_PIPELINE_ALERT_EMAIL_FROM="pipeline@example.com")
    assert code == 0 and out.endswith(": delivered\n") and "p@ss" not in out
    (message,) = mailbox.messages
    assert (message["From"], message["X-Envelope-To"]) == ("pipeline@example.com", "oncall@example.com")
    assert message["Subject"] == "[FIRING] test alert from sms-pipeline: delivery works"


@NO_TLS_NOTE
def test_a_wrong_mail_password_fails_and_says_so(run):
    with smtp_server(login=("alerts", "right")) as mailbox:
        url = mailbox.url.replace("smtp://", "smtp://alerts:wrong@")
        code, out, _ = run("alerts", "test", SMS_PIPELINE_ALERT_SMTP_URL=url,
                           SMS_PIPELINE_ALERT_EMAIL_TO="oncall@example.com")
    assert code == 1 and out.endswith(": failed (details in the log)\n") and not mailbox.messages


@NO_TLS_NOTE
@pytest.mark.parametrize("implicit_tls", [False, True], ids=["smtp-starttls", "smtps"])
def test_mail_is_encrypted_before_the_login_with_starttls_or_smtps(run, tmp_path, implicit_tls):
    """The server refuses mail (and, over STARTTLS, the login) before TLS: delivered means encrypted."""
    certificate = self_signed_certificate(tmp_path)
    with smtp_server(login=("alerts", "secret"), certificate=certificate, implicit_tls=implicit_tls) as mailbox:
        url = mailbox.url.replace("://", "://alerts:secret@")
        code, out, _ = run("alerts", "test", SMS_PIPELINE_ALERT_SMTP_URL=url,
                           SMS_PIPELINE_ALERT_EMAIL_TO="oncall@example.com", SSL_CERT_FILE=str(certificate))
    assert (code, out) == (0, f"mail via {mailbox.url}: delivered\n")
    assert len(mailbox.messages) == 1


def test_alerts_test_says_per_destination_what_failed_and_exits_non_zero(run, hook, tmp_path):
    with smtp_server() as mailbox:
        down = mailbox.url  # nothing listens there any more
    hook.answer = 503
    code, out, err = run("alerts", "test", SMS_PIPELINE_ALERT_WEBHOOK_URL=hook.url,
                       SMS_PIPELINE_ALERT_SMTP_URL=down, SMS_PIPELINE_ALERT_EMAIL_TO="oncall@example.com")
    assert code == 1
    assert out.splitlines() == ["webhook 127.0.0.1: failed (details in the log)",
                                f"mail via {down}: failed (details in the log)"]
    assert len(hook.take()) == ATTEMPTS  # retried
    logged = (tmp_path / "home" / "logs" / "sms-pipeline.log").read_text()
    assert logged.count("failed (attempt ") == 2 * ATTEMPTS
    assert "to webhook 127.0.0.1 failed (attempt 1/3): HTTP 503" in logged
    assert f"to mail via {down} failed (attempt 3/3): ConnectionRefusedError" in logged
    assert SECRET_PATH not in logged + err


def test_alerts_test_without_a_destination_is_one_line(run):
    code, out, err = run("alerts", "test")
    assert (code, out) == (2, "")
    assert err == ("sms-pipeline: error: no alert destination configured: set SMS_PIPELINE_ALERT_WEBHOOK_URL "
                   "and/or SMS_PIPELINE_ALERT_SMTP_URL with SMS_PIPELINE_ALERT_EMAIL_TO\n")
