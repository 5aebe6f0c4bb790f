"""`stateous bulk list|show|stop`: the durable bulk jobs (start them with
`stateous token ... --where`)."""

from __future__ import annotations

from typing import Any

import click

from stateous.cli.listing import (
    DEFAULT,
    MOST,
    after_option,
    aligned,
    cut_line,
    echo_next,
    limit_option,
    more_than,
)
from stateous.cli.params import WholeNumber
from stateous.cli.token import control_plane, url_option, wrong_shape
from stateous.cli.where import handled, show_lines
from stateous.client import Client
from stateous.model.history import by_suffix, local_datetime


@click.group(
    "bulk",
    no_args_is_help=True,
    context_settings={"help_option_names": ["--help"], "max_content_width": 100},
)
def bulk_group() -> None:
    """Bulk jobs: list them, show one, stop one (start them with `token ... --where`)."""


JOB_COLUMNS = ("job", "action", "status", "progress", "created", "by")


def job_row(job: dict[str, Any]) -> list[str]:
    """One job of `bulk list`: progress is the tokens handled (done or skipped) of those matched."""
    return [
        str(job["job"]),
        str(job["action"]),
        str(job["status"]),
        f"{handled(job):,}/{int(job['matched']):,}",
        local_datetime(job.get("created_at")),
        by_suffix(job.get("by")).strip(" []") or "-",
    ]


def _more_jobs(client: Client, page: int, shown: int) -> tuple[int, bool]:
    """How many jobs beyond the `shown` (0: none), and whether that is only the least there is.

    `GET /bulk` tells no total: a cut page's jobs are counted by listing as many as it gives."""
    listed: list[int] = []

    def count() -> int:
        listed.append(len(client.bulk_jobs(limit=MOST)))
        return listed[0]

    more = more_than(page, shown, count)
    return more, bool(listed) and listed[0] >= MOST


@bulk_group.command("list")
@limit_option("jobs")
@after_option("jobs")
@url_option
def list_command(limit: int | None, after: str | None, url: str | None) -> None:
    """The bulk jobs, newest first: id, action, status, progress, when, who."""
    shown = limit or DEFAULT
    with control_plane(url) as client:
        jobs = client.bulk_jobs(limit=limit, after=after)
        if not all(isinstance(job, dict) for job in jobs):
            raise wrong_shape(client.url)
        more, at_least = _more_jobs(client, len(jobs), shown) if after is None else (0, False)
    if not jobs:
        click.echo("no bulk jobs")
        return
    for line in aligned(JOB_COLUMNS, [job_row(job) for job in jobs]):
        click.echo(line)
    if more:
        click.echo(cut_line(more, shown, at_least=at_least))
    echo_next(jobs)


@bulk_group.command("show")
@click.argument("job", metavar="JOB", type=WholeNumber(1))
@url_option
def show_command(job: int, url: str | None) -> None:
    """One bulk job: its filter, progress and skipped tokens by code."""
    with control_plane(url) as client:
        found = client.bulk_job(job)
    for line in show_lines(found):
        click.echo(line)


@bulk_group.command("stop")
@click.argument("job", metavar="JOB", type=WholeNumber(1))
@url_option
def stop_command(job: int, url: str | None) -> None:
    """Stop a running bulk job; what it did stays done."""
    with control_plane(url) as client:
        found = client.stop_bulk(job)
    for line in show_lines(found):
        click.echo(line)
