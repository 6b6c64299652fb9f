"""Alerts that reach a person: one problem's firing or resolved notice, posted to a webhook and/or mailed.

The webhook gets JSON with a Slack-compatible ``text`` and the structured
fields (check, asset, partition, severity, value, threshold, run link);
the mail carries the same text and fields. A delivery that fails is logged
(naming only the destination's host: a webhook's path and an SMTP URL's
password are secrets) and reported as not delivered: it never raises, so
whoever calls it keeps going. ``sms-pipeline alerts test`` tries a few times
with a short backoff; the alert sensor tries once per tick (its next tick is
the retry).
"""

from __future__ import annotations

import json
import logging
import smtplib
import ssl
import time
from dataclasses import asdict, dataclass, field, replace
from email.message import EmailMessage
from typing import Any, Literal, Protocol
from urllib.parse import unquote, urlsplit

import httpx

from sms_pipeline.settings import Settings

log = logging.getLogger(__name__)

Status = Literal["firing", "resolved"]
ATTEMPTS = 3
BACKOFF_S = 0.5  # doubled after each failed attempt: a blip passes, a dead server costs seconds
TIMEOUT_S = 5.0
NO_DESTINATION = ("no alert destination configured: set SMS_PIPELINE_ALERT_WEBHOOK_URL and/or "
                  "SMS_PIPELINE_ALERT_SMTP_URL with SMS_PIPELINE_ALERT_EMAIL_TO")


@dataclass(frozen=True)
class Alert:
    """One problem's notice. ``key`` names the problem (stable until it clears); no numbers, bodies or secrets."""

    key: str
    title: str
    severity: str
    status: Status = "firing"
    check: str | None = None
    asset: str | None = None
    partition: str | None = None
    value: dict[str, float | int] = field(default_factory=dict)  # the check's counts and ages
    threshold: str | None = None  # the check's own words, which name its limits
    run_id: str | None = None
    run_url: str | None = None

    def resolved(self) -> Alert:
        return replace(self, status="resolved")

    def text(self) -> str:
        """Slack mrkdwn: the status and title, the threshold, the run link."""
        lines = [f"{'🔴 FIRING' if self.status == 'firing' else '✅ RESOLVED'} [{self.severity}] {self.title}"]
        if self.threshold:
            lines.append(self.threshold)
        if self.run_url:
            lines.append(f"<{self.run_url}|run {self.run_id}>")
        return "\n".join(lines)

    def payload(self) -> dict[str, Any]:
        return {"text": self.text(), **asdict(self)}


def run_url(ui_url: str, run_id: str) -> str:
    return f"{ui_url.rstrip('/')}/runs/{run_id}"


def backfill_url(ui_url: str, backfill_id: str) -> str:
    return f"{ui_url.rstrip('/')}/runs/b/{backfill_id}"


class Destination(Protocol):
    name: str  # stable ("webhook", "mail"): the sensor records per destination what it delivered
    shown: str  # what a log line or a person may see of it

    def send(self, alert: Alert) -> None: ...


@dataclass(frozen=True)
class Webhook:
    url: str
    name: str = "webhook"

    @property
    def shown(self) -> str:
        return f"webhook {urlsplit(self.url).hostname}"

    def send(self, alert: Alert) -> None:
        httpx.post(self.url, json=alert.payload(), timeout=TIMEOUT_S).raise_for_status()


@dataclass(frozen=True)
class Mail:
    smtp_url: str
    to: tuple[str, ...]
    sender: str
    name: str = "mail"

    @property
    def shown(self) -> str:
        parts = urlsplit(self.smtp_url)
        return f"mail via {parts.scheme}://{parts.hostname}:{parts.port or ''}".rstrip(":")

    def send(self, alert: Alert) -> None:
        message = EmailMessage()
        message["Subject"] = f"[{alert.status.upper()}] {alert.title}"
        message["From"] = self.sender
        message["To"] = ", ".join(self.to)
        message.set_content(alert.text() + "\n\n" + json.dumps(asdict(alert), indent=2))
        parts = urlsplit(self.smtp_url)
        if parts.scheme == "smtps":
            server: smtplib.SMTP = smtplib.SMTP_SSL(parts.hostname or "localhost", parts.port or 465,
                                                    timeout=TIMEOUT_S, context=ssl.create_default_context())
        else:
            server = smtplib.SMTP(parts.hostname or "localhost", parts.port or 25, timeout=TIMEOUT_S)
        with server:
            server.ehlo()
            if parts.scheme == "smtp" and server.has_extn("starttls"):
                server.starttls(context=ssl.create_default_context())
                server.ehlo()
            if parts.username:
                server.login(unquote(parts.username), unquote(parts.password or ""))
            server.send_message(message)


def destinations(settings: Settings) -> list[Destination]:
    """Every configured destination (none: alerts are off)."""
    found: list[Destination] = []
    if settings.alert_webhook_url is not None:
        found.append(Webhook(settings.alert_webhook_url.get_secret_value()))
    if settings.alert_smtp_url is not None and settings.alert_email_to:
        to = tuple(a.strip() for a in settings.alert_email_to.split(",") if a.strip())
        found.append(Mail(settings.alert_smtp_url.get_secret_value(), to, settings.alert_email_from))
    return found


def deliver(alert: Alert, destination: Destination, *, attempts: int = ATTEMPTS, backoff_s: float = BACKOFF_S) -> bool:
    """Send ``alert``, trying ``attempts`` times; False (logged) when every attempt failed."""
    for attempt in range(1, attempts + 1):
        try:
            destination.send(alert)
            log.info("alert %s (%s) delivered to %s", alert.key, alert.status, destination.shown)
            return True
        except Exception as exc:  # noqa: BLE001 (whatever went wrong, the notice waits for the next tick)
            log.warning("alert %s (%s) to %s failed (attempt %d/%d): %s",
                        alert.key, alert.status, destination.shown, attempt, attempts, _reason(exc))
            if attempt < attempts:
                time.sleep(backoff_s * 2 ** (attempt - 1))
    log.error("alert %s (%s) not delivered to %s", alert.key, alert.status, destination.shown)
    return False


def _reason(exc: Exception) -> str:
    # Never str(exc) of an HTTP error: httpx puts the URL (the webhook's secret path) in its messages.
    if isinstance(exc, httpx.HTTPStatusError):
        return f"HTTP {exc.response.status_code}"
    if isinstance(exc, smtplib.SMTPResponseException):
        return f"SMTP {exc.smtp_code}"
    return type(exc).__name__
