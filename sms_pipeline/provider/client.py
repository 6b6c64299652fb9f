"""The SMSGatewayCenter client production uses (and tests run against the simulator).

Sends are never retried here: each returns one of four outcomes and the
worker decides (docs/design.md#send-outcomes). Report calls are paced,
retried with exponential backoff on 429 / 5xx / time-outs, and bounded;
so are the reads of the receipt-push registration and the code table,
while a change of the registration is made once.

Credentials travel in POST form bodies or the ``apiKey`` header; only the
GET-only endpoints (day report, schedule and campaign reads) put a password
in the query string, and a log filter masks it in httpx's request log.
Exception texts and reprs never contain them.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import os
import random
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import date, datetime
from pathlib import Path
from typing import Any, TypeVar
from xml.sax.saxutils import escape as escape_xml
from zoneinfo import ZoneInfo

import httpx

from sms_pipeline.core.provider_time import format_schedule_time_sms
from sms_pipeline.provider import dayfile, normalise
from sms_pipeline.provider.dayfile import DayReport
from sms_pipeline.provider.normalise import PATHS, Answer, MalformedBody
from sms_pipeline.core.redaction import mask_credentials, mask_in_loggers
from sms_pipeline.provider.results import (
    CampaignTransaction,
    DayReportError,
    DeliveryCode,
    DlrRow,
    OtpVerification,
    PersonalisedSms,
    ProviderCallError,
    ReportError,
    ScheduleRow,
    SendAmbiguous,
    SendNeverConnected,
    SendOutcome,
    SummaryRow,
    TxnReportRow,
    WebhookRegistration,
)
from pydantic import SecretStr

from sms_pipeline.settings import Settings

log = logging.getLogger(__name__)
T = TypeVar("T")

_MAX_BACKOFF_S = 30.0
_ERROR_BODY_LIMIT = 64 * 1024  # how much of a non-zip day answer is read to explain it
mask_in_loggers("httpx", "httpcore")  # httpx logs request URLs at INFO


def _xml_text(value: str) -> str:
    """``value`` as XML element content: markup escaped, and a CR as a character reference
    (a parser turns a raw CR, and CRLF, into LF; a reference survives)."""
    return escape_xml(value, {"\r": "&#13;"})


class _Retry(Exception):
    """An attempt failed in a way worth trying again."""

    def __init__(self, reason: str, retry_after_s: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after_s = retry_after_s


class _Pacer:
    """At most ``per_s`` request starts per second, across threads."""

    def __init__(self, per_s: float) -> None:
        self._interval = 1.0 / per_s
        self._next = 0.0
        self._lock = threading.Lock()

    def wait(self) -> None:
        with self._lock:
            now = time.monotonic()
            start = max(now, self._next)
            self._next = start + self._interval
        if start > now:
            time.sleep(start - now)


def _retry_after(response: httpx.Response) -> float | None:
    raw = response.headers.get("retry-after", "")
    return float(raw) if raw.isdigit() else None


class ProviderClient:
    """Thread-safe client for the provider API (sync httpx, one connection pool)."""

    def __init__(
        self,
        base_url: str,
        userid: str,
        password: SecretStr | None,
        api_key: SecretStr | None,
        timezone: ZoneInfo,
        connect_timeout: float = 5.0,
        read_timeout: float = 30.0,
        requests_per_s: float = 10.0,
        max_retries: int = 5,
        transport: httpx.BaseTransport | None = None,
        *,
        backoff_s: float = 0.5,
    ) -> None:
        if password is None and api_key is None:
            raise ProviderCallError("provider credentials missing: set SMS_PROVIDER_PASSWORD or SMS_PROVIDER_API_KEY")
        self.base_url = base_url.rstrip("/")
        self.userid = userid
        self.timezone = timezone
        self._password = password
        self._api_key = api_key
        self._max_retries = max_retries
        self._backoff_s = backoff_s
        self._pacer = _Pacer(requests_per_s)
        self._http = httpx.Client(
            base_url=self.base_url,
            timeout=httpx.Timeout(read_timeout, connect=connect_timeout),
            transport=transport,
            follow_redirects=False,
            headers={"apiKey": api_key.get_secret_value()} if api_key is not None else None,
        )

    @classmethod
    def from_settings(cls, settings: Settings, **overrides: Any) -> ProviderClient:
        """The client the settings describe (for the edges: CLI, demo, tests; the stages take a client)."""
        options: dict[str, Any] = dict(
            base_url=settings.provider_base_url,
            userid=settings.provider_userid,
            password=settings.provider_password,
            api_key=settings.provider_api_key,
            timezone=settings.provider_timezone,
            connect_timeout=settings.provider_connect_timeout_s,
            read_timeout=settings.provider_read_timeout_s,
            requests_per_s=settings.report_requests_per_s,
            max_retries=settings.report_max_retries,
        )
        options.update(overrides)
        return cls(**options)

    def __repr__(self) -> str:
        auth = "api key" if self._api_key is not None else "password"
        return f"ProviderClient(base_url={self.base_url!r}, userid={self.userid!r}, auth={auth})"

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> ProviderClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ----- credentials and safe texts ---------------------------------------

    def _auth(self) -> dict[str, str]:
        """Parameters that identify us (the api key, when set, travels as a header)."""
        if self._api_key is not None:
            return {"userid": self.userid}
        assert self._password is not None
        return {"userid": self.userid, "password": self._password.get_secret_value()}

    def _safe(self, text: str) -> str:
        """``text`` with any credential masked (exception messages may quote URLs)."""
        for secret in (self._password, self._api_key):
            if secret is not None and secret.get_secret_value():
                text = text.replace(secret.get_secret_value(), "***")
        return mask_credentials(text)

    def _describe(self, exc: Exception) -> str:
        detail = self._safe(str(exc))
        return f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__

    # ----- sends (never retried) ----------------------------------------------

    def _submit(self, path: str, form: dict[str, str] | None,
                interpret: Callable[[int, bytes], SendOutcome], *, xml: bytes | None = None) -> SendOutcome:
        try:
            if xml is not None:
                response = self._http.post(path, content=xml,
                                           headers={"Content-Type": normalise.XML_CONTENT_TYPE})
            else:
                response = self._http.post(path, data={**self._auth(), **(form or {})})
        except (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout) as exc:
            return SendNeverConnected(self._describe(exc))
        except httpx.TransportError as exc:
            # Read time-out, reset, protocol error, or a write that may have
            # reached the provider in part: the request may have been billed.
            return SendAmbiguous(self._describe(exc))
        return interpret(response.status_code, response.content)

    def send(
        self,
        mobiles: Sequence[str],
        message: str,
        sender_id: str,
        msg_type: str = "text",
        dlt_entity_id: str | None = None,
        dlt_template_id: str | None = None,
        schedule_time: datetime | None = None,
        duplicate_check: bool = False,
    ) -> SendOutcome:
        """One /send request to ``mobiles``; returns accepted / refused / ambiguous / never connected."""
        if msg_type not in ("text", "unicode"):
            raise ValueError(f"msg_type must be 'text' or 'unicode', got {msg_type!r}")
        form = {
            "senderid": sender_id,
            "sendMethod": "quick",
            "msgType": msg_type,
            "msg": message,
            "mobile": normalise.LIST_SEPARATOR.join(mobiles),
            "duplicatecheck": "true" if duplicate_check else "false",
            "output": "json",
        }
        if dlt_entity_id is not None:
            form["dltEntityId"] = dlt_entity_id
        if dlt_template_id is not None:
            form["dltTemplateId"] = dlt_template_id
        if schedule_time is not None:
            form["scheduleTime"] = format_schedule_time_sms(schedule_time, self.timezone)
        tz = self.timezone
        recipients = list(mobiles)
        return self._submit(PATHS["send"], form,
                            lambda status, body: normalise.send_outcome(status, body, tz, recipients))

    def send_personalised(
        self,
        messages: Sequence[PersonalisedSms],
        sender_id: str,
        msg_type: str = "text",
        dlt_entity_id: str | None = None,
        duplicate_check: bool = False,
    ) -> SendOutcome:
        """One XML /send request, a body of its own per recipient; the same four outcomes as :meth:`send`.

        The answer's ``mobile`` / ``invalidMobile`` are matched to the
        messages' numbers (``SendAccepted.unlisted``: in neither list). More
        than 1,000 messages is refused by the provider (code 414), not here:
        the planner never makes such a request.
        """
        if msg_type not in ("text", "unicode"):
            raise ValueError(f"msg_type must be 'text' or 'unicode', got {msg_type!r}")
        f = normalise.XML_FIELDS
        shared = [(f["userid"], self.userid)]
        if self._api_key is None:  # with an api key, the header authenticates
            assert self._password is not None
            shared.append((f["password"], self._password.get_secret_value()))
        shared += [(f["sender_id"], sender_id), (f["msg_type"], msg_type)]
        if dlt_entity_id is not None:
            shared.append((f["dlt_entity_id"], dlt_entity_id))
        shared += [(f["duplicate_check"], "true" if duplicate_check else "false"), (f["output"], "json")]
        # Written as text, not as an ElementTree (whose serialiser, in Python, cost more than the rest
        # of the request per message): every tag is a constant, every value is element content
        # escaped by the standard library, and nothing else goes into the document.
        parts = ['<?xml version="1.0" encoding="utf-8"?>\n<', normalise.XML_ROOT, ">"]
        parts += [f"<{name}>{_xml_text(value)}</{name}>" for name, value in shared]
        mobile_tag, text_tag, template_tag = f["mobile"], f["text"], f["dlt_template_id"]
        for message in messages:
            if not normalise.xml_safe(message.text):
                raise ValueError("a message body holds characters XML cannot carry; send it with send()")
            parts.append(f"<{normalise.XML_MESSAGE}><{mobile_tag}>{_xml_text(message.mobile)}</{mobile_tag}>"
                         f"<{text_tag}>{_xml_text(message.text)}</{text_tag}>")
            if message.dlt_template_id is not None:
                parts.append(f"<{template_tag}>{_xml_text(message.dlt_template_id)}</{template_tag}>")
            parts.append(f"</{normalise.XML_MESSAGE}>")
        parts += ["</", normalise.XML_ROOT, ">"]
        body = "".join(parts).encode("utf-8")
        tz = self.timezone
        recipients = [m.mobile for m in messages]
        return self._submit(PATHS["send"], None,
                            lambda status, answer: normalise.send_outcome(status, answer, tz, recipients), xml=body)

    def otp_generate(
        self,
        mobile: str,
        message_template: str,
        sender_id: str,
        otp_code: str,
        code_expiry_s: int | None = None,
        code_length: int | None = None,
        code_type: str | None = None,
        msg_type: str = "text",
    ) -> SendOutcome:
        """One OTP to one number, with our own code; accepted has no transaction id."""
        form = {
            "sendMethod": "generate",
            "mobile": mobile,
            "senderid": sender_id,
            "msgType": msg_type,
            "msg": message_template,
            "otp": otp_code,
            "output": "json",
        }
        for name, value in (("codeExpiry", code_expiry_s), ("codeLength", code_length), ("codeType", code_type)):
            if value is not None:
                form[name] = str(value)
        return self._submit(PATHS["otp"], form, normalise.otp_outcome)

    def otp_verify(self, mobile: str, code: str) -> OtpVerification:
        """Ask the provider whether ``code`` is the live code of ``mobile`` (not retried: it consumes)."""
        form = {"sendMethod": "verify", "mobile": mobile, "otp": code, "output": "json"}
        try:
            response = self._http.post(PATHS["otp"], data={**self._auth(), **form})
            return normalise.otp_verification(normalise.answer(response.status_code, response.content))
        except httpx.TransportError as exc:
            raise ProviderCallError(f"OTP verify failed: {self._describe(exc)}") from None
        except MalformedBody as exc:
            raise ProviderCallError(f"OTP verify: unparseable answer ({exc})") from None

    # ----- report calls (paced, retried, bounded) ----------------------------

    def _with_retries(self, what: str, attempt: Callable[[], T], error: type[ReportError] = ReportError,
                      retries: int | None = None) -> T:
        """Run ``attempt`` until it returns; retry on _Retry and transport errors, at most ``retries`` times
        (default: max_retries)."""
        last, retry_after = "", None
        limit = self._max_retries if retries is None else retries
        for number in range(limit + 1):
            if number:
                time.sleep(self._backoff_delay(number, retry_after))
            self._pacer.wait()
            try:
                return attempt()
            except _Retry as retry:
                last, retry_after = retry.reason, retry.retry_after_s
                log.info("provider %s: attempt %d failed (%s)", what, number + 1, last)
            except (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError) as exc:
                last, retry_after = self._describe(exc), None
                log.info("provider %s: attempt %d failed (%s)", what, number + 1, last)
        raise error(f"provider {what} failed after {limit + 1} attempts: {last}")

    def _backoff_delay(self, number: int, retry_after: float | None) -> float:
        delay = min(self._backoff_s * 2 ** (number - 1), _MAX_BACKOFF_S)
        delay *= random.uniform(0.5, 1.0)  # spread simultaneous retries
        if retry_after is not None:
            delay = max(delay, min(retry_after, _MAX_BACKOFF_S))
        return delay

    def _report(self, what: str, method: str, path: str, params: dict[str, str], *, retries: int | None = None,
                tolerated: frozenset[str] = frozenset()) -> Answer:
        """One report call with retries; returns the successful answer, or an error answer whose code is
        ``tolerated``."""

        def attempt() -> Answer:
            if method == "GET":
                response = self._http.get(path, params={**self._auth(), **params})
            else:
                response = self._http.post(path, data={**self._auth(), **params})
            verdict, ans, why = normalise.report_verdict(response.status_code, response.content)
            if verdict == "retry":
                raise _Retry(why, _retry_after(response))
            if verdict == "error" and ans is not None and ans.code in tolerated:
                return ans
            if verdict == "error" or ans is None:
                raise ReportError(f"provider {what} failed: {self._safe(why)}")
            return ans

        return self._with_retries(what, attempt, retries=retries)

    def _rows(self, what: str, convert: Callable[[], T]) -> T:
        try:
            return convert()
        except MalformedBody as exc:
            raise ReportError(f"provider {what}: unexpected answer ({exc})") from None

    def transaction_report(self, transaction_id: str, from_date: date, to_date: date) -> list[TxnReportRow]:
        """Receipts of one transaction; an empty list means "no report yet"."""
        what = f"report for transaction {transaction_id}"
        ans = self._report(what, "POST", PATHS["transaction"],
                           {"uuid": transaction_id, "fromdate": from_date.isoformat(), "todate": to_date.isoformat()})
        tz = self.timezone
        return self._rows(what, lambda: normalise.txn_rows(normalise.items(ans, normalise.TXN_LIST_KEY), tz))

    def delivery_reports(self, from_date: date, to_date: date, page_limit: int = 1000) -> Iterator[DlrRow]:
        """Every getDlr row of [from_date, to_date], page by page."""
        seen, page = 0, 1
        while True:
            what = f"delivery report {from_date.isoformat()}..{to_date.isoformat()} page {page}"
            ans = self._report(what, "POST", PATHS["dlr"], {
                "method": "getDlr", "fromdate": from_date.isoformat(), "todate": to_date.isoformat(),
                "pageLimit": str(page_limit), "pageNo": str(page),
            })
            try:
                rows = [normalise.dlr_row(i) for i in normalise.items(ans, normalise.DLR_LIST_KEY)]
                total = normalise.count(ans.content, normalise.DLR_TOTAL_KEY)
            except MalformedBody as exc:
                raise ReportError(f"provider {what}: unexpected answer ({exc})") from None
            yield from rows
            seen += len(rows)
            if len(rows) < page_limit or seen >= total:
                return
            page += 1

    def summary(self, from_date: date, to_date: date, groupby: str = "date") -> list[SummaryRow]:
        """Provider totals per date (or per date and sender id); units as billed."""
        if groupby not in ("date", "senderid"):
            raise ValueError(f"groupby must be 'date' or 'senderid', got {groupby!r}")
        what = f"summary {from_date.isoformat()}..{to_date.isoformat()}"
        ans = self._report(what, "POST", PATHS["summary"],
                           {"fromdate": from_date.isoformat(), "todate": to_date.isoformat(), "groupby": groupby})
        return self._rows(what, lambda: [normalise.summary_row(i) for i in normalise.items(ans, normalise.SUMMARY_LIST_KEY)])

    def schedule_read(self) -> list[ScheduleRow]:
        ans = self._report("schedule read", "GET", PATHS["schedule_read"], {})
        tz = self.timezone
        return self._rows("schedule read",
                          lambda: [normalise.schedule_row(i, tz) for i in normalise.items(ans, normalise.SCHEDULE_LIST_KEY)])

    def schedule_update(self, transaction_id: str, schedule_time: datetime) -> None:
        self._report(f"schedule update of {transaction_id}", "POST", PATHS["schedule_update"],
                     {"uuid": transaction_id, "scheduletime": format_schedule_time_sms(schedule_time, self.timezone)})

    def schedule_delete(self, transaction_id: str) -> None:
        self._report(f"schedule delete of {transaction_id}", "POST", PATHS["schedule_delete"], {"uuid": transaction_id})

    def campaign_read(self, campaign_id: str) -> list[CampaignTransaction]:
        what = f"campaign read of {campaign_id}"
        ans = self._report(what, "GET", PATHS["campaign_read"], {"campaignid": campaign_id})
        return self._rows(what, lambda: [normalise.campaign_row(i) for i in normalise.items(ans, normalise.CAMPAIGN_LIST_KEY)])

    # ----- the receipt push: registration and code table -----------------------
    # Reads are retried like the reports; a change is made once (a retry after a lost answer could
    # find its own registration and fail): on an error, `webhook read` says where things stand.

    def _webhook_change(self, what: str, path: str, url: str | None, rate: int | None) -> str:
        params: dict[str, str] = {}
        if url is not None:
            params[normalise.WEBHOOK_FIELDS["url"]] = url
        if rate is not None:
            params[normalise.WEBHOOK_FIELDS["rate"]] = str(rate)
        return self._report(what, "POST", path, params, retries=0).reason

    def webhook_create(self, url: str, rate: int | None = None) -> str:
        """Register ``url`` for receipt pushes at ``rate`` per second (None: the provider's default);
        the provider's message."""
        return self._webhook_change("webhook create", PATHS["webhook_create"], url, rate)

    def webhook_update(self, url: str | None = None, rate: int | None = None) -> str:
        """Change the registered URL and/or rate; the provider's message."""
        if url is None and rate is None:
            raise ValueError("webhook_update needs a url or a rate")
        return self._webhook_change("webhook update", PATHS["webhook_update"], url, rate)

    def webhook_delete(self) -> str:
        """Unregister the receipt-push URL; the provider's message."""
        return self._webhook_change("webhook delete", PATHS["webhook_delete"], None, None)

    def webhook_read(self) -> WebhookRegistration | None:
        """The registered receipt-push URL and rate; None when nothing is registered."""
        ans = self._report("webhook read", "GET", PATHS["webhook_read"], {},
                           tolerated=frozenset({normalise.WEBHOOK_ABSENT_CODE}))
        if ans.code == normalise.WEBHOOK_ABSENT_CODE:
            return None
        return self._rows("webhook read", lambda: normalise.webhook_registration(ans))

    def delivery_codes(self) -> list[DeliveryCode]:
        """The provider's error-code table: what each pushed code means in report words."""
        ans = self._report("delivery codes", "GET", PATHS["delivery_codes"], {})
        return self._rows("delivery codes", lambda: [
            normalise.delivery_code(i) for i in normalise.items(ans, normalise.DELIVERY_CODES_LIST_KEY)])

    # ----- the day report -----------------------------------------------------

    def day_report(self, day: date, dest_dir: Path | str) -> DayReport:
        """Download, verify and open the day zip of provider-local ``day``.

        Streamed to a temporary file in ``dest_dir``, checked end to end
        (zip, CRC, header, row widths), then renamed to
        ``dlr_report_<day>_<sha256 prefix>.zip``. Any failure raises
        :class:`DayReportError` naming the date and leaves no file behind.
        """
        dest = Path(dest_dir)
        dest.mkdir(parents=True, exist_ok=True)
        what = f"day report {day.isoformat()}"
        return self._with_retries(what, lambda: self._download_day(day, dest), DayReportError)

    def _download_day(self, day: date, dest: Path) -> DayReport:
        handle, name = tempfile.mkstemp(prefix=f".dlr_report_{day.isoformat()}_", suffix=".part", dir=dest)
        part = Path(name)
        try:
            digest = hashlib.sha256()
            with os.fdopen(handle, "wb") as out, self._http.stream(
                "GET", PATHS["day"], params={**self._auth(), "date": day.isoformat()}
            ) as response:
                if response.status_code == 429 or response.status_code >= 500:
                    raise _Retry(f"HTTP {response.status_code}", _retry_after(response))
                if response.status_code != 200:
                    raise DayReportError(f"day report {day.isoformat()}: HTTP {response.status_code}")
                for chunk in response.iter_bytes():
                    digest.update(chunk)
                    out.write(chunk)
            if not _starts_with_zip(part):
                self._explain_non_zip(day, part)
            report = dayfile.verify(part, day, digest.hexdigest())
            final = dest / f"dlr_report_{day.isoformat()}_{report.sha256[:16]}.zip"
            os.replace(part, final)
            return dataclasses.replace(report, path=final)
        except BaseException:
            part.unlink(missing_ok=True)
            raise

    def _explain_non_zip(self, day: date, part: Path) -> None:
        """Raise for a body that is not a zip: retry on code 429, else a clear error."""
        with part.open("rb") as handle:
            content = handle.read(_ERROR_BODY_LIMIT)
        try:
            ans = normalise.answer(200, content)
        except MalformedBody:
            raise DayReportError(f"day report {day.isoformat()}: the answer is neither a zip nor JSON") from None
        if ans.rate_limited:
            raise _Retry("rate limited (code 429)")
        raise DayReportError(f"day report {day.isoformat()}: provider answered code {ans.code} "
                             f"({self._safe(ans.reason)}) instead of a zip")


def _starts_with_zip(path: Path) -> bool:
    with path.open("rb") as handle:
        return handle.read(len(dayfile.ZIP_MAGIC)) == dayfile.ZIP_MAGIC
