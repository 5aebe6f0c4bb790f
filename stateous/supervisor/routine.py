"""The API a routine is written against: `on_state`, `Context`, `Occurrence`, `StateRef`.

Routines import these from `stateous`; `contract.py` builds the `events` and `states` of a
workflow from them. The supervisor builds one `Context` per grant and hands it a `Sink` that
writes notes and memory to the outbox.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, cast, get_args, get_origin

from pydantic import BaseModel, ValidationError

from stateous.model.durations import parse_duration

__all__ = [
    "Context",
    "EnteredBy",
    "Memory",
    "Occurrence",
    "OutcomeError",
    "Sink",
    "StateRef",
    "json_copy",
    "on_state",
    "routine_state",
]

_MARK = "__stateous_state__"
NOTE_LIMIT = 500


class OutcomeError(ValueError):
    """An answer (an agent's, for example) that names no outcome the state may have."""


def json_copy(value: object) -> Any:
    """`value` as JSON round-trips it (a tuple becomes a list); TypeError/ValueError if not JSON."""
    return json.loads(json.dumps(value, allow_nan=False))


def _json_or_type_error(value: object, what: str) -> Any:
    try:
        return json_copy(value)
    except (TypeError, ValueError, RecursionError) as exc:
        raise TypeError(f"{what} must be JSON: {exc}") from None


# --- occurrences and states -------------------------------------------------------------------


class Occurrence[P]:
    """One occurrence of an event: what a routine returns. `P` is the payload model or None."""

    name: ClassVar[str] = ""

    def __init__(self, payload: P | None = None) -> None:
        self.payload = payload

    @classmethod
    def payload_model(cls) -> type[BaseModel] | None:
        """The model of the class's `Occurrence[Model]` base, or None for an event without one."""
        for klass in cls.__mro__:
            for base in getattr(klass, "__orig_bases__", ()):
                if get_origin(base) is Occurrence:
                    (argument,) = get_args(base)
                    if isinstance(argument, type) and issubclass(argument, BaseModel):
                        return argument
                    return None
        return None

    def __repr__(self) -> str:
        return f"{self.name}({self.payload!r})"


class StateRef[O]:
    """A state as the supervisor sees it, written by `init` into `contract.states`. Immutable."""

    __slots__ = ("emits", "name")
    name: str
    emits: tuple[type[Occurrence[Any]], ...]

    def __init__(self, name: str, emits: tuple[type[Occurrence[Any]], ...] = ()) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "emits", tuple(emits))

    def __setattr__(self, key: str, value: object) -> None:
        raise AttributeError(f"a StateRef cannot be changed; {key!r} stays as init wrote it")

    def __repr__(self) -> str:
        return f"StateRef({self.name!r}, emits=({', '.join(e.name for e in self.emits)}))"

    def may_emit(self, occurrence: object) -> bool:
        """Whether the occurrence's class is one of `emits` (identity, not the name)."""
        return any(type(occurrence) is event for event in self.emits)

    def _allowed(self) -> str:
        if not self.emits:
            return f"{self.name!r} may emit no event"
        return f"{self.name!r} may emit " + ", ".join(repr(e.name) for e in self.emits)

    def outcome_schema(self) -> dict[str, Any]:
        """One JSON Schema of every outcome the state allows: `{"oneOf": [...]}`."""
        if not self.emits:
            raise OutcomeError(f"{self.name!r} may emit no event, so no outcome schema fits it")
        return {"oneOf": [_branch(event) for event in self.emits]}

    def outcome(self, data: object) -> O:
        """The occurrence that `data` (`{"event", "payload"}`) names, checked; else OutcomeError."""
        allowed = self._allowed()
        if not isinstance(data, Mapping):
            raise OutcomeError(
                f"an outcome of {self.name!r} is an object with 'event' and 'payload'; {allowed}"
            )
        extra = sorted(str(k) for k in data if k not in ("event", "payload"))
        if extra:
            raise OutcomeError(
                f"an outcome of {self.name!r} has only 'event' and 'payload', not {extra[0]!r}; "
                f"{allowed}"
            )
        name = data.get("event")
        event = next((e for e in self.emits if e.name == name), None)
        if event is None:
            raise OutcomeError(f"{self.name!r} may not emit {name!r}; {allowed}")
        model = event.payload_model()
        if model is None:
            if "payload" in data:
                raise OutcomeError(
                    f"{event.name!r} carries no payload, but the outcome has one; {allowed}"
                )
            return cast(O, event())
        return cast(O, event(_validate(model, data.get("payload"), event.name, allowed)))


def _validate(model: type[BaseModel], payload: object, event: str, allowed: str) -> BaseModel:
    try:
        text = json.dumps(payload, allow_nan=False)
        return model.model_validate_json(text)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "payload"
        problem = f"{where}: {first['msg']}"
    except (TypeError, ValueError) as exc:
        problem = f"payload: {exc}"
    raise OutcomeError(
        f"the payload of {event!r} does not fit {model.__name__} ({problem}); {allowed}"
    )


def _branch(event: type[Occurrence[Any]]) -> dict[str, Any]:
    properties: dict[str, Any] = {"event": {"const": event.name}}
    model = event.payload_model()
    if model is not None:
        properties["payload"] = _inline(model)
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def _inline(model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON Schema with each `#/$defs/...` reference replaced by its definition."""
    schema = model.model_json_schema()
    defs: dict[str, Any] = schema.pop("$defs", {})

    def resolve(node: Any, stack: tuple[str, ...]) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                name = ref.removeprefix("#/$defs/")
                if name in stack or name == model.__name__:
                    raise OutcomeError(
                        f"the payload model {model.__name__} refers to itself; "
                        "an outcome schema cannot hold it"
                    )
                rest = {k: resolve(v, stack) for k, v in node.items() if k != "$ref"}
                return {**resolve(defs[name], (*stack, name)), **rest}
            return {k: resolve(v, stack) for k, v in node.items()}
        if isinstance(node, list):
            return [resolve(item, stack) for item in node]
        return node

    return cast(dict[str, Any], resolve(schema, ()))


def on_state[F: Callable[..., Any]](state: StateRef[Any]) -> Callable[[F], F]:
    """Mark a function as the routine of `state` (a `StateRef` from `contract.states`).

    The function is returned unchanged; the supervisor finds marked functions in its folder.
    """
    if not isinstance(state, StateRef):
        raise TypeError(f"@on_state takes a state from contract.states, not {state!r}")

    def mark(function: F) -> F:
        setattr(function, _MARK, state)
        return function

    return mark


def routine_state(function: object) -> StateRef[Any] | None:
    """The state that `@on_state` marked `function` with, or None."""
    state = getattr(function, _MARK, None) if callable(function) else None
    return state if isinstance(state, StateRef) else None


# --- the context of a routine -----------------------------------------------------------------


class Sink(Protocol):
    """Where a routine's notes and memory writes go: the outbox, then the control plane.

    Each call returns once the message is committed to the outbox; it raises when it is not.
    """

    def note(self, text: str) -> None:
        """Queue a note (already stripped and within the limit)."""

    def memory(self, key: str, value: Any) -> None:
        """Queue a memory write; `value` None deletes the key."""


@dataclass(frozen=True)
class EnteredBy:
    """The event that brought the token into the state: its name only."""

    name: str
    payload: None = None


class Memory(MutableMapping[str, Any]):
    """The routine's memory for one token and one state; each change is sent at once."""

    def __init__(self, values: Mapping[str, Any], sink: Sink) -> None:
        self._values = dict(values)
        self._sink = sink

    def __getitem__(self, key: str) -> Any:
        return copy.deepcopy(self._values[key])

    def __setitem__(self, key: str, value: Any) -> None:
        _check_memory_key(key)
        if value is None:
            raise ValueError(
                f"memory[{key!r}] = None: use `del ctx.memory[{key!r}]` to delete a key"
            )
        value = _json_or_type_error(value, f"memory[{key!r}]")
        self._sink.memory(key, value)
        self._values[key] = value

    def __delitem__(self, key: str) -> None:
        if key not in self._values:
            raise KeyError(key)
        self._sink.memory(key, None)
        del self._values[key]

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._values))

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"Memory({self._values!r})"


def _check_memory_key(key: object) -> None:
    if not isinstance(key, str) or not 1 <= len(key) <= 128:
        raise ValueError(f"a memory key is 1 to 128 characters, not {key!r}")


class Context[C]:
    """The `ctx` of a routine: the token's context (as copies), memory, notes and timers.

    `C` is the context model, for type checkers only: values are plain JSON.
    """

    def __init__(
        self,
        *,
        token: str,
        task: int,
        visit: int,
        attempt: int,
        context: Mapping[str, Any],
        memory: Mapping[str, Any],
        entered_by: str,
        sink: Sink,
    ) -> None:
        self.token = token
        self.task = task
        self.visit = visit
        self.attempt = attempt
        self.entered_by = EnteredBy(entered_by)
        self.memory: MutableMapping[str, Any] = Memory(memory, sink)
        self._context = dict(context)
        self._writes: dict[str, Any] = {}
        self._schedules: list[dict[str, Any]] = []
        self._sink = sink

    def __getitem__(self, key: str) -> Any:
        if key not in self._context:
            raise KeyError(f"the token's context has no {key!r}")
        return copy.deepcopy(self._context[key])

    def __setitem__(self, key: str, value: Any) -> None:
        if not isinstance(key, str):
            raise TypeError(f"a context key is a string, not {key!r}")
        value = _json_or_type_error(value, f"ctx[{key!r}]")
        self._writes[key] = value
        self._context[key] = value

    def __contains__(self, key: object) -> bool:
        return key in self._context

    def get(self, key: str, default: Any = None) -> Any:
        """As `ctx[key]`, or `default` when the context has no `key`."""
        return copy.deepcopy(self._context[key]) if key in self._context else default

    def note(self, text: str) -> None:
        """One line of progress in the token's history, sent at once; "" writes nothing."""
        text = str(text).strip()
        if not text:
            return
        if len(text) > NOTE_LIMIT:
            raise ValueError(f"a note is at most {NOTE_LIMIT} characters; this one has {len(text)}")
        self._sink.note(text)

    def schedule(self, event: object, *, after: str) -> None:
        """Set a timer, sent with the report: `event` fires on this token `after` from then."""
        if isinstance(event, type) and issubclass(event, Occurrence):
            if event.payload_model() is not None:
                raise ValueError(
                    f"{event.name!r} carries a payload; schedule an occurrence with its "
                    "payload, not the event class"
                )
            entry: dict[str, Any] = {"event": event.name}
        elif isinstance(event, Occurrence):
            entry = {"event": event.name}
            if isinstance(event.payload, BaseModel):
                entry["payload"] = event.payload.model_dump(mode="json")
        else:
            raise TypeError(f"schedule an event of contract.events, not {event!r}")
        parse_duration(after)  # a DurationError is a ValueError with its sentence
        entry["after"] = after
        self._schedules.append(entry)

    def writes(self) -> dict[str, Any]:
        """A copy of the routine's writes to the context so far."""
        return copy.deepcopy(self._writes)

    def schedules(self) -> list[dict[str, Any]]:
        """A copy of the timers set so far."""
        return copy.deepcopy(self._schedules)
