-- How many distinct (msgId, status) pairs one loaded day report holds: its
-- rows less this are the provider's duplicated rows (materialisation
-- metadata). Sorted byte-wise (COLLATE "C": the same pairs, since equal text
-- is equal bytes; docs/design.md#sorting-ids-byte-wise) by both cores: a
-- hash of a million pairs runs in one process only, and took twice as long
-- (bench/RESULTS.md, "The load's statistics").
-- Parameters: report_date.
SELECT count(*)
  FROM (SELECT DISTINCT msg_id COLLATE "C", status COLLATE "C"
          FROM dlr.day_report_rows
         WHERE report_date = %(report_date)s) AS events
