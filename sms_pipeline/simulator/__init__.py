"""A stand-in for the SMSGatewayCenter API, faithful to docs/provider-contract.md, traps included."""

from sms_pipeline.simulator.faults import FAULT_NAMES, FaultConfig
from sms_pipeline.simulator.server import RunningSimulator, run_simulator
from sms_pipeline.simulator.state import Credentials, LedgerEntry, SimulatorState

__all__ = ["FAULT_NAMES", "Credentials", "FaultConfig", "LedgerEntry", "RunningSimulator", "SimulatorState",
           "run_simulator"]
