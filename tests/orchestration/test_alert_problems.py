"""The alert sensor's open problems (its cursor) at the edges: a problem that clears before anyone heard of it,
one that fails again before its resolution went out, and a cursor an older or broken version wrote."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator

import pytest

from sms_pipeline.ops.alerts import Alert, Webhook
from sms_pipeline.orchestration.alerts import Problems
from tests.support.alerts import Webhook as WebhookServer, webhook_server

ALERT = Alert(key="check:dlr/receipts:receipts_flowing", title="check receipts_flowing failed", severity="ERROR")


@pytest.fixture
def hook() -> Iterator[WebhookServer]:
    with webhook_server() as server:
        yield server


def _reloaded(problems: Problems) -> Problems:
    """As the next tick sees them: through the JSON cursor."""
    return Problems(problems.dump(), time.time())


def _deliver(problems: Problems, targets: list[Webhook]) -> tuple[int, int]:
    return problems.deliver(targets, until=time.monotonic() + 30)


def test_a_problem_that_clears_before_anyone_heard_of_it_is_forgotten(hook):
    problems = Problems(None, time.time())
    problems.fire(ALERT)
    hook.answer = 500
    assert _deliver(problems, [Webhook(hook.url)]) == (0, 1)
    problems = _reloaded(problems)
    problems.clear(ALERT.key)
    assert problems.open == {}
    assert [p["status"] for p in hook.take()] == ["firing"]  # one attempt a tick: the next tick is the retry


def test_a_problem_back_before_its_resolution_went_out_is_still_the_one_told(hook):
    targets = [Webhook(hook.url)]
    problems = Problems(None, time.time())
    problems.fire(ALERT)
    assert _deliver(problems, targets) == (1, 0)
    problems.clear(ALERT.key)
    hook.answer = 500
    assert _deliver(problems, targets) == (0, 1)  # the resolution did not go out
    problems = _reloaded(problems)
    problems.fire(ALERT)  # and it failed again
    hook.answer = 200
    assert _deliver(problems, targets) == (0, 0)  # on-call already knows it is firing
    assert [p["status"] for p in hook.take()] == ["firing", "resolved"]
    problems.clear(ALERT.key)
    assert _deliver(problems, targets) == (1, 0) and problems.open == {}
    assert [p["status"] for p in hook.take()] == ["resolved"]


def test_a_cursor_with_a_field_this_version_does_not_know_keeps_its_problems(hook):
    problems = Problems(None, time.time())
    problems.fire(ALERT)
    assert _deliver(problems, [Webhook(hook.url)]) == (1, 0)
    older = json.loads(problems.dump())
    older["open"][ALERT.key]["alert"]["runbook"] = "renamed since"  # a field an older version had
    problems = Problems(json.dumps(older), time.time())
    assert problems.open[ALERT.key]["delivered_to"] == ["webhook"]
    problems.clear(ALERT.key)
    assert _deliver(problems, [Webhook(hook.url)]) == (1, 0)
    (_, resolved) = hook.take()
    assert (resolved["status"], resolved["key"]) == ("resolved", ALERT.key) and "runbook" not in resolved


@pytest.mark.parametrize("cursor", [
    "not json", "[]", '{"runs_until": "yesterday"}', '{"open": {"k": {"alert": {"title": "no key"}}}}',
    '{"open": {"k": {"alert": {"key": "k", "title": "t", "severity": "ERROR"}}}}',  # where did it go?
], ids=["not-json", "not-an-object", "bad-number", "alert-missing-a-field", "entry-missing-a-field"])
def test_a_cursor_that_cannot_be_read_starts_afresh_and_says_so(cursor, caplog):
    now = time.time()
    with caplog.at_level(logging.WARNING, logger="sms_pipeline.orchestration.alerts"):
        problems = Problems(cursor, now)
    assert problems.open == {} and problems.checks_after is None
    assert problems.runs_until == problems.backfills_until == now - 86400
    (record,) = caplog.records
    assert record.getMessage().startswith("alert sensor cursor unreadable (")
