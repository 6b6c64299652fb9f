"""How a day's tie-out reads in the demo's closing table (no database)."""

from __future__ import annotations

import dataclasses
from datetime import date
from decimal import Decimal

from rich.console import Console

from sms_pipeline.demo import summary
from sms_pipeline.marts.tieout import TieoutRow, day_label

D = date(2026, 5, 20)
TIED = TieoutRow(day=D, sender_id="ACMETX", status="ok", provider_units=10, day_report_units=10, our_units=10,
                 difference=0, matched_messages=10, matched_units=10, units_differ_messages=0, units_differ_units=0,
                 provider_only_messages=0, provider_only_units=0, ours_only_messages=0, ours_only_units=0,
                 ambiguous_provider_messages=0, ambiguous_our_messages=0, ambiguous_units=0,
                 summary_minus_report_units=0, residual=0, unplaced_messages=0, unknown_units=0, unpriced_units=0)


def _with(**changes) -> TieoutRow:
    return dataclasses.replace(TIED, **changes)


def test_a_day_that_ties_out_is_ok():
    assert day_label([TIED, _with(sender_id="ACMEOT")]) == "ok"


def test_an_explained_day_names_its_buckets_in_messages():
    provider_only = _with(status="explained", provider_units=13, difference=3, provider_only_messages=3,
                          provider_only_units=3)
    ours_only = _with(sender_id="ACMEOT", status="explained", our_units=12, difference=-2, ours_only_messages=2,
                      ours_only_units=2)
    assert day_label([provider_only, ours_only]) == "explained (provider-only 3, ours-only 2)"


def test_a_residual_is_a_mismatch_whatever_else_is_explained():
    explained = _with(status="explained", provider_units=11, difference=1, provider_only_messages=1,
                      provider_only_units=1)
    # +2 and -2 on two senders do not cancel: either is a unit nobody can place
    plus, minus = _with(status="mismatch", residual=2), _with(sender_id="ACMEOT", status="mismatch", residual=-2)
    assert day_label([explained, plus, minus]) == "MISMATCH (residual 4)"


def test_the_closing_table_shows_the_label():
    figures = dict(sent=1, delivered=1, failed=0, expired=0, still_pending=0, unknown=0, ambiguous=0, rejected=0,
                   orphans=0, billable_units=1, cost=Decimal("0.0079"), unpriced_units=0)
    days = [summary.DaySummary(day=D, tieout="explained (provider-only 3, ours-only 2)", **figures),
            summary.DaySummary(day=date(2026, 5, 21), tieout="MISMATCH (residual 1)", **figures)]
    console = Console(width=132, record=True)  # the demo's console
    console.print(summary.render(days))
    lines = console.export_text().splitlines()
    assert all(len(line.rstrip()) <= 132 for line in lines)
    # the label wraps within its cell (never cut), every other column whole
    words = " ".join(" ".join(lines).split())
    assert "2026-05-20 1 1 0 0 0 0 0 0 0 1 0.0079 explained (provider-only 3, ours-only 2)" in words
    assert "MISMATCH (residual 1)" in words
