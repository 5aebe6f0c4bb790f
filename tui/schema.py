"""The graph document's JSON Schemas, read for the fire and start forms."""

from __future__ import annotations

import json
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

OWN_EVENTS = frozenset({"__started__", "timeout", "error", "joined"})


class FormError(ValueError):
    """A form's input that cannot be sent: the sentence says what to fix."""


def workflow_body(graph: dict[str, Any], token: dict[str, Any]) -> dict[str, Any]:
    """The body (states, events, transitions) of the workflow a token runs.

    A child's id is `<parent>.<state>.<visit>.<workflow>`, which names its workflow.
    """
    parent = token.get("parent")
    if isinstance(parent, str):
        rest = str(token.get("token", ""))[len(parent) + 1 :].split(".", 2)
        body = (graph.get("workflows") or {}).get(rest[-1]) if len(rest) == 3 else None
        if isinstance(body, dict):
            return body
    return graph


def outside_events(graph: dict[str, Any], token: dict[str, Any]) -> list[str]:
    """The events the token's current state can take from outside, in transition order."""
    body = workflow_body(graph, token)
    declared = body.get("events") or {}
    found: list[str] = []
    for transition in body.get("transitions") or []:
        event = transition.get("on")
        if (
            transition.get("from") == token.get("state")
            and isinstance(event, str)
            and event in declared
            and event not in OWN_EVENTS
            and event not in found
        ):
            found.append(event)
    return found


def payload_model(graph: dict[str, Any], token: dict[str, Any], event: str) -> str | None:
    """The payload model's key of `event` in the token's workflow, or None (no payload)."""
    entry = (workflow_body(graph, token).get("events") or {}).get(event)
    model = entry.get("payload") if isinstance(entry, dict) else None
    return model if isinstance(model, str) else None


def context_model(graph: dict[str, Any]) -> str | None:
    """The main workflow's context model key, or None."""
    model = graph.get("context")
    return model if isinstance(model, str) else None


def _schema(graph: dict[str, Any], model: str) -> dict[str, Any]:
    found = (graph.get("schemas") or {}).get(model)
    return found if isinstance(found, dict) else {}


def _type_of(schema: dict[str, Any]) -> str:
    if "$ref" in schema:
        return str(schema["$ref"]).rsplit("/", 1)[-1]
    if "anyOf" in schema:
        return " | ".join(_type_of(s) for s in schema["anyOf"] if isinstance(s, dict))
    if "enum" in schema:
        return " | ".join(json.dumps(v) for v in schema["enum"])
    if schema.get("type") == "array" and isinstance(schema.get("items"), dict):
        return f"list[{_type_of(schema['items'])}]"
    return str(schema.get("type", "any"))


def field_lines(graph: dict[str, Any], model: str) -> list[str]:
    """One line per field of the model: `name: type (required)` or `(default …)`."""
    schema = _schema(graph, model)
    required = set(schema.get("required") or [])
    lines = []
    for name, prop in (schema.get("properties") or {}).items():
        prop = prop if isinstance(prop, dict) else {}
        if name in required:
            note = "required"
        elif "default" in prop:
            note = f"default {json.dumps(prop['default'])}"
        else:
            note = "optional"
        lines.append(f"{name}: {_type_of(prop)} ({note})")
    return lines


_PLACEHOLDERS: dict[str, object] = {
    "string": "",
    "integer": 0,
    "number": 0,
    "boolean": False,
    "array": [],
    "object": {},
}


def skeleton(graph: dict[str, Any], model: str | None) -> str:
    """A JSON object to start from: each required field with a placeholder of its type."""
    if model is None:
        return "{}"
    schema = _schema(graph, model)
    props = schema.get("properties") or {}
    body = {
        name: _PLACEHOLDERS.get(str((props.get(name) or {}).get("type")))
        for name in schema.get("required") or []
    }
    return json.dumps(body)


def _no_constants(word: str) -> object:
    raise FormError(f"the JSON is not valid: {word} is not a JSON value")


def parse_object(text: str, what: str) -> dict[str, Any]:
    """`text` as a JSON object (blank counts as `{}`); FormError with a sentence otherwise."""
    if not text.strip():
        return {}
    try:
        value = json.loads(text, parse_constant=_no_constants)
    except json.JSONDecodeError as exc:
        raise FormError(f"the {what} is not valid JSON: {exc.msg} at column {exc.colno}") from None
    if not isinstance(value, dict):
        raise FormError(f'the {what} must be a JSON object, such as {{"note": "ok"}}')
    return value


def validate(graph: dict[str, Any], model: str | None, value: dict[str, Any], what: str) -> None:
    """Check `value` against the model's schema as the control plane does (draft 2020-12)."""
    if model is None:
        if value:
            raise FormError(f"this {what} takes no fields; send {{}}")
        return
    schema = {"$ref": f"#/schemas/{model}", "schemas": graph.get("schemas") or {}}
    error = best_match(Draft202012Validator(schema).iter_errors(value))
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path)
        raise FormError(
            f"the {what} does not fit {model}: {where + ': ' if where else ''}{error.message}"
        )


def state_key(token: dict[str, Any]) -> str:
    """The token's state as `/stats` names it: `<workflow>/<state>` for a child token."""
    state = str(token.get("state"))
    parent = token.get("parent")
    if isinstance(parent, str):
        rest = str(token.get("token", ""))[len(parent) + 1 :].split(".", 2)
        if len(rest) == 3:
            return f"{rest[2]}/{state}"
    return state
