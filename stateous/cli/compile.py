"""`stateous compile FLOW [--out FILE]`: check a workflow and write its graph file (spec 10 §4)."""

from __future__ import annotations

import os

import click

from stateous.compiler.build import compile_path, default_out_path
from stateous.model.errors import StateousError

__all__ = ["compile_command", "write_graph_file"]


def write_graph_file(path: str, text: str) -> None:
    """Write `text` to `path` (UTF-8, `\\n` line endings), creating missing parent folders.

    Raises StateousError `cannot write {path}: {reason}`.
    """
    try:
        parent = os.path.dirname(path)
        if parent:
            os.makedirs(parent, exist_ok=True)
        with open(path, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
    except OSError as exc:
        raise StateousError(f"cannot write {path}: {exc.strerror or exc}") from None


@click.command("compile")
@click.argument("flow", type=click.Path(dir_okay=True, path_type=str))
@click.option("--out", "out", metavar="FILE", default=None, help="The graph file to write.")
def compile_command(flow: str, out: str | None) -> None:
    """Check a workflow, and write its graph file.

    FLOW is a flow.py; the graph file goes to build/<workflow>.json unless --out names another.
    """
    compiled = compile_path(flow)
    path = out if out is not None else default_out_path(flow, compiled.workflow)
    write_graph_file(path, compiled.text)
    click.echo(f"wrote {path}")
