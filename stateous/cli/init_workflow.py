"""`stateous init workflow NAME [--stateous-path PATH]`: a starter workflow, compiled."""

from __future__ import annotations

import os
from pathlib import Path

import click

from stateous.cli.compile import write_graph_file
from stateous.cli.init_supervisor import _checkout, project_file_text
from stateous.compiler.build import compile_path
from stateous.model.authoring import valid_name
from stateous.model.errors import StateousError

__all__ = [
    "GUIDE",
    "flow_text",
    "init_workflow_command",
    "pyproject_text",
    "schemas_text",
]

#: Where the "Write a workflow" guide is, quoted in the starter's comments: a page of the
#: repository, since the project has no website.
GUIDE = "docs/writing-a-workflow.md in the Stateous repository"

_FLOW = """# {name}/flow.py: the workflow. `stateous compile {name}/flow.py` checks it and writes
# the graph file, {name}/build/{name}.json.
from stateous import END, START, Workflow

from schemas import Item, Verdict

# The workflow and its name. Each token has a context: an Item (see schemas.py).
flow = Workflow("{name}", context=Item)

# The states. A token is in one state at a time. A routine does the work of a state.
# `timeout=` and `retries=` are optional. See the guide,
# {guide}.
draft = flow.state("draft")
review = flow.state("review")

# The events: the outcomes that move a token. A payload is optional.
submitted = flow.event("submitted")  # no payload
# The payload is a Verdict; `into=` also saves it in the context, as `verdict`.
reviewed = flow.event("reviewed", payload=Verdict, into="verdict")

# The transitions: where each event takes a token. START and END begin and end each token.
flow.transition(START, draft)  # a new token goes to `draft` at once
flow.transition(draft, review, on=submitted)
# A guard (`when=`) is optional. Here, the payload of `reviewed` chooses the target.
flow.transition(review, END, on=reviewed, when="payload.approved == true")
# `otherwise=True` marks the transition to use when no guard matches.
flow.transition(review, draft, on=reviewed, otherwise=True)
"""

_SCHEMAS = '''# {name}/schemas.py: the models. The context is the data of a token.
# A payload is the data of an event.
from __future__ import annotations

from pydantic import BaseModel


class Item(BaseModel):
    """The context of each token of `{name}`."""

    title: str
    verdict: Verdict | None = None


class Verdict(BaseModel):
    """The payload of the event `reviewed`."""

    approved: bool
    note: str = ""
'''


def flow_text(name: str) -> str:
    """The starter `flow.py` for workflow `name`."""
    return _FLOW.format(name=name, guide=GUIDE)


def schemas_text(name: str) -> str:
    """The starter `schemas.py`."""
    return _SCHEMAS.format(name=name)


def pyproject_text(folder: Path, checkout: str | None) -> str:
    """The starter `pyproject.toml`."""
    return project_file_text(
        folder, checkout, command="init workflow", imports="flow.py and schemas.py"
    )


@click.command("workflow")
@click.argument("name")
@click.option(
    "--stateous-path",
    "stateous_path",
    metavar="PATH",
    default=None,
    help="A local Stateous checkout; pyproject.toml then depends on it (editable).",
)
def init_workflow_command(name: str, stateous_path: str | None) -> None:
    """Write a starter workflow in the folder NAME, and compile it."""
    if not valid_name(name):
        raise StateousError(
            f"workflow name {name!r} is not valid: use a-z, 0-9, '_' and '-', starting with a "
            "letter, at most 64 characters"
        )
    folder = Path(name)
    if (folder / "flow.py").exists():
        raise StateousError(f"{name} already has flow.py: give a different name, or edit that file")
    checkout = _checkout(stateous_path) if stateous_path is not None else None
    lines = _write_starter(name, folder, checkout)
    for line in lines:
        click.echo(line)
    flow_path = os.path.join(name, "flow.py")
    compiled = compile_path(flow_path)
    graph_path = os.path.join(name, "build", f"{name}.json")
    write_graph_file(graph_path, compiled.text)
    click.echo(f"wrote    {graph_path}")
    click.echo("")
    click.echo("Next steps:")
    click.echo(f"  stateous serve {name}/build/{name}.json")
    click.echo(f"  stateous init supervisor {name}/flow.py {name}-supervisor")


def _write_starter(name: str, folder: Path, checkout: str | None) -> list[str]:
    """Write flow.py (always) and schemas.py / pyproject.toml unless present; the lines to print."""
    files = [
        ("flow.py", flow_text(name), True),
        ("schemas.py", schemas_text(name), False),
        ("pyproject.toml", None, False),
    ]
    lines: list[str] = []
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for filename, text, always in files:
            path = folder / filename
            shown = os.path.join(name, filename)
            if not always and path.exists():
                lines.append(f"kept     {shown}")
                continue
            content = text if text is not None else pyproject_text(folder, checkout)
            with open(path, "w", encoding="utf-8", newline="\n") as fh:
                fh.write(content)
            lines.append(f"wrote    {shown}")
    except OSError as exc:
        raise StateousError(f"cannot write {name}: {exc.strerror or exc}") from None
    return lines
