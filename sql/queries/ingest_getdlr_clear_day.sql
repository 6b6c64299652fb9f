-- Forget the stored intraday pull of one provider-local day, in the
-- transaction that stores the new pull in its place (ingest_getdlr_store).
-- Parameters: report_date.
DELETE FROM dlr.getdlr_rows WHERE report_date = %(report_date)s
