"""Ids and receipt timelines: formats, distributions, purity."""

from __future__ import annotations

from collections import Counter

from sms_pipeline.simulator import generation
from sms_pipeline.simulator.faults import draw, fires
from sms_pipeline.simulator.generation import STATUSES

HOUR = 3_600_000


def _ids(count: int) -> list[str]:
    return [generation.msg_id(1, "fp", 0, 0, f"91987{n:07d}", 0) for n in range(count)]


def test_msg_ids_are_decimal_text_with_a_share_above_2_63():
    ids = _ids(4000)

    assert len(set(ids)) == len(ids)
    assert all(i.isdigit() and not i.startswith("0") and 19 <= len(i) <= 20 for i in ids)
    above = sum(int(i) >= 2**63 for i in ids) / len(ids)  # int() only to classify the test data
    assert 0.27 < above < 0.33
    assert any(len(i) == 20 for i in ids)


def test_transaction_ids_are_19_digits_below_2_63():
    txns = [generation.transaction_id(1, f"fp{n}", 0) for n in range(500)]

    assert all(len(t) == 19 and int(t) < 2**63 for t in txns)
    assert len(set(txns)) == 500


def test_ids_depend_on_seed_content_and_arrival_only():
    assert generation.msg_id(1, "fp", 0, 0, "919876543210", 0) == generation.msg_id(1, "fp", 0, 0, "919876543210", 0)
    variants = {
        generation.msg_id(2, "fp", 0, 0, "919876543210", 0),
        generation.msg_id(1, "other", 0, 0, "919876543210", 0),
        generation.msg_id(1, "fp", 1, 0, "919876543210", 0),
        generation.msg_id(1, "fp", 0, 1, "919876543210", 0),
        generation.msg_id(1, "fp", 0, 0, "919876543211", 0),
        generation.msg_id(1, "fp", 0, 0, "919876543210", 1),
        generation.msg_id(1, "fp", 0, 0, "919876543210", 0),
    }
    assert len(variants) == 7


def test_outcome_distribution_and_delays():
    lines = [generation.timeline(3, message_id, 1_750_000_000_000) for message_id in _ids(20000)]
    finals = Counter(STATUSES[t.final].word if t.final else "never" for t in lines)
    share = {word: count / len(lines) for word, count in finals.items()}

    assert 0.86 < share["DELIVRD"] < 0.90
    assert 0.05 < share["UNDELIV"] < 0.07
    assert 0.015 < share["EXPIRED"] < 0.025
    assert 0.005 < share["REJECTD"] < 0.015
    assert 0.02 < share["never"] < 0.04
    assert {STATUSES[t.final].cause for t in lines if STATUSES[t.final].word == "UNDELIV"} == {
        "Absent Subscriber", "Handset Busy", "DND"}
    shown_first = sum(t.intermediate != generation.SUBMITTED for t in lines) / len(lines)
    assert 0.09 < shown_first < 0.13
    delays = sorted(t.final_ms for t in lines if t.final)
    assert delays[len(delays) // 2] < 60_000  # mostly seconds
    assert 0.005 < sum(d > 24 * HOUR for d in delays) / len(delays) < 0.05  # some cross a day
    assert delays[-1] <= 72 * HOUR
    assert all(t.intermediate_ms < t.final_ms for t in lines)


def test_timeline_is_a_pure_function_of_seed_id_and_submit_time():
    message_id = _ids(1)[0]

    assert generation.timeline(3, message_id, 1000) == generation.timeline(3, message_id, 1000)
    assert generation.timeline(3, message_id, 1000) != generation.timeline(3, message_id, 2000)
    assert generation.timeline(3, message_id, 1000) != generation.timeline(4, message_id, 1000)


def test_status_at_shows_the_latest_event_not_after_the_time():
    line = generation.Timeline(generation.DELIVRD, generation.ENROUTE, 2_000, 9_000, 0)

    def at(elapsed):
        return generation.status_at(line.final, line.intermediate, line.intermediate_ms, line.final_ms, elapsed)

    assert [at(t) for t in (0, 1_999, 2_000, 8_999, 9_000, 10**9)] == [
        generation.SUBMITTED, generation.SUBMITTED, generation.ENROUTE, generation.ENROUTE,
        generation.DELIVRD, generation.DELIVRD]
    never = generation.status_at(generation.NEVER_FINAL, generation.SUBMITTED, 0, 5, 10**9)
    assert never == generation.SUBMITTED


def test_fault_draws_are_deterministic_and_rates_0_and_1_exact():
    assert draw(1, "stall", "fp", 0) == draw(1, "stall", "fp", 0)
    assert draw(1, "stall", "fp", 0) != draw(1, "slow", "fp", 0)
    keys = range(2000)
    assert not any(fires(0.0, 1, "stall", k) for k in keys)
    assert all(fires(1.0, 1, "stall", k) for k in keys)
    assert 0.27 < sum(fires(0.3, 1, "stall", k) for k in keys) / 2000 < 0.33
