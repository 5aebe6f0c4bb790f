"""Durations: a whole number from 1 (no leading zero) and one unit of s, m, h or d, at most
3650d; anything else refused with one of two messages."""

from __future__ import annotations

import pytest

from stateous.model.durations import MAX_DURATION_SECONDS, DurationError, parse_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("30s", 30),
        ("10m", 600),
        ("6h", 21600),
        ("2d", 172800),
        ("1s", 1),
        ("87600h", 315360000),
        ("3650d", 315360000),
    ],
)
def test_valid_durations(text: str, seconds: int) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("0s", "'0s' is not a duration; write e.g. '30s', '10m', '2h', '1d'"),
        ("1.5h", "'1.5h' is not a duration; write e.g. '30s', '10m', '2h', '1d'"),
        ("2 hours", "'2 hours' is not a duration; write e.g. '30s', '10m', '2h', '1d'"),
        ("1w", "'1w' is not a duration; write e.g. '30s', '10m', '2h', '1d'"),
        ("010s", "'010s' is not a duration; write e.g. '30s', '10m', '2h', '1d'"),
        (" 1s", "' 1s' is not a duration; write e.g. '30s', '10m', '2h', '1d'"),
        ("1s\n", "'1s\\n' is not a duration; write e.g. '30s', '10m', '2h', '1d'"),
        ("\u0661s", "'\u0661s' is not a duration; write e.g. '30s', '10m', '2h', '1d'"),
        (30, "30 is not a duration; write e.g. '30s', '10m', '2h', '1d'"),
        (None, "None is not a duration; write e.g. '30s', '10m', '2h', '1d'"),
        ("3651d", "'3651d' is too long; a duration is at most 3650d"),
        ("315360001s", "'315360001s' is too long; a duration is at most 3650d"),
        ("9" * 40 + "d", f"'{'9' * 40}d' is too long; a duration is at most 3650d"),
    ],
)
def test_refused_durations(value: object, message: str) -> None:
    with pytest.raises(DurationError) as info:
        parse_duration(value)
    assert info.value.message == message
    assert isinstance(info.value, ValueError)


def test_the_limit_is_3650_days() -> None:
    assert MAX_DURATION_SECONDS == 315_360_000
    assert parse_duration("315360000s") == MAX_DURATION_SECONDS
