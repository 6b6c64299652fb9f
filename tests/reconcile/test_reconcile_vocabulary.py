"""The SQL status vocabulary (V30) is the Python one (core.statuses), word for word."""

from __future__ import annotations

import pytest

from sms_pipeline.core.statuses import STATUS_ALIASES, STATUS_OUTCOMES, normalise_status


def test_the_sql_tables_equal_the_python_mappings(db):
    outcomes = dict(db.execute("SELECT status_word, outcome FROM dlr.status_outcomes").fetchall())
    aliases = dict(db.execute("SELECT alias, status_word FROM dlr.status_aliases").fetchall())
    assert outcomes == dict(STATUS_OUTCOMES)
    assert aliases == dict(STATUS_ALIASES)


@pytest.mark.parametrize("raw", ["DELIVRD", "delivrd", " DELIVERED  ", "undeliv\t", "Accepted", "SUBMITD",
                                 "BLACKLST", "ncpr ", "", None, "   ", "UNKNOWN", "expired"])
def test_sql_normalisation_agrees_with_python(db, raw):
    word, outcome = db.execute(
        """SELECT COALESCE(a.status_word, w.cleaned), COALESCE(o.outcome, 'unmapped')
             FROM (SELECT dlr.clean_status_word(%s) AS cleaned) w
             LEFT JOIN dlr.status_aliases a ON a.alias = w.cleaned
             LEFT JOIN dlr.status_outcomes o ON o.status_word = COALESCE(a.status_word, w.cleaned)""",
        (raw,),
    ).fetchone()
    expected = normalise_status(raw)
    assert (word, outcome) == (expected.word, expected.outcome)


def test_a_word_with_inner_whitespace_becomes_one_storable_word(db):
    assert db.execute("SELECT dlr.clean_status_word(' deliv rd ')").fetchone() == ("DELIV_RD",)
