-- A download whose content matches the load writes nothing to the load, but
-- it is evidence: at that later time the provider's file for the day still
-- said the same. Proof of non-submission needs a download after the day's
-- close + grace, and a quiet day's file stops changing before then, so the
-- checkpoint's fetched_at (the download that last changed the load) stayed
-- before the grace for good and the day's `unknown` rows were never proved.
-- The latest confirming download is kept here, apart from the checkpoint
-- (which still changes only with the load).
CREATE TABLE dlr.report_confirmations (
    report_kind  TEXT        NOT NULL,
    report_date  DATE        NOT NULL,
    confirmed_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (report_kind, report_date),
    FOREIGN KEY (report_kind, report_date) REFERENCES dlr.report_checkpoints ON DELETE CASCADE
);

COMMENT ON TABLE dlr.report_confirmations IS
    'Latest download of a report whose content equalled the stored load (so nothing was rewritten).';
