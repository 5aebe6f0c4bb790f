"""docs/reference/authoring.md names every argument of the authoring API and every field of the
graph file, so that the reference cannot fall behind the code."""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from stateous.compiler.document import build_document
from stateous.compiler.schemas import SchemaSet
from stateous.model.authoring import (
    BUILT_IN_EVENTS,
    END,
    NAME_PATTERN,
    START,
    STARTED,
    Workflow,
)
from stateous.model.durations import MAX_DURATION_SECONDS
from stateous.model.guards import BRANCH_FIELDS

ROOT = Path(__file__).resolve().parents[3]
PAGE = ROOT / "docs" / "reference" / "authoring.md"
GRAPH_FILES = sorted(ROOT.glob("examples/*/build/*.json"))


def page() -> str:
    return PAGE.read_text(encoding="utf-8")


def section(title: str) -> str:
    """The text under the heading `### title` (or `## title`), up to the next heading."""
    text = page()
    for marker in (f"\n### {title}\n", f"\n## {title}\n"):
        if marker in text:
            rest = text.split(marker, 1)[1]
            return rest.split("\n## ", 1)[0].split("\n### ", 1)[0]
    raise AssertionError(f"docs/reference/authoring.md has no section {title!r}")


def arguments(function: Callable[..., Any]) -> list[str]:
    return [name for name in inspect.signature(function).parameters if name != "self"]


@pytest.mark.parametrize(
    ("function", "title"),
    [
        (Workflow.__init__, "`Workflow(name, *, context=None)`"),
        (
            Workflow.state,
            '`flow.state(name, *, timeout=None, retries=0, parallel=(), join="all", inputs=(), into=None)`',
        ),
        (Workflow.event, "`flow.event(name, *, payload=None, into=None)`"),
        (
            Workflow.transition,
            "`flow.transition(source, target, *, on=None, when=None, otherwise=False)`",
        ),
    ],
)
def test_every_argument_has_a_row_in_its_section(function: Callable[..., Any], title: str) -> None:
    text = section(title)
    missing = [name for name in arguments(function) if f"| `{name}` |" not in text]
    assert missing == []


def test_each_heading_shows_the_signature_with_its_defaults() -> None:
    """The headings above are the signatures: a new argument or a new default changes them."""
    for function, name in (
        (Workflow.state, "flow.state"),
        (Workflow.event, "flow.event"),
        (Workflow.transition, "flow.transition"),
    ):
        # Written without annotations: `(name, *, timeout=None, ...)`.
        parts: list[str] = []
        for parameter in inspect.signature(function).parameters.values():
            if parameter.name == "self":
                continue
            if parameter.kind is inspect.Parameter.KEYWORD_ONLY and "*" not in parts:
                parts.append("*")
            default = parameter.default
            if default is inspect.Parameter.empty:
                parts.append(parameter.name)
            else:
                value = '"all"' if default == "all" else repr(default)
                parts.append(f"{parameter.name}={value}")
        assert f"### `{name}({', '.join(parts)})`" in page(), parts


def test_the_rules_of_names_durations_and_guards_are_the_codes() -> None:
    text = page()
    assert f"`{NAME_PATTERN.pattern}`" in text
    assert f"`{MAX_DURATION_SECONDS // 86400}d`" in text
    for event in (*BUILT_IN_EVENTS, STARTED):
        assert f"`{event}`" in text, event
    for name in BRANCH_FIELDS:
        assert f"`{name}`" in section("Guards"), name
    assert "`flow.search(*keys)`" in text


def walk_graph(doc: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """Each (section, key) of a graph document: top-level keys and the keys of each entry."""
    for key in doc:
        yield "Top-level fields", key
    bodies = [doc, *doc.get("workflows", {}).values()]
    for body in bodies:
        for key in body:
            yield "Top-level fields", key
        for entry in body["states"].values():
            yield from (("State entries", key) for key in entry)
        for entry in body["events"].values():
            yield from (("Event entries", key) for key in entry)
        for entry in body["transitions"]:
            yield from (("Transition entries", key) for key in entry)


def test_the_examples_have_graph_files() -> None:
    names = {path.name for path in GRAPH_FILES}
    assert {"orders.json", "sdlc.json", "dev.json"} <= names


@pytest.mark.parametrize("path", GRAPH_FILES, ids=lambda p: p.name)
def test_every_field_of_a_compiled_graph_file_has_a_row(path: Path) -> None:
    doc = json.loads(path.read_text(encoding="utf-8"))
    missing = sorted(
        {(title, key) for title, key in walk_graph(doc) if f"| `{key}` |" not in section(title)}
    )
    assert missing == []


def test_the_fields_of_a_searchable_and_a_parallel_graph_have_rows() -> None:
    """`search` and `workflows` are written only when declared: a graph with both shows them."""
    flow = Workflow("top")
    flow.search("a")
    child = Workflow("child")
    step = child.state("step", timeout="1m", retries=1)
    child.transition(START, step)
    child.transition(step, END, on="timeout", when="ctx['a'] == 1")
    child.transition(step, END, on="timeout", otherwise=True)
    fan = flow.state("fan", parallel=[child], join="any", inputs=["a"], into="b")
    flow.transition(START, fan)
    flow.transition(fan, END, on="joined")
    doc = build_document(flow, [flow, child], SchemaSet([]))
    assert {"workflows", "search"} <= set(doc)
    missing = sorted(
        {(title, key) for title, key in walk_graph(doc) if f"| `{key}` |" not in section(title)}
    )
    assert missing == []
