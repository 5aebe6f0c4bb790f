"""Canonical JSON, checksum, structure and the graph file text, against the reference values."""

from __future__ import annotations

import json
from typing import Any

import pytest

from stateous.model.canonical import canonical_json, checksum, graph_file_text, structure
from tests.unit.model import reference as ref


def test_sdlc_vectors() -> None:
    doc = json.loads(ref.SDLC_GRAPH)
    assert canonical_json(doc) == ref.SDLC_CANONICAL
    assert len(canonical_json(doc)) == 828
    assert checksum(doc) == ref.SDLC_CHECKSUM
    assert structure(doc) == ref.SDLC_STRUCTURE
    assert graph_file_text(doc) == ref.SDLC_GRAPH


def test_sdlc_structure_drops_timeout_and_retries_only() -> None:
    doc = json.loads(ref.SDLC_GRAPH)
    for entry in doc["states"].values():
        entry.pop("timeout", None)
        entry.pop("retries", None)
    assert (
        '"states":{"coding":{"emits":["done","stuck"]},"testing":{"emits":["passed","failed"]}}'
        in canonical_json(doc)
    )
    assert checksum(doc) == ref.SDLC_STRUCTURE


def test_orders_without_into_vector() -> None:
    doc = json.loads(ref.ORDERS_GRAPH_NO_INTO)
    assert checksum(doc) == ref.ORDERS_NO_INTO_CHECKSUM
    assert structure(doc) == checksum(doc)
    assert graph_file_text(doc) == ref.ORDERS_GRAPH_NO_INTO


def test_checksum_ignores_whitespace_and_key_order() -> None:
    doc = json.loads(ref.SDLC_GRAPH)
    reordered = json.loads(json.dumps(dict(reversed(list(doc.items())))))
    assert checksum(reordered) == ref.SDLC_CHECKSUM


def test_structure_covers_child_workflows() -> None:
    doc: dict[str, Any] = {
        "states": {"a": {"timeout": "1h", "emits": []}},
        "workflows": {"c": {"states": {"x": {"retries": 2, "timeout": "1s", "emits": []}}}},
    }
    assert structure(doc) == checksum(
        {"states": {"a": {"emits": []}}, "workflows": {"c": {"states": {"x": {"emits": []}}}}}
    )
    assert doc["states"]["a"]["timeout"] == "1h"  # the original is untouched


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("é", '"\\u00e9"'),
        ("\U0001f600", '"\\ud83d\\ude00"'),
        ('"\\\n\r\t\b\f', '"\\"\\\\\\n\\r\\t\\b\\f"'),
        ("\x00\x1f", '"\\u0000\\u001f"'),
        (1.0, "1.0"),
        (0.5, "0.5"),
        (1e16, "1e+16"),
        (10**20, "100000000000000000000"),
        ([True, False, None], "[true,false,null]"),
        ({"b": 1, "a": {"é": 2, "z": 3, "Z": 4}}, '{"a":{"Z":4,"z":3,"\\u00e9":2},"b":1}'),
    ],
)
def test_canonical_json(value: object, text: str) -> None:
    assert canonical_json(value) == text


def test_graph_file_text_layout() -> None:
    assert graph_file_text({"a": [], "b": {}, "c": ["é"]}) == (
        '{\n  "a": [],\n  "b": {},\n  "c": [\n    "\\u00e9"\n  ]\n}\n'
    )
