"""Durations of the graph language: `30s`, `10m`, `6h`, `2d`."""

from __future__ import annotations

import re

from stateous.model.errors import StateousError

__all__ = ["MAX_DURATION_SECONDS", "DurationError", "parse_duration"]

#: The longest duration: 3650 days.
MAX_DURATION_SECONDS = 3650 * 86400

_PATTERN = re.compile(r"[1-9][0-9]*[smhd]")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


class DurationError(StateousError, ValueError):
    """A value that is not a duration, or is longer than 3650 days.

    It is also a `ValueError`, which is what `ctx.schedule(after=...)` raises.
    """

    code = "invalid_duration"


def parse_duration(text: object) -> int:
    """Return the number of seconds of a duration string such as `'6h'`.

    Refuses anything that does not fully match `[1-9][0-9]*[smhd]` (including
    non-strings such as `30`) and anything longer than 3650 days.
    """
    if not isinstance(text, str) or _PATTERN.fullmatch(text) is None:
        raise DurationError(f"{text!r} is not a duration; write e.g. '30s', '10m', '2h', '1d'")
    # Compare digit counts first so that a huge number is refused without a big product.
    if len(text) > 12:
        raise DurationError(f"{text!r} is too long; a duration is at most 3650d")
    seconds = int(text[:-1]) * _UNIT_SECONDS[text[-1]]
    if seconds > MAX_DURATION_SECONDS:
        raise DurationError(f"{text!r} is too long; a duration is at most 3650d")
    return seconds
