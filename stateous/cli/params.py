"""Click parameter types whose refusals say, in plain words, what the flag takes (exit 2)."""

from __future__ import annotations

from datetime import datetime

import click


class WholeNumber(click.ParamType[int]):
    """A whole number from `low` (to `high` when given): `bulk show JOB`, `inbox --limit N`.

    click's IntRange answers `'abc' is not a valid integer range.`, which names no range."""

    name = "whole number"

    def __init__(self, low: int, high: int | None = None) -> None:
        self.low, self.high = low, high

    def _wanted(self) -> str:
        if self.high is None:
            return f"a whole number, {self.low} or more"
        return f"a whole number from {self.low} to {self.high}"

    def convert(
        self, value: object, param: click.Parameter | None, ctx: click.Context | None
    ) -> int:
        if isinstance(value, int) and not isinstance(value, bool):
            number = value
        else:
            try:
                number = int(str(value).strip())
            except ValueError:
                self.fail(f"{value!r} is not {self._wanted()}", param, ctx)
        if number < self.low or (self.high is not None and number > self.high):
            self.fail(f"{number} is not {self._wanted()}", param, ctx)
        return number


class IsoTime(click.ParamType[str]):
    """An ISO 8601 time, checked as the control plane checks it and passed on as typed."""

    name = "ISO 8601 time"

    def convert(
        self, value: object, param: click.Parameter | None, ctx: click.Context | None
    ) -> str:
        text = str(value)
        try:
            datetime.fromisoformat(text)
        except ValueError:
            self.fail(f"{text!r} is not an ISO 8601 time, such as 2026-10-16T20:48:44Z", param, ctx)
        return text


class Seconds(click.ParamType[float]):
    """A number of seconds from `low` to `high`: `console --refresh SECONDS`."""

    name = "seconds"

    def __init__(self, low: float, high: float) -> None:
        self.low, self.high = low, high

    def convert(
        self, value: object, param: click.Parameter | None, ctx: click.Context | None
    ) -> float:
        wanted = f"a number of seconds from {self.low:g} to {self.high:g}"
        try:
            number = float(value) if isinstance(value, int | float) else float(str(value).strip())
        except ValueError:
            self.fail(f"{value!r} is not {wanted}", param, ctx)
        if not self.low <= number <= self.high:  # also refuses nan
            self.fail(f"{value!r} is not {wanted}", param, ctx)
        return number


class VersionRef(click.ParamType[str]):
    """A version: its checksum (`sha256:` and 64 hex digits) or 8 or more of its hex digits,
    with or without `sha256:` (`token migrate --to`); which version a prefix names is the
    control plane's to say."""

    name = "checksum"

    def convert(
        self, value: object, param: click.Parameter | None, ctx: click.Context | None
    ) -> str:
        text = str(value).strip()
        hexes = text.lower().removeprefix("sha256:")
        if not 8 <= len(hexes) <= 64 or any(c not in "0123456789abcdef" for c in hexes):
            self.fail(
                f"{text!r} is not a version: give its checksum (sha256:...) or 8 or more of its "
                "hex digits, as stateous versions shows them",
                param,
                ctx,
            )
        return text


class StatePair(click.ParamType[tuple[str, str]]):
    """`OLD=NEW`: two state names (`token migrate --map review=checking`)."""

    name = "OLD=NEW"

    def convert(
        self, value: object, param: click.Parameter | None, ctx: click.Context | None
    ) -> tuple[str, str]:
        old, sep, new = str(value).partition("=")
        if not sep or not old.strip() or not new.strip():
            self.fail(f"{value!r} is not OLD=NEW, such as review=checking", param, ctx)
        return old.strip(), new.strip()
