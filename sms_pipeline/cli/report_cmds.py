"""``sms-pipeline report cost --from D --to D [--tenant T] [--by sender|campaign] [--format table|csv]``;
``sms-pipeline report tieout --from D --to D [--format table|csv]`` (marts.provider_tieout_daily).

Reads marts.cost_daily, or with ``--by campaign`` marts.campaign_daily (built by the Dagster marts assets). Amounts are
printed exactly as stored (NUMERIC, four decimals), in a table for people or
CSV for spreadsheets; an unpriced amount (NULL) reads ``unpriced`` in the
table and is an empty field in CSV, never 0.0000.
"""

from __future__ import annotations

import argparse
import csv
import sys
from dataclasses import fields
from datetime import date, timedelta
from decimal import Decimal

from rich.console import Console
from rich.measure import Measurement
from rich.table import Table

from sms_pipeline.db import connection
from sms_pipeline.marts import cost_report, tieout
from sms_pipeline.settings import Settings

_COLUMNS = [f.name for f in fields(cost_report.CostRow)]
_MONEY = ("cost", "cost_of_failed", "unknown_cost_at_risk")
_SUMMED = ("messages_submitted", "billable_units", "cost", "rejected_messages", "unpriced_units", "cost_of_failed",
           "unknown_messages", "unknown_units", "unknown_cost_at_risk")
_CAMPAIGN_COLUMNS = [f.name for f in fields(cost_report.CampaignCostRow)]
# A ratio or a median does not add up across rows: the totals line leaves them blank.
_CAMPAIGN_SUMMED = ("messages", "submitted", "billable_units", "cost", "delivered", "failed", "expired", "cancelled",
                    "rejected", "pending")
_CAMPAIGN_RIGHT = (*_CAMPAIGN_SUMMED, "campaign_id", "delivery_ratio", "median_latency_seconds")


def _day(text: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a date (YYYY-MM-DD): {text!r}") from None


def register(sub: argparse._SubParsersAction) -> None:
    report = sub.add_parser("report", help="reports for finance and operations, read from the marts")
    kinds = report.add_subparsers(dest="report_command", metavar="REPORT", required=True)
    cost = kinds.add_parser("cost", help="cost per day, tenant, channel, class, sender and currency "
                                         "(or per day, campaign, tenant and class)")
    _add_range_and_format(cost)
    cost.add_argument("--tenant", help="only this tenant")
    cost.add_argument("--by", choices=("sender", "campaign"), default="sender",
                      help="sender: per day, tenant, channel, class, sender id and currency (default); "
                           "campaign: per day, campaign, tenant and class, with the campaign's outcomes")
    cost.set_defaults(handler=cost_command)
    tieout_parser = kinds.add_parser("tieout", help="the provider tie-out per day and sender id, itemised by bucket")
    _add_range_and_format(tieout_parser)
    tieout_parser.set_defaults(handler=tieout_command)


def _add_range_and_format(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--from", dest="first", type=_day, required=True, metavar="YYYY-MM-DD",
                        help="first provider-local day (inclusive)")
    parser.add_argument("--to", dest="last", type=_day, required=True, metavar="YYYY-MM-DD",
                        help="last provider-local day (inclusive)")
    parser.add_argument("--format", choices=("table", "csv"), default="table", help="output format (default: table)")


def _text(value: object) -> str:
    return "" if value is None else str(value)


def _cell(name: str, value: int | Decimal | str | date | None) -> str:
    """A table cell: an unpriced amount (None) reads ``unpriced``, never blank or 0."""
    return cost_report.money_text(value) if name in _MONEY else _text(value)


def _plus(total: int | Decimal | None, value: int | Decimal | None) -> int | Decimal | None:
    # An unpriced amount makes its total unknown too: a partial sum would understate it.
    return None if total is None or value is None else total + value


def _totals_by_currency(rows: list, summed: tuple[str, ...]) -> dict[str | None, dict[str, int | Decimal | None]]:
    totals: dict[str | None, dict[str, int | Decimal | None]] = {}
    for row in rows:
        into = totals.setdefault(row.currency, {name: 0 for name in summed})
        for name in summed:
            into[name] = _plus(into[name], getattr(row, name))
    return totals


def _print_table(rows: list, title: str, columns: list[str], summed: tuple[str, ...],
                 right: tuple[str, ...]) -> None:
    table = Table(title=title, show_lines=False)
    for name in columns:
        table.add_column(name, justify="right" if name in right else "left")
    for row in rows:
        table.add_row(*(_cell(name, getattr(row, name)) for name in columns))
    for currency, totals in sorted(_totals_by_currency(rows, summed).items(), key=lambda kv: kv[0] or ""):
        cells = {"day": "total", "currency": currency or "(unpriced)", **totals}
        table.add_row(*(_cell(name, cells.get(name)) for name in columns), style="bold")
    _print_whole(table)


def _print_whole(table: Table) -> None:
    """Print ``table`` on stdout; piped into a file or a program, every value whole.

    Rich fits a table to the console's width (80 columns without a terminal),
    cutting cells to "…"; only a person at a terminal gets that.
    """
    console = Console()
    if not console.is_terminal:
        unbounded = console.options.update_width(sys.maxsize)
        console = Console(width=Measurement.get(console, unbounded, table).maximum)
    console.print(table)


def _write_csv(columns: list[str], rows: list) -> None:
    """One line per row; NULL (an unpriced amount, a side not fetched) is an empty field, never 0."""
    writer = csv.writer(sys.stdout, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow([_text(getattr(row, name)) for name in columns])


def cost_command(args: argparse.Namespace, settings: Settings) -> int:
    by_campaign = args.by == "campaign"
    with connection.connect(settings) as conn:
        read = cost_report.campaign_rows if by_campaign else cost_report.cost_rows
        rows = read(conn, args.first, args.last, args.tenant)
    columns = _CAMPAIGN_COLUMNS if by_campaign else _COLUMNS
    if args.format == "csv":
        _write_csv(columns, rows)
    elif rows and by_campaign:
        _print_table(rows, f"Cost by campaign {args.first} .. {args.last}", columns, _CAMPAIGN_SUMMED,
                     _CAMPAIGN_RIGHT)
    elif rows:
        _print_table(rows, f"Cost {args.first} .. {args.last}", columns, _SUMMED, _SUMMED)
    else:
        print(f"no {'campaign ' if by_campaign else ''}cost rows for {args.first} .. {args.last}"
              + (f" and tenant {args.tenant}" if args.tenant else ""))
    return 0


_TIEOUT_COLUMNS = [f.name for f in fields(tieout.TieoutRow)]
# The table's cells: plain figures, then each bucket as "messages/units" (units signed where they are a difference).
_TIEOUT_FIGURES = ("day", "sender_id", "status", "provider_units", "day_report_units", "our_units", "difference")
_TIEOUT_BUCKETS = {
    "matched": ("matched_messages", "matched_units"),
    "units differ": ("units_differ_messages", "units_differ_units"),
    "provider-only": ("provider_only_messages", "provider_only_units"),
    "ours-only": ("ours_only_messages", "ours_only_units"),
}
# The rest of the equation, then what sits beside it (unknown and unpriced units).
_TIEOUT_TAIL = ("summary_minus_report_units", "residual", "unplaced_messages", "unknown_units", "unpriced_units")


def _bucket_cell(messages: int | None, units: int | None) -> str:
    return "" if messages is None else f"{messages}/{units}"


def _print_tieout_table(rows: list[tieout.TieoutRow], first: date, last: date) -> None:
    table = Table(title=f"Provider tie-out {first} .. {last}: provider - ours = buckets + residual "
                        "(buckets: messages/units)")
    for name in (*_TIEOUT_FIGURES, *_TIEOUT_BUCKETS, "ambiguous", *_TIEOUT_TAIL):
        table.add_column(name, justify="left" if name in ("day", "sender_id", "status") else "right")
    for row in rows:
        ambiguous = ("" if row.ambiguous_provider_messages is None else
                     f"{row.ambiguous_provider_messages}+{row.ambiguous_our_messages}/{row.ambiguous_units}")
        table.add_row(*(_text(getattr(row, name)) for name in _TIEOUT_FIGURES),
                      *(_bucket_cell(getattr(row, m), getattr(row, u)) for m, u in _TIEOUT_BUCKETS.values()),
                      ambiguous, *(_text(getattr(row, name)) for name in _TIEOUT_TAIL))
    _print_whole(table)
    labels = tieout.day_labels(rows)
    for offset in range((last - first).days + 1):
        day = first + timedelta(days=offset)
        print(f"{day} {labels.get(day, 'no data')}")


def tieout_command(args: argparse.Namespace, settings: Settings) -> int:
    with connection.connect(settings) as conn:
        rows = tieout.rows(conn, args.first, args.last)
    if args.format == "csv":
        _write_csv(_TIEOUT_COLUMNS, rows)
    elif rows:
        _print_tieout_table(rows, args.first, args.last)
    else:
        print(f"no tie-out rows for {args.first} .. {args.last}")
    return 0
