-- One row per message attempt with its provider-local day, whether it was
-- billed, and its one final delivery state.
--
-- The row's own state is the truth: reconciliation moved it forward only,
-- first final receipt winning, later conflicting finals flagged and not
-- applied. Only a superseded row (an operator replayed it) no longer says
-- what it ended as; for that one the receipt that was applied says it (else
-- the first final by provider done time, then first seen), and a superseded
-- billed row without a final receipt can only have expired.
with messages as (

    select * from {{ ref('stg_msg__outbound_messages') }}

),

receipts as (

    select * from {{ ref('stg_dlr__delivery_receipts') }}

),

with_first_final as (

    select
        messages.*,
        first_final.outcome as first_final_outcome

    from messages

    left join lateral (
        select receipts.outcome
        from receipts
        where messages.state = 'superseded'
          and receipts.message_id = messages.message_id
          and receipts.message_created_at = messages.message_created_at
          and receipts.outcome in ('delivered', 'failed', 'expired')
        order by
            receipts.disposition = 'applied' desc,
            receipts.provider_done_at nulls last,
            receipts.first_seen_at,
            receipts.receipt_id
        limit 1
    ) as first_final on true

),

classified as (

    select
        message_id,
        message_created_at,
        -- the attempt time defined once in the database (V80: submitted_at, else claimed_at, or
        -- scheduled_for for a row handed to the provider ahead of its time), else created_at; the
        -- expression of outbound_message_attempt_at_idx, so the marts' day windows are index ranges
        coalesce(msg.attempt_at(submitted_at, claimed_at, scheduled_for), message_created_at) as attempt_at,
        tenant_id,
        channel,
        message_class,
        sender_id,
        currency,
        state,
        state_reason,
        correlation_result,
        submitted_at,
        delivered_at,
        segments,
        billable_units,
        cost,
        campaign_id,
        -- Billing happens at submission (docs/design.md#money): a row that reached
        -- `submitted` is billed whatever its delivery did afterwards.
        submitted_at is not null and state <> 'rejected' as is_billed,
        state = 'rejected' as is_rejected,
        state = 'unknown' as is_unknown,
        -- proved never submitted; still counted once reconciliation re-sent it (superseded, resent_after_proof)
        (state = 'failed' and state_reason is not distinct from 'not_submitted')
            or (state = 'superseded' and state_reason is not distinct from 'resent_after_proof') as is_not_submitted,
        conflicting_final_status is not null as has_conflicting_final,
        first_final_outcome

    from with_first_final

),

final as (

    select
        *,
        {{ local_day('attempt_at') }} as day,
        case
            when not is_billed then null
            when state in ('delivered', 'failed', 'expired') then state
            when state = 'superseded' then coalesce(first_final_outcome, 'expired')
            else 'still_pending'
        end as delivery_outcome

    from classified

)

select
    message_id,
    message_created_at,
    day,
    attempt_at,
    tenant_id,
    channel,
    message_class,
    sender_id,
    currency,
    state,
    state_reason,
    correlation_result,
    submitted_at,
    delivered_at,
    billable_units,
    cost,
    is_billed,
    is_rejected,
    is_unknown,
    is_not_submitted,
    has_conflicting_final,
    delivery_outcome,
    case
        when delivery_outcome = 'delivered' and delivered_at is not null
            then extract(epoch from delivered_at - submitted_at)
    end as latency_seconds,
    segments,
    campaign_id

from final
