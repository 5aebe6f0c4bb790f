"""JSON Schema validation of contexts and payloads against a graph file's schemas."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import jsonschema_rs

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import ValidationError

# Python's `jsonschema` (a twentieth of a second to import, with `referencing` and `attrs`) is
# imported when a value is first found invalid, or a schema needs it: a control plane whose
# values are all valid never loads it.

#: Keywords whose meaning a compiled validator may not share with Python's `jsonschema`
#: (regular-expression dialects, format checks): a schema using one is checked by Python only.
_PYTHON_ONLY = frozenset({"pattern", "patternProperties", "format", "$dynamicRef"})


class ModelValidator:
    """Validates values against one model of a graph file's `schemas`, and fills defaults."""

    def __init__(self, schemas: Mapping[str, Any], name: str) -> None:
        self.name = name
        self.schema: Mapping[str, Any] = schemas.get(name, {})
        root = {"$ref": f"#/schemas/{name}", "schemas": dict(schemas)}
        self._root = root
        self._validator: Draft202012Validator | None = None
        # Compiled once: the common case, a valid value, never reaches the
        # interpreted validator, which still writes the messages of an invalid one.
        self._compiled = _compile(root, _reachable(schemas, name))
        self._defaults = _defaults(self.schema)

    def errors(self, value: Any) -> str | None:
        """The validator's messages joined by `; ` (each `{path}: {message}`), or None if valid.

        `{path}` is the dotted path of the failing value, or the model's name when the value
        itself fails, e.g. `repo: 5 is not of type 'string'`.
        """
        if self._compiled is not None and _valid(self._compiled, value):
            return None
        found = sorted(self._python().iter_errors(value), key=_error_order)
        if not found:
            return None
        return "; ".join(f"{self._path(error)}: {error.message}" for error in found)

    def _python(self) -> Draft202012Validator:
        """Python's validator of the model, made on first use."""
        if self._validator is None:
            from jsonschema import Draft202012Validator

            self._validator = Draft202012Validator(self._root)
        return self._validator

    def _path(self, error: ValidationError) -> str:
        parts = [str(part) for part in error.absolute_path]
        return ".".join(parts) if parts else self.name

    def with_defaults(self, value: Mapping[str, Any]) -> dict[str, Any]:
        """`value` with each top-level property default added when absent (given keys first)."""
        filled = dict(value)
        for key, default in self._defaults:
            if key not in filled:
                filled[key] = copy.deepcopy(default)
        return filled


def _defaults(schema: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """(property, default) of each top-level property that has a default, found once."""
    properties = schema.get("properties", {})
    if not isinstance(properties, Mapping):
        return []
    return [
        (key, prop["default"])
        for key, prop in properties.items()
        if isinstance(prop, Mapping) and "default" in prop
    ]


def _compile(root: Mapping[str, Any], used: list[Any]) -> Any:
    """A compiled validator of `root`, or None when only Python's may judge it (`used`: the
    schemas a value of the model can meet)."""
    if _uses(used, _PYTHON_ONLY):
        return None
    try:
        return jsonschema_rs.validator_for(dict(root))
    except (ValueError, TypeError):  # a schema the compiled validator does not take
        return None


def _valid(compiled: Any, value: Any) -> bool:
    """Whether the compiled validator accepts `value` (False: let Python's decide)."""
    try:
        return bool(compiled.is_valid(value))
    except (ValueError, TypeError, OverflowError):  # e.g. an integer past 64 bits
        return False


def _reachable(schemas: Mapping[str, Any], name: str) -> list[Any]:
    """The model's schema and every schema of `schemas` it refers to, directly or not."""
    seen: dict[str, Any] = {}
    todo = [name]
    while todo:
        current = todo.pop()
        if current in seen:
            continue
        seen[current] = schemas.get(current, {})
        todo.extend(_refs(seen[current]))
    return list(seen.values())


def _refs(schema: Any) -> list[str]:
    """The model names of the `#/schemas/<name>...` references in `schema`."""
    if isinstance(schema, Mapping):
        found = [
            ref.split("/")[2]
            for key, ref in schema.items()
            if key == "$ref" and isinstance(ref, str) and ref.startswith("#/schemas/")
        ]
        return found + [name for value in schema.values() for name in _refs(value)]
    if isinstance(schema, list):
        return [name for item in schema for name in _refs(item)]
    return []


def _uses(schema: Any, keywords: frozenset[str]) -> bool:
    """Whether any of `keywords` appears as a key anywhere in `schema`."""
    if isinstance(schema, Mapping):
        return any(k in keywords or _uses(v, keywords) for k, v in schema.items())
    if isinstance(schema, list):
        return any(_uses(item, keywords) for item in schema)
    return False


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
