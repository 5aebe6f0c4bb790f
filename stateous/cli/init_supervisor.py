"""`stateous init supervisor SOURCE FOLDER [--stateous-path PATH] [--checksum sha256:…]`: write a
supervisor's folder for one version of the workflow."""

from __future__ import annotations

import json
import os
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click
import httpx

import stateous
from stateous.compiler.build import compile_flow
from stateous.compiler.contract import ContractError, contract_text
from stateous.compiler.stubs import StubPlan, plan_stubs, stub_text
from stateous.model.errors import StateousError
from stateous.model.graph import GraphFileError, load_graph

__all__ = [
    "init_supervisor_command",
    "project_file_text",
    "project_name",
    "pyproject_text",
    "yaml_text",
]

DEFAULT_URL = "http://127.0.0.1:8080"


class InitError(StateousError):
    """`init supervisor` cannot go on; the message is the sentence after `error: `."""

    code = "init_supervisor"


@click.command("supervisor")
@click.argument("source")
@click.argument("folder")
@click.option("--stateous-path", "stateous_path", default=None, metavar="PATH")
@click.option(
    "--checksum",
    default=None,
    metavar="sha256:…",
    help="The version to write the folder for, from a control plane's URL: its checksum, or "
    "the first hex digits of it that `stateous versions` shows; default: the version new "
    "tokens start on.",
)
def init_supervisor_command(
    source: str, folder: str, stateous_path: str | None, checksum: str | None
) -> None:
    """Write a supervisor's folder, from a control plane, a graph file or a flow.py."""
    checkout = _checkout(stateous_path) if stateous_path is not None else None
    document, url = _document(source, checksum)
    try:
        contract = contract_text(document)
    except ContractError as exc:
        raise InitError(f"cannot write a contract for the workflow of {source}: {exc}") from None
    try:
        _write(Path(folder), folder, document, contract, url, checkout)
    except OSError as exc:
        raise InitError(f"cannot write {folder}: {exc.strerror or exc}") from None
    click.echo("")
    click.echo(f"Write the routines, then run: stateous supervise {folder}")


def _checkout(path: str) -> str:
    folder = Path(path).expanduser()
    try:
        data = tomllib.loads((folder / "pyproject.toml").read_text(encoding="utf-8"))
        ok = data.get("project", {}).get("name") == "stateous"
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, AttributeError):
        ok = False
    if not ok:
        raise InitError(
            f"--stateous-path {path} is not a Stateous checkout: give the folder that holds "
            "its pyproject.toml"
        )
    return folder.resolve().as_posix()


# --- the graph document -----------------------------------------------------------------------


def _document(source: str, checksum: str | None = None) -> tuple[Mapping[str, Any], str]:
    """The graph document of SOURCE (with `checksum`, that version's) and the URL for
    `stateous.yaml`."""
    if source.startswith(("http://", "https://")):
        return _fetch(source, checksum), source
    if checksum is not None:
        raise InitError(
            f"--checksum takes a version from a control plane: give its URL as SOURCE "
            f"instead of {source}"
        )
    path = Path(source)
    if not path.exists():
        raise InitError(
            f"{source} does not exist: give a control plane's URL (http:// or https://), "
            "a graph file or a flow.py"
        )
    if path.is_file() and path.suffix == ".py":
        return _compile(path), DEFAULT_URL
    if path.is_file() and path.suffix == ".json":
        return _read_graph_file(source, path), DEFAULT_URL
    raise InitError(f"{source} is not a graph file (.json) or a flow.py")


def _fetch(source: str, checksum: str | None = None) -> Mapping[str, Any]:
    """`GET /workflow` (with `checksum`: `?checksum=`, that version's) of the control plane."""
    from stateous.supervisor.folder import url_problem

    def fail(reason: str) -> InitError:
        return InitError(f"cannot fetch the workflow from {source}: {reason}")

    problem = url_problem(source)
    if problem is not None:
        raise fail(problem)
    if checksum is not None:
        checksum = _full_checksum(source, checksum)
    params = {} if checksum is None else {"checksum": checksum}
    try:
        answer = httpx.get(source.rstrip("/") + "/workflow", params=params, timeout=30.0)
    except httpx.HTTPError as exc:
        raise fail(str(exc) or type(exc).__name__) from None
    if answer.status_code != 200:
        try:
            body = answer.json()
        except ValueError:
            body = None
        if isinstance(body, dict) and body.get("code") == "version_not_found":
            raise InitError(
                f"{source} never served the version {checksum}: `stateous versions --url "
                f"{source}` lists the versions on record"
            )
        raise fail(_refusal(answer.status_code, body))
    try:
        graph = load_graph(answer.text)
    except GraphFileError as exc:
        raise fail(exc.message) from None
    if checksum is not None and graph.checksum != checksum:
        # A control plane of before versions ignores `checksum=` and answers its own graph.
        raise fail(f"it answered the version {graph.checksum}, not {checksum}")
    return graph.doc


def _full_checksum(source: str, given: str) -> str:
    """The checksum `--checksum` names: all its digits, or a prefix of a version on record, as
    `stateous versions` shows it (with or without `sha256:`), looked up as `token migrate --to`
    does; InitError for a prefix that names none or several."""
    from stateous.cli.version_names import resolve
    from stateous.client import Client, ClientError
    from stateous.model.environment import environment

    wanted = given.lower().removeprefix("sha256:")
    unknown = (
        f"{source} never served a version that starts with {wanted}: "
        f"`stateous versions --url {source}` lists the versions on record"
    )
    try:
        with Client(source, auth_token=environment().auth_token) as client:
            return resolve(client, given, unknown=unknown)
    except ClientError as exc:
        raise InitError(f"cannot fetch the workflow from {source}: {exc}") from None
    except StateousError as exc:
        raise InitError(exc.message) from None


def _refusal(status: int, body: object) -> str:
    if isinstance(body, dict) and isinstance(body.get("code"), str):
        return f"it answered {status}, {body['code']}: {body.get('error')}"
    return f"it answered {status}"


def _read_graph_file(source: str, path: Path) -> Mapping[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise InitError(f"cannot read {source}: {reason}") from None
    try:
        return load_graph(text).doc
    except GraphFileError as exc:
        verb = "read" if exc.message.startswith("the graph file is not valid JSON") else "use"
        raise InitError(f"cannot {verb} {source}: {exc.message}") from None


def _compile(path: Path) -> Mapping[str, Any]:
    """Compile `flow.py` in memory with the steps and errors of `stateous compile`."""
    return compile_flow(path)


# --- writing the folder -----------------------------------------------------------------------


def _write(
    folder: Path,
    shown: str,
    document: Mapping[str, Any],
    contract: str,
    url: str,
    checkout: str | None,
) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    plans = plan_stubs(document, folder)
    _write_text(folder / "contract.py", contract)
    click.echo(f"wrote    {os.path.join(shown, 'contract.py')}")
    for plan in plans:
        click.echo(_stub(folder, shown, plan))
    for name, text in (
        ("stateous.yaml", yaml_text(url)),
        ("pyproject.toml", pyproject_text(folder, checkout)),
    ):
        target = folder / name
        if target.exists():
            click.echo(f"kept     {os.path.join(shown, name)}")
        else:
            _write_text(target, text, new=True)
            click.echo(f"wrote    {os.path.join(shown, name)}")


def _stub(folder: Path, shown: str, plan: StubPlan) -> str:
    path = os.path.join(shown, plan.file_name)
    if plan.action == "kept":
        return f"kept     the routine of {plan.state.name!r}"
    if plan.action == "skipped":
        return f"skipped  {path}: the file exists and has no routine for {plan.state.name!r}"
    _write_text(folder / plan.file_name, stub_text(plan.state), new=True)
    return f"wrote    {path}" + (f" ({plan.why})" if plan.why else "")


def _write_text(path: Path, text: str, *, new: bool = False) -> None:
    with path.open("x" if new else "w", encoding="utf-8", newline="\n") as file:
        file.write(text)


def yaml_text(url: str) -> str:
    """The text of a new `stateous.yaml`, the URL as a JSON string."""
    return (
        "# A Stateous supervisor. Run it with: stateous supervise <this folder>\n"
        f"url: {json.dumps(url)}    # the control plane\n"
        "tasks: 4    # how many routines run at once\n"
        "# name: build-box-1    # optional; default: the host name\n"
    )


def _toml_string(text: str) -> str:
    out = []
    for char in text:
        if char in ('"', "\\"):
            out.append("\\" + char)
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\u{ord(char):04X}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def project_name(folder: Path) -> str:
    """The project name of a supervisor's folder."""
    name = re.sub(r"[^A-Za-z0-9._-]", "-", folder.resolve().name).strip("._-")
    return name or "supervisor"


def pyproject_text(folder: Path, checkout: str | None) -> str:
    """The text of a new `pyproject.toml` for the folder."""
    return project_file_text(folder, checkout, command="init supervisor", imports="your routines")


def project_file_text(folder: Path, checkout: str | None, *, command: str, imports: str) -> str:
    """A folder's own `pyproject.toml`, as `stateous <command>` writes it.

    `imports` names what the folder's code is (`your routines`, `flow.py and schemas.py`).
    """
    version = getattr(stateous, "__version__", None)
    requirement = f"stateous>={version}" if version else "stateous"
    text = (
        f"# Written by `stateous {command}`. This folder is a Python project of its own:\n"
        "# `uv sync` makes its environment (.venv), and `uv run stateous ...` runs in it.\n"
        f"# Add what {imports} import to `dependencies`.\n"
        "\n"
        "[project]\n"
        f"name = {_toml_string(project_name(folder))}\n"
        'version = "0.1.0"\n'
        'requires-python = ">=3.12"\n'
        f"dependencies = [{_toml_string(requirement)}]\n"
    )
    if checkout is not None:
        text += (
            "\n"
            "# A local checkout of Stateous: delete this table to use Stateous from PyPI.\n"
            "[tool.uv.sources]\n"
            f"stateous = {{ path = {_toml_string(checkout)}, editable = true }}\n"
        )
    return text
