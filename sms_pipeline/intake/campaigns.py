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
# What the provider's campaign/read calls a transaction whose schedule was deleted [assumed].
_PROVIDER_CANCELLED = "cancelled"
_PROVIDER_SCHEDULED = "scheduled"


class CampaignRefused(UserError):
    """A campaign command that cannot be done as asked; nothing was changed."""


@dataclass(frozen=True, slots=True)
class Campaign:
    """A campaign and its rows counted by state (``cancelled``: expired by a cancel)."""

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
    """What a cancel or reschedule did. ``done``: every row reached; the campaign shows the change."""

    campaign: Campaign
    pending: int = 0  # rows changed here (no provider involved)
    transactions: list[Transaction] = field(default_factory=list)
    in_flight: int = 0  # rows a worker holds: left alone, changed by a second run
    left: int = 0  # rows still to change (in flight, or at a transaction that failed)
    done: bool = False

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
    finish: Callable[[psycopg.Connection, datetime], None]


def cancel(conn: psycopg.Connection, campaign: Campaign, *, clock: Clock,
           provider: ProviderClient | None = None) -> Change:
    """Stop what has not gone: pending rows and the provider's schedules become ``expired`` (cancelled).

    ``provider`` is needed only for a provider-side campaign. Refused once
    the send time has passed. A partial result (a transaction the provider
    would not delete, rows a worker held) is reported in the change; a second
    run finishes it.
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
        finish=lambda c, now: queries.run(c, "campaign_set_cancelled", id=campaign.id, now=now),
    )
    return _apply(conn, campaign, operation, clock, provider)


def reschedule(conn: psycopg.Connection, campaign: Campaign, at: str, *, clock: Clock,
               provider: ProviderClient | None = None) -> Change:
    """Move what has not gone to ``at`` (wall clock in the campaign's zone); each row's expiry moves by as much.

    As :func:`cancel` otherwise: refused once the send time has passed (or
    when the new time has), partial results reported, a second run finishes.
    """
    if campaign.cancelled_at is not None:
        raise CampaignRefused(f"campaign {campaign.id} {campaign.name!r} was cancelled; nothing to reschedule")
    zone = ZoneInfo(campaign.time_zone)
    local_time, instant = requested_time(at, zone)
    if instant <= clock.now():
        raise CampaignRefused(f"--at {wall_clock_text(local_time)} {zone.key} has already passed")
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
        finish=lambda c, now: queries.run(c, "campaign_set_time", id=campaign.id, local_time=local_time,
                                          at=instant, now=now),
    )
    return _apply(conn, campaign, operation, clock, provider)


def _apply(conn: psycopg.Connection, campaign: Campaign, op: _Operation, clock: Clock,
           provider: ProviderClient | None) -> Change:
    now = clock.now()
    if campaign.cancelled_at is not None:  # a cancel that finished before: nothing left to do
        return Change(campaign, done=True)
    if now >= campaign.scheduled_for:
        raise CampaignRefused(f"campaign {campaign.id} {campaign.name!r} was due at {campaign.when}; "
                              f"too late to {op.verb} it")
    change = Change(campaign)
    # Rows still here first: once they are changed, no worker hands them to the provider at the old time.
    change.pending = queries.run(conn, op.pending_query, campaign_id=campaign.id, now=now, **op.params).rowcount
    held = queries.run(conn, "campaign_held_transactions", campaign_id=campaign.id, at=op.at).fetchall()
    if held and provider is None:
        raise CampaignRefused(f"campaign {campaign.id} has rows held by the provider: a provider is needed")
    for txn_id, provider_campaign_id, messages in held:
        problem = _at_provider(provider, op, txn_id, provider_campaign_id)  # type: ignore[arg-type]
        if problem is None:
            # Its own committed statement: the provider has changed this transaction, so must our rows.
            queries.run(conn, op.transaction_query, campaign_id=campaign.id, txn_id=txn_id, now=now, **op.params)
        else:
            log.warning("campaign %s: %s of transaction %s failed", campaign.id, op.verb, txn_id)
        change.transactions.append(Transaction(txn_id, provider_campaign_id, messages, problem))
    remaining = [w for w in waiting(conn, campaign) if op.still_to_change(w)]
    change.in_flight = sum(w.messages for w in remaining if w.state in _IN_FLIGHT)
    change.left = sum(w.messages for w in remaining)
    change.done = not change.left
    if change.done:
        op.finish(conn, now)
    change.campaign = overview(conn, campaign.id)[0]
    return change


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
