"""``sms-pipeline demo``: the whole product, end to end, on the embedded default."""

from __future__ import annotations

import argparse
import logging
import time
from dataclasses import asdict
from pathlib import Path

from sms_pipeline.settings import Settings


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "demo",
        help="send, reconcile and summarise a few days of synthetic traffic (embedded Postgres + simulator)",
    )
    parser.add_argument("--days", type=int, default=3, help="provider days before today (default 3)")
    parser.add_argument("--messages-per-day", type=int, default=1200, help="default 1200")
    parser.add_argument("--fresh", action="store_true", help="drop the demo's databases and start over")
    parser.add_argument("--summary-json", type=Path, metavar="PATH", help="also write the figures as JSON")
    parser.set_defaults(handler=demo)


def demo(args: argparse.Namespace, settings: Settings) -> int:
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from sms_pipeline.demo import summary
    from sms_pipeline.demo.run import DemoOptions, run_demo

    console = Console(width=max(Console().width, 132))
    # Progress bars own the terminal; warnings (e.g. claims expired by upkeep) go to the log file.
    for handler in logging.getLogger().handlers:
        if type(handler) is logging.StreamHandler:
            handler.setLevel(logging.ERROR)
    started = time.monotonic()
    options = DemoOptions(days=args.days, messages_per_day=args.messages_per_day, fresh=args.fresh)
    with Progress(TextColumn("{task.description:<36}"), BarColumn(), TimeElapsedColumn(),
                  console=console, transient=True) as progress:
        result = run_demo(settings, options, progress)
    elapsed = time.monotonic() - started
    if result.already_there:
        console.print("[yellow]The demo's data is already in this database; showing it again "
                      "(use --fresh to start over).[/yellow]")
    console.print(summary.render(result.days))
    total_cost = sum(d.cost for d in result.days)
    console.print(f"total cost INR {total_cost}  ·  billable units {sum(d.billable_units for d in result.days)}"
                  + (f"  ·  provider billed {result.simulator_billed_units}"
                     if result.simulator_billed_units is not None else "")
                  + f"  ·  {elapsed:.0f} s")
    if result.pushes is not None:
        console.print(result.pushes.line())
    if any(d.tieout.startswith("MISMATCH") for d in result.days):
        console.print("tie-out MISMATCH: units nobody can place in a bucket (the residual); "
                      "see `sms-pipeline report tieout --from D --to D`.")
    unexplained = [] if result.already_there else _print_checks(console, result)
    console.print("Next: `sms-pipeline dev` opens the Dagster UI on these runs; "
                  "`sms-pipeline report cost --from D --to D` is finance's view.")
    if args.summary_json:
        summary.write_json(args.summary_json, result.days,
                           {"already_there": result.already_there,
                            "simulator_billed_units": result.simulator_billed_units,
                            "elapsed_s": round(elapsed, 1),
                            "checks_passed": result.checks_passed,
                            "pushes": asdict(result.pushes) if result.pushes is not None else None,
                            "checks_failed": [{"asset": c.asset, "check": c.name, "severity": c.severity}
                                              for c in result.checks_failed]})
    return 1 if unexplained else 0


def _print_checks(console, result) -> list:
    """The final run's asset checks: what the demo leaves for a person says why; anything else is a fault
    (returned)."""
    from sms_pipeline.demo.run import LEFT_FOR_A_PERSON

    console.print(f"asset checks of the last run: {result.checks_passed} passed, {len(result.checks_failed)} failed")
    unexplained = []
    for check in result.checks_failed:
        why = LEFT_FOR_A_PERSON.get(check.name) if not check.is_error else None
        if why:
            console.print(f"  [yellow]{check.severity}[/yellow] {check.asset} {check.name}: left on purpose: {why}",
                          markup=True, highlight=False)
        else:
            unexplained.append(check)
            console.print(f"  [red]{check.line()}[/red]", markup=True, highlight=False)
    return unexplained
