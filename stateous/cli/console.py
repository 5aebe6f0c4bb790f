"""`stateous console`: the Textual operator console."""

from __future__ import annotations

from pathlib import Path

import click

from stateous.cli.params import Seconds
from stateous.cli.token import resolve_url
from stateous.client.errors import ClientError
from stateous.client.url import check_urls
from stateous.model.errors import StateousError


@click.command("console")
@click.option(
    "--url",
    "url",
    metavar="URL",
    default=None,
    help="The control plane. Default: STATEOUS_URL, else http://127.0.0.1:8080 (as for every "
    "command).",
)
@click.option(
    "--supervisor",
    "supervisors",
    metavar="FOLDER",
    multiple=True,
    type=click.Path(file_okay=False, path_type=str),
    help="A supervisor's folder whose outbox and status to show. Repeatable.",
)
@click.option(
    "--refresh",
    metavar="SECONDS",
    default=1.0,
    show_default=True,
    type=Seconds(0.2, 60),
    help="How often the views poll: 0.2 to 60.",
)
def console_command(url: str | None, supervisors: tuple[str, ...], refresh: float) -> None:
    """Watch and steer live work: tokens, leases, supervisors and their outboxes."""
    # Textual is imported only when the console runs: the other commands stay quick to start.
    from stateous.tui.app import make_console
    from stateous.tui.settings import load_settings, settings_path
    from stateous.tui.unexpected import log_path

    path = settings_path()
    settings, warning = load_settings(path)
    try:
        # Several control planes: URLs separated by commas, each checked.
        chosen = ", ".join(check_urls(resolve_url(url)))
    except ClientError as exc:
        raise StateousError(str(exc)) from None
    folders = tuple(str(Path(f)) for f in supervisors)
    app = make_console(
        chosen,
        supervisors=folders,
        refresh=refresh,
        settings=settings,
        settings_file=path,
        notices=[warning] if warning else [],
        log_file=log_path(),
    )
    app.run()
    if app.return_code:
        # The console ended on an error (its log has it): not a success for the shell.
        raise SystemExit(app.return_code)
