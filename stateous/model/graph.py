"""Reading a graph file: every check of its shape, and typed, read-only access to it."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from stateous.model.canonical import checksum as checksum_of
from stateous.model.canonical import structure as structure_of
from stateous.model.durations import DurationError, parse_duration
from stateous.model.errors import StateousError
from stateous.model.guards import Guard, GuardError, parse_guard

__all__ = [
    "END",
    "START",
    "STARTED",
    "EventSpec",
    "Graph",
    "GraphFileError",
    "StateSpec",
    "TransitionSpec",
    "WorkflowBody",
    "load_graph",
    "read_graph_file",
]

#: The graph names of START and END, and the event on which a token leaves START.
START = "__start__"
END = "__end__"
STARTED = "__started__"

_TOP_KEYS = ("stateous", "workflow", "states", "events", "transitions", "schemas")
_BODY_KEYS = ("states", "events", "transitions")


class GraphFileError(StateousError):
    """A file that is not a graph file this Stateous can serve."""

    code = "invalid_graph"


@dataclass(frozen=True)
class StateSpec:
    """One state of a workflow body, as the graph file gives it."""

    name: str
    timeout: str | None = None
    timeout_seconds: int | None = None
    retries: int = 0
    parallel: tuple[str, ...] = ()
    join: str = "all"
    inputs: tuple[str, ...] = ()
    emits: tuple[str, ...] = ()
    into: str | None = None

    @property
    def is_parallel(self) -> bool:
        """Whether the state runs child workflows (and so has no task)."""
        return bool(self.parallel)


@dataclass(frozen=True)
class EventSpec:
    """One declared event: its payload model key and its `into=` context key, if any."""

    name: str
    payload: str | None = None
    into: str | None = None


@dataclass(frozen=True)
class TransitionSpec:
    """One transition; `on` is `__started__` for a transition from START."""

    source: str
    target: str
    on: str
    guard: Guard | None = None
    otherwise: bool = False

    @property
    def when(self) -> str | None:
        """The guard text as written, or None."""
        return self.guard.text if self.guard is not None else None


@dataclass(frozen=True)
class WorkflowBody:
    """The top workflow or one child workflow of a graph file."""

    name: str
    context: str | None
    states: dict[str, StateSpec]
    events: dict[str, EventSpec]
    transitions: list[TransitionSpec]
    #: The structure of the graph the body belongs to (tokens run on their own version).
    structure: str = ""
    #: The graph's `schemas`, where the body's models are.
    schemas: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)
    _groups: dict[tuple[str, str], list[TransitionSpec]] = field(
        default_factory=dict, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        for t in self.transitions:
            self._groups.setdefault((t.source, t.on), []).append(t)

    def transitions_from(self, state: str, event: str) -> list[TransitionSpec]:
        """The transitions from `state` on `event`, in declaration order (START: `__started__`)."""
        return list(self._groups.get((state, event), ()))


@dataclass(frozen=True)
class Graph:
    """A checked graph file: the parsed document and typed views of it."""

    doc: dict[str, Any]
    workflow: str
    checksum: str
    structure: str
    bodies: dict[str, WorkflowBody]
    schemas: dict[str, Any]
    #: The main workflow's search keys, sorted; empty when the file has none.
    search: tuple[str, ...] = ()

    @property
    def main(self) -> WorkflowBody:
        """The body of the top workflow."""
        return self.bodies[self.workflow]


def read_graph_file(path: str | os.PathLike[str]) -> Graph:
    """Read and check the graph file at `path`.

    Raises `GraphFileError` with `cannot read the graph file {path}: {reason}` or
    `{path} is not a graph file: {message}`.
    """
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise GraphFileError(f"cannot read the graph file {os.fspath(path)}: {reason}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        message = f"the graph file is not valid JSON: {exc.reason} at line {raw[: exc.start].count(b'\n') + 1}"
        raise GraphFileError(f"{os.fspath(path)} is not a graph file: {message}") from None
    try:
        return load_graph(text)
    except GraphFileError as exc:
        raise GraphFileError(f"{os.fspath(path)} is not a graph file: {exc.message}") from None


def load_graph(text: str) -> Graph:
    """Parse and check the text of a graph file; raise `GraphFileError` on the first problem."""
    doc = _parse_json(text)
    _check_top(doc)
    children = doc.get("workflows", {})
    structure = structure_of(doc)
    main = _body(doc["workflow"], doc, doc, "the graph file's ", structure)
    bodies = {main.name: main}
    for name, child in children.items():
        where = f"the graph file's workflow {name!r}"
        if not isinstance(child, dict):
            raise GraphFileError(f"{where} is not an object")
        for key in _BODY_KEYS:
            if key not in child:
                raise GraphFileError(f"{where} has no {key!r}")
        # Child state problems are worded like the top's: `the graph file's state ...`.
        bodies[name] = _body(name, child, doc, "the graph file's ", structure)
    schemas = doc["schemas"]
    _check_models(bodies, schemas)
    return Graph(
        doc=doc,
        workflow=doc["workflow"],
        checksum=checksum_of(doc),
        structure=structure,
        bodies=bodies,
        schemas=schemas,
        search=_search(doc.get("search", []), main, schemas),
    )


def _parse_json(text: str) -> Any:
    def refuse_constant(name: str) -> Any:
        raise ValueError(f"{name} is not JSON")

    try:
        return json.loads(text, parse_constant=refuse_constant)
    except json.JSONDecodeError as exc:
        raise GraphFileError(
            f"the graph file is not valid JSON: {exc.msg} at line {exc.lineno}"
        ) from None
    except (ValueError, RecursionError) as exc:
        raise GraphFileError(f"the graph file is not valid JSON: {exc} at line 1") from None


def _check_top(doc: Any) -> None:
    if not isinstance(doc, dict):
        raise GraphFileError("the graph file is not a JSON object")
    for key in _TOP_KEYS:
        if key not in doc:
            raise GraphFileError(f"the graph file has no {key!r}; run `stateous compile` again")
    version = doc["stateous"]
    if type(version) is not int or version != 1:
        raise GraphFileError(
            f"the graph file has format {version!r}, but this Stateous reads format 1; "
            "run `stateous compile` again"
        )
    if "workflows" in doc and not isinstance(doc["workflows"], dict):
        raise GraphFileError("the graph file's 'workflows' is not an object")
    if not isinstance(doc["workflow"], str):
        raise GraphFileError("the graph file's 'workflow' is not a name")
    if not isinstance(doc["schemas"], dict):
        raise GraphFileError("the graph file's 'schemas' is not an object")


def _body(
    name: str, raw: dict[str, Any], doc: dict[str, Any], prefix: str, structure: str
) -> WorkflowBody:
    """Check and read one body of `doc`; `prefix` starts each message (`the graph file's ` for
    the top)."""
    children = doc.get("workflows", {})
    if not isinstance(raw["states"], dict):
        raise GraphFileError(f"{prefix}'states' is not an object")
    states = {s: _state(s, entry, children, prefix) for s, entry in raw["states"].items()}
    events = _events(raw["events"], prefix)
    transitions = _transitions(raw["transitions"], states, events, prefix)
    context = raw.get("context")
    if context is not None and not isinstance(context, str):
        raise GraphFileError(f"{prefix}'context' is not a model name")
    schemas = doc.get("schemas")
    return WorkflowBody(
        name, context, states, events, transitions, structure,
        schemas if isinstance(schemas, dict) else {},
    )  # fmt: skip


def _state(name: str, entry: Any, children: Mapping[str, Any], prefix: str) -> StateSpec:
    where = f"{prefix}state {name!r}"
    if not isinstance(entry, dict):
        raise GraphFileError(f"{where} is not an object")
    timeout = entry.get("timeout")
    seconds = None
    if "timeout" in entry:
        try:
            seconds = parse_duration(timeout)
        except DurationError as exc:
            raise GraphFileError(f"{where}: {exc.message}") from None
    retries = entry.get("retries", 0)
    if type(retries) is not int or retries < 0:
        raise GraphFileError(f"{where}: retries is a whole number of 0 or more, not {retries!r}")
    inputs = entry.get("inputs", [])
    if not isinstance(inputs, list) or not all(isinstance(i, str) for i in inputs):
        raise GraphFileError(f"{where}: 'inputs' is a list of context fields, by name")
    parallel = entry.get("parallel", [])
    if "parallel" in entry and (
        not isinstance(parallel, list)
        or not parallel
        or not all(isinstance(p, str) and p in children for p in parallel)
    ):
        raise GraphFileError(f"{where}: 'parallel' names a workflow that 'workflows' does not have")
    join = entry.get("join", "all")
    if join not in ("all", "any"):
        raise GraphFileError(f"{where}: 'join' is 'all' or 'any'")
    emits = entry.get("emits", [])
    if not isinstance(emits, list) or not all(isinstance(e, str) for e in emits):
        raise GraphFileError(f"{where}: 'emits' is a list of events, by name")
    into = entry.get("into")
    if into is not None and not isinstance(into, str):
        raise GraphFileError(f"{where}: 'into' is a context field, by name")
    return StateSpec(
        name=name,
        timeout=timeout if seconds is not None else None,
        timeout_seconds=seconds,
        retries=retries,
        parallel=tuple(parallel),
        join=join,
        inputs=tuple(inputs),
        emits=tuple(emits),
        into=into,
    )


def _events(raw: Any, prefix: str) -> dict[str, EventSpec]:
    if not isinstance(raw, dict):
        raise GraphFileError(f"{prefix}'events' is not an object")
    events: dict[str, EventSpec] = {}
    for name, entry in raw.items():
        where = f"{prefix}event {name!r}"
        if not isinstance(entry, dict):
            raise GraphFileError(f"{where} is not an object")
        payload, into = entry.get("payload"), entry.get("into")
        if payload is not None and not isinstance(payload, str):
            raise GraphFileError(f"{where}: 'payload' is a model name")
        if into is not None and not isinstance(into, str):
            raise GraphFileError(f"{where}: 'into' is a context field, by name")
        events[name] = EventSpec(name, payload, into)
    return events


_BUILT_IN_EVENTS = ("timeout", "error", "joined")


def _transitions(
    raw: Any, states: Mapping[str, StateSpec], events: Mapping[str, EventSpec], prefix: str
) -> list[TransitionSpec]:
    if not isinstance(raw, list):
        raise GraphFileError(f"{prefix}'transitions' is not a list")
    return [_transition(n, entry, states, events, prefix) for n, entry in enumerate(raw, 1)]


def _transition(
    n: int,
    entry: Any,
    states: Mapping[str, StateSpec],
    events: Mapping[str, EventSpec],
    prefix: str,
) -> TransitionSpec:
    where = f"{prefix}transition {n}"
    if not isinstance(entry, dict):
        raise GraphFileError(f"{where} is not an object")
    source, target = entry.get("from"), entry.get("to")
    if source != START and source not in states:
        raise GraphFileError(f"{where} leaves {source!r}, which is not a state")
    if target != END and target not in states:
        raise GraphFileError(f"{where} goes to {target!r}, which is not a state")
    on = entry.get("on", STARTED)
    if source == START and on != STARTED:
        raise GraphFileError(f"{where} leaves START on {on!r}; it takes no 'on'")
    if source != START and on not in events and on not in _BUILT_IN_EVENTS:
        raise GraphFileError(f"{where} is taken on {on!r}, which is not an event")
    otherwise = entry.get("otherwise", False)
    if type(otherwise) is not bool:
        raise GraphFileError(f"{where}: 'otherwise' is true or absent")
    guard = None
    if "when" in entry:
        try:
            guard = parse_guard(entry["when"])
        except GuardError as exc:
            raise GraphFileError(exc.message) from None
    return TransitionSpec(str(source), str(target), str(on), guard, otherwise)


def _check_models(bodies: Mapping[str, WorkflowBody], schemas: Mapping[str, Any]) -> None:
    for body in bodies.values():
        names = [body.context] + [e.payload for e in body.events.values()]
        for model in names:
            if model is not None and model not in schemas:
                raise GraphFileError(
                    f"the graph file names the model {model!r}, which 'schemas' does not have"
                )


def _search(raw: Any, main: WorkflowBody, schemas: Mapping[str, Any]) -> tuple[str, ...]:
    """The `search` keys, each a top-level property of the main context model."""
    if not isinstance(raw, list) or not all(isinstance(k, str) for k in raw):
        raise GraphFileError("the graph file's 'search' is not a list of context fields, by name")
    model = schemas.get(main.context) if main.context is not None else None
    properties = model.get("properties") if isinstance(model, dict) else None
    for n, key in enumerate(raw):
        if key in raw[:n]:
            raise GraphFileError(f"the graph file's 'search' names {key!r} twice")
        if main.context is None:
            raise GraphFileError(
                f"the graph file's 'search' names {key!r}, but the workflow has no context model"
            )
        if not isinstance(properties, dict) or key not in properties:
            raise GraphFileError(
                f"the graph file's 'search' names {key!r}, which the context model "
                f"{main.context!r} does not have"
            )
    return tuple(sorted(raw))
