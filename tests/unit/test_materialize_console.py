"""``sms-pipeline materialize`` keeps the terminal quiet: a line per step, warnings and errors.

Dagster's DEBUG events and dbt's output (which dagster-dbt writes to stdout)
go to ``$SMS_PIPELINE_HOME/logs/runs.log`` instead, so nothing is lost. The
run here is the command's own execution path (its logger, run config and
stdout redirection) on a one-asset job that prints like dbt does.
"""

from __future__ import annotations

import logging
import sys

import dagster as dg
import pytest

from sms_pipeline import logging as logging_setup
from sms_pipeline.cli import pipeline_cmds

DBT_LINE = "1 of 1 START sql incremental model marts.cost_daily ..... [RUN]"


@dg.asset
def noisy(context) -> None:
    print(DBT_LINE, flush=True)  # what dagster-dbt does with each of dbt's log lines
    context.log.info("rows=3")
    context.log.warning("2 rows have no price")


@pytest.fixture
def home(tmp_path):
    """Logging configured as the command does it, put back afterwards."""
    root, runs = logging.getLogger(), logging.getLogger(logging_setup.RUNS_LOGGER)
    saved = root.level, list(root.handlers), runs.propagate, list(runs.handlers)
    logging_setup.configure("INFO", tmp_path)
    yield tmp_path
    for logger in (root, runs):
        for handler in list(logger.handlers):
            logger.removeHandler(handler)
            handler.close()
    root.setLevel(saved[0])
    for handler in saved[1]:
        root.addHandler(handler)
    runs.propagate = saved[2]
    for handler in saved[3]:
        runs.addHandler(handler)


def test_console_gets_progress_lines_and_the_log_file_gets_everything(home, capfd) -> None:
    settings = type("S", (), {"home": home})()  # _execute only reads the home
    said: list[str] = []
    console = sys.stdout  # as materialize does: stdout is redirected while the run executes

    def say(line: str) -> None:
        said.append(line)
        print(line, file=console, flush=True)

    defs = dg.Definitions.merge(
        dg.Definitions(assets=[noisy], jobs=[dg.define_asset_job("job", selection=[noisy])]),
        dg.Definitions(loggers={"progress": pipeline_cmds._progress_logger(say)}),
    )
    with dg.instance_for_test() as instance:
        result = pipeline_cmds._execute(defs.resolve_job_def("job"), settings, False, instance=instance,
                                        run_config=pipeline_cmds._run_config(False), raise_on_error=False)
    assert result.success

    out, err = capfd.readouterr()
    console = (out + err).splitlines()
    assert console == said, console  # nothing but our lines reached the terminal
    assert said[0] == "noisy: started"
    assert "noisy: WARNING 2 rows have no price" in said
    assert said[-1].startswith("noisy: done in ")
    assert not any("DEBUG" in line or "STEP_START" in line or DBT_LINE in line for line in console)

    for handler in logging.getLogger(logging_setup.RUNS_LOGGER).handlers:
        handler.flush()
    logged = logging_setup.runs_log(home).read_text(encoding="utf-8")
    assert DBT_LINE in logged
    assert " DEBUG " in logged and "STEP_START" in logged and "RUN_SUCCESS" in logged
    assert "rows=3" in logged
