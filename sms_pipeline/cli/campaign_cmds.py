"""``sms-pipeline campaigns create | list | show | cancel | reschedule`` (sms_pipeline.intake.campaigns).

A campaign is named by its name or its id. Times are the provider's wall
clock (``SMS_PROVIDER_TIMEZONE``), as ``--at`` takes them.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from contextlib import nullcontext
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import psycopg

from sms_pipeline.cli.intake_files import (add_intake_options, database_url, print_bad_lines, readable,
                                           reading_progress)
from sms_pipeline.core.clock import RealClock
from sms_pipeline.db import connection
from sms_pipeline.intake import IntakePolicy, campaigns
from sms_pipeline.provider.client import ProviderClient
from sms_pipeline.settings import Settings

def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("campaigns", help="named sends at one provider-local time: create, list, show, "
                                              "cancel, reschedule")
    actions = parser.add_subparsers(dest="campaigns_command", metavar="ACTION", required=True)

    create = actions.add_parser("create", help="load a JSONL file (as enqueue takes) as a campaign (idempotent)")
    create.add_argument("file", type=Path, metavar="FILE.jsonl")
    create.add_argument("--name", required=True, help="the campaign's name (unique)")
    create.add_argument("--at", required=True, metavar='"YYYY-MM-DD HH:MM"',
                        help="when to send, on the provider's clock (SMS_PROVIDER_TIMEZONE)")
    create.add_argument("--provider-side", action="store_true",
                        help="hand the rows to the provider ahead of time with a scheduleTime "
                             "(default: they wait here until due)")
    add_intake_options(create)
    create.set_defaults(handler=create_campaign)

    listing = actions.add_parser("list", help="every campaign: time, kind, rows by state")
    listing.set_defaults(handler=list_campaigns)

    show = actions.add_parser("show", help="one campaign: rows by state, cost so far, provider ids")
    show.add_argument("campaign", metavar="ID", help="the campaign's id or name")
    show.set_defaults(handler=show_campaign)

    cancel = actions.add_parser("cancel", help="cancel what has not gone yet (before the send time)")
    cancel.add_argument("campaign", metavar="ID", help="the campaign's id or name")
    cancel.set_defaults(handler=cancel_campaign)

    reschedule = actions.add_parser("reschedule", help="move what has not gone yet to another time "
                                                       "(before the send time)")
    reschedule.add_argument("campaign", metavar="ID", help="the campaign's id or name")
    reschedule.add_argument("--at", required=True, metavar='"YYYY-MM-DD HH:MM"',
                            help="the new time, on the provider's clock (the campaign's time zone)")
    reschedule.set_defaults(handler=reschedule_campaign)


def _local(instant: datetime | None, zone: str) -> str:
    if instant is None:
        return "-"
    return campaigns.wall_clock_text(instant.astimezone(ZoneInfo(zone)).replace(tzinfo=None))


def _kind(campaign: campaigns.Campaign) -> str:
    return "provider-side" if campaign.provider_side else "local"


def _states(campaign: campaigns.Campaign) -> str:
    return " ".join(f"{state}={n}" for state, n in sorted(campaign.by_state.items())) or "-"


def _outcome(campaign: campaigns.Campaign) -> str:
    """A finished cancel: "cancelled" only when nothing went; else "partly sent" (it cost something)."""
    if campaign.outcome is None:
        return "-"
    rest = ", rest cancelled" if campaign.outcome == "partly sent" else ""
    return f"{campaign.outcome}{rest} {_local(campaign.cancelled_at, campaign.time_zone)}"


def _sent(campaign: campaigns.Campaign) -> str:
    """When the rows that went did: one time, or the first and the last."""
    first, last = (_local(t, campaign.time_zone) for t in (campaign.first_sent_at, campaign.last_sent_at))
    return f"at {first}" if first == last else f"from {first} to {last}"


def _title(campaign: campaigns.Campaign) -> str:
    return f"campaign {campaign.id} {campaign.name!r} ({_kind(campaign)}, {campaign.when})"


# ----- create --------------------------------------------------------------------


def create_campaign(args: argparse.Namespace, settings: Settings) -> int:
    path = readable(args.file)
    url = database_url(settings)
    with reading_progress("campaign", path) as on_bytes, connection.connect_url(url, autocommit=True) as conn, \
            path.open("rb") as lines:
        created = campaigns.create(conn, lines, name=args.name, at=args.at, tz=settings.provider_timezone,
                                   provider_side=args.provider_side, clock=RealClock(),
                                   policy=IntakePolicy.from_settings(settings), chunk_size=args.chunk_size,
                                   workers=args.workers, on_bytes=on_bytes,
                                   otp_code_length=settings.otp_code_length,
                                   max_body_segments=settings.max_body_segments)
    result = created.intake
    print_bad_lines(path, result.bad_lines)
    if created.campaign is None:
        print(f"no campaign created: no good line in {path.name}; {len(result.bad_lines)} bad lines")
        return 1
    verb = "created" if created.new else "already there"
    nothing = "; nothing added" if not result.created else ""
    print(f"{_title(created.campaign)} {verb}: {result.requests} requests: {result.created} new, "
          f"{result.existing} already in it{nothing}; {len(result.bad_lines)} bad lines")
    return 1 if result.bad_lines else 0


# ----- list / show ---------------------------------------------------------------


def list_campaigns(args: argparse.Namespace, settings: Settings) -> int:
    with connection.connect_url(database_url(settings), autocommit=True) as conn:
        found = campaigns.overview(conn)
    if not found:
        print("no campaigns")
        return 0
    rows = [("id", "name", "time", "kind", "rows", "sent", "by state", "outcome")]
    rows += [(str(c.id), c.name, c.when, _kind(c), str(c.messages), str(c.sent), _states(c), _outcome(c))
             for c in found]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
    return 0


def show_campaign(args: argparse.Namespace, settings: Settings) -> int:
    with connection.connect_url(database_url(settings), autocommit=True) as conn:
        campaign = campaigns.find(conn, args.campaign)
        costs = campaigns.cost(conn, campaign)
        ids = campaigns.provider_ids(conn, campaign)
        waiting = campaigns.waiting(conn, campaign)
    zone = campaign.time_zone
    print(f"{_title(campaign)}: due {campaign.scheduled_for.astimezone(UTC).isoformat()}")
    print(f"  created {_local(campaign.created_at, zone)}, updated {_local(campaign.updated_at, zone)}")
    print(f"  rows: {campaign.messages} ({_states(campaign)})")
    if campaign.sent:
        # Also after a reschedule cut off by the send time: the part that went at the old time shows here.
        print(f"  sent: {campaign.sent} rows, {_sent(campaign)}")
    if campaign.outcome == "cancelled":
        print(f"  cancelled {_local(campaign.cancelled_at, zone)}: nothing sent")
    elif campaign.outcome == "partly sent":
        print(f"  partly sent: {campaign.sent} rows sent before the cancel, the rest cancelled "
              f"{_local(campaign.cancelled_at, zone)}")
    if not costs:
        print("  cost so far: nothing billed")
    for c in costs:
        amount = f"{c.cost} {c.currency}" if c.currency is not None else "unpriced"
        print(f"  cost so far: {amount} for {c.billed} billed rows ({c.units} units)")
    for p in ids:
        sent = f", {p.sent} sent at {_local(p.sent_at, zone)}" if p.sent else ""
        print(f"  provider campaign {p.campaign_id or '-'} transaction {p.transaction_id or '-'}: "
              f"{p.messages} rows ({p.scheduled} held by the provider{sent})")
    for w in waiting:
        print(f"  waiting: {w.messages} {w.state} for {_local(w.scheduled_for, zone)}")
    _show_unfinished(campaign, waiting)
    return 0


def _show_unfinished(campaign: campaigns.Campaign, waiting: list[campaigns.Waiting]) -> None:
    """A cancel or reschedule that did not reach every row: the campaign keeps its old state, the rows say."""
    left = sum(w.messages for w in waiting)
    if campaign.by_state.get("cancelled") and campaign.cancelled_at is None and left:
        print(f"  unfinished cancel: {left} rows not cancelled yet; run `sms-pipeline campaigns cancel "
              f"{campaign.id}` again")
        return
    elsewhere = sum(w.messages for w in waiting if w.scheduled_for != campaign.scheduled_for)
    if elsewhere:
        print(f"  unfinished reschedule: {elsewhere} rows at another time than the campaign's; run "
              f"`sms-pipeline campaigns reschedule {campaign.id} --at ...` again")


# ----- cancel / reschedule -------------------------------------------------------


def cancel_campaign(args: argparse.Namespace, settings: Settings) -> int:
    return _change(args, settings, "cancelled", lambda conn, campaign, clock, provider: campaigns.cancel(
        conn, campaign, clock=clock, provider=provider))


def reschedule_campaign(args: argparse.Namespace, settings: Settings) -> int:
    return _change(args, settings, "rescheduled", lambda conn, campaign, clock, provider: campaigns.reschedule(
        conn, campaign, args.at, clock=clock, provider=provider))


_Apply = Callable[[psycopg.Connection, campaigns.Campaign, RealClock, ProviderClient | None], campaigns.Change]


def _change(args: argparse.Namespace, settings: Settings, done: str, apply: _Apply) -> int:
    """Find the campaign, apply the change (with a provider client for a provider-side one), say what it did."""
    with connection.connect_url(database_url(settings), autocommit=True) as conn:
        campaign = campaigns.find(conn, args.campaign)
        client = ProviderClient.from_settings(settings) if campaign.provider_side else nullcontext()
        with client as provider:
            change = apply(conn, campaign, RealClock(), provider)
        campaign = change.campaign
        # The provider's transactions that went (a provider-side campaign has one per 1,000 rows; a local
        # one's sent rows are named by `campaigns show`).
        went = ([p for p in campaigns.provider_ids(conn, campaign) if p.sent]
                if campaign.sent and campaign.provider_side else [])
    print(f"{_title(campaign)}: {change.pending} rows waiting here {done}")
    for txn in change.transactions:
        outcome = f"{txn.messages} rows {done}" if txn.problem is None else f"NOT {done}: {txn.problem}"
        print(f"  provider campaign {txn.provider_campaign_id} transaction {txn.transaction_id}: {outcome}")
    if change.in_flight:
        print(f"  {change.in_flight} rows with a worker right now: left alone")
    settled = campaign.messages - campaign.by_state.get("cancelled", 0) - sum(
        campaign.by_state.get(state, 0) for state in ("pending", "claimed", "sending", "scheduled"))
    if settled:
        print(f"  {settled} rows already sent or settled: left alone")
    if not change.done:
        failed = len(change.failed)
        unchanged = f"{failed} of {len(change.transactions)} provider transactions unchanged, " if failed else ""
        then = ("a send time has passed: the provider sends the transactions not reached at their time, and "
                "the worker records them; the ones reached above stay controllable (see `sms-pipeline campaigns "
                f"show {campaign.id}`)" if change.too_late else "run the command again")
        print(f"sms-pipeline: campaign {campaign.id} not fully {done}: {unchanged}{change.left} rows left; {then}",
              file=sys.stderr)
        return 1
    for p in went:
        print(f"  provider campaign {p.campaign_id} transaction {p.transaction_id}: {p.sent} rows sent at "
              f"{_local(p.sent_at, campaign.time_zone)}")
    if campaign.outcome == "partly sent":
        # Finished, but not free: say what went, so nobody reads the cancel as costing nothing.
        print(f"campaign {campaign.id} {campaign.name!r} partly sent: {campaign.sent} rows sent before the "
              f"cancel ({_sent(campaign)}), the rest cancelled; see `sms-pipeline campaigns show {campaign.id}`")
        return 0
    where = f" to {campaign.when}" if args.campaigns_command == "reschedule" else ""
    gone = (f"; {campaign.sent} rows had already gone ({_sent(campaign)}): see `sms-pipeline campaigns show "
            f"{campaign.id}`" if campaign.sent else "")
    print(f"campaign {campaign.id} {campaign.name!r} {done}{where}{gone}")
    return 0
