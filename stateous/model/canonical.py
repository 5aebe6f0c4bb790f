"""Canonical JSON, the graph file's text, and its `checksum` and `structure`."""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Any

__all__ = [
    "canonical_json",
    "checksum",
    "graph_file_text",
    "sha256_of",
    "strip_tuning",
    "structure",
]


def canonical_json(doc: object) -> str:
    """Serialize `doc` canonically: keys sorted by code point, no whitespace, ASCII only.

    Python's encoder already writes the short escapes, lower-case `\\uXXXX` (with
    surrogate pairs above U+FFFF) and floats in shortest round-trip form (`1e+16`).
    NaN and infinities are not JSON and raise `ValueError`.
    """
    return json.dumps(
        doc, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False
    )


def sha256_of(doc: object) -> str:
    """`sha256:` and the lower-case hex SHA-256 of the UTF-8 canonical JSON of `doc`."""
    return "sha256:" + hashlib.sha256(canonical_json(doc).encode("utf-8")).hexdigest()


def checksum(doc: object) -> str:
    """The checksum of a graph document: the hash of its canonical JSON."""
    return sha256_of(doc)


def strip_tuning(doc: Any) -> Any:
    """A deep copy of a graph document without what a token's path does not depend on.

    That is each state's `timeout` and `retries` (in the top workflow's `states` and those of
    every body under `workflows`) and the top-level `search` keys (adding or removing one
    needs no migration); nothing else is touched.
    """
    stripped = copy.deepcopy(doc)
    if not isinstance(stripped, dict):
        return stripped
    stripped.pop("search", None)
    bodies: list[Any] = [stripped]
    workflows = stripped.get("workflows")
    if isinstance(workflows, dict):
        bodies.extend(workflows.values())
    for body in bodies:
        states = body.get("states") if isinstance(body, dict) else None
        if not isinstance(states, dict):
            continue
        for entry in states.values():
            if isinstance(entry, dict):
                entry.pop("timeout", None)
                entry.pop("retries", None)
    return stripped


def structure(doc: object) -> str:
    """The structure of a graph document: its checksum without `timeout`, `retries` and `search`.

    Equal to `checksum(doc)` when no state sets either and no search key is declared.
    """
    return sha256_of(strip_tuning(doc))


def graph_file_text(doc: object) -> str:
    """The text of a graph file: 2-space indented JSON in the document's key order, ASCII, `\\n`.

    Every array element and object member is on its own line; empty ones are `[]`/`{}`.
    """
    return json.dumps(doc, indent=2, ensure_ascii=True, allow_nan=False) + "\n"
