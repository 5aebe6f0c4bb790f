"""The Mermaid diagram of `token show --graph`, on the reference graph files."""

from __future__ import annotations

import json
from pathlib import Path

from stateous.model.mermaid import mermaid
from tests.unit.model import reference as ref

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def test_sdlc() -> None:
    assert mermaid(json.loads(ref.SDLC_GRAPH)) == ref.MERMAID_SDLC


def test_orders() -> None:
    assert mermaid(json.loads(ref.ORDERS_GRAPH_NO_INTO)) == ref.MERMAID_ORDERS
    doc = json.loads((EXAMPLES / "orders" / "build" / "orders.json").read_text())
    assert mermaid(doc) == ref.MERMAID_ORDERS


def test_parallel() -> None:
    doc = json.loads((EXAMPLES / "parallel" / "build" / "dev.json").read_text())
    assert mermaid(doc) == ref.MERMAID_PARALLEL


def test_names_with_dashes_are_declared() -> None:
    doc = {
        "states": {"in-review": {"emits": ["ok"]}},
        "transitions": [
            {"from": "__start__", "to": "in-review"},
            {"from": "in-review", "to": "__end__", "on": "error", "when": "count('error') > 1"},
        ],
    }
    assert mermaid(doc) == (
        "stateDiagram-v2\n"
        "    direction LR\n"
        '    state "in-review" as in_review\n'
        "    [*] --> in_review\n"
        "    in_review --> [*]: (error) [count('error') > 1]\n"
    )
