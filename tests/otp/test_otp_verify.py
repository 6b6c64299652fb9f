"""verify_otp: single use, expiry, attempt limit, purpose and session binding, one winner under races."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import psycopg
import pytest
from tests.support.numbers import digits
from tests.support.otp import TEST_KEY, issue

from sms_pipeline.otp.verify import InvalidRecipient, VerifyResult, check_code, verify_otp


def verify(conn, clock, n: int, code: str, *, purpose: str = "login", tenant: str = "tenant-a",
           session_binding: str | None = None) -> VerifyResult:
    return verify_otp(conn, tenant, digits(n), purpose, code, session_binding, hmac_key=TEST_KEY, clock=clock)


def _state(db, verification_id: int) -> tuple:
    return db.execute("SELECT attempts, consumed_at FROM msg.otp_verification WHERE id = %s",
                      (verification_id,)).fetchone()


def test_the_right_code_is_accepted_once(db, clock):
    row = issue(db, clock, 1, "482913")

    assert verify(db, clock, 1, "482913") is VerifyResult.ok
    assert _state(db, row) == (0, clock.now())
    assert verify(db, clock, 1, "482913") is VerifyResult.used
    assert verify(db, clock, 1, "000000") is VerifyResult.used  # used is used, whatever is typed


def test_wrong_codes_count_until_the_code_locks_even_for_the_right_one(db, clock):
    row = issue(db, clock, 1, "482913", max_attempts=3)

    attempts = [check_code(db, "tenant-a", digits(1), "login", guess, hmac_key=TEST_KEY, clock=clock)
                for guess in ("111111", "222222", "333333")]

    assert [(a.result, a.attempts_left) for a in attempts] == [
        (VerifyResult.wrong, 2), (VerifyResult.wrong, 1), (VerifyResult.wrong, 0)]
    assert verify(db, clock, 1, "482913") is VerifyResult.locked
    assert _state(db, row) == (3, None)


def test_a_code_past_its_expiry_is_refused_and_counts_nothing(db, clock):
    row = issue(db, clock, 1, "482913", expiry_s=300)
    clock.advance(timedelta(seconds=299))
    assert verify(db, clock, 1, "111111") is VerifyResult.wrong

    clock.advance(timedelta(seconds=1))

    assert verify(db, clock, 1, "482913") is VerifyResult.expired
    assert verify(db, clock, 1, "111111") is VerifyResult.expired
    assert _state(db, row) == (1, None)


def test_a_code_only_answers_for_its_tenant_recipient_and_purpose(db, clock):
    issue(db, clock, 1, "482913", purpose="login")

    assert verify(db, clock, 1, "482913", purpose="payment") is VerifyResult.no_such_code
    assert verify(db, clock, 1, "482913", tenant="tenant-b") is VerifyResult.no_such_code
    assert verify(db, clock, 2, "482913") is VerifyResult.no_such_code
    assert verify(db, clock, 1, "482913", purpose="login") is VerifyResult.ok


def test_a_code_bound_to_a_session_answers_only_in_that_session(db, clock):
    row = issue(db, clock, 1, "482913", session_binding="session-1")

    assert verify(db, clock, 1, "482913") is VerifyResult.no_such_code
    assert verify(db, clock, 1, "482913", session_binding="session-2") is VerifyResult.no_such_code
    assert _state(db, row) == (0, None)  # other sessions cannot even use up its attempts
    assert verify(db, clock, 1, "482913", session_binding="session-1") is VerifyResult.ok


def test_a_resend_supersedes_the_earlier_code(db, clock):
    issue(db, clock, 1, "111111", event="first")
    clock.advance(timedelta(seconds=40))
    issue(db, clock, 1, "222222", event="resend")

    assert verify(db, clock, 1, "111111") is VerifyResult.wrong
    assert verify(db, clock, 1, "222222") is VerifyResult.ok
    assert verify(db, clock, 1, "111111") is VerifyResult.used


def test_numbers_and_codes_are_read_as_people_type_them(db, clock):
    issue(db, clock, 1, "AB23CD")

    assert verify_otp(db, "tenant-a", "+91 98000-00001", "login", "  ab23cd\n", hmac_key=TEST_KEY,
                      clock=clock) is VerifyResult.ok


def test_a_recipient_that_is_not_a_number_is_refused_without_repeating_it(db, clock):
    with pytest.raises(InvalidRecipient) as refused:
        verify_otp(db, "tenant-a", "call me 555", "login", "123456", hmac_key=TEST_KEY, clock=clock)
    assert "555" not in str(refused.value)


def _race(db_url: str, clock, guesses: list[str], verification_id: int, n: int = 1) -> list[VerifyResult]:
    """Start every guess while another transaction holds the code's row, then let them all go at once."""
    results: list[VerifyResult] = []
    lock = threading.Lock()

    def one(guess: str) -> None:
        with psycopg.connect(db_url, autocommit=True) as conn:
            result = verify(conn, clock, n, guess)
        with lock:
            results.append(result)

    with psycopg.connect(db_url) as holder:
        holder.execute("SELECT 1 FROM msg.otp_verification WHERE id = %s FOR UPDATE", (verification_id,))
        threads = [threading.Thread(target=one, args=(guess,)) for guess in guesses]
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 20
        with psycopg.connect(db_url, autocommit=True) as watcher:
            while watcher.execute("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                                  "AND datname = current_database()").fetchone()[0] < len(guesses):
                assert time.monotonic() < deadline, "the verifications never queued on the row lock"
                time.sleep(0.02)
        holder.commit()
    for thread in threads:
        thread.join(timeout=20)
    return results


def test_two_verifications_of_one_code_at_once_exactly_one_wins(db, db_url, clock):
    row = issue(db, clock, 1, "482913")

    results = _race(db_url, clock, ["482913"] * 4, row)

    assert sorted(results) == sorted([VerifyResult.ok] + [VerifyResult.used] * 3)
    assert _state(db, row)[1] is not None


def test_concurrent_wrong_guesses_each_count_and_then_lock(db, db_url, clock):
    row = issue(db, clock, 1, "482913", max_attempts=3)

    results = _race(db_url, clock, [f"{n:06d}" for n in range(8)], row)

    assert sorted(results) == sorted([VerifyResult.wrong] * 3 + [VerifyResult.locked] * 5)
    assert _state(db, row) == (3, None)
