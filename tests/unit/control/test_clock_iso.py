"""`iso()` writes the API's times (UTC with a trailing `Z`): its quick path gives exactly the old
text."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest

from stateous.control.clock import iso


def strftime_iso(when: datetime) -> str:
    """The text `iso()` wrote before its quick path (the reference)."""
    text = when.strftime("%Y-%m-%dT%H:%M:%S")
    if when.microsecond:
        text += f".{when.microsecond:06d}"
    return text + "Z"


@pytest.mark.parametrize(
    ("when", "text"),
    [
        (datetime(2026, 10, 16, 20, 48, 44, 845389), "2026-10-16T20:48:44.845389Z"),
        (datetime(2026, 10, 16, 20, 48, 44), "2026-10-16T20:48:44Z"),
        (datetime(2026, 1, 2, 3, 4, 5, 6), "2026-01-02T03:04:05.000006Z"),
        (datetime(2026, 1, 2, 3, 4, 5, 100000), "2026-01-02T03:04:05.100000Z"),
        (datetime(9999, 12, 31, 23, 59, 59, 999999), "9999-12-31T23:59:59.999999Z"),
    ],
)
def test_exact_text(when: datetime, text: str) -> None:
    assert iso(when) == text


def test_same_as_strftime_on_many_times() -> None:
    chooser = random.Random(13)
    for _ in range(20_000):
        micro = chooser.choice([0, chooser.randrange(1_000_000)])
        when = datetime(1970, 1, 1) + timedelta(
            seconds=chooser.randrange(0, 200 * 365 * 86400), microseconds=micro
        )
        assert iso(when) == strftime_iso(when)


def test_odd_times_keep_the_old_text() -> None:
    # Years before 1000 (strftime does not pad them) and aware times (no offset written).
    for when in (datetime(999, 12, 31, 23, 59, 59, 1), datetime(2026, 1, 1, tzinfo=UTC)):
        assert iso(when) == strftime_iso(when)
