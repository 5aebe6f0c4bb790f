"""Reading a graph file: each check a reader makes, and its message."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from stateous.model.graph import GraphFileError, load_graph, read_graph_file
from tests.unit.model import reference as ref


def sdlc() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(ref.SDLC_GRAPH)
    return doc


def parallel_doc() -> dict[str, Any]:
    return {
        "stateous": 1,
        "workflow": "dev",
        "states": {
            "coding": {"emits": ["done"]},
            "reviews": {"parallel": ["look"], "join": "any", "inputs": ["repo"]},
        },
        "events": {"done": {}},
        "transitions": [
            {"from": "__start__", "to": "coding"},
            {"from": "coding", "to": "reviews", "on": "done"},
            {
                "from": "reviews",
                "to": "__end__",
                "on": "joined",
                "when": "branches.all(status == 'completed')",
            },
        ],
        "workflows": {
            "look": {
                "states": {"l": {"timeout": "1h", "emits": ["seen"]}},
                "events": {"seen": {}},
                "transitions": [
                    {"from": "__start__", "to": "l"},
                    {"from": "l", "to": "__end__", "on": "seen"},
                ],
            }
        },
        "schemas": {},
    }


def test_reads_sdlc() -> None:
    graph = load_graph(ref.SDLC_GRAPH)
    assert graph.workflow == "sdlc"
    assert graph.checksum == ref.SDLC_CHECKSUM
    assert graph.structure == ref.SDLC_STRUCTURE
    body = graph.bodies["sdlc"]
    assert graph.main is body
    assert body.context == "Ticket"
    coding = body.states["coding"]
    assert (coding.timeout, coding.timeout_seconds, coding.retries, coding.emits) == (
        "6h",
        21600,
        2,
        ("done", "stuck"),
    )
    assert not coding.is_parallel
    assert body.events["passed"].payload == "Tests"
    assert body.events["done"].payload is None
    start = body.transitions_from("__start__", "__started__")
    assert [(t.source, t.target, t.on, t.guard) for t in start] == [
        ("__start__", "coding", "__started__", None)
    ]
    failed = body.transitions_from("testing", "failed")
    assert [t.target for t in failed] == ["coding", "__end__"]
    assert failed[0].when == "count('failed') < 3" and failed[0].guard is not None
    assert failed[1].otherwise and failed[1].guard is None
    assert body.transitions_from("testing", "nothing") == []
    assert set(graph.schemas) == {"Tests", "Ticket"}


def test_reads_children() -> None:
    graph = load_graph(json.dumps(parallel_doc()))
    reviews = graph.main.states["reviews"]
    assert (reviews.parallel, reviews.join, reviews.inputs, reviews.is_parallel) == (
        ("look",),
        "any",
        ("repo",),
        True,
    )
    assert graph.bodies["look"].states["l"].timeout_seconds == 3600
    assert graph.main.transitions_from("reviews", "joined")[0].guard is not None


def _refused(doc: Any) -> str:
    text = doc if isinstance(doc, str) else json.dumps(doc)
    with pytest.raises(GraphFileError) as info:
        load_graph(text)
    return info.value.message


def test_not_json() -> None:
    assert _refused('{\n  "a": ') == "the graph file is not valid JSON: Expecting value at line 2"
    assert _refused('{"a": NaN}').startswith("the graph file is not valid JSON: ")


def test_not_an_object() -> None:
    assert _refused("[1]") == "the graph file is not a JSON object"


@pytest.mark.parametrize(
    "key", ["stateous", "workflow", "states", "events", "transitions", "schemas"]
)
def test_missing_keys_in_order(key: str) -> None:
    doc = sdlc()
    keys = ["stateous", "workflow", "states", "events", "transitions", "schemas"]
    for later in keys[keys.index(key) :]:
        del doc[later]
    assert _refused(doc) == f"the graph file has no {key!r}; run `stateous compile` again"


@pytest.mark.parametrize("value", [2, "1", True, 1.0])
def test_format(value: Any) -> None:
    doc = sdlc()
    doc["stateous"] = value
    assert (
        _refused(doc)
        == f"the graph file has format {value!r}, but this Stateous reads format 1; run `stateous compile` again"
    )


def test_workflows_not_an_object() -> None:
    doc = sdlc()
    doc["workflows"] = []
    doc["states"] = []  # checked later
    assert _refused(doc) == "the graph file's 'workflows' is not an object"


def test_child_body_missing_key() -> None:
    doc = parallel_doc()
    del doc["workflows"]["look"]["events"]
    assert _refused(doc) == "the graph file's workflow 'look' has no 'events'"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"states": []}, "the graph file's 'states' is not an object"),
        ({"states": {"coding": 1}}, "the graph file's state 'coding' is not an object"),
        (
            {"states": {"coding": {"timeout": "2 hours"}}},
            "the graph file's state 'coding': '2 hours' is not a duration; write e.g. '30s', '10m', '2h', '1d'",
        ),
        (
            {"states": {"coding": {"timeout": "3651d"}}},
            "the graph file's state 'coding': '3651d' is too long; a duration is at most 3650d",
        ),
        (
            {"states": {"coding": {"timeout": 30}}},
            "the graph file's state 'coding': 30 is not a duration; write e.g. '30s', '10m', '2h', '1d'",
        ),
        (
            {"states": {"coding": {"retries": -1}}},
            "the graph file's state 'coding': retries is a whole number of 0 or more, not -1",
        ),
        (
            {"states": {"coding": {"retries": True}}},
            "the graph file's state 'coding': retries is a whole number of 0 or more, not True",
        ),
        (
            {"states": {"coding": {"retries": "2"}}},
            "the graph file's state 'coding': retries is a whole number of 0 or more, not '2'",
        ),
        (
            {"states": {"coding": {"inputs": "repo"}}},
            "the graph file's state 'coding': 'inputs' is a list of context fields, by name",
        ),
        (
            {"states": {"coding": {"inputs": [1]}}},
            "the graph file's state 'coding': 'inputs' is a list of context fields, by name",
        ),
        (
            {"states": {"coding": {"parallel": []}}},
            "the graph file's state 'coding': 'parallel' names a workflow that 'workflows' does not have",
        ),
        (
            {"states": {"coding": {"parallel": "x"}}},
            "the graph file's state 'coding': 'parallel' names a workflow that 'workflows' does not have",
        ),
        (
            {"states": {"coding": {"parallel": ["x"]}}},
            "the graph file's state 'coding': 'parallel' names a workflow that 'workflows' does not have",
        ),
        (
            {"states": {"coding": {"join": "some"}}},
            "the graph file's state 'coding': 'join' is 'all' or 'any'",
        ),
    ],
)
def test_state_checks(change: dict[str, Any], message: str) -> None:
    doc = sdlc()
    doc.update(change)
    assert _refused(doc) == message


def test_checks_in_order_within_a_state() -> None:
    doc = sdlc()
    doc["states"] = {"coding": {"timeout": "x", "retries": -1, "join": "x"}}
    assert "is not a duration" in _refused(doc)


def test_child_state_checked_after_main() -> None:
    doc = parallel_doc()
    doc["workflows"]["look"]["states"]["l"]["retries"] = -2
    assert (
        _refused(doc)
        == "the graph file's state 'l': retries is a whole number of 0 or more, not -2"
    )


def test_bad_guard_is_reported() -> None:
    doc = sdlc()
    doc["transitions"][4]["when"] = "count('failed') + 1 < 3"
    assert (
        _refused(doc)
        == "guard \"count('failed') + 1 < 3\": arithmetic is not part of the guard language"
    )


def test_read_graph_file_wraps(tmp_path: Path) -> None:
    missing = tmp_path / "nope.json"
    with pytest.raises(GraphFileError) as info:
        read_graph_file(missing)
    assert info.value.message == f"cannot read the graph file {missing}: No such file or directory"
    bad = tmp_path / "bad.json"
    bad.write_text("[]")
    with pytest.raises(GraphFileError) as info:
        read_graph_file(str(bad))
    assert info.value.message == f"{bad} is not a graph file: the graph file is not a JSON object"
    good = tmp_path / "sdlc.json"
    good.write_text(ref.SDLC_GRAPH)
    assert read_graph_file(good).checksum == ref.SDLC_CHECKSUM
