"""Fault settings: names, values, validation, observers."""

from __future__ import annotations

import pytest

from sms_pipeline.simulator.faults import FAULT_NAMES, FaultConfig, FaultSpecError, parse_spec


def test_every_fault_of_the_issue_has_a_name():
    assert set(FAULT_NAMES) == {
        "accept_then_drop", "stall", "refuse_connection", "http_5xx", "slow", "rate_limit_send",
        "rate_limit_report", "corrupt_zip", "truncated_zip", "error_body_zip", "duplicate_rows", "neighbour_day",
        "unmapped_status",
        # issue 18: answers that write our numbers differently, or leave one out
        "answer_plus_prefix", "answer_leading_zero", "answer_spaces", "answer_omits_recipient",
        # issue 20: the receipt push's traps
        "push_duplicate", "push_reorder", "push_early", "push_unmapped_code",
        # issue 22: a scheduled transaction the provider drops silently
        "drop_scheduled_transaction"}


@pytest.mark.parametrize(("spec", "expected"), [
    ("stall=0.25", ("stall", 0.25)),
    (" http_5xx = 1 ", ("http_5xx", 1.0)),
    ("summary_units_offset=-7", ("summary_units_offset", -7)),
    ("slow_delay_s=1.5", ("slow_delay_s", 1.5)),
])
def test_parse_spec(spec, expected):
    assert parse_spec(spec) == expected


@pytest.mark.parametrize("spec", ["stall", "stall=2", "stall=-0.1", "stall=x", "nope=0.5",
                                  "summary_units_offset=1.5", "stall_s=-1"])
def test_parse_spec_refuses_bad_input(spec):
    with pytest.raises(FaultSpecError):
        parse_spec(spec)


def test_update_is_all_or_nothing_and_notifies():
    config = FaultConfig({"slow": 0.5})
    seen = []
    config.observe(lambda: seen.append(config.rate("stall")))

    with pytest.raises(FaultSpecError):
        config.update({"stall": 0.5, "bogus": 1})
    config.update({"stall": 0.5})
    config.clear()

    assert seen == [0.5, 0.0]
    assert config.rate("slow") == 0.0 and config.parameter("slow_delay_s") == 0.5
