"""What a user reads never names a document the user does not have: no help text of the CLI, no
key of the console, no message, log line or metric's help, and nothing of the OpenAPI document
says the word `spec` followed by a document's number. A rule is said in words where it applies."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import re
from collections.abc import Iterator
from pathlib import Path

import click
import httpx
import pytest
from click.testing import CliRunner
from textual.binding import Binding

import stateous.tui
from stateous.cli.main import cli
from tests.support import serve_process, sqlite_url

ROOT = Path(__file__).resolve().parents[2]
ORDERS = ROOT / "examples" / "orders" / "build" / "orders.json"
POINTER = re.compile(r"\bspecs? \d")


def commands(group: click.Group, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """The words of each command under `group` (groups too, lazy ones loaded)."""
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None, name
        yield (*path, name)
        if isinstance(command, click.Group):
            yield from commands(command, (*path, name))


@pytest.mark.parametrize("words", [(), *commands(cli)], ids=lambda words: " ".join(words) or "-")
def test_no_help_text_names_a_document(words: tuple[str, ...]) -> None:
    shown = CliRunner().invoke(cli, [*words, "--help"], terminal_width=100)
    assert shown.exit_code == 0, shown.output
    assert POINTER.search(shown.output) is None, shown.output


def bindings() -> Iterator[tuple[str, Binding]]:
    """Each key of each screen and widget of the console: (`Screen.key`, the binding)."""
    for module in pkgutil.walk_packages(stateous.tui.__path__, "stateous.tui."):
        loaded = importlib.import_module(module.name)
        for name, kind in inspect.getmembers(loaded, inspect.isclass):
            if kind.__module__ != loaded.__name__:
                continue
            for binding in getattr(kind, "BINDINGS", ()):
                if isinstance(binding, Binding):
                    yield f"{name}.{binding.key}", binding


def test_the_walk_finds_the_consoles_keys() -> None:
    found = dict(bindings())
    assert {"TokenScreen.M", "TokensScreen.M"} <= set(found)
    assert len(found) > 50


@pytest.mark.parametrize(("name", "binding"), list(bindings()), ids=lambda x: str(x))
def test_no_key_names_a_document(name: str, binding: Binding) -> None:
    for text in (binding.description, binding.tooltip):
        assert POINTER.search(text or "") is None, (name, text)


def texts(path: Path) -> Iterator[tuple[int, str]]:
    """Each string of the module at `path` that its code uses (a message, a log line, a help, a
    field's description): every literal but the docstrings of modules, classes, functions and
    names, which are the code's documentation."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    documentation = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Expr)}
    for node in ast.walk(tree):
        # One condition, so that mypy narrows `node` to a constant with a text.
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in documentation
        ):
            yield node.lineno, node.value


SOURCES = sorted(p for folder in ("stateous", "tui") for p in (ROOT / folder).rglob("*.py"))


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_message_names_a_document(path: Path) -> None:
    if path.is_relative_to(ROOT / "stateous" / "tui"):
        pytest.skip("the console's sources are read under tui/")
    found = [(line, text) for line, text in texts(path) if POINTER.search(text)]
    assert found == []


def test_the_check_of_messages_can_fail(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    # The word is put in by a name so that this file holds no pointer itself.
    word = "spec"
    module.write_text(
        f'"""Module ({word} 1)."""\nX = 1\n"""X ({word} 2)."""\nlog("refused ({word} 3 §1)")\n'
    )
    found = [text for _, text in texts(module) if POINTER.search(text)]
    assert found == [f"refused ({word} 3 §1)"]


def test_the_openapi_document_names_no_document(tmp_path: Path) -> None:
    with serve_process(ORDERS, sqlite_url(tmp_path), cwd=tmp_path) as served:
        document = httpx.get(f"{served.url}/schema/openapi.json", timeout=10).text
    assert POINTER.findall(document) == []
