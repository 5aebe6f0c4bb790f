"""The cut as `serve --retain`'s log line shows it."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from stateous.control.retention_runner import cut_text

CUT = datetime(2026, 9, 1, 14, 5, 9, 250_000)


@pytest.mark.parametrize(
    ("retain", "shown"),
    [
        (timedelta(days=90), "2026-09-01"),
        (timedelta(days=1), "2026-09-01"),
        (timedelta(hours=12), "2026-09-01T14:05:09Z"),
        (timedelta(hours=48), "2026-09-01"),
        (timedelta(seconds=2), "2026-09-01T14:05:09Z"),
    ],
)
def test_the_cut_is_a_date_for_whole_days_else_a_time_to_the_second(
    retain: timedelta, shown: str
) -> None:
    assert cut_text(CUT, retain) == shown
