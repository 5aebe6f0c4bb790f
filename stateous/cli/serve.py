"""`stateous serve GRAPH [--db URL] [--listen HOST:PORT] [--supervise FOLDER] [--replica]
[--retain DURATION]`."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import click

from stateous.cli.interrupt import on_interrupt
from stateous.control.settings import DEFAULT_DB_URL, DEFAULT_LISTEN, Settings
from stateous.event_loop import loop_factory
from stateous.model.durations import DurationError, parse_duration
from stateous.model.errors import STOPPED_WHILE_STARTING


def _retain(_ctx: click.Context, _param: click.Parameter, text: str | None) -> timedelta | None:
    """`--retain DURATION` as a timedelta; a bad one is a usage error (exit 2)."""
    if text is None:
        return None
    try:
        return timedelta(seconds=parse_duration(text))
    except DurationError as exc:
        raise click.BadParameter(exc.message) from None


@click.command("serve")
@click.argument("graph", type=click.Path(path_type=Path, dir_okay=True))
@click.option("--db", "db_url", default=DEFAULT_DB_URL, show_default=True, help="The database URL.")
@click.option(
    "--listen",
    default=DEFAULT_LISTEN,
    show_default=True,
    help="The address to listen on, HOST:PORT.",
)
@click.option(
    "--supervise",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Also run that folder's supervisor in the same process (for development).",
)
@click.option(
    "--auth-token-file",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Require 'Authorization: Bearer <token>' with a token of this file, one a line as "
    "'name: token role' (name and role optional; the file must be chmod 600; default: "
    "STATEOUS_AUTH_TOKEN when set; else no authentication).",
)
@click.option(
    "--replica",
    is_flag=True,
    default=False,
    help="Serve beside the control plane that holds this Postgres database: every route, "
    "and its clock only once that one ends (see docs/scaling.md).",
)
@click.option(
    "--retain",
    metavar="DURATION",
    callback=_retain,
    default=None,
    help="Prune, in the background, ended tokens that ended longer ago than DURATION "
    "(e.g. 90d, 12h), with no export (see docs/inbox-and-retention.md).",
)
def serve_command(
    graph: Path,
    db_url: str,
    listen: str,
    supervise: Path | None,
    auth_token_file: Path | None,
    replica: bool,
    retain: timedelta | None,
) -> None:
    """Run the control plane: the HTTP API and the clock, over one database.

    GRAPH is the graph file that `stateous compile` wrote.
    """
    # A Ctrl-C before the event loop runs (imports, the tokens file, --supervise's routines);
    # once it runs, run_control_plane says the same for a stop before it serves.
    with on_interrupt(lambda: [STOPPED_WHILE_STARTING]):
        from stateous.control.runtime import run_control_plane

        settings, extra = _prepare(
            graph, db_url, listen, supervise, auth_token_file, replica, retain
        )
    code = asyncio.run(run_control_plane(settings, extra), loop_factory=loop_factory())
    sys.exit(code)


def _prepare(
    graph: Path,
    db_url: str,
    listen: str,
    supervise: Path | None,
    auth_token_file: Path | None,
    replica: bool,
    retain: timedelta | None,
) -> tuple[Settings, Callable[[str], Awaitable[int]] | None]:
    """The settings of `serve`, logging set up, and the embedded supervisor if any."""
    from stateous.control.knobs import with_env_knobs
    from stateous.control.runtime import setup_logging
    from stateous.model.auth import grants_from

    setup_logging()
    # The tokens with their names and roles; a file others can read stops here.
    grants = grants_from(auth_token_file)
    token = next(iter(grants), None)
    # The documented durations, unless a test shortened them (stateous.control.knobs).
    settings = with_env_knobs(
        Settings(
            graph_path=graph,
            db_url=db_url,
            listen=listen,
            auth_token=token,
            auth_names=tuple((key, grant.name) for key, grant in grants.items()),
            auth_grants=tuple(grants.items()),
            replica=replica,
            retain=retain,
        )
    )
    settings = with_retain_pace(settings)
    extra = None
    if supervise is not None:
        extra = embedded_supervisor(supervise)
    return settings, extra


def embedded_supervisor(folder: Path) -> Callable[[str], Awaitable[int]]:
    """The supervisor of `--supervise FOLDER`, run beside the server."""
    from stateous.supervisor.loop import embedded

    return embedded(folder)


def with_retain_pace(settings: Settings) -> Settings:
    """`settings` with the pace of `--retain` from the `STATEOUS_RETAIN_*` variables."""
    from stateous.model.environment import environment

    env = environment()
    return replace(
        settings,
        retain_rest=env.retain_rest_seconds,
        retain_idle=env.retain_idle_seconds,
        retain_log_every=env.retain_log_seconds,
    )
