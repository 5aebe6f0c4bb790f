"""`compile --against`'s comparison of two graphs: each finding kind, exact lines."""

from __future__ import annotations

import json
from typing import Any

from stateous.compiler.against import Finding, blocks, compare
from stateous.model.graph import Graph, load_graph
from tests.support.graphs import DEV, ORDERS, SDLC, variant


def graph(doc: dict[str, Any]) -> Graph:
    return load_graph(json.dumps(doc))


def lines(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    return [f.line for f in compare(graph(old), graph(new))]


def test_the_same_graph_has_no_finding() -> None:
    assert compare(graph(SDLC), graph(variant(SDLC))) == []


def test_only_timeout_and_retries_changed() -> None:
    new = variant(SDLC)
    new["states"]["coding"]["timeout"] = "1d"
    del new["states"]["testing"]["timeout"]
    assert compare(graph(SDLC), graph(new)) == [
        Finding(
            "same_structure", "same structure: only timeout/retries changed (no migration needed)"
        )
    ]


def test_a_removed_state() -> None:
    new = variant(ORDERS)
    del new["states"]["review"]
    new["states"]["draft"]["emits"] = ["submitted"]
    new["events"] = {"submitted": {}}
    new["transitions"] = [
        {"from": "__start__", "to": "draft"},
        {"from": "draft", "to": "__end__", "on": "submitted"},
    ]
    found = compare(graph(ORDERS), graph(new))
    assert found == [
        Finding("changed", "state 'draft': changed (transitions of 'submitted' changed)"),
        Finding("removed", "state 'review': removed (tokens there need --map review=<state>)"),
    ]
    assert blocks(found)


def test_an_added_event_and_a_changed_payload() -> None:
    new = variant(ORDERS)
    new["events"]["withdrawn"] = {}
    new["states"]["draft"]["emits"] = ["submitted", "withdrawn"]
    new["transitions"].insert(2, {"from": "draft", "to": "__end__", "on": "withdrawn"})
    new["events"]["submitted"] = {"payload": "Verdict"}
    found = compare(graph(ORDERS), graph(new))
    assert found == [
        Finding(
            "changed",
            "state 'draft': changed (events: + 'withdrawn'; payload of 'submitted' changed)",
        )
    ]
    assert not blocks(found)


def test_a_removed_event_a_changed_guard_and_payload_model() -> None:
    new = variant(SDLC)
    new["states"]["coding"]["emits"] = ["done"]
    new["transitions"] = [t for t in new["transitions"] if t.get("on") != "stuck"]
    new["transitions"][3]["when"] = "count('failed') < 5"
    new["schemas"]["Tests"]["properties"]["skipped"] = {"default": 0, "type": "integer"}
    assert lines(SDLC, new) == [
        "state 'coding': changed (events: - 'stuck')",
        "state 'testing': changed (payload of 'passed' changed; payload of 'failed' changed; "
        "transitions of 'failed' changed)",
    ]


def test_a_renamed_model_of_the_same_shape_or_a_new_docstring_is_no_change() -> None:
    new = variant(ORDERS)
    new["schemas"]["Decision"] = new["schemas"].pop("Verdict")
    new["schemas"]["Decision"]["description"] = "Another docstring."
    new["schemas"]["Item"]["properties"]["verdict"]["anyOf"][0] = {"$ref": "#/schemas/Decision"}
    new["events"]["reviewed"]["payload"] = "Decision"
    assert graph(new).structure != graph(ORDERS).structure
    assert lines(ORDERS, new) == []


def test_a_changed_into_is_a_changed_payload() -> None:
    new = variant(ORDERS)
    new["events"]["reviewed"]["into"] = "decision"
    new["schemas"]["Item"]["properties"]["decision"] = new["schemas"]["Item"]["properties"].pop(
        "verdict"
    )
    assert lines(ORDERS, new) == [
        "state 'review': changed (payload of 'reviewed' changed)",
        "context: field 'decision' added (default None)",
        "context: field 'verdict' removed",
    ]


def test_context_lines_after_the_states() -> None:
    new = variant(ORDERS)
    del new["states"]["review"]
    new["events"] = {"submitted": {}}
    new["transitions"] = [
        {"from": "__start__", "to": "draft"},
        {"from": "draft", "to": "__end__", "on": "submitted"},
    ]
    item = new["schemas"]["Item"]
    item["properties"] = {
        "priority": {"type": "integer"},
        "title": {"type": "integer"},
        "size": {"default": 1, "type": "integer"},
        "verdict": item["properties"]["verdict"],
    }
    item["required"] = ["priority", "title", "size"]
    found = compare(graph(ORDERS), graph(new))
    assert [(f.kind, f.line) for f in found] == [
        ("changed", "state 'draft': changed (transitions of 'submitted' changed)"),
        ("removed", "state 'review': removed (tokens there need --map review=<state>)"),
        (
            "context",
            "context: field 'priority' is required and has no default "
            """(tokens need --context '{"priority": ...}')""",
        ),
        ("context", "context: field 'title' changed type (str → int)"),
        ("field", "context: field 'size' added (default 1)"),
    ]


def test_a_context_change_alone_blocks() -> None:
    new = variant(SDLC)
    new["schemas"]["Ticket"]["properties"]["repo"] = {"type": "array", "items": {"type": "string"}}
    found = compare(graph(SDLC), graph(new))
    assert found == [Finding("context", "context: field 'repo' changed type (str → list)")]
    assert blocks(found)


def test_an_optional_field_made_required_without_default() -> None:
    old = variant(SDLC)
    old["schemas"]["Ticket"]["properties"]["owner"] = {
        "anyOf": [{"type": "string"}, {"type": "null"}]
    }
    new = variant(SDLC)
    new["schemas"]["Ticket"]["properties"]["owner"] = {"type": "string"}
    new["schemas"]["Ticket"]["required"] = ["repo", "owner"]
    assert lines(old, new) == [
        """context: field 'owner' is required and has no default (tokens need --context '{"owner": ...}')"""
    ]
    optional = variant(old)
    optional["schemas"]["Ticket"]["properties"]["owner"]["default"] = None
    assert lines(optional, new) == ["context: field 'owner' changed type (str | None → str)"]


def test_a_change_inside_a_child_workflow_is_the_parallel_state_changed() -> None:
    new = variant(DEV)
    new["workflows"]["design-review"]["transitions"][1]["to"] = "look"
    new["workflows"]["security-review"]["states"]["triage"]["timeout"] = "2h"
    assert lines(DEV, new) == ["state 'reviews': changed (child workflows changed)"]


def test_join_and_inputs_of_a_parallel_state() -> None:
    new = variant(DEV)
    new["states"]["reviews"]["join"] = "any"
    new["states"]["reviews"]["inputs"] = ["repo"]
    new["schemas"]["Ok"]["properties"]["ok"] = {"type": "string"}
    assert lines(DEV, new) == [
        "state 'reviews': changed (join changed; inputs changed; child workflows changed)"
    ]


def test_a_new_state_alone_is_nothing_to_meet() -> None:
    new = variant(SDLC)
    new["states"]["shipping"] = {"emits": []}
    new["transitions"][1]["to"] = "shipping"
    new["transitions"].insert(2, {"from": "shipping", "to": "testing", "on": "timeout"})
    new["states"]["shipping"]["timeout"] = "1m"
    assert lines(SDLC, new) == ["state 'coding': changed (transitions of 'done' changed)"]
