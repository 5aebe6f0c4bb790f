"""What a migration from one graph to another would meet: `compile --against`.

Pure functions on two checked graph documents (`Graph`). The findings, in this order:

- one line per state of OLD's main workflow, in name order: `removed` when the new main workflow
  lacks it, `changed` when its events, payloads, transitions or parallel part differ;
- then the context model's lines: each field of the new model, in its order, that tokens must
  be given (`context`: required without a default, or of another type), that is new (`field`:
  optional, or with a default) or whose schema changed otherwise (`field`); then each field the
  new model no longer has (`field`), in the old model's order;
- or, when only `timeout=`/`retries=` differ, the one `same_structure` line;
- nothing when the checksums are equal.

Model schemas are compared with their `$ref`s resolved and their `description`s left out: a
renamed model of the same shape, or a changed docstring, is no change a token meets.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from stateous.model.graph import START, Graph, StateSpec, TransitionSpec, WorkflowBody

__all__ = ["BLOCKING", "Finding", "FindingKind", "blocks", "compare"]

FindingKind = Literal["removed", "changed", "context", "field", "same_structure"]

#: The kinds that make `compile --against --strict` exit 1: tokens cannot move without help.
BLOCKING: Final = frozenset({"removed", "context"})

_REF = "#/schemas/"
#: JSON Schema keywords whose value is a map of names to schemas, a schema, or a list of schemas.
_SCHEMA_MAPS = frozenset({"properties", "patternProperties", "$defs", "definitions"})
_SCHEMA_ONE = frozenset({"items", "additionalProperties", "not", "contains", "propertyNames"})
_SCHEMA_LIST = frozenset({"anyOf", "allOf", "oneOf", "prefixItems"})
#: JSON Schema type names as a Python author writes them.
_PYTHON_TYPES: Final = {
    "string": "str",
    "integer": "int",
    "number": "float",
    "boolean": "bool",
    "array": "list",
    "object": "dict",
    "null": "None",
}


@dataclass(frozen=True)
class Finding:
    """One thing a migration from the old graph would meet, and its line for people."""

    kind: FindingKind
    line: str


def blocks(findings: list[Finding]) -> bool:
    """Whether any finding is one that `--strict` refuses (`removed` or `context`)."""
    return any(f.kind in BLOCKING for f in findings)


def compare(old: Graph, new: Graph) -> list[Finding]:
    """The findings of a migration of OLD's tokens to NEW, in the order of the module's doc."""
    if old.checksum == new.checksum:
        return []
    if old.structure == new.structure:
        return [
            Finding(
                "same_structure",
                "same structure: only timeout/retries changed (no migration needed)",
            )
        ]
    return [*_state_findings(old, new), *_context_findings(old, new)]


# ----------------------------------------------------------------------------- states


def _state_findings(old: Graph, new: Graph) -> Iterator[Finding]:
    for name in sorted(old.main.states):
        if name not in new.main.states:
            yield Finding(
                "removed", f"state {name!r}: removed (tokens there need --map {name}=<state>)"
            )
            continue
        parts = _state_changes(old, new, name)
        if parts:
            yield Finding("changed", f"state {name!r}: changed ({'; '.join(parts)})")


def _state_changes(old: Graph, new: Graph, name: str) -> list[str]:
    """The parts of a state's change, in a fixed order: events, payloads, transitions, the rest."""
    before, after = _events_of(old.main, name), _events_of(new.main, name)
    parts: list[str] = []
    signs = [f"+ {e!r}" for e in after if e not in before]
    signs += [f"- {e!r}" for e in before if e not in after]
    if signs:
        parts.append("events: " + ", ".join(signs))
    kept = [e for e in before if e in after]
    parts += [f"payload of {e!r} changed" for e in kept if _payload(old, e) != _payload(new, e)]
    parts += [
        f"transitions of {e!r} changed"
        for e in kept
        if _targets(old.main, name, e) != _targets(new.main, name, e)
    ]
    parts += _parallel_changes(old, new, old.main.states[name], new.main.states[name])
    return parts


def _events_of(body: WorkflowBody, state: str) -> list[str]:
    """The events a state is left on (declared and built-in), in order of first transition."""
    events: list[str] = []
    for t in body.transitions:
        if t.source == state and t.source != START and t.on not in events:
            events.append(t.on)
    return events


def _targets(body: WorkflowBody, state: str, event: str) -> list[tuple[str, str | None, bool]]:
    return [_target(t) for t in body.transitions_from(state, event)]


def _target(t: TransitionSpec) -> tuple[str, str | None, bool]:
    return (t.target, t.when, t.otherwise)


def _payload(graph: Graph, event: str) -> tuple[Any, str | None]:
    """The resolved payload schema of a main-workflow event and the context key it goes `into`."""
    spec = graph.main.events.get(event)
    if spec is None:  # a built-in event: no payload
        return (None, None)
    return (_model(graph, spec.payload), spec.into)


def _parallel_changes(old: Graph, new: Graph, before: StateSpec, after: StateSpec) -> list[str]:
    """`join`, `inputs`, child workflows, `into`: a change inside a child is the state's change."""
    parts: list[str] = []
    if before.join != after.join and (before.is_parallel or after.is_parallel):
        parts.append("join changed")
    if before.inputs != after.inputs:
        parts.append("inputs changed")
    if _children(old, before.parallel, set()) != _children(new, after.parallel, set()):
        parts.append("child workflows changed")
    if before.into != after.into:
        parts.append("into changed")
    return parts


def _children(graph: Graph, names: tuple[str, ...], seen: set[str]) -> list[Any]:
    """Each child body as a comparable value: its states without tuning, its events with their
    resolved payloads, its transitions, its context model, and its own children, nested."""
    found: list[Any] = []
    for name in names:
        if name in seen:  # a cycle is refused by compile; never loop on a hand-made file
            found.append(name)
            continue
        body = graph.bodies[name]
        found.append(
            {
                "name": name,
                "context": _model(graph, body.context),
                "states": {
                    s: _untuned(graph, spec, seen | {name}) for s, spec in body.states.items()
                },
                "events": {e: (_model(graph, v.payload), v.into) for e, v in body.events.items()},
                "transitions": [(t.source, t.on, *_target(t)) for t in body.transitions],
            }
        )
    return found


def _untuned(graph: Graph, spec: StateSpec, seen: set[str]) -> Any:
    children = _children(graph, spec.parallel, seen)
    return (spec.join, spec.inputs, spec.emits, spec.into, children)


# ----------------------------------------------------------------------------- context


def _context_findings(old: Graph, new: Graph) -> Iterator[Finding]:
    after = _model(new, new.main.context)
    if not isinstance(after, dict):
        return
    before = _model(old, old.main.context)
    old_fields, old_required = _properties(before), _required(before)
    new_fields = _properties(after)
    for field, schema in new_fields.items():
        finding = _field_finding(
            field, schema, old_fields.get(field), _required(after), old_required
        )
        if finding is not None:
            yield finding
    for field in old_fields:
        if field not in new_fields:
            yield Finding("field", f"context: field {field!r} removed")


def _field_finding(
    field: str, schema: Any, was: Any, required: set[str], was_required: set[str]
) -> Finding | None:
    """The context line of one field of the new model, or None when it did not change."""
    needed = field in required and not _has_default(schema)
    # Tokens may lack the field: OLD had no such field, or took it optional and empty.
    if needed and (was is None or (field not in was_required and not _has_default(was))):
        return Finding(
            "context",
            f"context: field {field!r} is required and has no default "
            f"(tokens need --context '{{\"{field}\": ...}}')",
        )
    if was is None:
        given = f"default {schema['default']!r}" if _has_default(schema) else "optional"
        return Finding("field", f"context: field {field!r} added ({given})")
    if _type_text(was) != _type_text(schema):
        return Finding(
            "context",
            f"context: field {field!r} changed type ({_type_text(was)} → {_type_text(schema)})",
        )
    if was != schema or (field in required) != (field in was_required):
        return Finding("field", f"context: field {field!r} changed (its default or constraints)")
    return None


def _has_default(schema: Any) -> bool:
    return isinstance(schema, dict) and "default" in schema


def _properties(schema: Any) -> dict[str, Any]:
    props = schema.get("properties") if isinstance(schema, dict) else None
    return props if isinstance(props, dict) else {}


def _required(schema: Any) -> set[str]:
    names = schema.get("required") if isinstance(schema, dict) else None
    return {n for n in names if isinstance(n, str)} if isinstance(names, list) else set()


def _type_text(schema: Any) -> str:
    """A field's type as Python writes it: `str`, `int | None`, `list`, `dict`, or `any`."""
    if not isinstance(schema, dict):
        return "any"
    kind = schema.get("type")
    if isinstance(kind, str):
        return _PYTHON_TYPES.get(kind, kind)
    if isinstance(kind, list):
        return " | ".join(_PYTHON_TYPES.get(str(k), str(k)) for k in kind)
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list) and options:
            return " | ".join(_type_text(o) for o in options)
    if "const" in schema or "enum" in schema:
        return "literal"
    return "any"


# ----------------------------------------------------------------------------- schemas


def _model(graph: Graph, key: str | None) -> Any:
    """The JSON Schema of the model `key` with its references resolved (None for no model)."""
    if key is None or key not in graph.schemas:
        return None
    return _resolved(graph.schemas[key], graph.schemas, frozenset({key}))


def _resolved(node: Any, schemas: Mapping[str, Any], seen: frozenset[str]) -> Any:
    """`node` with `#/schemas/X` references replaced by X and `description`s left out; a
    recursive model keeps its `$ref` where it refers to itself."""
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith(_REF):
        key = ref.removeprefix(_REF)
        if key in schemas and key not in seen:
            return _resolved(schemas[key], schemas, seen | {key})
    out: dict[str, Any] = {}
    for word, value in node.items():
        if word == "description":
            continue
        if word in _SCHEMA_MAPS and isinstance(value, dict):
            out[word] = {k: _resolved(v, schemas, seen) for k, v in value.items()}
        elif word in _SCHEMA_ONE:
            out[word] = _resolved(value, schemas, seen)
        elif word in _SCHEMA_LIST and isinstance(value, list):
            out[word] = [_resolved(v, schemas, seen) for v in value]
        else:
            out[word] = value  # `default`, `enum`, `const`, `type`...: values, not schemas
    return out
