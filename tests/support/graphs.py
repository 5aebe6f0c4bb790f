"""Graph files for tests: the orders starter (with `into=`) and sdlc."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

ORDERS: dict[str, Any] = {
    "stateous": 1,
    "workflow": "orders",
    "context": "Item",
    "states": {"draft": {"emits": ["submitted"]}, "review": {"emits": ["reviewed"]}},
    "events": {"submitted": {}, "reviewed": {"payload": "Verdict", "into": "verdict"}},
    "transitions": [
        {"from": "__start__", "to": "draft"},
        {"from": "draft", "to": "review", "on": "submitted"},
        {"from": "review", "to": "__end__", "on": "reviewed", "when": "payload.approved == true"},
        {"from": "review", "to": "draft", "on": "reviewed", "otherwise": True},
    ],
    "schemas": {
        "Item": {
            "description": "The context of each token of `orders`.",
            "properties": {
                "title": {"type": "string"},
                "verdict": {
                    "anyOf": [{"$ref": "#/schemas/Verdict"}, {"type": "null"}],
                    "default": None,
                },
            },
            "required": ["title"],
            "type": "object",
        },
        "Verdict": {
            "description": "The payload of the event `reviewed`.",
            "properties": {
                "approved": {"type": "boolean"},
                "note": {"default": "", "type": "string"},
            },
            "required": ["approved"],
            "type": "object",
        },
    },
}

SDLC: dict[str, Any] = {
    "stateous": 1,
    "workflow": "sdlc",
    "context": "Ticket",
    "states": {
        "coding": {"timeout": "6h", "retries": 2, "emits": ["done", "stuck"]},
        "testing": {"timeout": "1h", "emits": ["passed", "failed"]},
    },
    "events": {
        "done": {},
        "stuck": {},
        "passed": {"payload": "Tests"},
        "failed": {"payload": "Tests"},
    },
    "transitions": [
        {"from": "__start__", "to": "coding"},
        {"from": "coding", "to": "testing", "on": "done"},
        {"from": "coding", "to": "__end__", "on": "stuck"},
        {"from": "testing", "to": "__end__", "on": "passed"},
        {"from": "testing", "to": "coding", "on": "failed", "when": "count('failed') < 3"},
        {"from": "testing", "to": "__end__", "on": "failed", "otherwise": True},
    ],
    "schemas": {
        "Tests": {
            "properties": {"passed": {"type": "integer"}, "failed": {"type": "integer"}},
            "required": ["passed", "failed"],
            "type": "object",
        },
        "Ticket": {
            "properties": {"repo": {"type": "string"}},
            "required": ["repo"],
            "type": "object",
        },
    },
}


def graph_text(doc: dict[str, Any]) -> str:
    """The graph file text (2-space indentation, one trailing newline)."""
    return json.dumps(doc, indent=2, ensure_ascii=True) + "\n"


def write_graph(folder: Path, doc: dict[str, Any], name: str | None = None) -> Path:
    """Write `doc` as `<folder>/<workflow>.json` and answer the path."""
    path = folder / (name or f"{doc['workflow']}.json")
    path.write_text(graph_text(doc), encoding="utf-8")
    return path


def variant(doc: dict[str, Any]) -> dict[str, Any]:
    """A deep copy to change in a test."""
    return copy.deepcopy(doc)


DEV: dict[str, Any] = {
    "stateous": 1,
    "workflow": "dev",
    "context": "Ticket",
    "states": {
        "coding": {"emits": ["done"]},
        "reviews": {
            "timeout": "2d",
            "parallel": ["security-review", "design-review"],
            "join": "all",
            "inputs": ["repo", "branch"],
        },
        "merging": {"emits": ["merged"]},
    },
    "events": {"done": {}, "merged": {}},
    "transitions": [
        {"from": "__start__", "to": "coding"},
        {"from": "coding", "to": "reviews", "on": "done"},
        {
            "from": "reviews",
            "to": "merging",
            "on": "joined",
            "when": "branches.all(status == 'completed' and final == 'approved')",
        },
        {"from": "reviews", "to": "coding", "on": "joined", "otherwise": True},
        {"from": "reviews", "to": "__end__", "on": "timeout"},
        {"from": "merging", "to": "__end__", "on": "merged"},
    ],
    "workflows": {
        "security-review": {
            "context": "Review",
            "states": {
                "triage": {"timeout": "1h", "emits": ["ok"]},
                "approved": {"emits": ["fin"]},
            },
            "events": {"ok": {"payload": "Ok"}, "fin": {}},
            "transitions": [
                {"from": "__start__", "to": "triage"},
                {"from": "triage", "to": "approved", "on": "ok"},
                {"from": "approved", "to": "__end__", "on": "fin"},
            ],
        },
        "design-review": {
            "context": "Review",
            "states": {"look": {"emits": ["seen"]}},
            "events": {"seen": {}},
            "transitions": [
                {"from": "__start__", "to": "look"},
                {"from": "look", "to": "__end__", "on": "seen"},
            ],
        },
    },
    "schemas": {
        "Ok": {"properties": {"ok": {"type": "boolean"}}, "required": ["ok"], "type": "object"},
        "Review": {
            "properties": {
                "repo": {"type": "string"},
                "branch": {"default": "main", "type": "string"},
            },
            "required": ["repo"],
            "type": "object",
        },
        "Ticket": {
            "properties": {
                "repo": {"type": "string"},
                "branch": {"default": "main", "type": "string"},
            },
            "required": ["repo"],
            "type": "object",
        },
    },
}
