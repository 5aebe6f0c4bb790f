"""Building the graph document from the workflows."""

from __future__ import annotations

from typing import Any

from stateous.compiler.schemas import SchemaSet
from stateous.model.authoring import BUILT_IN_EVENTS, START, State, Transition, Workflow

__all__ = ["build_document"]


def build_document(top: Workflow, tree: list[Workflow], schemas: SchemaSet) -> dict[str, Any]:
    """The graph document, keys in the order of the graph file."""
    doc: dict[str, Any] = {"stateous": 1, "workflow": top.name}
    doc.update(_body(top, schemas))
    if top.search_keys:
        # Only when declared, so that a graph without search keys keeps its checksum.
        doc["search"] = sorted(top.search_keys)
    if len(tree) > 1 or any(s.is_parallel for s in top.states.values()):
        doc["workflows"] = {child.name: _body(child, schemas) for child in tree[1:]}
    doc["schemas"] = dict(schemas.schemas)
    return doc


def _body(flow: Workflow, schemas: SchemaSet) -> dict[str, Any]:
    body: dict[str, Any] = {}
    if flow.context is not None:
        body["context"] = schemas.key(flow.context)
    body["states"] = {name: _state(state, flow) for name, state in flow.states.items()}
    body["events"] = {name: _event(flow, name, schemas) for name in flow.events}
    body["transitions"] = [_transition(t) for t in flow.transitions]
    return body


def _state(state: State, flow: Workflow) -> dict[str, Any]:
    entry: dict[str, Any] = {}
    if state.timeout is not None:
        entry["timeout"] = state.timeout
    if state.retries:
        entry["retries"] = state.retries
    if state.is_parallel:
        entry["parallel"] = [child.name for child in state.parallel]
        entry["join"] = state.join
        if state.inputs:
            entry["inputs"] = list(state.inputs)
        if state.into is not None:
            entry["into"] = state.into
        return entry
    emits: list[str] = []
    for t in flow.transitions:
        if (
            t.source is state
            and t.on is not None
            and t.on not in BUILT_IN_EVENTS
            and t.on not in emits
        ):
            emits.append(t.on)
    entry["emits"] = emits
    return entry


def _event(flow: Workflow, name: str, schemas: SchemaSet) -> dict[str, Any]:
    event = flow.events[name]
    entry: dict[str, Any] = {}
    if event.payload is not None:
        entry["payload"] = schemas.key(event.payload)
    if event.into is not None:
        entry["into"] = event.into
    return entry


def _transition(t: Transition) -> dict[str, Any]:
    entry: dict[str, Any] = {"from": t.source.name, "to": t.target.name}
    if t.source is not START and t.on is not None:
        entry["on"] = t.on
    if t.when is not None:
        entry["when"] = t.when
    if t.otherwise:
        entry["otherwise"] = True
    return entry
