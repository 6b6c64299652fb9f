-- The three schemas of design.md: outbound messages (msg), provider reports and
-- receipts (dlr), and dbt's marts (marts).
CREATE SCHEMA IF NOT EXISTS msg;
CREATE SCHEMA IF NOT EXISTS dlr;
CREATE SCHEMA IF NOT EXISTS marts;
