"""`stateous schedule add|list|show|pause|resume|remove`: tokens started on a calendar."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import click

from stateous.cli.listing import aligned
from stateous.cli.token import (
    ArgumentError,
    control_plane,
    parse_json_object,
    url_option,
    wrong_shape,
)
from stateous.cli.where import by_options
from stateous.client import Client, Refused
from stateous.model.errors import StateousError
from stateous.model.history import local_datetime
from stateous.model.schedules import (
    CATCH_UPS,
    DEFAULT_ID,
    ScheduleProblem,
    ScheduleSpec,
    error_fixed,
    upcoming,
)

#: How many next times `schedule list` and `schedule show` print.
NEXT_TIMES = 3
COLUMNS = ("name", "cron", "zone", "next times", "last token", "last error")
NAME = click.argument("name", metavar="NAME")


@click.group(
    "schedule",
    no_args_is_help=True,
    context_settings={"help_option_names": ["--help"], "max_content_width": 100},
)
def schedule_group() -> None:
    """Start tokens on a calendar: add, list, show, pause, resume, remove schedules."""


def _parse_time(text: Any) -> datetime | None:
    if not isinstance(text, str):
        return None
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC).replace(tzinfo=None)


def next_times(schedule: dict[str, Any], count: int = NEXT_TIMES) -> list[str]:
    """The schedule's next `count` slots in this computer's time zone, from its `next_at`;
    none while it is paused."""
    first = _parse_time(schedule.get("next_at"))
    if first is None:
        return []
    spec = ScheduleSpec(name=str(schedule["name"]), cron=str(schedule["cron"]), tz=schedule["tz"])
    try:
        later = upcoming(spec, first, count - 1)
    except (ScheduleProblem, ValueError, KeyError):  # a zone this computer does not know
        later = []
    moments = [first, *later]
    return [local_datetime(moment.isoformat() + "Z") for moment in moments]


def row_of(schedule: dict[str, Any]) -> list[str]:
    """One row of `schedule list`."""
    times = "paused" if schedule.get("paused") else ", ".join(next_times(schedule))
    return [
        str(schedule.get("name")),
        str(schedule.get("cron")),
        str(schedule.get("tz")),
        times or "-",
        str(schedule.get("last_token") or "-"),
        error_text(schedule),
    ]


def error_text(schedule: dict[str, Any]) -> str:
    """The last slot that failed: its time in this computer's zone, `(fixed)` once a later
    slot started, and why; `-` when none failed."""
    error = schedule.get("last_error")
    if not error:
        return "-"
    fixed = " (fixed)" if error_fixed(schedule) else ""
    return f"{local_datetime(schedule.get('last_error_at'))}{fixed} {error}"


def show_lines(schedule: dict[str, Any]) -> list[str]:
    """`schedule show NAME`: each field on its line, the next times in this computer's zone."""
    paused = " (paused)" if schedule.get("paused") else ""
    last = schedule.get("last_token")
    last_text = f"{last} at {local_datetime(schedule.get('last_at'))}" if last else "-"
    return [
        f"schedule {schedule.get('name')}{paused}",
        f"cron: {schedule.get('cron')} in {schedule.get('tz')}",
        "context: " + json.dumps(schedule.get("context") or {}, ensure_ascii=False),
        f"token id: {schedule.get('id')}",
        f"catch up: {schedule.get('catch_up')}",
        "next: " + (", ".join(next_times(schedule)) or "-"),
        f"last: {last_text}",
        f"last error: {error_text(schedule)}",
        f"failed slots: {schedule.get('failures', 0)}",
    ]


def _echo(schedule: dict[str, Any]) -> None:
    for line in show_lines(schedule):
        click.echo(line)


@schedule_group.command("add")
@NAME
@click.option("--cron", "cron", metavar="EXPR", required=True, help="5 fields, e.g. '0 9 * * 1-5'.")
@click.option("--tz", "tz", metavar="ZONE", default=None, help="An IANA time zone (default UTC).")
@click.option("--context", "context", metavar="JSON", default=None, help="Each token's context.")
@click.option(
    "--id", "pattern", metavar="PATTERN", default=None,
    help=f"The token id; {{at}} is the slot's time YYYYMMDDTHHMM (default {DEFAULT_ID}).",
)  # fmt: skip
@click.option(
    "--catch-up", "catch_up", type=click.Choice(CATCH_UPS), default=None,
    help="After downtime: none skips the missed slots, last (default) starts the newest, all "
    "starts each (at most 1,000).",
)  # fmt: skip
@click.option("--paused", is_flag=True, default=False, help="Save it paused.")
@click.option(
    "--replace", is_flag=True, default=False,
    help="Replace the schedule NAME if there is one (every field as given here), else add it.",
)  # fmt: skip
@by_options
@url_option
def add_command(
    name: str,
    cron: str,
    tz: str | None,
    context: str | None,
    pattern: str | None,
    catch_up: str | None,
    paused: bool,
    replace: bool,
    reason: str | None,
    actor: str | None,
    url: str | None,
) -> None:
    """Add a schedule NAME: a token of the current version starts at each time of --cron."""
    given = parse_json_object("--context", context)
    if not cron.strip():
        raise ArgumentError("--cron is empty; give 5 fields, e.g. '0 9 * * 1-5'")
    fields: dict[str, Any] = {
        "tz": tz, "context": given, "id": pattern, "catch_up": catch_up, "paused": paused,
        "reason": reason,
    }  # fmt: skip
    with control_plane(url, actor) as client:
        made = _saved(client, name, cron, fields, replace)
    _echo(made)


def _saved(
    client: Client, name: str, cron: str, fields: dict[str, Any], replace: bool
) -> dict[str, Any]:
    """Add the schedule; with `replace`, replace the one of that name (PUT), or add it when
    there is none. A name taken without `replace` points to `--replace`."""
    if replace:
        try:
            return client.replace_schedule(name, cron, **fields)
        except Refused as exc:
            if exc.code != "schedule_not_found":
                raise
    try:
        return client.add_schedule(name, cron, **fields)
    except Refused as exc:
        if exc.code != "schedule_exists":
            raise
        raise StateousError(
            f"a schedule {name!r} exists already; add --replace to replace it with these fields",
            code="schedule_exists",
        ) from None


@schedule_group.command("list")
@url_option
def list_command(url: str | None) -> None:
    """The schedules, by name, with their next three times and last token."""
    with control_plane(url) as client:
        found = client.schedules()
        if not all(isinstance(schedule, dict) for schedule in found):
            raise wrong_shape(client.url)
    if not found:
        click.echo("no schedules")
        return
    for line in aligned(COLUMNS, [row_of(schedule) for schedule in found]):
        click.echo(line)


@schedule_group.command("show")
@NAME
@url_option
def show_command(name: str, url: str | None) -> None:
    """One schedule: its fields, next three times and last token."""
    with control_plane(url) as client:
        _echo(client.schedule(name))


@schedule_group.command("pause")
@NAME
@by_options
@url_option
def pause_command(name: str, reason: str | None, actor: str | None, url: str | None) -> None:
    """Pause a schedule: it starts nothing until resumed."""
    with control_plane(url, actor) as client:
        _echo(client.pause_schedule(name, reason=reason))


@schedule_group.command("resume")
@NAME
@by_options
@url_option
def resume_command(name: str, reason: str | None, actor: str | None, url: str | None) -> None:
    """Resume a schedule from its next time after now (the times of the pause are skipped)."""
    with control_plane(url, actor) as client:
        _echo(client.resume_schedule(name, reason=reason))


@schedule_group.command("remove")
@NAME
@by_options
@url_option
def remove_command(name: str, reason: str | None, actor: str | None, url: str | None) -> None:
    """Remove a schedule; the tokens it started stay."""
    with control_plane(url, actor) as client:
        client.remove_schedule(name, reason=reason)
    click.echo(f"removed the schedule {name}")
