"""Campaigns: a named JSONL file of requests sent at one provider-local wall-clock time.

``create`` loads the file through the ordinary intake (:func:`intake.enqueue_lines`)
with every row joining the campaign and due at its time; ``cancel`` and
``reschedule`` change what has not gone yet. A local campaign's rows wait
here (``pending``) until due; a provider-side one's are handed to the
provider ahead of time by the worker and wait there (``scheduled``), so
changing them means asking the provider first, one transaction (uuId) at a
time, and writing each answer to our rows at once
(docs/design.md#cancel-and-reschedule).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

import psycopg

from sms_pipeline.core.clock import Clock
from sms_pipeline.core.provider_time import wall_clock_instant
from sms_pipeline.core.states import MessageState
from sms_pipeline.db import queries
from sms_pipeline.errors import UserError
from sms_pipeline.intake.messages import DEFAULT_POLICY, MAX_IDENTIFIER_LENGTH, FileIntake, IntakePolicy, enqueue_lines
from sms_pipeline.provider.client import ProviderClient
from sms_pipeline.provider.results import CampaignTransaction, ProviderCallError

log = logging.getLogger(__name__)

# Rows a worker holds right now: left alone, changed by a second run once they are `scheduled`.
_IN_FLIGHT = frozenset({MessageState.claimed, MessageState.sending})
# Rows not gone yet, here, with a worker or held by the provider: their times say whether it is too late.
_UNSENT = _IN_FLIGHT | {MessageState.pending, MessageState.scheduled}
# What the provider's campaign/read calls a transaction whose schedule was deleted [assumed].
_PROVIDER_CANCELLED = "cancelled"
_PROVIDER_SCHEDULED = "scheduled"


class CampaignRefused(UserError):
    """A campaign command that cannot be done as asked; nothing was changed."""


@dataclass(frozen=True, slots=True)
class Campaign:
    """A campaign and its rows counted by state (``cancelled``: expired by a cancel).

    ``sent``: rows that went (submitted_at set: billed), with the first and
    last time they did; a cancelled campaign with any is "partly sent".
    """

    id: int
    name: str
    provider_side: bool
    local_time: datetime  # the wall-clock time asked for, in time_zone
    time_zone: str
    scheduled_for: datetime  # the instant it names
    created_at: datetime
    cancelled_at: datetime | None
    updated_at: datetime
    messages: int
    by_state: dict[str, int]
    sent: int
    first_sent_at: datetime | None
    last_sent_at: datetime | None

    @property
    def outcome(self) -> str | None:
        """How a finished cancel reads: "cancelled" only when nothing went (it cost nothing), else
        "partly sent" (docs/design.md#cancel-and-reschedule); None while not cancelled."""
        if self.cancelled_at is None:
            return None
        return "partly sent" if self.sent else "cancelled"

    @property
    def when(self) -> str:
        """The time asked for, as a person reads it: "2026-12-05 10:00 Asia/Kolkata"."""
        return f"{wall_clock_text(self.local_time)} {self.time_zone}"


def wall_clock_text(wall: datetime) -> str:
    return f"{wall:%Y-%m-%d %H:%M:%S}" if wall.second else f"{wall:%Y-%m-%d %H:%M}"


def requested_time(text: str, tz: ZoneInfo) -> tuple[datetime, datetime]:
    """``--at``: (wall clock, instant); a malformed, nonexistent or ambiguous local time is refused."""
    try:
        return wall_clock_instant(text, tz)
    except ValueError as exc:
        raise CampaignRefused(f"--at: {exc}") from None


# ----- reading ------------------------------------------------------------------


def overview(conn: psycopg.Connection, campaign_id: int | None = None) -> list[Campaign]:
    """Every campaign (or one), in the order they go out."""
    return [Campaign(*row) for row in queries.run(conn, "campaign_overview", id=campaign_id)]


def find(conn: psycopg.Connection, key: str) -> Campaign:
    """The campaign named ``key``, else the one whose id it is."""
    found = queries.run(conn, "campaign_find", key=key).fetchall()
    if not found:
        raise CampaignRefused(f"no campaign named or numbered {key!r} (see `sms-pipeline campaigns list`)")
    if len(found) > 1:
        raise CampaignRefused(f"{key!r} is the name of campaign {found[0][0]} and the id of campaign "
                              f"{found[1][0]}: give that one's name")
    [campaign] = overview(conn, found[0][0])
    return campaign


def _by_name(conn: psycopg.Connection, name: str) -> Campaign | None:
    found = queries.run(conn, "campaign_find", key=name).fetchone()
    campaign = None if found is None else overview(conn, found[0])[0]
    return campaign if campaign is not None and campaign.name == name else None


@dataclass(frozen=True, slots=True)
class Cost:
    currency: str | None  # None: rows without a rate (unpriced)
    cost: Any  # Decimal, or None when unpriced
    billed: int
    units: int
    unpriced: int


@dataclass(frozen=True, slots=True)
class ProviderIds:
    campaign_id: str | None
    transaction_id: str | None
    messages: int
    scheduled: int
    sent: int
    sent_at: datetime | None  # when the first of them went


@dataclass(frozen=True, slots=True)
class Waiting:
    state: str
    scheduled_for: datetime | None
    messages: int


def cost(conn: psycopg.Connection, campaign: Campaign) -> list[Cost]:
    return [Cost(*row) for row in queries.run(conn, "campaign_cost", campaign_id=campaign.id)]


def provider_ids(conn: psycopg.Connection, campaign: Campaign) -> list[ProviderIds]:
    return [ProviderIds(*row) for row in queries.run(conn, "campaign_provider_ids", campaign_id=campaign.id)]


def waiting(conn: psycopg.Connection, campaign: Campaign) -> list[Waiting]:
    """Rows not sent yet, by state and due time (an unfinished change shows here)."""
    return [Waiting(*row) for row in queries.run(conn, "campaign_waiting", campaign_id=campaign.id)]


# ----- create -------------------------------------------------------------------


@dataclass
class _Slot:
    """The campaign a file joins (:class:`intake.messages.CampaignSlot`): written with its first rows."""

    name: str
    provider_side: bool
    local_time: datetime
    time_zone: str
    scheduled_for: datetime
    now: datetime
    id: int | None = None

    def campaign_id(self, conn: psycopg.Connection) -> int:
        if self.id is None:
            row = queries.run(conn, "campaign_insert", name=self.name, provider_side=self.provider_side,
                              local_time=self.local_time, time_zone=self.time_zone,
                              scheduled_for=self.scheduled_for, now=self.now).fetchone()
            if row is None:
                raise CampaignRefused(f"campaign {self.name!r} was created by another command meanwhile; "
                                      "run this one again")
            self.id = row[0]
        return self.id


@dataclass(frozen=True, slots=True)
class Created:
    """What ``create`` did: the campaign (None when no line was good), whether it is new, the file's intake."""

    campaign: Campaign | None
    new: bool
    intake: FileIntake


def _check_name(name: str) -> str:
    name = name.strip()
    if not name or not name.isprintable() or len(name) > MAX_IDENTIFIER_LENGTH:
        raise CampaignRefused(f"--name must be 1 to {MAX_IDENTIFIER_LENGTH} printable characters")
    return name


def create(conn: psycopg.Connection, lines: Iterable[bytes], *, name: str, at: str, tz: ZoneInfo,
           provider_side: bool, clock: Clock, policy: IntakePolicy = DEFAULT_POLICY,
           **intake_options: Any) -> Created:
    """Load a campaign file: every good line joins campaign ``name``, due at ``at`` (wall clock in ``tz``).

    The same command again adds nothing (intake is idempotent) and loads
    what a crash left out; the same name with another time or kind is
    refused before anything is read. ``intake_options`` go to
    :func:`intake.enqueue_lines`. ``conn`` is in autocommit mode (each chunk
    commits; the campaign with the first).
    """
    name = _check_name(name)
    local_time, instant = requested_time(at, tz)
    now = clock.now()
    existing = _by_name(conn, name)
    if existing is not None:
        if existing.cancelled_at is not None:
            raise CampaignRefused(f"campaign {existing.id} {name!r} was cancelled; give the new one another name")
        if existing.scheduled_for != instant or existing.time_zone != tz.key:
            raise CampaignRefused(f"campaign {existing.id} {name!r} is set for {existing.when}, not "
                                  f"{wall_clock_text(local_time)} {tz.key}; to move it: "
                                  f"sms-pipeline campaigns reschedule {existing.id} --at ...")
        if existing.provider_side != provider_side:
            kind = "provider-side" if existing.provider_side else "local"
            raise CampaignRefused(f"campaign {existing.id} {name!r} is {kind}; run the command as it was created")
    if instant <= now:
        raise CampaignRefused(f"--at {wall_clock_text(local_time)} {tz.key} has already passed")
    slot = _Slot(name, provider_side, local_time, tz.key, instant, now,
                 None if existing is None else existing.id)
    result = enqueue_lines(conn, lines, clock=clock, policy=policy, campaign=slot, **intake_options)
    campaign = None if slot.id is None else overview(conn, slot.id)[0]
    return Created(campaign, existing is None and campaign is not None, result)


# ----- cancel and reschedule ----------------------------------------------------


@dataclass(frozen=True, slots=True)
class Transaction:
    """One provider transaction (uuId) holding rows of the campaign, and what became of it."""

    transaction_id: str
    provider_campaign_id: str
    messages: int
    problem: str | None = None  # None: changed at the provider and on our rows


@dataclass
class Change:
    """What a cancel or reschedule did. ``done``: no row left to change; the campaign shows the change.

    Done is not "all as asked": rows that went before the change reached
    them (a transaction the provider sent first, or left to it once its time
    came) are counted in ``campaign.sent``, and such a cancelled campaign
    reads "partly sent" (:attr:`Campaign.outcome`).
    """

    campaign: Campaign
    pending: int = 0  # rows changed here (no provider involved)
    transactions: list[Transaction] = field(default_factory=list)
    in_flight: int = 0  # rows a worker holds: left alone, changed by a second run
    left: int = 0  # rows still to change (in flight, or at a transaction that failed)
    done: bool = False
    # The send time came while the command ran: the transactions not reached were left to the provider.
    too_late: bool = False

    @property
    def failed(self) -> list[Transaction]:
        return [t for t in self.transactions if t.problem is not None]


@dataclass(frozen=True, slots=True)
class _Operation:
    """What differs between a cancel and a reschedule."""

    verb: str
    pending_query: str
    transaction_query: str
    params: dict[str, Any]  # for both statements, beside campaign_id, now (and txn_id)
    at: datetime | None  # a reschedule's new instant: transactions already there are skipped
    call: Callable[[ProviderClient, str], None]
    already_done: Callable[[CampaignTransaction], bool]
    still_to_change: Callable[[Waiting], bool]
    # The change already reached every row (nothing waits): finish without the time check.
    settled: Callable[[Campaign, list[Waiting]], bool]
    finish: Callable[[psycopg.Connection, datetime], None]


def cancel(conn: psycopg.Connection, campaign: Campaign, *, clock: Clock,
           provider: ProviderClient | None = None) -> Change:
    """Stop what has not gone: pending rows and the provider's schedules become ``expired`` (cancelled).

    ``provider`` is needed only for a provider-side campaign. Refused once
    the time of every row not gone yet has passed (rows a cut-off reschedule
    moved stay cancellable until their new time); a transaction whose time
    passes while the command runs is left to the provider and reported
    unchanged (:attr:`Change.too_late`). A partial result (a transaction the
    provider would not delete, rows a worker held) is reported in the
    change and never reads as done while any of its rows may still go; a
    second run before the send time finishes it. Once nothing waits and the
    cancel has taken rows (the worker's settle pass may have expired the
    last ones, the provider listing them cancelled), a run finishes it
    whatever the time. The campaign is then cancelled; with rows sent before
    the cancel reached them it reads "partly sent".
    """
    operation = _Operation(
        verb="cancel",
        pending_query="campaign_cancel_pending",
        transaction_query="campaign_cancel_transaction",
        params={},
        at=None,
        call=lambda client, txn_id: client.schedule_delete(txn_id),
        already_done=lambda txn: txn.status.strip().lower() == _PROVIDER_CANCELLED,
        still_to_change=lambda w: True,
        settled=lambda c, waiting_rows: not waiting_rows and c.by_state.get("cancelled", 0) > 0,
        finish=lambda c, now: queries.run(c, "campaign_set_cancelled", id=campaign.id, now=now),
    )
    return _apply(conn, campaign, operation, clock, provider)


def reschedule(conn: psycopg.Connection, campaign: Campaign, at: str, *, clock: Clock,
               provider: ProviderClient | None = None) -> Change:
    """Move what has not gone to ``at`` (wall clock in the campaign's zone); each row's expiry moves by as much.

    As :func:`cancel` otherwise: refused once the send time has passed (or
    when the new time has, checked again before each provider call), partial
    results reported, a second run finishes: the campaign takes the new time
    once every row not gone has it.
    """
    if campaign.cancelled_at is not None:
        raise CampaignRefused(f"campaign {campaign.id} {campaign.name!r} was cancelled; nothing to reschedule")
    zone = ZoneInfo(campaign.time_zone)
    local_time, instant = requested_time(at, zone)  # a time already passed is refused by _apply
    operation = _Operation(
        verb="reschedule",
        pending_query="campaign_reschedule_pending",
        transaction_query="campaign_reschedule_transaction",
        params={"at": instant},
        at=instant,
        call=lambda client, txn_id: client.schedule_update(txn_id, instant),
        already_done=lambda txn: (txn.status.strip().lower() == _PROVIDER_SCHEDULED
                                  and txn.scheduled_for == instant),
        still_to_change=lambda w: w.state in _IN_FLIGHT or w.scheduled_for != instant,
        settled=lambda c, waiting_rows: False,  # rows at the new time are before it: the time check passes
        finish=lambda c, now: queries.run(c, "campaign_set_time", id=campaign.id, local_time=local_time,
                                          at=instant, now=now),
    )
    return _apply(conn, campaign, operation, clock, provider)


def _apply(conn: psycopg.Connection, campaign: Campaign, op: _Operation, clock: Clock,
           provider: ProviderClient | None) -> Change:
    now = clock.now()
    if campaign.cancelled_at is not None:  # a cancel that finished before: nothing left to do
        return Change(campaign, done=True)
    still = waiting(conn, campaign)
    if op.settled(campaign, still):
        # Nothing left to race with the send: finishing is only saying so (a cancel whose delete reached
        # the provider but whose answer was lost, the rows expired since by the worker's settle pass).
        op.finish(conn, now)
        return Change(overview(conn, campaign.id)[0], done=True)
    # "Too late" is decided on what is still to change, not on the campaign's own time: a reschedule cut
    # off by the send time leaves the campaign at its old time and part of its rows at the new one, and
    # those stay controllable until their time (docs/design.md#cancel-and-reschedule).
    unsent = [w for w in still if w.state in _UNSENT and w.scheduled_for is not None]
    last = max((w.scheduled_for for w in unsent), default=campaign.scheduled_for)
    if now >= last:
        raise CampaignRefused(f"campaign {campaign.id} {campaign.name!r} was due at {_when(campaign, last)}; "
                              f"too late to {op.verb} it")
    if op.at is not None and now >= op.at:
        raise CampaignRefused(f"--at {_when(campaign, op.at)} has already passed")
    change = Change(campaign)
    # Rows still here first: once they are changed, no worker hands them to the provider at the old time.
    change.pending = queries.run(conn, op.pending_query, campaign_id=campaign.id, now=now, **op.params).rowcount
    held = queries.run(conn, "campaign_held_transactions", campaign_id=campaign.id, at=op.at).fetchall()
    if held and provider is None:
        raise CampaignRefused(f"campaign {campaign.id} has rows held by the provider: a provider is needed")
    for txn_id, provider_campaign_id, messages, due in held:
        # One call per transaction (200 for a 200,000-row campaign) takes a while: a time may pass
        # meanwhile. Once the transaction's time has, the provider may be sending it, so it is not asked
        # any more; what it sends, the worker's promotion records (campaign_promote.sql).
        now = clock.now()
        problem = _too_late(campaign, op, now, due)
        if problem is not None:
            change.too_late = True
        else:
            problem = _at_provider(provider, op, txn_id, provider_campaign_id)  # type: ignore[arg-type]
        if problem is None:
            # Its own committed statement: the provider has changed this transaction, so must our rows.
            # Conditional on `scheduled`, as the worker's promotion (campaign_promote*.sql) is: whichever
            # commits first has the row and the other leaves it: a row is never both changed here and promoted.
            queries.run(conn, op.transaction_query, campaign_id=campaign.id, txn_id=txn_id, now=now, **op.params)
        else:
            log.warning("campaign %s: %s of transaction %s failed", campaign.id, op.verb, txn_id)
        change.transactions.append(Transaction(txn_id, provider_campaign_id, messages, problem))
    remaining = [w for w in waiting(conn, campaign) if op.still_to_change(w)]
    change.in_flight = sum(w.messages for w in remaining if w.state in _IN_FLIGHT)
    change.left = sum(w.messages for w in remaining)
    # Done once nothing is left, even with a transaction not changed: its rows went (promoted by the
    # worker, billed) or settled, and a second run would find nothing to do. What went is not hidden:
    # the campaign counts its sent rows, and a cancelled one with any reads "partly sent".
    change.done = not change.left
    if change.done:
        op.finish(conn, now)
    change.campaign = overview(conn, campaign.id)[0]
    return change


def _when(campaign: Campaign, instant: datetime) -> str:
    """An instant on the campaign's wall clock, as :attr:`Campaign.when` reads."""
    zone = ZoneInfo(campaign.time_zone)
    return f"{wall_clock_text(instant.astimezone(zone).replace(tzinfo=None))} {zone.key}"


def _too_late(campaign: Campaign, op: _Operation, now: datetime, due: datetime) -> str | None:
    """Why a transaction due at ``due`` is not asked to change any more at ``now``; None when it may be."""
    if now >= due:
        return f"the send time has passed ({_when(campaign, due)}); left to the provider"
    if op.at is not None and now >= op.at:
        return f"the new time has passed ({_when(campaign, op.at)}); left at {_when(campaign, due)}"
    return None


def _at_provider(client: ProviderClient, op: _Operation, txn_id: str, provider_campaign_id: str) -> str | None:
    """Ask the provider to change one transaction; None when it is changed, else why not.

    A call that fails may still have been done (a lost answer, retried into
    "no such schedule"): the provider's own view of the transaction decides.
    """
    try:
        op.call(client, txn_id)
        return None
    except ProviderCallError as exc:
        problem = str(exc)
    try:
        listed = [t for t in client.campaign_read(provider_campaign_id) if t.transaction_id == txn_id]
    except ProviderCallError:
        return problem
    return None if listed and op.already_done(listed[0]) else problem
