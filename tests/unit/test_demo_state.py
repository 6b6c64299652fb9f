"""The demo's simulator state in the home: where `dev` finds it, and what `--fresh` forgets; its days."""

from __future__ import annotations

from datetime import timedelta

import pytest

from sms_pipeline import settings
from sms_pipeline.cli.dev_cmd import simulator_command
from sms_pipeline.demo import run
from sms_pipeline.errors import UserError


def test_fresh_forgets_the_simulators_saved_traffic(tmp_path, monkeypatch):
    cfg = settings.load({"SMS_PIPELINE_HOME": str(tmp_path)})
    state = run.simulator_state_file(cfg)
    state.parent.mkdir()
    state.write_text("{}\n", encoding="utf-8")
    dropped = []
    monkeypatch.setattr(run, "reset_databases", dropped.append)

    run.start_over(cfg)
    run.start_over(cfg)  # nothing saved: nothing to remove

    assert dropped == [cfg, cfg] and not state.exists()


def test_dev_serves_the_demo_state_with_the_demo_seed_and_the_provider_zone(tmp_path):
    cfg = settings.load({"SMS_PIPELINE_HOME": str(tmp_path), "SMS_PROVIDER_TIMEZONE": "Asia/Dubai"})

    command = simulator_command(cfg, "127.0.0.1", 8799)

    options = dict(zip(command[4::2], command[5::2], strict=True))
    assert command[3] == "simulator"
    assert options == {"--host": "127.0.0.1", "--port": "8799", "--seed": str(run.DEMO_SEED),
                       "--state": str((tmp_path / "simulator" / "state.jsonl").resolve()),
                       "--timezone": "Asia/Dubai"}


def test_only_a_set_partition_start_refuses_the_demos_first_day():
    """Unset, the start the database recorded is lowered to the demo's first day instead (run_demo)."""
    unset = settings.load({})
    days = run._demo_days(unset, 40)
    assert len(days) == 40
    too_late = settings.load({"SMS_PIPELINE_PARTITION_START": (days[0] + timedelta(days=1)).isoformat()})
    with pytest.raises(UserError, match="before SMS_PIPELINE_PARTITION_START"):
        run._demo_days(too_late, 40)
