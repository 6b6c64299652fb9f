"""The simulator's HTTP face: the provider's endpoints under /SMSApi, admin under /_sim.

Every provider endpoint answers like the real one (docs/provider-contract.md):
HTTP 200 with ``Content-Type: text/html`` and a JSON body, also for
application errors; codes as quoted strings; both parameter spellings
(parameter names are matched case-insensitively). The order of checks for
one request is: HTTP 5xx fault (nothing accepted), credentials, booleans,
rate-limit fault, the endpoint's own work (billing), the receipt pushes
that must beat a send's answer (push_early), then slow / drop / stall
faults, which happen after the work is done.
"""

from __future__ import annotations

import asyncio
import csv
import hashlib
import io
import json
import tempfile
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any, BinaryIO, Literal
from urllib.parse import parse_qsl

from defusedxml import DefusedXmlException
from defusedxml import ElementTree as SafeXml
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from sms_pipeline.core.provider_time import InvalidLocalTime, format_local, parse_local
from sms_pipeline.simulator import dayzip, faults, generation, pushes, reports
from sms_pipeline.simulator.state import (
    PersonalisedRequest,
    ProviderError,
    SendReceipt,
    SendRequest,
    SimulatorState,
    Webhook,
    epoch_ms,
    from_epoch_ms,
)

API_PREFIX = "/SMSApi"
ADMIN_PREFIX = "/_sim"
# Response header by which the app asks the TCP proxy to drop or stall the
# connection instead of delivering this (already processed) answer.
NETWORK_FAULT_HEADER = "x-sim-network-fault"
_CREDENTIAL_PARAMS = frozenset({"userid", "password", "apikey"})
_BOOLEAN_PARAMS = ("duplicatecheck", "testmessage", "renew")
_JSON_AS_HTML = "text/html"
# Where read_params puts the <sms> elements of an XML send: [[mobile, msg, dltTemplateId], ...] as JSON.
# Not a provider parameter; a form field of that name is dropped.
XML_MESSAGES_PARAM = "_xml_sms"
_XML_ROOT, _XML_MESSAGE = "data", "sms"

Kind = Literal["send", "report"]
Params = dict[str, str]


@dataclass(frozen=True)
class Call:
    """One API request as the endpoint's work sees it."""

    params: Params
    fingerprint: str
    arrival: int  # ordinal among identical requests: ids and fault draws depend on it
    decide: Callable[[str], bool]  # does this fault fire for this request?


# ----- request parsing -------------------------------------------------------


def xml_params(raw: bytes) -> Params:
    """The parameters of an XML send: ``<data>``'s scalar children, and its ``<sms>`` list as JSON.

    Parsed with defusedxml, DTDs forbidden: no entity expansion, no external
    entities. Anything that is not that document is status error ``400``.
    """
    try:
        root = SafeXml.fromstring(raw, forbid_dtd=True, forbid_entities=True, forbid_external=True)
    except DefusedXmlException:
        raise ProviderError("400", "XML with a DTD or entities is refused") from None
    except SafeXml.ParseError:
        raise ProviderError("400", "Malformed XML") from None
    if root.tag != _XML_ROOT:
        raise ProviderError("400", f"XML root must be <{_XML_ROOT}>")
    params: Params = {}
    messages: list[list[str]] = []
    for child in root:
        if child.tag == _XML_MESSAGE:
            fields = {str(part.tag).lower(): part.text or "" for part in child}
            messages.append([fields.get("mobile", "").strip(), fields.get("msg", ""),
                             fields.get("dlttemplateid", "").strip()])
        else:
            params[str(child.tag).lower()] = (child.text or "").strip()
    params[XML_MESSAGES_PARAM] = json.dumps(messages, ensure_ascii=False, separators=(",", ":"))
    return params


def _is_xml(request: Request) -> bool:
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    return content_type in ("application/xml", "text/xml")


async def read_params(request: Request) -> Params:
    """Query string and form body merged; names lower-cased (both spellings match).

    An XML body (a multi-message send) gives its fields (:func:`xml_params`);
    a malformed one raises ``ProviderError``.
    """
    params = {key.lower(): value for key, value in request.query_params.multi_items()}
    params.pop(XML_MESSAGES_PARAM, None)
    if request.method == "POST" and _is_xml(request):
        params.update(xml_params(await request.body()))
    elif request.method == "POST":
        body = (await request.body()).decode("utf-8", "replace")
        if "application/json" in request.headers.get("content-type", ""):
            try:
                decoded = json.loads(body or "{}")
            except json.JSONDecodeError:
                decoded = {}
            if isinstance(decoded, dict):
                params.update({str(k).lower(): str(v) for k, v in decoded.items()})
        else:
            params.update({key.lower(): value for key, value in parse_qsl(body, keep_blank_values=True)})
    return params


def fingerprint(path: str, params: Mapping[str, str]) -> str:
    """SHA-256 of the canonical request without its credentials."""
    canonical = json.dumps([path, sorted((k, v) for k, v in params.items() if k not in _CREDENTIAL_PARAMS)],
                           ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _date_param(params: Params, *names: str) -> date:
    for name in names:
        raw = params.get(name)
        if raw:
            try:
                return date.fromisoformat(raw.strip())
            except ValueError:
                raise ProviderError("400", f"Invalid date in {name}") from None
    raise ProviderError("400", f"{names[0]} is required")


def _int_param(params: Params, name: str, default: int, low: int, high: int) -> int:
    raw = params.get(name, "")
    if raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ProviderError("400", f"Invalid {name}") from None
    if not low <= value <= high:
        raise ProviderError("400", f"{name} must be between {low} and {high}")
    return value


def _flag(params: Params, name: str, default: bool) -> bool:
    return params[name] == "true" if name in params else default


# ----- response bodies -------------------------------------------------------


def _body(payload: object, status: int = 200) -> Response:
    return Response(json.dumps(payload, ensure_ascii=False, separators=(",", ":")), status_code=status,
                    media_type=_JSON_AS_HTML)


def _send_error(err: ProviderError) -> Response:
    return _body({"status": "error", "statusCode": err.code, "reason": err.reason,
                  "transactionId": "", "mobile": "", "invalidMobile": ""})


def _report_error(err: ProviderError, status: int = 200) -> Response:
    return _body({"response": {"status": "error", "code": err.code, "msg": err.reason}}, status)


def _report_success(**content: object) -> Response:
    return _body({"response": {"status": "success", "code": "200", **content}})


# ----- the provider API --------------------------------------------------------


class SimulatorApp:
    """Routes bound to one :class:`SimulatorState`."""

    def __init__(self, state: SimulatorState, after_faults_change: Callable[[], Awaitable[None]] | None = None,
                 dispatcher: pushes.PushDispatcher | None = None):
        self.state = state
        self._after_faults_change = after_faults_change
        self._pushes = dispatcher

    # The one pipeline every provider endpoint goes through.
    async def _api(self, request: Request, kind: Kind,
                   work: Callable[[Call], Awaitable[Response]]) -> Response:
        state = self.state
        error_response = _send_error if kind == "send" else _report_error
        try:
            params = await read_params(request)
        except ProviderError as err:
            return error_response(err)
        path = request.url.path
        fp = fingerprint(path, params)
        arrival = state.arrival(fp)

        def decide(name: str) -> bool:
            fired = faults.fires(state.faults.rate(name), state.seed, name, path, fp, arrival)
            if fired:
                state.faults.count(name)
            return fired

        if decide("http_5xx"):
            status = (500, 502, 503)[int(faults.draw(state.seed, "http_5xx_status", fp, arrival) * 3)]
            return PlainTextResponse("Service Unavailable", status_code=status)
        refusal = state.credentials.check(params.get("userid"), params.get("password"),
                                          request.headers.get("apikey"))
        if refusal is not None:
            return error_response(refusal)
        for name in _BOOLEAN_PARAMS:
            if name in params and params[name] not in ("true", "false"):
                return error_response(ProviderError("147", f"Invalid boolean value for {name}"))
        if kind == "send" and self._is_send(path, params) and decide("rate_limit_send"):
            return _send_error(ProviderError("429", "Too many requests"))
        if kind == "report" and decide("rate_limit_report"):
            return _report_error(ProviderError("429", "Too many requests"), status=429)
        try:
            response = await work(Call(params, fp, arrival, decide))
        except ProviderError as err:
            response = error_response(err)
        if kind == "send" and self._pushes is not None and self._pushes.has_early((fp, arrival)):
            await run_in_threadpool(self._pushes.deliver_early, (fp, arrival))  # before the answer
        if decide("slow"):
            await asyncio.sleep(state.faults.parameter("slow_delay_s"))
        if decide("accept_then_drop"):
            response.headers[NETWORK_FAULT_HEADER] = "drop"
        elif decide("stall"):
            response.headers[NETWORK_FAULT_HEADER] = f"stall {state.faults.parameter('stall_s')}"
        return response

    @staticmethod
    def _is_send(path: str, params: Params) -> bool:
        return path.endswith("/send") or params.get("sendmethod") == "generate"

    # /send
    async def send(self, request: Request) -> Response:
        async def work(call: Call) -> Response:
            params = call.params
            if XML_MESSAGES_PARAM in params:
                return self._send_personalised(call)
            schedule = params.get("scheduletime", "").strip()
            try:
                schedule_time = parse_local(_with_seconds(schedule), self.state.timezone) if schedule else None
            except InvalidLocalTime:
                raise ProviderError("400", "Invalid scheduleTime") from None
            send_request = SendRequest(
                sender=params.get("senderid", ""),
                msg_type=params.get("msgtype", "text") or "text",
                text=params.get("msg", ""),
                mobiles=[m.strip() for m in params.get("mobile", "").split(",") if m.strip()],
                duplicate_check=_flag(params, "duplicatecheck", True),
                schedule_time=schedule_time,
                test_message=_flag(params, "testmessage", False),
            )
            receipt = self.state.submit(send_request, call.fingerprint, call.arrival)
            return self._send_answer(call, receipt)

        return await self._api(request, "send", work)

    def _send_personalised(self, call: Call) -> Response:
        """The XML multi-message send (same answer as the quick send)."""
        params = call.params
        if params.get("scheduletime", "").strip():
            raise ProviderError("400", "scheduleTime is not supported with the XML send")
        messages = [(mobile, text) for mobile, text, _template in json.loads(params[XML_MESSAGES_PARAM])]
        send_request = PersonalisedRequest(
            sender=params.get("senderid", ""),
            msg_type=params.get("msgtype", "text") or "text",
            messages=messages,
            duplicate_check=_flag(params, "duplicatecheck", True),
            test_message=_flag(params, "testmessage", False),
        )
        return self._send_answer(call, self.state.submit_personalised(send_request, call.fingerprint, call.arrival))

    def _send_answer(self, call: Call, receipt: SendReceipt) -> Response:
        """The flat success answer, its numbers written as the answer_* faults say."""
        state = self.state
        draw_key = (call.fingerprint, call.arrival)
        styles = [name for name in ("answer_leading_zero", "answer_plus_prefix", "answer_spaces")
                  if call.decide(name)]
        omit_rate = state.faults.rate("answer_omits_recipient")

        def listed(numbers: tuple[str, ...], which: str) -> str:
            shown = []
            for index, number in enumerate(numbers):
                if faults.fires(omit_rate, state.seed, "answer_omits_recipient", *draw_key, which, index):
                    state.faults.count("answer_omits_recipient")
                    continue
                shown.append(_styled(number, styles))
            return ",".join(shown)

        body = {
            "status": "success",
            "mobile": listed(receipt.accepted, "mobile"),
            "invalidMobile": listed(receipt.invalid, "invalidMobile"),
            "transactionId": receipt.transaction_id,
            "statusCode": "200",
            "reason": "success",
            "msgId": "",
            "requestTime": format_local(receipt.request_time, state.timezone),
        }
        if receipt.campaign_id is not None:
            body["campaignId"] = receipt.campaign_id
        return _body(body)

    # /otp
    async def otp(self, request: Request) -> Response:
        async def work(call: Call) -> Response:
            params = call.params
            method = params.get("sendmethod", "")
            mobile = params.get("mobile", "").strip()
            if method == "generate":
                return self._otp_generate(call, mobile)
            if method == "verify":
                self.state.otp_verify(mobile, params.get("otp", ""))
                return _body({"status": "success", "statusCode": "200", "reason": "OTP verified",
                              "mobile": mobile, "transactionId": "0"})
            raise ProviderError("400", "sendMethod must be generate or verify")

        return await self._api(request, "send", work)

    def _otp_generate(self, call: Call, mobile: str) -> Response:
        params = call.params
        if "," in mobile:
            raise ProviderError("235", "OTP goes to exactly one mobile number")
        expiry = _int_param(params, "codeexpiry", 60, 60, 1800)
        length = _int_param(params, "codelength", 6, 4, 10)
        code_type = params.get("codetype", "num") or "num"
        if code_type not in ("num", "alpha", "alphanum"):
            raise ProviderError("400", "codeType must be num, alpha or alphanum")
        fp, arrival = call.fingerprint, call.arrival
        code = params.get("otp") or generation.otp_code(self.state.seed, fp, arrival, length, code_type)
        receipt = self.state.otp_generate(
            mobile=mobile, sender=params.get("senderid", ""), msg_type=params.get("msgtype", "text") or "text",
            template=params.get("msg", ""), code=code, expiry_s=expiry, fingerprint=fp, arrival=arrival,
        )
        return _body({"status": "success", "statusCode": "200", "reason": "OTP sent", "mobile": receipt.mobile,
                      "transactionId": "0", "createTime": str(epoch_ms(receipt.create_time)),
                      "retryAfter": str(receipt.retry_after_s), "type": receipt.kind})

    # /report/status and /reports/status
    async def status_report(self, request: Request) -> Response:
        async def work(call: Call) -> Response:
            params = call.params
            if params.get("method", "").lower() == "getdlr":
                return await run_in_threadpool(self._dlr_page, params)
            if params.get("uuid"):
                return await run_in_threadpool(self._by_transaction, params)
            raise ProviderError("400", "method=getDlr or uuid is required")

        return await self._api(request, "report", work)

    def _dlr_page(self, params: Params) -> Response:
        first = _date_param(params, "fromdate")
        last = _date_param(params, "todate")
        limit = _int_param(params, "pagelimit", 100, 1, 10_000)
        page = _int_param(params, "pageno", 1, 1, 10**9)
        view = self.state.view()
        total, rows = reports.dlr_page(view, first, last, self.state.faults.rate("unmapped_status"),
                                       page, limit, params.get("mobileno") or None)
        return _report_success(api="report", action="status", msg="ok", totalRecords=str(total),
                               reports_dlrList=rows)

    def _by_transaction(self, params: Params) -> Response:
        today = self.state.local_today()
        first = _date_param(params, "fromdate") if params.get("fromdate") else today - timedelta(days=90)
        last = _date_param(params, "todate") if params.get("todate") else today
        rows = reports.transaction_rows(self.state.view(), params["uuid"].strip(), first, last,
                                        self.state.timezone, self.state.faults.rate("unmapped_status"))
        return _report_success(reports_statusList=rows)

    # /report/day
    async def day_report(self, request: Request) -> Response:
        async def work(call: Call) -> Response:
            params = call.params
            day = _date_param(params, "date")
            today = self.state.local_today()
            if day > today:
                raise ProviderError("400", "Date is in the future")
            if (today - day).days > self.state.report_retention_days:
                raise ProviderError("404", "No report for this date")
            if call.decide("error_body_zip"):
                raise ProviderError("500", "Report could not be generated")
            archive = await run_in_threadpool(self._build_day_zip, day, call.decide("corrupt_zip"),
                                              call.decide("truncated_zip"))
            size = archive.seek(0, 2)
            archive.seek(0)
            return StreamingResponse(
                _file_chunks(archive), media_type="application/zip",
                headers={"Content-Length": str(size),
                         "Content-Disposition": f'attachment; filename="dlr_report_{day.isoformat()}.zip"'},
            )

        return await self._api(request, "report", work)

    def _build_day_zip(self, day: date, corrupt: bool, truncated: bool) -> BinaryIO:
        state = self.state
        view = state.view()
        rates = {name: state.faults.rate(name) for name in faults.ROW_FAULTS}
        archive = tempfile.TemporaryFile()
        created = from_epoch_ms(view.now_ms).astimezone(state.timezone)
        dayzip.write_day_zip(archive, day, reports.day_report_chunks(view, day, state.timezone, rates), created)
        if corrupt:
            dayzip.corrupt(archive)
        if truncated:
            dayzip.truncate(archive)
        return archive

    # /report/summary
    async def summary(self, request: Request) -> Response:
        async def work(call: Call) -> Response:
            params = call.params
            first = _date_param(params, "fromdate")
            last = _date_param(params, "todate")
            groupby = params.get("groupby", "date") or "date"
            if groupby not in ("date", "senderid"):
                raise ProviderError("400", "groupby must be date or senderid")
            rows = await run_in_threadpool(reports.summary_rows, self.state.view(), first, last, groupby,
                                           self.state.faults.parameter("summary_units_offset"))
            return _report_success(reports_summaryList=rows)

        return await self._api(request, "report", work)

    # /schedule/read|update|delete and /campaign/read
    async def schedule_read(self, request: Request) -> Response:
        async def work(call: Call) -> Response:
            tz = self.state.timezone
            rows = [
                {"uuId": s.transaction_id, "campaignId": s.campaign_id, "senderName": s.request.sender,
                 "msgType": s.request.msg_type, "total": str(len(s.recipients)),
                 "scheduleTime": format_local(from_epoch_ms(s.due_ms), tz)}
                for s in self.state.schedules()
            ]
            return _report_success(scheduleList=rows)

        return await self._api(request, "report", work)

    async def schedule_update(self, request: Request) -> Response:
        async def work(call: Call) -> Response:
            params = call.params
            try:
                due = parse_local(_with_seconds(params.get("scheduletime", "").strip()), self.state.timezone)
            except InvalidLocalTime:
                raise ProviderError("400", "Invalid scheduletime") from None
            self.state.update_schedule(params.get("uuid", "").strip(), due)
            return _report_success(msg="Schedule updated")

        return await self._api(request, "report", work)

    async def schedule_delete(self, request: Request) -> Response:
        async def work(call: Call) -> Response:
            params = call.params
            self.state.delete_schedule(params.get("uuid", "").strip())
            return _report_success(msg="Schedule deleted")

        return await self._api(request, "report", work)

    async def campaign_read(self, request: Request) -> Response:
        async def work(call: Call) -> Response:
            params = call.params
            rows = [
                {"campaign": {"uuId": s.transaction_id, "status": s.state, "total": str(len(s.recipients)),
                              "timestamp": str(s.created_ms), "scheduledTimestamp": str(s.due_ms),
                              "lastupdatedTimestamp": str(s.updated_ms or 0)}}
                for s in self.state.campaign(params.get("campaignid", "").strip())
            ]
            return _report_success(campaignList=rows)

        return await self._api(request, "report", work)

    # /webhook/create|read|update|delete and /info/deliverycodes
    async def webhook_create(self, request: Request) -> Response:
        async def work(call: Call) -> Response:
            params = call.params
            hook = self.state.webhook_create(params.get("smswebhook", ""), params.get("smswebhookrate", ""))
            return _report_success(msg="Webhook created", **_webhook_fields(hook))

        return await self._api(request, "report", work)

    async def webhook_read(self, request: Request) -> Response:
        async def work(call: Call) -> Response:
            return _report_success(msg="ok", **_webhook_fields(self.state.webhook_read()))

        return await self._api(request, "report", work)

    async def webhook_update(self, request: Request) -> Response:
        async def work(call: Call) -> Response:
            params = call.params
            hook = self.state.webhook_update(params.get("smswebhook") or None, params.get("smswebhookrate") or None)
            return _report_success(msg="Webhook updated", **_webhook_fields(hook))

        return await self._api(request, "report", work)

    async def webhook_delete(self, request: Request) -> Response:
        async def work(call: Call) -> Response:
            self.state.webhook_delete()
            return _report_success(msg="Webhook deleted")

        return await self._api(request, "report", work)

    async def delivery_codes(self, request: Request) -> Response:
        async def work(call: Call) -> Response:
            return _report_success(deliveryCodes=pushes.delivery_codes())

        return await self._api(request, "report", work)

    # ----- admin (never called by the client) --------------------------------

    async def admin_pushes(self, request: Request) -> Response:
        if self._pushes is None:
            return JSONResponse({"error": "this simulator pushes no receipts"}, status_code=409)
        if request.method == "POST":
            try:
                self._pushes.configure(await _admin_json(request))
            except ValueError as exc:
                return JSONResponse({"error": str(exc)}, status_code=400)
        return JSONResponse(self._pushes.snapshot())

    async def admin_ledger(self, request: Request) -> Response:
        txn = request.query_params.get("transaction_id")
        entries = await run_in_threadpool(lambda: list(self.state.ledger_entries(transaction_id=txn)))
        columns = ("transaction_id", "msg_id", "mobile", "units", "sender", "msg_type", "submitted_at",
                   "fingerprint", "campaign_id")
        rows = [dict(zip(columns, (*e[:6], e.submitted_at.isoformat(), *e[7:]), strict=True)) for e in entries]
        if request.query_params.get("format") == "csv":
            out = io.StringIO()
            writer = csv.DictWriter(out, fieldnames=columns, lineterminator="\r\n")
            writer.writeheader()
            writer.writerows(rows)
            return Response(out.getvalue(), media_type="text/csv")
        return JSONResponse({"count": len(rows), "units": sum(r["units"] for r in rows), "entries": rows})

    async def admin_clock(self, request: Request) -> Response:
        clock = self.state.clock
        if request.method == "POST":
            body = await _admin_json(request)
            try:
                if "set" in body:
                    clock.set(datetime.fromisoformat(str(body["set"])))  # type: ignore[attr-defined]
                elif "advance_s" in body:
                    clock.advance(timedelta(seconds=float(body["advance_s"])))  # type: ignore[attr-defined]
                else:
                    return JSONResponse({"error": "expected 'set' (ISO time) or 'advance_s'"}, status_code=400)
            except AttributeError:
                return JSONResponse({"error": "this simulator runs on real time"}, status_code=409)
            except (TypeError, ValueError) as exc:
                return JSONResponse({"error": str(exc)}, status_code=400)
        now = clock.now()
        return JSONResponse({"now": now.isoformat(), "provider_local": format_local(now, self.state.timezone),
                             "virtual": hasattr(clock, "advance")})

    async def admin_faults(self, request: Request) -> Response:
        if request.method == "POST":
            body = await _admin_json(request)
            try:
                if body.pop("clear", False):
                    self.state.faults.clear()
                self.state.faults.update(body)
            except faults.FaultSpecError as exc:
                return JSONResponse({"error": str(exc)}, status_code=400)
            if self._after_faults_change is not None:
                await self._after_faults_change()
        return JSONResponse(self.state.faults.snapshot())

    async def admin_credits(self, request: Request) -> Response:
        if request.method == "POST":
            body = await _admin_json(request)
            credits = body.get("credits")
            if credits is not None and (not isinstance(credits, int) or credits < 0):
                return JSONResponse({"error": "credits must be a non-negative integer or null"}, status_code=400)
            self.state.credits = credits
        return JSONResponse({"credits": self.state.credits})

    async def admin_reset(self, request: Request) -> Response:
        self.state.reset()
        return JSONResponse({"reset": True})

    def routes(self) -> list[Route]:
        api, admin = API_PREFIX, ADMIN_PREFIX
        both = ["GET", "POST"]
        return [
            Route(f"{api}/send", self.send, methods=both),
            Route(f"{api}/otp", self.otp, methods=both),
            Route(f"{api}/report/status", self.status_report, methods=both),
            Route(f"{api}/reports/status", self.status_report, methods=both),
            Route(f"{api}/report/day", self.day_report, methods=["GET"]),
            Route(f"{api}/report/summary", self.summary, methods=both),
            Route(f"{api}/schedule/read", self.schedule_read, methods=["GET"]),
            Route(f"{api}/schedule/update", self.schedule_update, methods=["POST"]),
            Route(f"{api}/schedule/delete", self.schedule_delete, methods=["POST"]),
            Route(f"{api}/campaign/read", self.campaign_read, methods=["GET"]),
            Route(f"{api}/webhook/create", self.webhook_create, methods=["POST"]),
            Route(f"{api}/webhook/read", self.webhook_read, methods=["GET"]),
            Route(f"{api}/webhook/update", self.webhook_update, methods=["POST"]),
            Route(f"{api}/webhook/delete", self.webhook_delete, methods=["POST"]),
            Route(f"{api}/info/deliverycodes", self.delivery_codes, methods=["GET"]),
            Route(f"{admin}/ledger", self.admin_ledger, methods=["GET"]),
            Route(f"{admin}/clock", self.admin_clock, methods=both),
            Route(f"{admin}/faults", self.admin_faults, methods=both),
            Route(f"{admin}/credits", self.admin_credits, methods=both),
            Route(f"{admin}/reset", self.admin_reset, methods=["POST"]),
            Route(f"{admin}/pushes", self.admin_pushes, methods=both),
        ]


async def _admin_json(request: Request) -> dict[str, Any]:
    try:
        body = json.loads(await request.body() or b"{}")
    except json.JSONDecodeError:
        return {}
    return body if isinstance(body, dict) else {}


def _webhook_fields(hook: Webhook) -> dict[str, str]:
    return {"smswebhook": hook.url, "smswebhookrate": str(hook.rate)}


def _styled(number: str, styles: list[str]) -> str:
    """``number`` (as sent) written the way a provider might echo it; unchanged unless all digits."""
    if not number.isdigit():
        return number
    country, national = number[:-10], number[-10:]
    if "answer_leading_zero" in styles and country == "91" and len(national) == 10:
        return "0" + (f"{national[:5]} {national[5:]}" if "answer_spaces" in styles else national)
    text = f"{country} {national[:5]} {national[5:]}" if "answer_spaces" in styles and country else number
    return "+" + text if "answer_plus_prefix" in styles else text


def _with_seconds(text: str) -> str:
    """Accept ``YYYY-MM-DD HH:MM`` (minutes only) as well as the seconds form."""
    return text + ":00" if len(text) == 16 else text


def _file_chunks(archive: BinaryIO, size: int = 1 << 16) -> Iterator[bytes]:
    with archive:
        while chunk := archive.read(size):
            yield chunk


def create_app(state: SimulatorState, after_faults_change: Callable[[], Awaitable[None]] | None = None,
               dispatcher: pushes.PushDispatcher | None = None) -> Starlette:
    return Starlette(routes=SimulatorApp(state, after_faults_change, dispatcher).routes())
