"""The text of a supervisor's `contract.py`, generated from a graph document only.

The document may come from a control plane that nobody checked, so nothing from it reaches the
generated source except through `_literal` (values as escaped string literals) or after
`python_name` has proved it an ASCII identifier: no name, description, default or enum value can
inject code.
"""

from __future__ import annotations

import json
import keyword
import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from stateous.model.canonical import checksum as canonical_checksum
from stateous.model.errors import StateousError

__all__ = [
    "ContractError",
    "WorkflowBody",
    "contract_text",
    "python_name",
    "workflow_bodies",
]

RESERVED_MODEL_NAMES = (
    "Any",
    "BaseModel",
    "Context",
    "Field",
    "Literal",
    "Never",
    "Occurrence",
    "StateRef",
    "events",
    "states",
)
_CHECKSUM = re.compile(r"sha256:[0-9a-f]{64}")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SIMPLE_TYPES = {
    "string": "str",
    "integer": "int",
    "number": "float",
    "boolean": "bool",
    "null": "None",
}


class ContractError(StateousError):
    """The graph document cannot become a `contract.py`; the message is the reason."""

    code = "invalid_contract"


def is_python_identifier(text: str) -> bool:
    """Whether `text` is an ASCII Python identifier that is not a keyword.

    ASCII only: Python folds other identifiers with NFKC, so two different names could meet.
    """
    return bool(_IDENTIFIER.fullmatch(text)) and not keyword.iskeyword(text)


def python_name(name: object) -> str:
    """The Python name of a workflow, event or state name (`-` becomes `_`), or ContractError."""
    if isinstance(name, str):
        candidate = name.replace("-", "_")
        if is_python_identifier(candidate):
            return candidate
    raise ContractError(f"{name!r} cannot be used as a Python name in the generated contract")


@dataclass(frozen=True)
class WorkflowBody:
    """One workflow of the document (the main one, or a child) as the contract sees it."""

    name: str
    child: bool
    context: str | None
    events: dict[str, str | None]  # event name -> payload model name, document order
    states: dict[str, tuple[str, ...] | None]  # state name -> emits; None for a parallel state
    ident: str = ""  # the Python name of a child workflow; "" for the main one
    event_ids: dict[str, str] = field(default_factory=dict)
    state_ids: dict[str, str] = field(default_factory=dict)


# --- reading the document ---------------------------------------------------------------------


def _mapping(value: object, what: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ContractError(f"{what} is not an object")
    return value


def _body(name: str, raw: Mapping[str, Any], *, child: bool) -> WorkflowBody:
    where = f" of the child workflow {name!r}" if child else ""
    context = raw.get("context")
    if context is not None and not isinstance(context, str):
        raise ContractError(f"the context{where} is not the name of a model")
    events: dict[str, str | None] = {}
    for event, entry in _mapping(raw.get("events"), f"'events'{where}").items():
        payload = _mapping(entry, f"the event {event!r}{where}").get("payload")
        if payload is not None and not isinstance(payload, str):
            raise ContractError(f"the event {event!r}{where} names a payload that is not a model")
        events[event] = payload
    states: dict[str, tuple[str, ...] | None] = {}
    for state, entry in _mapping(raw.get("states"), f"'states'{where}").items():
        entry = _mapping(entry, f"the state {state!r}{where}")
        if "parallel" in entry:
            states[state] = None
            continue
        emits = entry.get("emits", [])
        if not isinstance(emits, list) or not all(isinstance(e, str) for e in emits):
            raise ContractError(f"the state {state!r}{where} has an 'emits' that is not a list")
        for event in emits:
            if event not in events:
                raise ContractError(
                    f"the state {state!r}{where} emits {event!r}, which 'events' does not have"
                )
        states[state] = tuple(emits)
    return WorkflowBody(name=name, child=child, context=context, events=events, states=states)


def workflow_bodies(document: Mapping[str, Any]) -> list[WorkflowBody]:
    """The main workflow, then each child workflow in document order, with their Python names.

    Checks the names in a fixed order: per workflow its event then state names, then
    the child workflows' names, then collisions of a child with the main workflow.
    """
    document = _mapping(document, "the graph document")
    name = document.get("workflow")
    if not isinstance(name, str):
        raise ContractError("the graph document has no workflow name")
    bodies = [_body(name, document, child=False)]
    children = document.get("workflows") or {}
    for child, raw in _mapping(children, "'workflows'").items():
        bodies.append(_body(child, _mapping(raw, f"the workflow {child!r}"), child=True))
    for body in bodies:
        _name_all(body.events, body.event_ids, "events")
        _name_all(body.states, body.state_ids, "states")
    seen: dict[str, str] = {}
    named: list[WorkflowBody] = [bodies[0]]
    for body in bodies[1:]:
        ident = python_name(body.name)
        if ident in seen:
            raise ContractError(
                f"the child workflows {seen[ident]!r} and {body.name!r} are both {ident!r} "
                "in Python; rename one"
            )
        seen[ident] = body.name
        named.append(_with_ident(body, ident))
    _check_child_collisions(named)
    return named


def _with_ident(body: WorkflowBody, ident: str) -> WorkflowBody:
    return WorkflowBody(
        name=body.name,
        child=True,
        context=body.context,
        events=body.events,
        states=body.states,
        ident=ident,
        event_ids=body.event_ids,
        state_ids=body.state_ids,
    )


def _name_all(names: Mapping[str, object], out: dict[str, str], what: str) -> None:
    owners: dict[str, str] = {}
    for name in names:
        ident = python_name(name)
        if ident in owners:
            raise ContractError(
                f"the {what} {owners[ident]!r} and {name!r} are both {ident!r} in Python; rename one"
            )
        owners[ident] = name
        out[name] = ident


def _check_child_collisions(bodies: list[WorkflowBody]) -> None:
    main = bodies[0]
    taken: dict[str, str] = {}
    for event, ident in main.event_ids.items():
        taken.setdefault(ident, event)
    for state, ident in main.state_ids.items():
        if main.states[state] is not None:
            taken.setdefault(ident, state)
    for child in bodies[1:]:
        if child.ident in taken:
            raise ContractError(
                f"the child workflow {child.name!r} and {taken[child.ident]!r} of the workflow "
                f"{main.name!r} are both {child.ident!r} in Python; rename one"
            )


# --- literals and annotations -----------------------------------------------------------------


def _escape_unprintable(text: str) -> str:
    """Escape every character that is not printable (line separators, controls, surrogates)."""
    out = []
    for char in text:
        if char.isprintable() or char == " ":
            out.append(char)
        elif ord(char) > 0xFFFF:
            out.append(f"\\U{ord(char):08x}")
        else:
            out.append(f"\\u{ord(char):04x}")
    return "".join(out)


def string_literal(text: str) -> str:
    """`text` as a double-quoted literal, valid in both JSON and Python.

    JSON escaping with non-ASCII kept, except characters that are not printable: those are
    escaped too, so no line separator or lone surrogate ever reaches the file raw.
    """
    return _escape_unprintable(json.dumps(text, ensure_ascii=False))


def comment_text(text: str) -> str:
    """`text` made safe inside a comment or a docstring: no line break, quote or backslash."""
    return _escape_unprintable(text.replace("\\", "\\\\").replace('"', '\\"'))


def _literal(value: object) -> str:
    """A JSON value as Python source: strings quoted, True/False/None, lists and dicts."""
    if value is None:
        return "None"
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ContractError(f"{value!r} is not a JSON number")
        return repr(value)
    if isinstance(value, str):
        return string_literal(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_literal(item) for item in value) + "]"
    if isinstance(value, Mapping):
        items = (f"{string_literal(str(k))}: {_literal(v)}" for k, v in value.items())
        return "{" + ", ".join(items) + "}"
    raise ContractError(f"{value!r} is not a JSON value")


@dataclass
class _Uses:
    """Which names of `typing` and `pydantic` the text uses."""

    any: bool = False
    literal: bool = False
    never: bool = False
    base_model: bool = False
    field: bool = False


def ref_name(ref: object, schemas: Mapping[str, Any]) -> str:
    """The model named by a `$ref` (its last segment); it must be an entry of `schemas`."""
    if not isinstance(ref, str):
        raise ContractError(f"{ref!r} is not a reference to a model")
    name = ref.rsplit("/", 1)[-1]
    if name not in schemas:
        raise ContractError(f"the reference {ref!r} names a model that 'schemas' does not have")
    return name


def _annotation(schema: object, schemas: Mapping[str, Any], uses: _Uses) -> str:
    """The annotation of a property schema: the first rule that matches decides."""
    if not isinstance(schema, Mapping):
        uses.any = True
        return "Any"
    if "$ref" in schema:
        return ref_name(schema["$ref"], schemas)
    if isinstance(schema.get("anyOf"), list):
        return " | ".join(_annotation(option, schemas, uses) for option in schema["anyOf"])
    if isinstance(schema.get("enum"), list):
        uses.literal = True
        return "Literal[" + ", ".join(_literal(v) for v in schema["enum"]) + "]"
    if "const" in schema:
        uses.literal = True
        return f"Literal[{_literal(schema['const'])}]"
    kind = schema.get("type")
    if isinstance(kind, list):
        return " | ".join(_type_annotation(k, schema, schemas, uses) for k in kind)
    return _type_annotation(kind, schema, schemas, uses)


def _type_annotation(
    kind: object, schema: Mapping[str, Any], schemas: Mapping[str, Any], uses: _Uses
) -> str:
    if kind == "array":
        if isinstance(schema.get("items"), Mapping):
            return f"list[{_annotation(schema['items'], schemas, uses)}]"
        uses.any = True
        return "list[Any]"
    if kind == "object":
        extra = schema.get("additionalProperties")
        if isinstance(extra, Mapping):
            return f"dict[str, {_annotation(extra, schemas, uses)}]"
        uses.any = True
        return "dict[str, Any]"
    if isinstance(kind, str) and kind in _SIMPLE_TYPES:
        return _SIMPLE_TYPES[kind]
    uses.any = True
    return "Any"


# --- models -----------------------------------------------------------------------------------


def _refs(schema: object) -> Iterator[str]:
    """Every `$ref` anywhere inside `schema`."""
    if isinstance(schema, Mapping):
        for key, value in schema.items():
            if key == "$ref" and isinstance(value, str):
                yield value
            else:
                yield from _refs(value)
    elif isinstance(schema, list):
        for item in schema:
            yield from _refs(item)


def model_order(schemas: Mapping[str, Any]) -> list[str]:
    """Models in name order, each after the models it references; refuses a self-reference."""
    order: list[str] = []
    done: set[str] = set()

    def visit(name: str, stack: tuple[str, ...]) -> None:
        if name in done:
            return
        if name in stack:
            raise ContractError(f"the model {stack[0]!r} refers to itself; that is not supported")
        for dep in sorted({ref_name(r, schemas) for r in _refs(schemas[name])}):
            visit(dep, (*stack, name))
        done.add(name)
        order.append(name)

    for name in sorted(schemas):
        visit(name, ())
    return order


def _model_block(
    name: str, schema: Mapping[str, Any], schemas: Mapping[str, Any], uses: _Uses
) -> str:
    if "enum" in schema or "const" in schema:
        return f"{name} = {_annotation(schema, schemas, uses)}"
    uses.base_model = True
    lines = [f"class {name}(BaseModel):"]
    properties = schema.get("properties") or {}
    required = schema.get("required") or []
    for prop, prop_schema in _mapping(properties, f"the properties of {name}").items():
        annotation = _annotation(prop_schema, schemas, uses)
        line = f"    {prop}: {annotation}"
        if prop not in required:
            line += _default(prop_schema, annotation, uses)
        lines.append(line)
    if len(lines) == 1:
        lines.append("    pass")
    return "\n".join(lines)


def _default(schema: object, annotation: str, uses: _Uses) -> str:
    if isinstance(schema, Mapping):
        if "default" in schema:
            return f" = {_literal(schema['default'])}"
        if schema.get("type") in ("array", "object"):
            uses.field = True
            return f" = Field(default_factory={annotation})"
    return ""


def _check_models(bodies: list[WorkflowBody], schemas: Mapping[str, Any]) -> list[str]:
    """The checks of models, in a fixed order; returns the models in order."""
    for name in schemas:
        if not is_python_identifier(name):
            raise ContractError(
                f"the model name {name!r} cannot be a Python name in contract.py; rename the model"
            )
    _check_model_names_used(bodies, schemas)
    order = model_order(schemas)
    _check_fields_and_names(bodies, schemas, order)
    return order


def _check_model_names_used(bodies: list[WorkflowBody], schemas: Mapping[str, Any]) -> None:
    for body in bodies:
        where = f" of the child workflow {body.name!r}" if body.child else ""
        if body.context is not None and body.context not in schemas:
            raise ContractError(
                f"the context{where} names the model {body.context!r}, which 'schemas' does not have"
            )
        for event, payload in body.events.items():
            if payload is not None and payload not in schemas:
                raise ContractError(
                    f"the event {event!r}{where} names the model {payload!r}, "
                    "which 'schemas' does not have"
                )


def _check_fields_and_names(
    bodies: list[WorkflowBody], schemas: Mapping[str, Any], order: list[str]
) -> None:
    for name in order:
        properties = _mapping(schemas[name], f"the model {name}").get("properties") or {}
        for prop in _mapping(properties, f"the properties of {name}"):
            if not is_python_identifier(prop):
                raise ContractError(f"the field {prop!r} of {name} cannot be used as a Python name")
    for name in order:
        if name in RESERVED_MODEL_NAMES:
            raise ContractError(
                f"a model is named {name!r}, which contract.py uses itself; rename the model"
            )
    for context in _contexts(bodies):
        if f"{context}Context" in schemas:
            raise ContractError(
                f"a model is named {context + 'Context'!r}, which contract.py uses for the "
                f"context of {context}; rename the model"
            )


def _contexts(bodies: list[WorkflowBody]) -> list[str]:
    seen: list[str] = []
    for body in bodies:
        if body.context is not None and body.context not in seen:
            seen.append(body.context)
    return seen


# --- events and states ------------------------------------------------------------------------


def _events_block(bodies: list[WorkflowBody]) -> str:
    groups: list[list[str]] = []
    for body in bodies:
        indent = "        " if body.child else "    "
        classes = [
            f"{indent}class {body.event_ids[event]}(Occurrence[{payload or 'None'}]):\n"
            f"{indent}    name = {string_literal(event)}"
            for event, payload in body.events.items()
        ]
        if not classes:
            continue
        if body.child:
            groups.append([f"    class {body.ident}:\n" + "\n\n".join(classes)])
        else:
            groups.append(classes)
    members = [member for group in groups for member in group]
    return "class events:\n" + ("\n\n".join(members) if members else "    pass")


def _state_line(body: WorkflowBody, state: str, emits: tuple[str, ...], uses: _Uses) -> str:
    prefix = f"events.{body.ident}." if body.child else "events."
    refs = [prefix + body.event_ids[e] for e in emits]
    qualified = f"{body.name}/{state}" if body.child else state
    indent = "        " if body.child else "    "
    ident = body.state_ids[state]
    if not refs:
        uses.never = True
        return f"{indent}{ident} = StateRef[Never]({string_literal(qualified)}, emits=())"
    tuple_text = f"({refs[0]},)" if len(refs) == 1 else "(" + ", ".join(refs) + ")"
    return f"{indent}{ident} = StateRef({string_literal(qualified)}, emits={tuple_text})"


def _states_block(bodies: list[WorkflowBody], uses: _Uses) -> str:
    parts: list[str] = []
    for body in bodies:
        lines = [
            _state_line(body, state, emits, uses)
            for state, emits in body.states.items()
            if emits is not None
        ]
        if not lines:
            continue
        if body.child:
            parts.append(f"    class {body.ident}:\n" + "\n".join(lines))
        else:
            parts.append("\n".join(lines))
    return "class states:\n" + ("\n\n".join(parts) if parts else "    pass")


# --- the whole file ---------------------------------------------------------------------------


def contract_text(document: Mapping[str, Any], checksum: str | None = None) -> str:
    """The text of `contract.py` for `document`, ending with one newline.

    `checksum` defaults to the canonical checksum of `document`. Raises ContractError with the
    reason when a name cannot become Python or a model cannot be written.
    """
    bodies = workflow_bodies(document)
    schemas = _mapping(document.get("schemas", {}), "'schemas'")
    order = _check_models(bodies, schemas)
    uses = _Uses()
    blocks = [_model_block(n, _mapping(schemas[n], f"the model {n}"), schemas, uses) for n in order]
    contexts = _contexts(bodies)
    if contexts:
        blocks.append("\n".join(f"{c}Context = Context[{c}]" for c in contexts))
    blocks.append(_events_block(bodies))
    blocks.append(_states_block(bodies, uses))
    if checksum is None:
        try:
            checksum = canonical_checksum(document)
        except (TypeError, ValueError) as exc:
            raise ContractError(f"the graph document is not JSON: {exc}") from None
    if not _CHECKSUM.fullmatch(checksum):
        raise ContractError(f"{checksum!r} is not a checksum of a graph")
    head = _header(bodies, checksum, uses, has_events=any(b.events for b in bodies))
    return head + "".join(f"\n\n\n{block}" for block in blocks) + "\n"


def _header(bodies: list[WorkflowBody], checksum: str, uses: _Uses, *, has_events: bool) -> str:
    name = bodies[0].name
    lines = [
        f"# GENERATED from the `{comment_text(name)}` workflow \u2014 do not edit.",
        f"# {checksum}",
        "from __future__ import annotations",
        "",
    ]
    typing_names = [n for n, used in (("Any", uses.any), ("Literal", uses.literal)) if used]
    if uses.never:
        typing_names.append("Never")
    if typing_names:
        lines += [f"from typing import {', '.join(typing_names)}", ""]
    if uses.base_model:
        lines += ["from pydantic import BaseModel" + (", Field" if uses.field else ""), ""]
    stateous_names = [
        n
        for n, used in (
            ("Context", any(b.context is not None for b in bodies)),
            ("Occurrence", has_events),
            ("StateRef", True),
        )
        if used
    ]
    lines += [
        f"from stateous import {', '.join(stateous_names)}",
        "",
        f"__workflow__ = {string_literal(name)}",
        f"__checksum__ = {string_literal(checksum)}",
    ]
    return "\n".join(lines)
