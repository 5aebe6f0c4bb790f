"""`stateous prune --ended-before`: a duration becomes a cut that keeps the microseconds of now,
and a value that is neither a duration nor a time is refused naming both forms."""

from __future__ import annotations

from datetime import UTC, datetime

import click
import pytest

from stateous.cli.prune import Cutoff

NOW = datetime(2026, 10, 16, 20, 48, 44, 600_000, tzinfo=UTC)


def test_a_duration_keeps_the_microseconds_of_now() -> None:
    cut = Cutoff(lambda: NOW)
    # Cut to the second, `1s` gave 20:48:43, which left out a token that ended 1.5 s before now.
    assert cut.convert("1s", None, None) == "2026-10-16T20:48:43.600000Z"
    assert cut.convert("90m", None, None) == "2026-10-16T19:18:44.600000Z"
    assert cut.convert("2d", None, None) == "2026-10-14T20:48:44.600000Z"
    ended = datetime(2026, 10, 16, 20, 48, 43, 100_000)  # 1.5 s before now
    assert ended < datetime.fromisoformat(cut.convert("1s", None, None).removesuffix("Z"))


def test_a_time_is_passed_on_as_typed() -> None:
    assert Cutoff().convert("2026-10-16T20:48:44.25Z", None, None) == "2026-10-16T20:48:44.25Z"


@pytest.mark.parametrize("text", ["yesterday", "2x", "last week"])
def test_neither_a_duration_nor_a_time_names_both(text: str) -> None:
    with pytest.raises(click.BadParameter) as raised:
        Cutoff().convert(text, None, None)
    assert raised.value.message == (
        f"{text!r} is neither a duration before now (such as 2d or 90m) nor an ISO 8601 time "
        "(such as 2026-10-16T20:48:44Z)"
    )
