"""`stateous compile FLOW [--out FILE] [--against OLD [--strict]]`: check a workflow, write its
graph file, and say what a migration from OLD would meet, and whether the new graph needs a
supervisor folder of its own."""

from __future__ import annotations

import json
import os
import sys

import click

from stateous.compiler.build import compile_path, default_out_path
from stateous.model.errors import StateousError
from stateous.model.graph import Graph, GraphFileError, load_graph, read_graph_file

__all__ = ["compile_command", "new_structure_line", "read_old_graph", "write_graph_file"]


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


def read_old_graph(old: str) -> Graph:
    """The graph of `--against`: a control plane's current graph (`GET /workflow`) when OLD is
    an http(s) URL, else the graph file at OLD. Raises a StateousError with one sentence."""
    if not old.startswith(("http://", "https://")):
        return read_graph_file(old)
    from stateous.client import Client, ClientError
    from stateous.model.environment import environment

    try:
        with Client(old, auth_token=environment().auth_token) as client:
            doc = client.workflow()
    except ClientError as exc:
        raise StateousError(f"cannot read the graph of {old}: {exc}") from None
    try:
        return load_graph(json.dumps(doc))
    except GraphFileError as exc:
        raise GraphFileError(f"{old} does not answer a graph file: {exc.message}") from None


@click.command("compile")
@click.argument("flow", type=click.Path(dir_okay=True, path_type=str))
@click.option("--out", "out", metavar="FILE", default=None, help="The graph file to write.")
@click.option(
    "--against",
    "against",
    metavar="OLD",
    default=None,
    help="A graph file or a control plane's URL: print what moving its tokens to the new graph would meet.",
)
@click.option(
    "--strict",
    is_flag=True,
    default=False,
    help="With --against: exit 1 when a state is removed or the context needs new fields.",
)
def compile_command(flow: str, out: str | None, against: str | None, strict: bool) -> None:
    """Check a workflow, and write its graph file.

    FLOW is a flow.py; the graph file goes to build/<workflow>.json unless --out names another.
    """
    if strict and against is None:
        raise click.UsageError("--strict goes with --against", ctx=click.get_current_context())
    compiled = compile_path(flow)
    # OLD is read before the file is written: a command that fails leaves nothing behind.
    old = read_old_graph(against) if against is not None else None
    path = out if out is not None else default_out_path(flow, compiled.workflow)
    write_graph_file(path, compiled.text)
    click.echo(f"wrote {path}")
    if old is not None:
        _print_findings(old, load_graph(compiled.text), strict, against or "")


def _print_findings(old: Graph, new: Graph, strict: bool, against: str) -> None:
    from stateous.compiler.against import blocks, compare

    findings = compare(old, new)
    for finding in findings:
        click.echo(finding.line)
    if old.structure != new.structure:
        click.echo(new_structure_line(against))
    if strict and blocks(findings):
        sys.exit(1)  # no `error:` line: the findings above say why


def new_structure_line(against: str) -> str:
    """The line of a graph of another structure: once served, its tokens are granted only to a
    supervisor of its version, so the old folder's supervisor leaves them queued."""
    url = against.rstrip("/") if against.startswith(("http://", "https://")) else "URL"
    return (
        "new structure: its tokens need a supervisor folder of this version; once it is "
        f"served, write one with `stateous init supervisor {url} NEW-FOLDER`"
    )
