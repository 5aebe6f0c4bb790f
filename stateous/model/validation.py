"""JSON Schema validation of contexts and payloads against a graph file's schemas (spec 10 §5.5)."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError


class ModelValidator:
    """Validates values against one model of a graph file's `schemas`, and fills defaults."""

    def __init__(self, schemas: Mapping[str, Any], name: str) -> None:
        self.name = name
        self.schema: Mapping[str, Any] = schemas.get(name, {})
        root = {"$ref": f"#/schemas/{name}", "schemas": dict(schemas)}
        self._validator = Draft202012Validator(root)

    def errors(self, value: Any) -> str | None:
        """The validator's messages joined by `; ` (each `{path}: {message}`), or None if valid.

        `{path}` is the dotted path of the failing value, or the model's name when the value
        itself fails (spec 30 §1.7), e.g. `repo: 5 is not of type 'string'`.
        """
        found = sorted(self._validator.iter_errors(value), key=_error_order)
        if not found:
            return None
        return "; ".join(f"{self._path(error)}: {error.message}" for error in found)

    def _path(self, error: ValidationError) -> str:
        parts = [str(part) for part in error.absolute_path]
        return ".".join(parts) if parts else self.name

    def with_defaults(self, value: Mapping[str, Any]) -> dict[str, Any]:
        """`value` with each top-level property default added when absent (given keys first)."""
        filled = dict(value)
        properties = self.schema.get("properties", {})
        if isinstance(properties, Mapping):
            for key, prop in properties.items():
                if key not in filled and isinstance(prop, Mapping) and "default" in prop:
                    filled[key] = copy.deepcopy(prop["default"])
        return filled


def _error_order(error: ValidationError) -> tuple[str, ...]:
    return tuple(str(part) for part in error.absolute_path)


_CACHE: dict[tuple[int, str], tuple[Mapping[str, Any], ModelValidator]] = {}


def validator_for(schemas: Mapping[str, Any], name: str) -> ModelValidator:
    """A validator for the model `name` of this `schemas` mapping, built once per mapping."""
    key = (id(schemas), name)
    cached = _CACHE.get(key)
    # The mapping is kept with its validator, so its id cannot be reused while cached.
    if cached is None or cached[0] is not schemas:
        cached = (schemas, ModelValidator(schemas, name))
        _CACHE[key] = cached
    return cached[1]
