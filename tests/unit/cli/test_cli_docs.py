"""The command line's reference (docs/reference/cli.md and cli-tokens.md) names every command of
the CLI and every option of each command."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import click
import pytest

from stateous.cli.main import cli

REFERENCE = Path(__file__).resolve().parents[3] / "docs" / "reference"
PAGES = (REFERENCE / "cli.md", REFERENCE / "cli-tokens.md")


def doc_text() -> str:
    """The reference pages of the command line, one after the other."""
    return "\n".join(page.read_text(encoding="utf-8") for page in PAGES)


def commands(group: click.Group, path: tuple[str, ...] = ()) -> Iterator[tuple[str, click.Command]]:
    """Each command under `group`, groups too, lazy ones loaded: (`token pause`, its command)."""
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None, name
        yield " ".join((*path, name)), command
        if isinstance(command, click.Group):
            yield from commands(command, (*path, name))


COMMANDS = dict(commands(cli))
OPTIONS = sorted(
    {
        (name, option)
        for name, command in COMMANDS.items()
        for param in command.params
        if isinstance(param, click.Option)
        for option in (*param.opts, *param.secondary_opts)
        if option.startswith("--") and option != "--help"
    }
)


def test_the_walk_loads_the_lazy_commands() -> None:
    assert {"bulk", "bulk list", "inbox", "stats", "token pause", "supervise"} <= set(COMMANDS)
    assert ("supervise", "--log-level") in OPTIONS
    assert ("token pause", "--where") in OPTIONS


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_each_command_is_in_the_doc(name: str) -> None:
    # Written as `stateous token pause` or in a heading as `token pause`.
    text = doc_text()
    assert f"`{name}" in text or f"stateous {name}" in text, name


@pytest.mark.parametrize(("name", "option"), OPTIONS)
def test_each_option_is_in_the_doc(name: str, option: str) -> None:
    text = doc_text()
    assert f"`{option}" in text or f"[{option}" in text or f" {option}" in text, (name, option)
