"""Every send-side fault: the client's outcome class and what the ledger billed."""

from __future__ import annotations

from pydantic import SecretStr

from sms_pipeline.core.clock import VirtualClock
from sms_pipeline.provider import ProviderClient, SendAccepted, SendAmbiguous, SendNeverConnected, SendRefused
from sms_pipeline.simulator import run_simulator

A, B = "919876543210", "918765432109"


def _send(client):
    return client.send([A, B], "hello", "SGCSMS")


def test_accept_then_drop_is_ambiguous_and_billed(client, sim):
    sim.faults.update({"accept_then_drop": 1.0})

    assert isinstance(_send(client), SendAmbiguous)
    assert [e.mobile for e in sim.state.ledger_entries()] == [A, B]


def test_stall_past_read_timeout_is_ambiguous_and_billed(make_client, sim):
    sim.faults.update({"stall": 1.0})

    outcome = _send(make_client(read_timeout=0.3))

    assert isinstance(outcome, SendAmbiguous) and "Timeout" in outcome.reason
    assert sim.state.ledger_size() == 2


def test_refused_connection_is_never_connected_and_not_billed(client, sim):
    sim.faults.update({"refuse_connection": 1.0})

    outcome = _send(client)

    assert isinstance(outcome, SendNeverConnected)
    assert sim.state.ledger_size() == 0
    sim.faults.update({"refuse_connection": 0.0})
    assert isinstance(_send(client), SendAccepted)  # listening again


def test_http_5xx_is_ambiguous_and_not_billed(client, sim):
    sim.faults.update({"http_5xx": 1.0})

    outcome = _send(client)

    assert isinstance(outcome, SendAmbiguous) and "HTTP 5" in outcome.reason
    assert sim.state.ledger_size() == 0


def test_slow_answer_within_read_timeout_is_accepted(make_client, sim):
    sim.faults.update({"slow": 1.0, "slow_delay_s": 0.2})

    assert isinstance(_send(make_client(read_timeout=2.0)), SendAccepted)
    assert sim.state.ledger_size() == 2


def test_slow_answer_past_read_timeout_is_ambiguous_but_billed(make_client, sim):
    sim.faults.update({"slow": 1.0, "slow_delay_s": 0.6})

    assert isinstance(_send(make_client(read_timeout=0.2)), SendAmbiguous)
    assert sim.state.ledger_size() == 2


def test_rate_limited_send_is_refused_429_and_not_billed(client, sim):
    sim.faults.update({"rate_limit_send": 1.0})

    outcome = _send(client)

    assert isinstance(outcome, SendRefused) and outcome.code == "429" and outcome.is_rate_limited
    assert sim.state.ledger_size() == 0


def test_rate_limited_otp_is_refused_429(client, sim):
    sim.faults.update({"rate_limit_send": 1.0})

    outcome = client.otp_generate(A, "Code $otp$", "SGCSMS", "123456")

    assert isinstance(outcome, SendRefused) and outcome.is_rate_limited
    assert sim.state.ledger_size() == 0


def test_otp_accept_then_drop_is_ambiguous_and_billed(client, sim):
    sim.faults.update({"accept_then_drop": 1.0})

    assert isinstance(client.otp_generate(A, "Code $otp$", "SGCSMS", "123456"), SendAmbiguous)
    [entry] = sim.state.ledger_entries()
    assert entry.transaction_id == "0"


def _run_with_faults(account, start, seed: int) -> tuple[list[str], list[str]]:
    """Outcome classes and billed msgIds of a fixed request sequence at 50% fault rates."""
    with run_simulator(clock=VirtualClock(start), seed=seed, password=account.password,
                       faults={"http_5xx": 0.5, "accept_then_drop": 0.5}) as running:
        with ProviderClient(running.base_url, account.userid, SecretStr(account.password), None, account.timezone,
                            read_timeout=2.0) as provider:
            outcomes = [type(provider.send([A], f"message {i}", "SGCSMS")).__name__ for i in range(16)]
        return outcomes, [e.msg_id for e in running.state.ledger_entries()]


def test_fault_rates_between_zero_and_one_are_reproducible(account, start_time):
    first = _run_with_faults(account, start_time, seed=11)
    second = _run_with_faults(account, start_time, seed=11)

    assert first == second
    assert {"SendAccepted", "SendAmbiguous"} <= set(first[0])
    assert _run_with_faults(account, start_time, seed=12) != first
