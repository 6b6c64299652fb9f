"""The schedule cross-check: what the provider holds for us against our `scheduled` rows.

Provider-side campaigns leave the sending to the provider; the only way to
notice a transaction it lost, moved or holds without us knowing is to ask
(docs/design.md#schedule-cross-check). :func:`compare` is the comparison, a
pure function of both sides; :func:`held_transactions` reads ours. A
transaction's ids are not secrets and are named; numbers and bodies never
appear (neither side carries them here).

Times are compared as the provider-local wall-clock text at the provider's
precision (whole seconds): ours as we sent it (rounded up to the second,
:func:`~sms_pipeline.core.provider_time.format_schedule_time_sms`), theirs as
listed. Text, not instants, so an hour that a DST change repeats compares
by what both sides wrote.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

import psycopg

from sms_pipeline.core.provider_time import format_local, format_schedule_time_sms
from sms_pipeline.db import queries
from sms_pipeline.provider.results import CampaignTransaction, ScheduleRow

# campaign/read's statuses (lower-cased): still to be sent, and sent.
PROVIDER_PENDING = "scheduled"
PROVIDER_SENT = "completed"


@dataclass(frozen=True)
class HeldTransaction:
    """One provider transaction (uuId) as our `scheduled` rows hold it."""

    campaign_id: str
    transaction_id: str
    messages: int
    first_scheduled_for: datetime
    last_scheduled_for: datetime


@dataclass(frozen=True)
class Difference:
    transaction_id: str
    campaign_id: str | None
    # missing (the provider lists it nowhere), not_sending (listed as cancelled or failed),
    # time_differs, count_differs, unknown_to_us (the provider will send it; we hold no such row)
    kind: str
    detail: str

    def line(self) -> str:
        return f"{self.kind} {self.transaction_id} (campaign {self.campaign_id or '?'}): {self.detail}"


@dataclass(frozen=True)
class CrossCheck:
    held: int  # transactions we hold as scheduled
    provider_pending: int  # transactions the provider will still send
    awaiting_promotion: tuple[str, ...]  # ours, already sent by the provider: the promotion to submitted is due
    differences: tuple[Difference, ...]

    @property
    def passed(self) -> bool:
        return not self.differences

    def description(self) -> str:
        if self.passed:
            return (f"{self.held} scheduled transaction(s) of ours all on the provider's list at our time; "
                    f"nothing on it unknown to us")
        # The ids by kind first (a one-line alert keeps the start), then each difference's detail.
        kinds = "; ".join(f"{kind} {ids}" for kind, ids in self._ids_by_kind().items())
        return (f"{len(self.differences)} difference(s) with the provider's schedule: {kinds}. "
                + "; ".join(d.line() for d in self.differences))

    def _ids_by_kind(self) -> dict[str, str]:
        by_kind: dict[str, list[str]] = {}
        for d in self.differences:
            by_kind.setdefault(d.kind, []).append(d.transaction_id)
        return {kind: ", ".join(ids) for kind, ids in sorted(by_kind.items())}

    def metadata(self) -> dict[str, Any]:
        return {
            "held_transactions": self.held,
            "provider_pending_transactions": self.provider_pending,
            "awaiting_promotion": ", ".join(self.awaiting_promotion) or "none",
            "differences": len(self.differences),
            **self._ids_by_kind(),
        }


@dataclass(frozen=True)
class _Listed:
    """One transaction as the provider lists it."""

    campaign_id: str | None
    status: str
    total: int
    scheduled_for: datetime | None


def held_transactions(conn: psycopg.Connection) -> list[HeldTransaction]:
    return [HeldTransaction(*row) for row in queries.run(conn, "campaign_check_scheduled").fetchall()]


def _provider_view(schedule: Sequence[ScheduleRow],
                   campaigns: Mapping[str, Sequence[CampaignTransaction]]) -> dict[str, _Listed]:
    """Every transaction the provider names, by uuId; schedule/read (what it will send) wins over campaign/read."""
    listed: dict[str, _Listed] = {}
    for campaign_id, transactions in campaigns.items():
        for t in transactions:
            if t.transaction_id is not None:
                listed[t.transaction_id] = _Listed(campaign_id, t.status.strip().lower(), t.total, t.scheduled_for)
    for row in schedule:
        if row.transaction_id is not None:
            listed[row.transaction_id] = _Listed(row.campaign_id, PROVIDER_PENDING, row.total, row.schedule_time)
    return listed


def compare(held: Sequence[HeldTransaction], schedule: Sequence[ScheduleRow],
            campaigns: Mapping[str, Sequence[CampaignTransaction]], zone: ZoneInfo) -> CrossCheck:
    """Our scheduled transactions against schedule/read and campaign/read of our campaign ids."""
    listed = _provider_view(schedule, campaigns)
    differences: list[Difference] = []
    awaiting: list[str] = []
    for ours in held:
        theirs = listed.get(ours.transaction_id)
        found = _differences(ours, theirs, zone)
        differences += found
        if theirs is not None and theirs.status == PROVIDER_SENT and not found:
            awaiting.append(ours.transaction_id)
    ours_ids = {h.transaction_id for h in held}
    pending = sorted(t for t, item in listed.items() if item.status == PROVIDER_PENDING)
    differences += [
        Difference(t, listed[t].campaign_id, "unknown_to_us",
                   f"the provider will send {listed[t].total} message(s) at "
                   f"{_provider_text(listed[t].scheduled_for, zone)}; we hold no scheduled row of it")
        for t in pending if t not in ours_ids
    ]
    return CrossCheck(held=len(held), provider_pending=len(pending), awaiting_promotion=tuple(awaiting),
                      differences=tuple(differences))


def _differences(ours: HeldTransaction, theirs: _Listed | None, zone: ZoneInfo) -> list[Difference]:
    def diff(kind: str, detail: str) -> Difference:
        return Difference(ours.transaction_id, ours.campaign_id, kind, detail)

    if theirs is None:
        return [diff("missing", f"{ours.messages} scheduled message(s) of ours; the provider lists no such "
                                "transaction (schedule/read, campaign/read)")]
    if theirs.status not in (PROVIDER_PENDING, PROVIDER_SENT):
        return [diff("not_sending", f"the provider lists it as {theirs.status or 'no status'}, "
                                    f"with {ours.messages} scheduled message(s) of ours")]
    found = []
    their_time = _provider_text(theirs.scheduled_for, zone)
    our_times = sorted({format_schedule_time_sms(t, zone)
                        for t in (ours.first_scheduled_for, ours.last_scheduled_for)})
    if our_times != [their_time]:
        found.append(diff("time_differs", f"ours {' and '.join(our_times)}, the provider's {their_time} "
                                          f"({zone.key})"))
    if theirs.total != ours.messages:
        found.append(diff("count_differs", f"ours {ours.messages} message(s), the provider's {theirs.total}"))
    return found


def _provider_text(instant: datetime | None, zone: ZoneInfo) -> str:
    return "no time" if instant is None else format_local(instant, zone)
