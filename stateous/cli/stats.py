"""`stateous stats`: how many tokens are in each status, and the live work of each state."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import click

from stateous.cli.listing import aligned
from stateous.cli.token import control_plane, url_option, wrong_shape
from stateous.model.history import local_datetime

STATE_COUNTS = ("active", "paused", "queued", "claimed", "waiting", "supervisors")


def _number(value: object) -> str:
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else "-"


def status_lines(tokens: Mapping[str, Any]) -> list[str]:
    """Tokens by status, in the control plane's order, then all of them."""
    total = sum(n for n in tokens.values() if isinstance(n, int))
    rows = [[str(status), _number(n)] for status, n in tokens.items()]
    return aligned(["status", "tokens"], [*rows, ["all", _number(total)]], right=1)


def state_lines(states: Mapping[str, Any]) -> list[str]:
    """Per state: its live tokens, its open tasks and the live supervisors serving it."""
    rows = [
        [str(name), *(_number(dict(counts).get(key)) for key in STATE_COUNTS)]
        for name, counts in states.items()
        if isinstance(counts, dict)
    ]
    return aligned(["state", *STATE_COUNTS], rows, right=1)


def stats_lines(stats: Mapping[str, Any]) -> list[str]:
    """Everything `stateous stats` prints."""
    oldest = stats.get("oldest_queued_at")
    queued = local_datetime(oldest) if isinstance(oldest, str) else "-"
    return [
        *status_lines(stats["tokens"]),
        "",
        *state_lines(stats["states"]),
        "",
        f"oldest queued task: {queued}",
    ]


@click.command("stats")
@url_option
def stats_command(url: str | None) -> None:
    """Count the tokens by status, and the live tokens and open tasks by state.

    A state's row counts its active and paused tokens, its queued, claimed and waiting tasks and
    the live supervisors that serve it. Times are shown in this computer's time zone.
    """
    with control_plane(url) as client:
        stats = client.stats()
        if not isinstance(stats.get("tokens"), dict) or not isinstance(stats.get("states"), dict):
            raise wrong_shape(client.url)
    for line in stats_lines(stats):
        click.echo(line)
