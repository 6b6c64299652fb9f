-- Three-valued decision per pair: a pair is `matched` only when its msgId
-- has exactly one candidate row AND that row exactly one candidate msgId;
-- otherwise every side of it is `ambiguous`. Nothing is ever picked among
-- several candidates.
-- The msgId window sorts byte-wise (COLLATE "C": the same groups, since
-- equal text is equal bytes; docs/design.md#sorting-ids-byte-wise).
-- The columns the passes share are named; same_text, whether the texts'
-- fingerprints agreed, is pass 3's alone (NULL for the other passes): it
-- travels through the events (reconcile_apply_events.sql) to a match's
-- evidence (reconcile_apply_decide.sql).
-- Creates the work table reconcile_work.reconcile_decisions: every candidate pair of
-- the three passes, with its verdict.
CREATE UNLOGGED TABLE reconcile_work.reconcile_decisions AS
SELECT msg_id, message_id, message_created_at, pass, same_text,
       count(*) OVER (PARTITION BY msg_id COLLATE "C") = 1
       AND count(*) OVER (PARTITION BY message_id, message_created_at) = 1 AS matched
  FROM (SELECT msg_id, message_id, message_created_at, pass, NULL::boolean AS same_text
          FROM reconcile_work.reconcile_pairs_by_msgid
        UNION ALL
        SELECT msg_id, message_id, message_created_at, pass, NULL FROM reconcile_work.reconcile_pairs_by_transaction
        UNION ALL
        SELECT msg_id, message_id, message_created_at, pass, same_text
          FROM reconcile_work.reconcile_pairs_by_reconstruction
       ) AS pairs
