"""`stateous init`: the group of `init workflow` and `init supervisor`."""

from __future__ import annotations

import click

from stateous.cli.lazy import LazyGroup


@click.group(
    cls=LazyGroup,
    no_args_is_help=True,
    lazy={
        "workflow": "stateous.cli.init_workflow:init_workflow_command",
        "supervisor": "stateous.cli.init_supervisor:init_supervisor_command",
    },
)
def init_group() -> None:
    """Write a new workflow's folder, or a supervisor's folder."""
