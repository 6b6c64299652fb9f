"""Provider-side campaigns: handed to the provider ahead of their time, promoted when it comes.

(docs/design.md#provider-side-campaigns)

- **Hand-over.** The rows of a provider-side campaign (``msg.campaign.provider_side``)
  wait ``pending`` with their ``scheduled_for`` ahead. The worker does not
  hold them until due: its next claim of their queue takes them
  (``sql/queries/campaign_send_candidates.sql``), and :class:`CampaignStrategy`
  sends them through the usual steps (claimed, then ``sending`` just before
  the request) as quick sends of up to ``SMS_PIPELINE_CAMPAIGN_REQUEST_SIZE``
  numbers sharing a campaign, a time and everything a quick send shares
  (:func:`~sms_pipeline.send.batching.plan_campaign_requests`), with
  ``scheduleTime`` = the campaign's instant. The XML send cannot carry one.
- **The answer** names a ``transactionId`` and a ``campaignId``. The provider
  splits the request into transactions of at most :data:`CAMPAIGN_SPLIT`
  recipients, in request order, and ``campaign/read`` lists their ``uuId``\\ s
  in that order (docs/provider-contract.md#schedules-and-campaigns): so the
  k-th 1,000 accepted recipients, in request order, are the k-th ``uuId``'s
  (:func:`map_transactions`). ``invalidMobile`` numbers are ``rejected`` and
  left out of the split, as the provider leaves them out. The other rows
  become ``scheduled`` (nothing billed) with the campaignId and their
  ``uuId``. When ``campaign/read`` fails, or its list does not show exactly
  that split (count, totals), or the answer names a number in neither list,
  nothing is guessed: those rows become ``unknown`` (``campaign_unmapped``)
  with the campaignId kept as evidence, never re-sent as they are. Any other
  answer is written as for any send (``unknown`` when ambiguous); an accepted
  answer without a campaignId means the time had passed when the request
  arrived and the provider sent it at once: ``submitted``, billed now.
- **Promotion** (:meth:`CampaignStrategy.settle_due`): once a ``scheduled``
  row's time has passed on the application clock, the worker asks the
  provider (``campaign/read``) about its transaction: listed ``completed``,
  the row becomes ``submitted`` with ``submitted_at = scheduled_for``, billed
  at the rate in force then (:func:`sms_pipeline.send.upkeep.promote_scheduled`);
  listed ``cancelled`` (a cancel's delete reached the provider, its answer
  maybe not yet us), it becomes ``expired`` (``cancelled``), as the cancel
  writes it, never billed; listed ``failed``, or no longer listed, it becomes
  ``unknown`` (``provider_not_sending``), never billed on our word; still
  ``scheduled`` there (clocks apart), or a read that fails, it waits. The
  worker does this once a poll interval (so in every ``--once`` run);
  reconciliation promotes the transactions its day's report shows sent.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import psycopg

from sms_pipeline.db import queries
from sms_pipeline.provider.client import ProviderClient
from sms_pipeline.provider.results import CampaignTransaction, ProviderCallError, SendAccepted
from sms_pipeline.send.batching import SendBatch, plan_campaign_requests
from sms_pipeline.send.claim import ClaimedMessage
from sms_pipeline.send.loop import Sent, send_quick
from sms_pipeline.send import upkeep
from sms_pipeline.send.outcomes import AppliedOutcome, Held, apply_outcome

log = logging.getLogger(__name__)

# Recipients per transaction of a split campaign, counted over the accepted
# numbers in request order (docs/provider-contract.md#schedules-and-campaigns) [assumed].
CAMPAIGN_SPLIT = 1000
# The claim that hands provider-side campaign rows over ahead of their time.
CAMPAIGN_CANDIDATES = "campaign_send_candidates"
# Provider transactions whose time has passed that one settling pass asks the provider about.
DUE_TRANSACTIONS_PER_PASS = 500
# campaign/read's status words [assumed, as the simulator]: sent; still to send; deleted (a cancel); failed.
_SENT, _WAITING, _CANCELLED, _FAILED = "completed", "scheduled", "cancelled", "failed"


class CampaignUnmapped(Exception):
    """``campaign/read`` does not show the split the rows' transactions are told by."""


def map_transactions(accepted: int, transactions: Sequence[CampaignTransaction]) -> list[str]:
    """The ``uuId`` of each of ``accepted`` recipients, in request order (pure).

    The k-th :data:`CAMPAIGN_SPLIT` recipients are the k-th transaction's;
    raises :class:`CampaignUnmapped` unless ``transactions`` is exactly that
    split: one transaction per part, each with an id of its own and the
    part's size as its total.
    """
    sizes = [min(CAMPAIGN_SPLIT, accepted - start) for start in range(0, accepted, CAMPAIGN_SPLIT)]
    if len(transactions) != len(sizes):
        raise CampaignUnmapped(f"campaign/read lists {len(transactions)} transaction(s) where {accepted} accepted "
                               f"recipient(s) make {len(sizes)}")
    ids = [t.transaction_id for t in transactions]
    if None in ids or len(set(ids)) != len(ids):
        raise CampaignUnmapped("campaign/read lists a transaction without an id, or one id twice")
    for part, (transaction, size) in enumerate(zip(transactions, sizes), start=1):
        if transaction.total != size:
            raise CampaignUnmapped(f"campaign/read gives transaction {part} a total of {transaction.total} "
                                   f"where the split makes {size}")
    return [ids[index // CAMPAIGN_SPLIT] for index in range(accepted)]  # type: ignore[misc]


@dataclass(frozen=True, slots=True)
class CampaignSent(Sent):
    """A campaign request with its answer and, when it was accepted as a campaign, what ``campaign/read`` said."""

    transactions: tuple[CampaignTransaction, ...] | None = None
    read_error: str | None = None  # why campaign/read gave nothing


@dataclass(frozen=True)
class CampaignStrategy:
    """Hands one queue's provider-side campaign rows to the provider, with their ``scheduleTime``."""

    client: ProviderClient
    price_time_zone: str  # the zone the rate card's days are read in
    # SMS_PIPELINE_CAMPAIGN_REQUEST_SIZE: recipients per request, and so the rows one claim looks at.
    claim_limit: int
    query: str = CAMPAIGN_CANDIDATES

    def plan(self, messages: Sequence[ClaimedMessage], batch_size: int) -> list[SendBatch]:
        return plan_campaign_requests(messages, batch_size)

    def settle_due(self, conn: psycopg.Connection, now: datetime) -> tuple[upkeep.Promoted, int]:
        """``scheduled`` rows whose time has passed: promoted where the provider lists their transaction sent,
        ``expired`` (cancelled) where it lists it cancelled, ``unknown`` where it lists it failed or no longer
        lists it; the rest wait (module doc). Returns what was promoted and how many rows went ``unknown``."""
        due = queries.run(conn, "campaign_promote_due", now=now, limit=DUE_TRANSACTIONS_PER_PASS).fetchall()
        by_campaign: dict[str, list[str]] = {}
        for campaign_id, transaction_id in due:
            by_campaign.setdefault(campaign_id, []).append(transaction_id)
        sent: list[str] = []
        cancelled: list[str] = []
        not_sending: list[str] = []
        for campaign_id, transaction_ids in by_campaign.items():
            try:
                listed = {t.transaction_id: t.status for t in self.client.campaign_read(campaign_id)}
            except ProviderCallError as exc:
                log.warning("campaign read failed; its scheduled rows wait for the next pass: %s", exc)
                continue
            for transaction_id in transaction_ids:
                status = listed.get(transaction_id)
                if status == _SENT:
                    sent.append(transaction_id)
                elif status == _CANCELLED:
                    cancelled.append(transaction_id)
                elif status is None or status == _FAILED:
                    not_sending.append(transaction_id)
                elif status != _WAITING:
                    log.warning("campaign transaction in an unknown status %r: its rows wait", status)
        upkeep.expire_cancelled(conn, now=now, transaction_ids=cancelled)
        promoted = upkeep.promote_scheduled(conn, now=now, price_time_zone=self.price_time_zone,
                                            transaction_ids=sent)
        return promoted, upkeep.give_up_unsent(conn, now=now, transaction_ids=not_sending)

    def send(self, batch: SendBatch) -> CampaignSent:
        when = batch.messages[0].scheduled_for  # the batch's one time (planned by campaign and time)
        outcome = send_quick(self.client, batch, schedule_time=when)
        if not (isinstance(outcome, SendAccepted) and outcome.campaign_id is not None):
            return CampaignSent(batch, outcome)
        try:
            transactions = tuple(self.client.campaign_read(outcome.campaign_id))
        except ProviderCallError as exc:
            return CampaignSent(batch, outcome, read_error=str(exc))
        return CampaignSent(batch, outcome, transactions)

    def record(self, conn: psycopg.Connection, sent: Sent, *, now: datetime) -> AppliedOutcome:
        assert isinstance(sent, CampaignSent)
        outcome = sent.outcome
        held = None
        if isinstance(outcome, SendAccepted) and outcome.campaign_id is not None:
            held = Held(_transactions_of_rows(sent, outcome))
        return apply_outcome(conn, sent.batch, outcome, now=now, price_time_zone=self.price_time_zone, held=held)


def _transactions_of_rows(sent: CampaignSent, outcome: SendAccepted) -> dict[int, str] | None:
    """Row id -> uuId for the rows the answer accepted; None (logged) when the split cannot be placed."""
    accepted = set(outcome.accepted)
    rows = [m.id for m in sent.batch.messages if m.recipient in accepted]
    try:
        if sent.transactions is None:
            raise CampaignUnmapped(f"campaign/read failed: {sent.read_error}")
        if outcome.unlisted:  # the split may or may not count them: its boundaries are unknown
            raise CampaignUnmapped(f"the answer names {len(outcome.unlisted)} recipient(s) in neither list")
        return dict(zip(rows, map_transactions(len(rows), sent.transactions)))
    except CampaignUnmapped as exc:
        log.error("campaign_id=%s of request attempt_key=%s: %s; its %d accepted row(s) become unknown "
                  "(campaign_unmapped), never re-sent as they are", outcome.campaign_id,
                  sent.batch.first_attempt_key, exc, len(rows))
        return None
