"""Provider client: typed results from the SMSGatewayCenter API (see client.py)."""

from sms_pipeline.provider.client import ProviderClient
from sms_pipeline.provider.dayfile import DayReport
from sms_pipeline.provider.results import (
    CampaignTransaction,
    DayReportError,
    DlrRow,
    OtpVerification,
    PersonalisedSms,
    ProviderCallError,
    ReportError,
    ScheduleRow,
    SendAccepted,
    SendAmbiguous,
    SendNeverConnected,
    SendOutcome,
    SendRefused,
    SummaryRow,
    TxnReportRow,
)

__all__ = [
    "CampaignTransaction", "DayReport", "DayReportError", "DlrRow", "OtpVerification", "PersonalisedSms", "ProviderCallError",
    "ProviderClient", "ReportError", "ScheduleRow", "SendAccepted", "SendAmbiguous", "SendNeverConnected",
    "SendOutcome", "SendRefused", "SummaryRow", "TxnReportRow",
]
