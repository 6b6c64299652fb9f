"""``sms-pipeline report cost --from D --to D [--tenant T] [--format table|csv]``.

Reads marts.cost_daily (built by the Dagster marts assets). Amounts are
printed exactly as stored (NUMERIC, four decimals), in a table for people or
CSV for spreadsheets.
"""

from __future__ import annotations

import argparse
import csv
import sys
from dataclasses import fields
from datetime import date
from decimal import Decimal

from rich.console import Console
from rich.table import Table

from sms_pipeline.db import connection
from sms_pipeline.errors import UserError
from sms_pipeline.marts import cost_report
from sms_pipeline.settings import Settings

_COLUMNS = [f.name for f in fields(cost_report.CostRow)]
_SUMMED = ("messages_submitted", "billable_units", "cost", "rejected_messages", "unpriced_units", "cost_of_failed")


def _day(text: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a date (YYYY-MM-DD): {text!r}") from None


def register(sub: argparse._SubParsersAction) -> None:
    report = sub.add_parser("report", help="reports for finance and operations, read from the marts")
    kinds = report.add_subparsers(dest="report_command", metavar="REPORT", required=True)
    cost = kinds.add_parser("cost", help="cost per day, tenant, channel, class, sender and currency")
    cost.add_argument("--from", dest="first", type=_day, required=True, metavar="YYYY-MM-DD",
                      help="first provider-local day (inclusive)")
    cost.add_argument("--to", dest="last", type=_day, required=True, metavar="YYYY-MM-DD",
                      help="last provider-local day (inclusive)")
    cost.add_argument("--tenant", help="only this tenant")
    cost.add_argument("--format", choices=("table", "csv"), default="table", help="output format (default: table)")
    cost.set_defaults(handler=cost_command)


def _text(value: object) -> str:
    return "" if value is None else str(value)


def _totals_by_currency(rows: list[cost_report.CostRow]) -> dict[str | None, dict[str, int | Decimal]]:
    totals: dict[str | None, dict[str, int | Decimal]] = {}
    for row in rows:
        into = totals.setdefault(row.currency, {name: 0 for name in _SUMMED})
        for name in _SUMMED:
            into[name] += getattr(row, name)
    return totals


def _print_table(rows: list[cost_report.CostRow], first: date, last: date) -> None:
    table = Table(title=f"Cost {first} .. {last}", show_lines=False)
    for name in _COLUMNS:
        table.add_column(name, justify="right" if name in _SUMMED else "left")
    for row in rows:
        table.add_row(*(_text(getattr(row, name)) for name in _COLUMNS))
    for currency, totals in sorted(_totals_by_currency(rows).items(), key=lambda kv: kv[0] or ""):
        cells = {"day": "total", "currency": currency or "(unpriced)", **totals}
        table.add_row(*(_text(cells.get(name)) for name in _COLUMNS), style="bold")
    Console().print(table)


def _write_csv(rows: list[cost_report.CostRow]) -> None:
    writer = csv.writer(sys.stdout, lineterminator="\n")
    writer.writerow(_COLUMNS)
    for row in rows:
        writer.writerow([_text(getattr(row, name)) for name in _COLUMNS])


def cost_command(args: argparse.Namespace, settings: Settings) -> int:
    if args.last < args.first:
        raise UserError(f"--to {args.last} is before --from {args.first}")
    with connection.connect(settings) as conn:
        rows = cost_report.cost_rows(conn, args.first, args.last, args.tenant)
    if args.format == "csv":
        _write_csv(rows)
    elif rows:
        _print_table(rows, args.first, args.last)
    else:
        print(f"no cost rows for {args.first} .. {args.last}" + (f" and tenant {args.tenant}" if args.tenant else ""))
    return 0
