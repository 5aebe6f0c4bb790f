"""The `schemas` of a graph file: the models' JSON Schemas, generated together."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from stateous.model.authoring import Workflow

__all__ = ["REF_TEMPLATE", "SchemaSet", "collect_models", "model_name_problems", "strip_titles"]

#: References inside `schemas` point at the sibling entries.
REF_TEMPLATE = "#/schemas/{model}"

_SUBSCHEMA_KEYS = ("items", "additionalProperties")
_SUBSCHEMA_LISTS = ("anyOf", "allOf", "oneOf")


def collect_models(workflows: Iterable[Workflow]) -> list[type[BaseModel]]:
    """Every distinct context and payload model, in order of first appearance."""
    models: list[type[BaseModel]] = []
    for flow in workflows:
        found = [flow.context, *(e.payload for e in flow.events.values())]
        for model in found:
            if model is not None and not any(model is m for m in models):
                models.append(model)
    return models


def model_name_problems(models: Sequence[type[BaseModel]]) -> list[str]:
    """`two different models are named ...` once per shared class name."""
    problems: list[str] = []
    seen: dict[str, type[BaseModel]] = {}
    for model in models:
        name = model.__name__
        line = f"two different models are named {name!r}; give each its own name"
        if name in seen and seen[name] is not model and line not in problems:
            problems.append(line)
        seen.setdefault(name, model)
    return problems


def strip_titles(schema: Any) -> Any:
    """A copy of `schema` without `title` keys in schema objects (a property named title stays)."""
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "title":
            continue
        if key == "properties" and isinstance(value, dict):
            out[key] = {name: strip_titles(sub) for name, sub in value.items()}
        elif key in _SUBSCHEMA_KEYS:
            out[key] = strip_titles(value)
        elif key in _SUBSCHEMA_LISTS and isinstance(value, list):
            out[key] = [strip_titles(sub) for sub in value]
        else:
            out[key] = value
    return out


class SchemaSet:
    """The schemas of a set of models, and each model's key in them."""

    def __init__(self, models: Sequence[type[BaseModel]]) -> None:
        self.models = list(models)
        self.problems: list[str] = []
        self.schemas: dict[str, Any] = {}
        self.keys: dict[type[BaseModel], str] = {}
        if not self.models:
            return
        try:
            refs, top = models_json_schema(
                [(m, "validation") for m in self.models], ref_template=REF_TEMPLATE
            )
        except Exception:  # any failure of the generator is reported per model below
            self.problems = self._failures()
            return
        definitions = top.get("$defs", {})
        self.schemas = {k: strip_titles(definitions[k]) for k in sorted(definitions)}
        for (model, _), ref in refs.items():
            self.keys[model] = str(ref["$ref"]).rsplit("/", 1)[-1]  # type: ignore[index]  # a model's schema is a reference

    def _failures(self) -> list[str]:
        problems: list[str] = []
        for model in self.models:
            try:
                model.model_json_schema(mode="validation", ref_template=REF_TEMPLATE)
            except Exception as exc:  # the generator's own error is the message
                first = (str(exc).splitlines() or [type(exc).__name__])[0]
                problems.append(
                    f"the model {model.__name__} cannot be written as JSON Schema: {first}"
                )
        return problems or ["the models cannot be written as JSON Schema together"]

    def key(self, model: type[BaseModel] | None) -> str | None:
        """The key of `model` in `schemas` (None for no model)."""
        return None if model is None else self.keys[model]

    def schema_of(self, model: type[BaseModel] | None) -> dict[str, Any] | None:
        """The schema of `model`, or None."""
        if model is None or model not in self.keys:
            return None
        schema = self.schemas.get(self.keys[model])
        return schema if isinstance(schema, dict) else None
