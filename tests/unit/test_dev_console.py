"""``sms-pipeline dev`` keeps the terminal quiet: warnings and errors there, everything in logs/dagster-dev.log.

The lines are the shapes ``dagster dev`` prints: its services' records
(coloured), a run's console records, dbt's output, a traceback under a record,
a Python warning, and the simulator's records (sms_pipeline.logging's format).
"""

from __future__ import annotations

import io
import subprocess
import sys

from sms_pipeline.cli import dev_cmd

SERVICE_INFO = ("\x1b[32m2026-12-01 15:56:03 +0000\x1b[0m - dagster.daemon - \x1b[34mINFO\x1b[0m - "
                "Instance is configured with the following daemons: ['BackfillDaemon']")
SERVICE_WARNING = ("\x1b[32m2026-12-01 15:56:04 +0000\x1b[0m - dagster.daemon - \x1b[34mWARNING\x1b[0m - "
                   "Daemon SchedulerDaemon has not sent a heartbeat")
RUN_DEBUG = ("2026-12-01 15:56:27 +0000 - dagster - DEBUG - daily_reports_job - 2091952a - 4037 - "
             "dlr__day_report - STEP_START - Started execution of step \"dlr__day_report\".")
RUN_INFO = ("2026-12-01 15:56:46 +0000 - dagster - INFO - daily_reports_job - 2091952a - marts_views - "
            "Running dbt command: `dbt build`")
RUN_ERROR = ("2026-12-01 15:57:05 +0000 - dagster - ERROR - daily_reports_job - 2091952a - 4037 - "
             "marts_daily - STEP_FAILURE - Execution of step \"marts_daily\" failed.")
DBT_LINES = ["Running with dbt=1.11.16",
             "1 of 11 START sql view model transform.stg_dlr__delivery_receipts .............. [RUN]",
             "Done. PASS=11 WARN=0 ERROR=0 SKIP=0 NO-OP=0 TOTAL=11"]
TRACEBACK = ["Traceback (most recent call last):", '  File "x.py", line 3, in f',
             "psycopg2.errors.FeatureNotSupported: cross-database references are not implemented"]
PY_WARNING = "/venv/lib/python3.11/site-packages/dagster/_core/x.py:12: UserWarning: something odd"
SIM_WARNING = "WARNING sms_pipeline.simulator.server: fault injected: http_500"
SIM_INFO = "INFO sms_pipeline.simulator.server: listening"


def _plain(line: str) -> str:
    return dev_cmd._ANSI.sub("", line)


def test_only_warnings_and_errors_reach_the_terminal() -> None:
    shown = [line for line in (SERVICE_INFO, SERVICE_WARNING, RUN_DEBUG, RUN_INFO, RUN_ERROR, *DBT_LINES,
                               *TRACEBACK, PY_WARNING, SIM_WARNING, SIM_INFO)
             if dev_cmd.shown_on_console(_plain(line))]
    assert shown == [SERVICE_WARNING, RUN_ERROR, PY_WARNING, SIM_WARNING]


def test_the_forwarder_writes_every_line_to_the_file_and_the_few_to_the_console(tmp_path) -> None:
    lines = [SERVICE_INFO, RUN_DEBUG, RUN_INFO, *DBT_LINES, SERVICE_WARNING, RUN_ERROR, *TRACEBACK,
             "2026-12-01 15:56:12 +0000 - dagster-webserver - INFO - Serving dagster-webserver on "
             "http://127.0.0.1:3000 in process 1"]
    # a real child, as dev starts them: its output through a pipe
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdout.write(sys.stdin.read())"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    console = io.StringIO()
    seen: list[str] = []
    log = tmp_path / "logs" / "dagster-dev.log"
    log.parent.mkdir()
    forwarder = dev_cmd.Forwarder(child.stdout, log, console, seen.append)
    forwarder.start()
    # not communicate(): it would read the child's output itself, racing the forwarder for it
    child.stdin.write("".join(f"{line}\n" for line in lines).encode())
    child.stdin.close()
    child.wait(timeout=10)
    forwarder.join(timeout=10)
    assert not forwarder.is_alive()

    assert console.getvalue().splitlines() == [_plain(SERVICE_WARNING), RUN_ERROR]
    logged = log.read_text(encoding="utf-8").splitlines()
    assert logged == [_plain(line) for line in lines]  # everything, in order, without colour codes
    assert seen == logged
    assert list(forwarder.tail) == logged[-dev_cmd.TAIL_LINES:]
