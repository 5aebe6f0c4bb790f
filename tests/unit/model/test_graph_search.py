"""A graph file's `search` keys: `Graph.search`, the reader's checks, the hashes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from stateous.model.canonical import checksum, strip_tuning, structure
from stateous.model.graph import GraphFileError, load_graph, read_graph_file
from tests.unit.model import reference as ref


def sdlc(**extra: Any) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(ref.SDLC_GRAPH)
    doc.update(extra)
    return doc


def refused(doc: Any) -> str:
    with pytest.raises(GraphFileError) as info:
        load_graph(json.dumps(doc))
    return info.value.message


def test_no_search_is_empty_and_the_vectors_hold() -> None:
    graph = load_graph(ref.SDLC_GRAPH)
    assert graph.search == ()
    assert graph.checksum == ref.SDLC_CHECKSUM
    assert graph.structure == ref.SDLC_STRUCTURE


def test_search_is_read_sorted_and_hashed_into_the_checksum_only() -> None:
    doc = sdlc()
    doc["schemas"]["Ticket"]["properties"]["customer"] = {"type": "string"}
    doc["search"] = ["repo", "customer"]
    graph = load_graph(json.dumps(doc))
    assert graph.search == ("customer", "repo")
    without = {k: v for k, v in doc.items() if k != "search"}
    assert graph.checksum == checksum(doc) != checksum(without)
    assert graph.structure == structure(without)
    assert graph.main.structure == graph.structure
    assert load_graph(json.dumps(sdlc(search=[]))).search == ()


def test_strip_tuning_drops_search_and_leaves_the_original() -> None:
    doc = sdlc(search=["repo"])
    stripped = strip_tuning(doc)
    assert "search" not in stripped
    assert doc["search"] == ["repo"]
    assert structure(doc) == ref.SDLC_STRUCTURE


@pytest.mark.parametrize(
    ("search", "message"),
    [
        ("repo", "the graph file's 'search' is not a list of context fields, by name"),
        ({"repo": 1}, "the graph file's 'search' is not a list of context fields, by name"),
        (["repo", 1], "the graph file's 'search' is not a list of context fields, by name"),
        (None, "the graph file's 'search' is not a list of context fields, by name"),
        (["repo", "repo"], "the graph file's 'search' names 'repo' twice"),
        (
            ["repo", "customer"],
            "the graph file's 'search' names 'customer', which the context model 'Ticket' "
            "does not have",
        ),
        (
            ["passed"],  # a property of a payload model, not of the context model
            "the graph file's 'search' names 'passed', which the context model 'Ticket' "
            "does not have",
        ),
    ],
)
def test_refusals(search: Any, message: str) -> None:
    assert refused(sdlc(search=search)) == message


def test_a_graph_without_a_context_model_has_no_search_keys() -> None:
    doc = sdlc(search=["repo"])
    del doc["context"]
    assert refused(doc) == (
        "the graph file's 'search' names 'repo', but the workflow has no context model"
    )


def test_read_graph_file_wraps_the_refusal(tmp_path: Path) -> None:
    path = tmp_path / "sdlc.json"
    path.write_text(json.dumps(sdlc(search=["nope"])))
    with pytest.raises(GraphFileError) as info:
        read_graph_file(path)
    assert info.value.message == (
        f"{path} is not a graph file: the graph file's 'search' names 'nope', which the "
        "context model 'Ticket' does not have"
    )
