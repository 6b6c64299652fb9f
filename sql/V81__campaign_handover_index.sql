-- The hand-over claim of provider-side campaigns (campaign_send_candidates.sql,
-- docs/design.md#provider-side-campaigns) takes one campaign's pending rows of
-- one queue in id order (request order) up to its limit: this index hands them
-- over in that order, so a claim reads about as many rows as it takes, however
-- large the campaign (a 200,000-row campaign is not read and sorted whole for
-- each claim of 10,000). Only pending campaign rows: small once handed over.
-- On queue_state, not state, as every index on this table (V73). Created on the
-- partitioned parent, so every partition, present or made later by
-- msg.ensure_partitions, has it. outbound_message_campaign_idx (V79) stays:
-- the campaign views and the cancel and reschedule statements read it.
CREATE INDEX outbound_message_campaign_handover_idx
    ON msg.outbound_message (campaign_id, channel, message_class, id)
    WHERE queue_state = 'pending' AND campaign_id IS NOT NULL;
