"""`stateous bulk list|show|stop`: the bulk jobs of spec 80 §2 (start them with
`stateous token ... --where`)."""

from __future__ import annotations

import click

from stateous.cli.params import WholeNumber
from stateous.cli.token import control_plane, url_option
from stateous.cli.where import job_line, show_lines


@click.group(
    "bulk",
    no_args_is_help=True,
    context_settings={"help_option_names": ["--help"], "max_content_width": 100},
)
def bulk_group() -> None:
    """Bulk jobs: list them, show one, stop one (start them with `token ... --where`)."""


@bulk_group.command("list")
@url_option
def list_command(url: str | None) -> None:
    """The bulk jobs, newest first: id, action, status, progress, when, who."""
    with control_plane(url) as client:
        jobs = client.bulk_jobs()
    if not jobs:
        click.echo("no bulk jobs")
    for job in jobs:
        click.echo(job_line(job))


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
