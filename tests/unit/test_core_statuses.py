import pytest

from sms_pipeline.core.states import MessageState
from sms_pipeline.core.statuses import STATUS_OUTCOMES, normalise_status


@pytest.mark.parametrize(
    "raw, word, outcome, final_state",
    [
        ("DELIVRD", "DELIVRD", "delivered", MessageState.delivered),
        ("UNDELIV", "UNDELIV", "failed", MessageState.failed),
        ("EXPIRED", "EXPIRED", "expired", MessageState.expired),
        ("REJECTD", "REJECTD", "failed", MessageState.failed),
        ("DELETED", "DELETED", "failed", MessageState.failed),
        ("ACCEPTD", "ACCEPTD", "intermediate", None),
        ("ENROUTE", "ENROUTE", "intermediate", None),
        ("SUBMITTED", "SUBMITTED", "intermediate", None),
        ("SUBMITD", "SUBMITTED", "intermediate", None),
        ("PENDING", "PENDING", "intermediate", None),
        # long forms of the by-transaction report
        ("DELIVERED", "DELIVRD", "delivered", MessageState.delivered),
        ("UNDELIVERED", "UNDELIV", "failed", MessageState.failed),
        ("REJECTED", "REJECTD", "failed", MessageState.failed),
        ("ACCEPTED", "ACCEPTD", "intermediate", None),
        # docs/receipt-cases.md#case-15
        (" delivrd ", "DELIVRD", "delivered", MessageState.delivered),
        ("Delivered\t", "DELIVRD", "delivered", MessageState.delivered),
        ("undeliv", "UNDELIV", "failed", MessageState.failed),
        ("BLACKLST", "BLACKLST", "unmapped", None),
        ("NCPR", "NCPR", "unmapped", None),
        ("ncpr ", "NCPR", "unmapped", None),
        ("UNKNOWN", "UNKNOWN", "unmapped", None),
        ("", "UNKNOWN", "unmapped", None),
        ("   ", "UNKNOWN", "unmapped", None),
        (None, "UNKNOWN", "unmapped", None),
    ],
)
def test_normalise_status(raw: str | None, word: str, outcome: str, final_state: MessageState | None) -> None:
    status = normalise_status(raw)
    assert (status.raw, status.word, status.outcome) == (raw, word, outcome)
    assert status.final_state == final_state
    assert status.is_final is (final_state is not None)


def test_one_event_word_whatever_the_source() -> None:
    for short, long in [("DELIVRD", "DELIVERED"), ("UNDELIV", "UNDELIVERED"), ("REJECTD", "REJECTED")]:
        assert normalise_status(short).word == normalise_status(long).word


def test_every_canonical_word_is_its_own_canonical_form() -> None:
    for word in STATUS_OUTCOMES:
        assert normalise_status(word).word == word
