"""``sms-pipeline otp verify``: one line and one exit code per result; never the code or the number."""

from __future__ import annotations

import io

import pytest
from tests.support.numbers import digits
from tests.support.otp import TEST_KEY, issue

from sms_pipeline.core.clock import RealClock


@pytest.fixture
def clock() -> RealClock:
    """The command verifies on real time, so codes are issued on it too."""
    return RealClock()


@pytest.fixture
def cli_variables() -> dict[str, str]:
    """The commands verify with the key the codes were issued with."""
    return {"SMS_PIPELINE_OTP_HMAC_KEY": TEST_KEY.decode()}


def _verify(run, code: str, *extra: str, recipient: str = "+91 98000 00001"):
    return run("otp", "verify", "--tenant", "tenant-a", "--recipient", recipient, "--purpose", "login",
               "--code", code, *extra)


def test_each_result_has_its_line_and_exit_code(run, db, clock):
    issue(db, clock, 1, "482913", max_attempts=2, session_binding="session-1")
    issue(db, clock, 2, "777777", expiry_s=60)

    outcomes = [
        _verify(run, "482913"),  # no session given: this code is bound to one
        _verify(run, "111111", "--session", "session-1"),
        _verify(run, "482913", "--session", "session-1"),
        _verify(run, "482913", "--session", "session-1"),
    ]

    assert [(code, out) for code, out, _ in outcomes] == [
        (6, "no_such_code: no code was sent for this recipient, purpose and session\n"),
        (1, "wrong: not the code (1 attempt left)\n"),
        (0, "ok: code accepted\n"),
        (4, "used: the code was already accepted once\n"),
    ]
    everything = "".join(out + err for _, out, err in outcomes)
    assert "482913" not in everything and "98000" not in everything and digits(1) not in everything


def test_locked_and_expired_codes(run, db, clock):
    issue(db, clock, 1, "482913", max_attempts=1)
    db.execute("UPDATE msg.otp_verification SET expires_at = created_at + interval '1 microsecond' "
               "WHERE recipient = %s", (digits(1),))
    issue(db, clock, 2, "555555", max_attempts=1)

    assert _verify(run, "482913")[:2] == (3, "expired: the code's time is up; send a new one\n")
    assert _verify(run, "000000", recipient=digits(2))[0] == 1
    assert _verify(run, "555555", recipient=digits(2))[:2] == (5, "locked: too many wrong attempts; send a new one\n")


def test_the_code_can_come_from_standard_input(run, db, clock, monkeypatch):
    issue(db, clock, 1, "482913")
    monkeypatch.setattr("sys.stdin", io.StringIO("482913\n"))

    assert _verify(run, "-")[:2] == (0, "ok: code accepted\n")


def test_a_bad_recipient_is_one_line_without_the_number(run):
    code, out, err = _verify(run, "482913", recipient="12-34-5")

    assert code == 2 and out == ""
    assert err == "sms-pipeline: error: --recipient: the recipient is not a valid phone number\n"
