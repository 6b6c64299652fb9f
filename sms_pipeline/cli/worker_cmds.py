"""``sms-pipeline enqueue | rates load | worker | messages show | messages replay`` (``messages forget``: forget_cmd)."""

from __future__ import annotations

import argparse
import sys
from contextlib import nullcontext
from datetime import timedelta
from pathlib import Path

from sms_pipeline.core import msisdn
from sms_pipeline.core.clock import RealClock
from sms_pipeline.core.states import Channel, MessageClass
from sms_pipeline.db import connection
from sms_pipeline.errors import UserError
from sms_pipeline.send.otp import OtpPolicy, otp_strategies
from sms_pipeline.provider.client import ProviderClient
from sms_pipeline.cli.metrics_cmds import serving
from sms_pipeline.cli import forget_cmd
from sms_pipeline.cli.intake_files import (add_intake_options, database_url, positive, print_bad_lines, readable,
                                           reading_progress)
from sms_pipeline.cli.signals import stop_on_signals
from sms_pipeline.settings import Settings
from sms_pipeline import intake, rates
from sms_pipeline.ops import messages as message_tools
from sms_pipeline.send.breaker import CircuitBreaker
from sms_pipeline.send.loop import Worker, select_queues
from sms_pipeline.send.personalised import sms_strategies

def register(sub: argparse._SubParsersAction) -> None:
    enqueue = sub.add_parser("enqueue", help="load send requests from a JSONL file (idempotent)")
    enqueue.add_argument("file", type=Path, metavar="FILE.jsonl")
    add_intake_options(enqueue)
    enqueue.set_defaults(handler=enqueue_file)

    rate_card = sub.add_parser("rates", help="the rate card")
    rate_actions = rate_card.add_subparsers(dest="rates_command", metavar="ACTION", required=True)
    load = rate_actions.add_parser("load", help="load prices from a CSV file (idempotent upsert)")
    load.add_argument("file", type=Path, metavar="FILE.csv")
    load.set_defaults(handler=load_rates)

    worker = sub.add_parser("worker", help="claim due messages and send them")
    worker.add_argument("--once", action="store_true", help="send what is due now, then exit")
    worker.add_argument("--batch-size", type=positive, default=None,
                        help="recipients per request and rows per claim (default: SMS_PIPELINE_BATCH_SIZE)")
    worker.add_argument("--channel", action="append", choices=[c.value for c in Channel],
                        help="only this channel (repeatable; default: every channel with a send strategy)")
    worker.add_argument("--class", dest="message_class", action="append", choices=[c.value for c in MessageClass],
                        help="only this message class (repeatable)")
    worker.add_argument("--concurrency", type=positive, default=None,
                        help="parallel send loops (threads) (default: SMS_PIPELINE_WORKER_CONCURRENCY)")
    worker.set_defaults(handler=run_worker)

    messages = sub.add_parser("messages", help="operator tools: trace and replay messages")
    message_actions = messages.add_subparsers(dest="messages_command", metavar="ACTION", required=True)
    show = message_actions.add_parser("show", help="every attempt of a message: states, ids, receipts, cost")
    lookup = show.add_mutually_exclusive_group(required=True)
    lookup.add_argument("--business-key")
    lookup.add_argument("--attempt-key")
    lookup.add_argument("--recipient")
    show.add_argument("--tenant", help="only this tenant")
    show.set_defaults(handler=show_messages)
    replay = message_actions.add_parser("replay", help="supersede a failed/rejected/expired message, send anew")
    replay.add_argument("message_id", type=int, metavar="ID")
    replay.add_argument("--reason", required=True, help="why (kept on the superseded row)")
    replay.set_defaults(handler=replay_message)
    forget_cmd.add_parser(message_actions, database_url)


# ----- enqueue -------------------------------------------------------------------


def enqueue_file(args: argparse.Namespace, settings: Settings) -> int:
    path = readable(args.file)
    url = database_url(settings)
    with reading_progress("enqueue", path) as on_bytes, connection.connect_url(url, autocommit=True) as conn, \
            path.open("rb") as lines:
        result = intake.enqueue_lines(conn, lines, clock=RealClock(), chunk_size=args.chunk_size,
                                      workers=args.workers, on_bytes=on_bytes,
                                      policy=intake.IntakePolicy.from_settings(settings),
                                      otp_code_length=settings.otp_code_length,
                                      max_body_segments=settings.max_body_segments)
    print_bad_lines(path, result.bad_lines)
    print(f"{result.requests} requests: {result.created} new, {result.existing} already enqueued; "
          f"{len(result.bad_lines)} bad lines")
    return 1 if result.bad_lines else 0


# ----- rates load ----------------------------------------------------------------


def load_rates(args: argparse.Namespace, settings: Settings) -> int:
    path = readable(args.file)
    with path.open(newline="", encoding="utf-8-sig") as f:
        parsed, bad = rates.parse_rate_card(f)
    if bad:
        for line in bad:
            print(f"{path.name}: {line}", file=sys.stderr)
        raise rates.RateCardRefused(f"{path.name}: {len(bad)} bad line(s); nothing loaded")
    with connection.connect_url(database_url(settings), autocommit=True) as conn:
        loaded = rates.load_rates(conn, parsed)
    print(f"{len(parsed)} rates: {loaded.inserted} new, {loaded.updated} updated, {loaded.unchanged} unchanged")
    return 0


# ----- worker --------------------------------------------------------------------


def run_worker(args: argparse.Namespace, settings: Settings) -> int:
    url = database_url(settings)
    zone = settings.provider_timezone.key
    policy = OtpPolicy.from_settings(settings)
    with ProviderClient.from_settings(settings) as client:
        strategies = {**sms_strategies(client, zone, xml_send=settings.provider_xml_send,
                                       campaign_request_size=settings.campaign_request_size),
                      **otp_strategies(client, zone, policy)}
        queues = select_queues(strategies, channels=args.channel, classes=args.message_class)
        worker = Worker(
            lambda: connection.connect_url(url, autocommit=True),
            queues,
            clock=RealClock(),
            batch_size=args.batch_size or settings.batch_size,
            lease=timedelta(seconds=settings.claim_lease_s),
            breaker=CircuitBreaker(settings.circuit_breaker_failures, settings.circuit_breaker_cooldown_s),
            concurrency=args.concurrency or settings.worker_concurrency,
        )
        metrics = nullcontext() if settings.metrics_port is None else \
            serving(worker.metrics.registry, "0.0.0.0", settings.metrics_port)
        with metrics, stop_on_signals(lambda: worker.stop("signal"), "finishing the request in flight"):
            summary = worker.run(once=args.once)
    print(f"requests={summary.requests} claimed={summary.claimed} submitted={summary.submitted} "
          f"rejected={summary.rejected} unknown={summary.unknown} released={summary.released} "
          f"unpriced={summary.unpriced} claims_expired={summary.claims_expired} "
          f"claims_released={summary.claims_released} pending_expired={summary.pending_expired} "
          f"expired_unsent={summary.expired_unsent} scheduled={summary.scheduled} promoted={summary.promoted}")
    if summary.stopped_by in ("breaker_open", "rate_limited"):
        print(f"sms-pipeline: worker stopped early ({summary.stopped_by.replace('_', ' ')}); "
              "due messages are still pending", file=sys.stderr)
        return 1
    return 0


# ----- messages show / replay ----------------------------------------------------


def _time(value: object) -> str:
    return value.isoformat(timespec="seconds") if value is not None else "-"  # type: ignore[attr-defined]


def show_messages(args: argparse.Namespace, settings: Settings) -> int:
    recipient = None
    if args.recipient is not None:
        try:
            recipient = msisdn.normalise(args.recipient)
        except msisdn.InvalidRecipient:
            raise UserError("--recipient is not a valid phone number") from None
    with connection.connect_url(database_url(settings), autocommit=True) as conn:
        traces = message_tools.trace(conn, business_key=args.business_key, attempt_key=args.attempt_key,
                                recipient=recipient, tenant=args.tenant)
    if not traces:
        print("no message found")
        return 1
    for trace in traces:
        print(f"message tenant={trace.tenant_id} business_key={trace.business_key} "
              f"attempts={len(trace.attempts)}")
        for n, a in enumerate(trace.attempts, start=1):
            cost = f"{a.cost} {a.cost_currency}" if a.cost is not None else ("unpriced" if a.billable_units else "-")
            print(f"  attempt {n}: id={a.id} attempt_key={a.attempt_key} state={a.state}"
                  + (f" reason={a.state_reason!r}" if a.state_reason else "")
                  + (f" replaces={a.replaces_id}" if a.replaces_id else ""))
            print(f"    {a.channel}/{a.message_class} to {message_tools.mask_recipient(a.recipient)} from {a.sender_id}"
                  f" segments={a.segments} {a.encoding} tries={a.attempt_count}")
            print(f"    created={_time(a.created_at)} scheduled={_time(a.scheduled_for)} "
                  f"expires={_time(a.expires_at)} claimed={_time(a.claimed_at)} "
                  f"submitted={_time(a.submitted_at)} delivered={_time(a.delivered_at)}")
            print(f"    provider txn={a.provider_txn_id or '-'} msg={a.provider_message_id or '-'} "
                  f"code={a.provider_status_code or '-'} cause={a.provider_cause or '-'} "
                  f"final={a.final_status or '-'}"
                  + (f" conflicting_final={a.conflicting_final_status}" if a.conflicting_final_status else "")
                  + (f" correlation={a.correlation_result}" if a.correlation_result else "")
                  + (f" evidence={a.correlation_evidence}" if a.correlation_evidence else ""))
            print(f"    billable_units={a.billable_units if a.billable_units is not None else '-'} cost={cost}")
            for r in a.receipts:
                print(f"    receipt {r.status_word} ({r.outcome}) msg={r.provider_message_id} from {r.source}"
                      f" submitted={_time(r.provider_submit_at)}"
                      f" done={_time(r.provider_done_at)} seen={_time(r.first_seen_at)}"
                      f" disposition={r.disposition or '-'}")
    return 0


def replay_message(args: argparse.Namespace, settings: Settings) -> int:
    with connection.connect_url(database_url(settings), autocommit=True) as conn:
        done = message_tools.replay(conn, args.message_id, reason=args.reason, clock=RealClock(),
                                    send_window=timedelta(hours=settings.max_send_delay_h))
    print(f"message {done.replaced_id} superseded; new attempt id={done.message_id} "
          f"attempt_key={done.attempt_key} is pending")
    return 0
