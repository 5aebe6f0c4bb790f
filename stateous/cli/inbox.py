"""`stateous inbox`: the tokens waiting for a person, as a table."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import click

from stateous.cli.listing import DEFAULT, after_option, cut_line, echo_next, limit_option, more_than
from stateous.cli.token import ArgumentError, control_plane, url_option, wrong_shape
from stateous.client import Client
from stateous.model.history import display_state, local_datetime

EMPTY = "the inbox is empty: no token waits for a person"
ANSWER = "answer one with: stateous token fire ID EVENT [PAYLOAD_JSON] --reason TEXT"
PIPE_WIDTH = 160
COLUMNS = ("token", "state", "waiting since", "the question", "the events it takes")


def event_text(event: Mapping[str, Any]) -> str:
    """`name`, or `name {field, …}` naming the fields of its payload's schema."""
    name = str(event.get("event"))
    schema = event.get("payload_schema")
    fields = list((schema or {}).get("properties") or {}) if isinstance(schema, dict) else []
    return f"{name} {{{', '.join(fields)}}}" if fields else name


def row_of(entry: Mapping[str, Any]) -> tuple[str, ...]:
    """One table row: the token (and its status when paused), the state, since, note, events."""
    token = str(entry.get("token"))
    if entry.get("status") == "paused":
        token += " (paused)"
    events = entry.get("events") or []
    return (
        token,
        display_state(entry.get("state")),
        local_datetime(entry.get("since")),
        str(entry.get("note") or "-"),
        ", ".join(event_text(e) for e in events if isinstance(e, dict)) or "-",
    )


def print_table(rows: Sequence[tuple[str, ...]]) -> None:
    """A Rich table: coloured on a terminal, plain text in a pipe or a file."""
    from rich import box
    from rich.console import Console
    from rich.table import Table

    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    for n, name in enumerate(COLUMNS):
        # The token, state and time stay whole; the question and the events wrap.
        table.add_column(name, no_wrap=n < 3, overflow="fold")
    for row in rows:
        table.add_row(*row)
    # In a pipe Rich would wrap at 80 columns: scripts get whole lines unless COLUMNS says.
    wide = sys.stdout.isatty() or "COLUMNS" in os.environ
    Console(file=sys.stdout, highlight=False, width=None if wide else PIPE_WIDTH).print(table)


def waiting_count(stats: Mapping[str, Any], state: str | None) -> int:
    """The waiting tasks `GET /stats` counts: of `state`, or of every state."""
    states = stats.get("states")
    if not isinstance(states, dict):
        return 0
    chosen = [states.get(state)] if state is not None else list(states.values())
    return sum(int(counts.get("waiting") or 0) for counts in chosen if isinstance(counts, dict))


def workflow_states(doc: Mapping[str, Any]) -> set[str]:
    """The states of a graph document: its workflow's and those of its child workflows."""
    bodies = [doc, *dict(doc.get("workflows") or {}).values()]
    return {
        str(name) for body in bodies if isinstance(body, dict) for name in body.get("states") or {}
    }


def check_state(client: Client, state: str) -> None:
    """Refuse a `--state` that names no state, as the bulk filter does; asked only when the inbox
    came back empty, so a listing costs no second request."""
    if state not in workflow_states(client.workflow()):
        raise ArgumentError(f"--state names {state!r}, which is not a state of the workflow")


@click.command("inbox")
@click.option("--state", "state", metavar="STATE", default=None, help="Only this state's tasks.")
@limit_option("tasks")
@after_option("tasks")
@url_option
def inbox_command(state: str | None, limit: int | None, after: str | None, url: str | None) -> None:
    """Show the tokens waiting for a person, the longest waiting first.

    Each row is a task that reported it waits: its token, its state, since when it waits, the
    question its routine asked (its last note) and the events its state takes. Answer one with
    `stateous token fire`. Times are shown in this computer's time zone.
    """
    shown = limit or DEFAULT
    with control_plane(url) as client:
        entries = client.inbox(state=state, limit=limit, after=after)
        if not all(isinstance(e, dict) for e in entries):
            raise wrong_shape(client.url)
        more = 0
        if after is None:  # a later page's count is unknown; its cursor says more follow
            more = more_than(len(entries), shown, lambda: waiting_count(client.stats(), state))
        if not entries and state is not None:
            check_state(client, state)
    if not entries:
        click.echo(EMPTY)
        return
    print_table([row_of(e) for e in entries])
    if more:
        click.echo(cut_line(more, shown))
    click.echo(ANSWER)
    echo_next(entries)
