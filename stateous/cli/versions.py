"""`stateous versions`: the versions of the workflow on record, a table."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import click

from stateous.cli.listing import aligned
from stateous.cli.token import control_plane, url_option
from stateous.cli.version_names import version_rows
from stateous.model.history import local_datetime
from stateous.model.versions import digits

COLUMNS = ("checksum", "structure", "current", "first served", "live tokens")


def table_row(row: Mapping[str, Any]) -> list[str]:
    """One version: 12 hex digits of its checksum and structure, yes or no, the local time it
    was first served, its live top tokens."""
    return [
        digits(row["checksum"], 12),
        digits(row["structure"], 12),
        "yes" if row["current"] is True else "no",
        local_datetime(row["first_served_at"]),
        f"{int(row['live']):,}",
    ]


@click.command(
    "versions", context_settings={"help_option_names": ["--help"], "max_content_width": 100}
)
@url_option
def versions_command(url: str | None) -> None:
    """List the versions of the workflow on record, newest first.

    A version is a graph file the control plane has served. Each row: its checksum and structure
    (12 hex digits), whether new tokens start on it, when it was first served (this computer's
    time zone), and its live (active or paused) top tokens. Versions of one structure count
    their tokens once, on the newest.
    """
    with control_plane(url) as client:
        rows = version_rows(client)
    if not rows:
        click.echo("no versions")
        return
    for line in aligned(COLUMNS, [table_row(row) for row in rows], right=4):
        click.echo(line)
