-- What the three passes decided, per msgId: how many were tried, matched
-- by each pass, ambiguous, and found by nothing.
-- Returns one row.
SELECT (SELECT count(*) FROM reconcile_work.reconcile_uncorrelated) AS tried,
       (SELECT count(*) FROM reconcile_work.reconcile_decisions WHERE matched AND pass = 1) AS by_msgid,
       (SELECT count(*) FROM reconcile_work.reconcile_decisions WHERE matched AND pass = 2) AS by_transaction,
       (SELECT count(*) FROM reconcile_work.reconcile_decisions WHERE matched AND pass = 3) AS by_reconstruction,
       (SELECT count(DISTINCT msg_id) FROM reconcile_work.reconcile_decisions WHERE NOT matched) AS ambiguous
