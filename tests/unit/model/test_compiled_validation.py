"""Validators compiled once judge exactly as Python's `jsonschema` does: the same
verdict and the same messages, for tricky values too."""

from __future__ import annotations

from typing import Any

import pytest
from jsonschema import Draft202012Validator

from stateous.model.validation import ModelValidator, validator_for

SCHEMAS: dict[str, Any] = {
    "Item": {
        "type": "object",
        "properties": {
            "title": {"type": "string", "minLength": 2, "maxLength": 5},
            "count": {"type": "integer", "minimum": 0},
            "ratio": {"type": "number", "exclusiveMaximum": 1},
            "flag": {"type": "boolean"},
            "kind": {"enum": [1, "one", None]},
            "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
            "verdict": {"anyOf": [{"$ref": "#/schemas/Verdict"}, {"type": "null"}]},
        },
        "required": ["title"],
        "additionalProperties": False,
    },
    "Verdict": {
        "type": "object",
        "properties": {"approved": {"type": "boolean"}, "note": {"default": "", "type": "string"}},
        "required": ["approved"],
    },
    "Coded": {"type": "object", "properties": {"code": {"type": "string", "pattern": "^[a-z]+$"}}},
}

VALUES: list[Any] = [
    {"title": "ok"},
    {"title": "é✓"},
    {"title": "x"},
    {"title": "toolong"},
    {"title": 5},
    {},
    [],
    None,
    "ok",
    {"title": "ok", "count": 1.0},
    {"title": "ok", "count": 1.5},
    {"title": "ok", "count": True},
    {"title": "ok", "count": -1},
    {"title": "ok", "count": 10**30},
    {"title": "ok", "count": -(10**30)},
    {"title": "ok", "ratio": 1},
    {"title": "ok", "ratio": 0.99},
    {"title": "ok", "flag": 1},
    {"title": "ok", "flag": False},
    {"title": "ok", "kind": True},
    {"title": "ok", "kind": 1.0},
    {"title": "ok", "kind": None},
    {"title": "ok", "tags": ["a", "a"]},
    {"title": "ok", "tags": ["a", 1]},
    {"title": "ok", "verdict": None},
    {"title": "ok", "verdict": {"approved": True}},
    {"title": "ok", "verdict": {"approved": "yes"}},
    {"title": "ok", "verdict": {}},
    {"title": "ok", "other": 1},
    {"code": "abc"},
    {"code": "ABC"},
]


def python_only(name: str, value: Any) -> str | None:
    """The messages of Python's interpreted validator alone, as the engine writes them."""
    root = {"$ref": f"#/schemas/{name}", "schemas": SCHEMAS}
    found = sorted(
        Draft202012Validator(root).iter_errors(value),
        key=lambda e: tuple(str(p) for p in e.absolute_path),
    )
    if not found:
        return None
    paths = [".".join(str(p) for p in e.absolute_path) or name for e in found]
    return "; ".join(f"{path}: {e.message}" for path, e in zip(paths, found, strict=True))


@pytest.mark.parametrize("name", ["Item", "Verdict", "Coded"])
@pytest.mark.parametrize("value", VALUES, ids=range(len(VALUES)))
def test_the_compiled_validator_agrees_with_python(name: str, value: Any) -> None:
    assert ModelValidator(SCHEMAS, name).errors(value) == python_only(name, value)


def test_a_validator_is_compiled_once_per_schema() -> None:
    first = validator_for(SCHEMAS, "Item")
    assert validator_for(SCHEMAS, "Item") is first
    assert first._compiled is not None
    assert validator_for(SCHEMAS, "Coded")._compiled is None  # `pattern`: Python judges it
