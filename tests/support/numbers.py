"""Indian mobile numbers for the tests, in the two forms they take.

``written(n)`` is the n-th number as a customer writes it in a request
("+91 98…", spaces and all); ``digits(n)`` is the same number as it is
stored and sent (E.164 digits, "9198…"). ``series`` picks another block of
numbers ("97": "+91 97…", "9197…") for tests that must not meet the default one.
"""

from __future__ import annotations


def written(n: int, series: str = "98") -> str:
    """The n-th distinct Indian mobile number, as a customer might write it."""
    return f"+91 {series}{n:08d}"


def digits(n: int, series: str = "98") -> str:
    """The n-th number as stored and sent (E.164 digits)."""
    return f"91{series}{n:08d}"


def numbers(count: int, start: int = 0, series: str = "98") -> list[str]:
    """``count`` consecutive numbers from the ``start``-th, as stored and sent."""
    return [digits(n, series) for n in range(start, start + count)]
