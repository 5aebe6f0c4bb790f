"""docs/reference/http-api.md against what a real `serve` answers: every route of its OpenAPI
document is a row of the page's route table (and no row names a route the server lacks), and
every refusal code the server can answer is a row of the page's refusal table, with each status
the document gives it."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import stateous.control as control
from tests.support import ServeProcess, serve_process, sqlite_url

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "reference" / "http-api.md"
SDLC = ROOT / "examples" / "sdlc" / "build" / "sdlc.json"
#: The functions and classes that make a refusal from a code given as their first argument.
MAKERS = {"Refusal", "RecordedRefusal", "not_found", "conflict", "invalid", "rejected", "reject"}
CODE = re.compile(r"^[a-z]+(?:_[a-z]+)*$")


def section(title: str) -> str:
    text = PAGE.read_text(encoding="utf-8")
    return text.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def shape(path: str) -> str:
    """A path without its query, every `{parameter}` written `{}`."""
    return re.sub(r"\{[^}]*\}", "{}", path.split("?", 1)[0])


def page_routes() -> list[tuple[str, str]]:
    """(method, path shape) of each row of the route table, in order."""
    rows = re.findall(r"^\| `([A-Z]+) (/[^`]*)` \|", section("Routes"), re.MULTILINE)
    return [(method.lower(), shape(path)) for method, path in rows]


def page_refusals() -> dict[str, set[int]]:
    """Each code of the refusal table with the statuses its rows give it."""
    table: dict[str, set[int]] = {}
    for code, statuses in re.findall(r"^\| `([a-z_]+)` \| ([\d, ]+) \|", section("Refusals"), re.M):
        table.setdefault(code, set()).update(int(s) for s in statuses.split(","))
    return table


def document_refusals(doc: dict[str, Any]) -> set[tuple[str, int]]:
    """(code, status) of every code the document's refusal answers name in backquotes."""
    found: set[tuple[str, int]] = set()
    for item in doc["paths"].values():
        for op in item.values():
            for status, answer in op["responses"].items():
                if int(status) >= 400:
                    words = re.findall(r"`([a-z_]+)`", answer.get("description", ""))
                    found |= {(word, int(status)) for word in words if CODE.match(word)}
    return found


def code_refusals() -> set[str]:
    """Every code the control plane's source passes to a maker of refusals, or answers from
    the edge as `(status, code, sentence)`, or names as `code = "..."` for one."""
    found: set[str] = set()
    for module in Path(control.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
            found |= _codes_in(node)
    return found


def _codes_in(node: ast.AST) -> set[str]:
    if isinstance(node, ast.Call):
        func = node.func
        name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
        if name in MAKERS or (name == "__init__" and node.args):
            return {code for arg in node.args if (code := _code(arg)) is not None}
    if isinstance(node, ast.Tuple) and len(node.elts) == 3:
        status, code = node.elts[0], _code(node.elts[1])
        if isinstance(status, ast.Constant) and status.value in range(400, 600) and code:
            return {code}
    return set()


def _code(arg: ast.expr) -> str | None:
    """The literal if it reads as a refusal code (a sentence, with spaces, does not)."""
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and CODE.match(arg.value):
        return arg.value
    return None


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    folder = tmp_path_factory.mktemp("reference")
    with serve_process(SDLC, sqlite_url(folder), cwd=folder) as running:
        yield running
    for pipe in (running.process.stdout, running.process.stderr):
        if pipe is not None:
            pipe.close()


@pytest.fixture(scope="module")
def document(served: ServeProcess) -> dict[str, Any]:
    answer = httpx.get(f"{served.url}/schema/openapi.json", timeout=10)
    assert answer.status_code == 200
    doc: dict[str, Any] = answer.json()
    return doc


def test_the_route_table_is_the_documents_routes(document: dict[str, Any]) -> None:
    served = sorted(
        (method, shape(path)) for path, item in document["paths"].items() for method in item
    )
    rows = page_routes()
    assert len(rows) == len(set(rows)), "a route has two rows"
    assert sorted(rows) == served
    assert ("post", "/tokens/{}/events/{}") in rows and len(rows) >= 47


def test_every_refusal_of_the_document_is_in_the_table_with_its_status(
    document: dict[str, Any],
) -> None:
    table = page_refusals()
    named = document_refusals(document)
    assert ("method_not_allowed", 405) in named and ("unexpected", 500) in named
    assert (
        sorted((code, status) for code, status in named if status not in table.get(code, ())) == []
    )


def test_every_refusal_the_source_makes_is_in_the_table() -> None:
    made = code_refusals()
    # The makers are found: a code of each kind (a helper, the edge's tuple, errors.py's class).
    assert {
        "token_not_found",
        "method_not_allowed",
        "database_busy",
        "forbidden",
        "event_not_allowed",
    } <= made
    assert sorted(made - set(page_refusals())) == []
