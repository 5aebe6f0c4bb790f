"""How the console writes times, durations, statuses and lease bars."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from rich.text import Text

from stateous.model import history

# One source for the status colours: the same in every view and in `token show`.
STATUS_STYLES: dict[str, str] = dict(history.STATUS_STYLES)
STATUSES: tuple[str, ...] = ("active", "paused", "completed", "failed", "cancelled")
TASK_STYLES: dict[str, str] = {
    "queued": "cyan",
    "claimed": "green",
    "waiting": "#ffb000",
    "done": "dim",
    "failed": "red",
    "cancelled": "grey50",
}
LEASE_SECONDS = 120.0
AMBER_UNDER = 60.0
RED_UNDER = 30.0


def parse_time(value: object) -> datetime | None:
    """A time of the API (`...Z`, UTC) as an aware datetime; None when it is not one."""
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def duration(seconds: float) -> str:
    """A duration as `4s`, `2m 10s`, `3h 5m` or `2d 3h` (negative counts as 0)."""
    whole = max(0, int(seconds))
    days, rest = divmod(whole, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d {hours}h" if hours else f"{days}d"
    if hours:
        return f"{hours}h {minutes}m" if minutes else f"{hours}h"
    if minutes:
        return f"{minutes}m {secs}s" if secs else f"{minutes}m"
    return f"{secs}s"


def since(value: object, now: datetime) -> str:
    """How long ago the API time `value` was, as a duration; `?` when it is not a time."""
    moment = parse_time(value)
    return "?" if moment is None else duration((now - moment).total_seconds())


def status_text(status: object, styles: dict[str, str] = STATUS_STYLES) -> Text:
    """A status word in its colour."""
    word = str(status)
    return Text(word, style=styles.get(word, ""))


def lease_bar(lease_until: object, now: datetime, width: int = 8) -> Text:
    """A lease countdown: a bar of the 2-minute lease and the time left.

    Amber under 60 s, red under 30 s; `-` when no lease is held (queued, waiting).
    """
    until = parse_time(lease_until)
    if until is None:
        return Text("-", style="dim")
    left = (until - now).total_seconds()
    if left <= 0:
        return Text("ended", style="bold red")
    style = "red" if left < RED_UNDER else "#ffb000" if left < AMBER_UNDER else "green"
    filled = max(1, min(width, round(width * left / LEASE_SECONDS)))
    bar = Text("█" * filled, style=style)
    bar.append("░" * (width - filled), style="grey35")
    bar.append(f" {duration(left)}", style=style)
    return bar


def countdown(due: object, now: datetime) -> str:
    """The time until the API time `due`: `in 4s`, or `due` once it has passed."""
    moment = parse_time(due)
    if moment is None:
        return "?"
    left = (moment - now).total_seconds()
    return f"in {duration(left)}" if left > 0 else "due"


def styled(line: history.Line) -> Text:
    """A line of the shared `token show` rendering as Rich text, with the same colours."""
    return Text.assemble(*line.segments)


def token_line_text(token: Mapping[str, Any]) -> Text:
    """The token line exactly as `token show` prints it, in colour."""
    return styled(history.token_line(token))


def local_time(value: object, *, with_date: bool = False) -> str:
    """The API time `value` in local time (`HH:MM:SS`, or with the date); blank for None."""
    if value is None:
        return ""
    return history.local_datetime(value) if with_date else history.local_time(value)
