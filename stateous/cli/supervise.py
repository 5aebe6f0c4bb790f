"""`stateous supervise FOLDER`: run the routines of a supervisor's folder."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from stateous.cli.interrupt import on_interrupt
from stateous.model.errors import STOPPED_WHILE_STARTING

__all__ = ["supervise_command"]

# The levels of --log-level, least to most quiet.
_LEVELS = ("debug", "info", "warning", "error")


@click.command("supervise")
@click.argument("folder")
@click.option(
    "--log-level",
    type=click.Choice(_LEVELS, case_sensitive=False),
    default="info",
    show_default=True,
    help="debug adds a line when a task starts and one when it is reported; info logs start, "
    "stop, problems and a line a minute; warning and error only problems.",
)
def supervise_command(folder: str, log_level: str) -> None:
    """Run the routines of a supervisor's folder. Ctrl-C once: take no new tasks and wait for the running routines. Twice: cancel them and exit."""
    # A Ctrl-C before the stop handlers are installed ends the command with exit 1.
    with on_interrupt(lambda: [STOPPED_WHILE_STARTING], exit_code=1):
        from stateous.supervisor.logs import configure_logging
        from stateous.supervisor.loop import supervise_folder

        configure_logging(log_level)
        code = supervise_folder(Path(folder))
    sys.exit(code)
