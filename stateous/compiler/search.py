"""The compile checks of `flow.search(...)`: one line per refused key.

A search key is a top-level property of the top workflow's context model (by its name in the
JSON Schema, so an alias where the field has one) whose type is a `str`, an `int`, a `bool`, an
`Enum` or `Literal` of these, or one of them `| None`. The control plane indexes the JSON text
of each value, so a key must hold one kind of scalar: a float (`1.0` and `1` are one number but
two texts), a list, an object or `str | int` is refused.
"""

from __future__ import annotations

import enum
import types
import typing
from typing import Any, Final

from stateous.compiler.schemas import SchemaSet
from stateous.model.authoring import Workflow, model_field_annotation

__all__ = ["search_problems", "searchable"]

_SCALARS: Final = (str, int, bool)
_RULE: Final = "a search key is a str, an int, a bool or an Enum of these, optionally | None"


def search_problems(flow: Workflow, schemas: SchemaSet, *, child: bool) -> list[str]:
    """The problems of `flow`'s search keys; none when it declares none."""
    keys = flow.search_keys
    if not keys:
        return []
    if child:
        return [
            "flow.search is for the top workflow: a child token is found through its top "
            "token, so declare the keys there"
        ]
    if flow.context is None:
        names = ", ".join(repr(k) for k in keys)
        return [
            f"flow.search names {names}, but workflow {flow.name!r} has no context model to "
            f"search; give it one, e.g. Workflow({flow.name!r}, context=Order)"
        ]
    schema = schemas.schema_of(flow.context)
    if schema is None:
        return []  # the model has no JSON Schema: that problem is listed already
    properties = schema.get("properties", {})
    model = flow.context.__name__
    problems: list[str] = []
    for key in keys:
        if key not in properties:
            problems.append(f"flow.search names {key!r}, which {model} does not have")
            continue
        annotation = model_field_annotation(flow.context, key)
        if not searchable(annotation):
            problems.append(
                f"flow.search names {key!r}, but {model}.{key} is {_type_text(annotation)}; {_RULE}"
            )
    return problems


def searchable(annotation: Any) -> bool:
    """Whether a field of this annotation holds one scalar a search key may index."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return searchable(typing.get_args(annotation)[0])
    if origin is typing.Union or origin is types.UnionType:
        members = [a for a in typing.get_args(annotation) if a is not type(None)]
        return len(members) == 1 and searchable(members[0])
    if origin is typing.Literal:
        values = [v for v in typing.get_args(annotation) if v is not None]
        return bool(values) and all(isinstance(v, _SCALARS) for v in values)
    if not isinstance(annotation, type):
        return False
    if issubclass(annotation, enum.Enum):
        return all(isinstance(member.value, _SCALARS) for member in annotation)
    return issubclass(annotation, _SCALARS)


def _type_text(annotation: Any) -> str:
    """The annotation as the author wrote it, near enough: `float`, `list[str]`, `Item | None`."""
    if annotation is type(None):
        return "None"
    if isinstance(annotation, type) and typing.get_origin(annotation) is None:
        return annotation.__name__
    origin = typing.get_origin(annotation)
    if origin is typing.Union or origin is types.UnionType:
        return " | ".join(_type_text(a) for a in typing.get_args(annotation))
    return str(annotation).replace("typing.", "")
