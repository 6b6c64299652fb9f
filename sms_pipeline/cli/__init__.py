"""The ``sms-pipeline`` command.

Each sub-command lives in its own module with ``register(subparsers)``; a
``UserError`` becomes one line on stderr (exit 2), anything else keeps its
traceback only with ``--verbose``.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
import warnings

from sms_pipeline.errors import UserError

# Modules that contribute sub-commands, in the order `--help` lists them, with
# the commands each registers: a command line naming one of them imports only
# its module, so that quick commands (a `health` probe every minute) do not pay
# for the imports of the others (the simulator's server, the worker's client).
COMMAND_MODULES = {
    "sms_pipeline.cli.db": ("db",),
    "sms_pipeline.cli.settings_cmd": ("settings",),
    "sms_pipeline.cli.simulator": ("simulator",),
    "sms_pipeline.cli.report_cmds": ("report",),
    "sms_pipeline.cli.worker_cmds": ("enqueue", "rates", "worker", "messages"),
    "sms_pipeline.cli.campaign_cmds": ("campaigns",),
    "sms_pipeline.cli.adopt_cmds": ("adopt",),
    "sms_pipeline.cli.receiver_cmds": ("receiver", "webhook"),
    "sms_pipeline.cli.metrics_cmds": ("metrics",),
    "sms_pipeline.cli.otp_cmds": ("otp",),
    "sms_pipeline.cli.pipeline_cmds": ("materialize",),
    "sms_pipeline.cli.reconcile_cmds": ("reconcile",),
    "sms_pipeline.cli.retention_cmds": ("retention",),
    "sms_pipeline.cli.health_cmd": ("health",),
    "sms_pipeline.cli.alerts_cmds": ("alerts",),
    "sms_pipeline.cli.dev_cmd": ("dev",),
    "sms_pipeline.cli.demo_cmd": ("demo",),
}

log = logging.getLogger("sms_pipeline.cli")


def _modules_for(argv: list[str] | None) -> list[str]:
    """The command module the command line names, else (help, a typo) every one."""
    words = [word for word in (sys.argv[1:] if argv is None else argv) if not word.startswith("-")]
    for module, commands in COMMAND_MODULES.items():
        if words and words[0] in commands:
            return [module]
    return list(COMMAND_MODULES)


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser of ``argv``'s command (all commands when ``argv`` names none of them)."""
    parser = argparse.ArgumentParser(
        prog="sms-pipeline",
        description="Send SMS, reconcile provider reports, build cost/latency/delivery marts.",
    )
    parser.add_argument("--verbose", "-v", action="store_true", help="debug logs and full tracebacks")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in _modules_for(argv):
        importlib.import_module(name).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    # Dagster flags beta parameters (e.g. backfill_policy) on every load; the
    # project pins its version, so these notes are noise on a terminal.
    warnings.filterwarnings("ignore", message=r".*is currently in beta.*")
    warnings.filterwarnings("ignore", message=r".*is superseded.*")
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    try:
        from sms_pipeline import logging as logging_setup, settings

        cfg = settings.load()
        logging_setup.configure(cfg.log_level, cfg.home, verbose=args.verbose)
        return int(args.handler(args, cfg) or 0)
    except UserError as exc:
        log.debug("user error", exc_info=True)
        if args.verbose:
            raise
        print(f"sms-pipeline: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("sms-pipeline: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader of the output went away (`| head`): not a failure of ours. Point stdout at
        # /dev/null so the interpreter's final flush does not fail again; exit as a shell would (SIGPIPE).
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except Exception as exc:
        log.exception("unexpected failure")
        if args.verbose:
            raise
        print(f"sms-pipeline: unexpected {type(exc).__name__}: {exc} (run with --verbose for details)",
              file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
