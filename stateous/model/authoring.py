"""The authoring API of `flow.py`: `Workflow`, `START`, `END`.

Every call checks what it can see at once and raises `DeclarationError` with the
sentence that names the mistake; checks that need the whole graph run at compile time.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Final

from pydantic import BaseModel

from stateous.model.durations import DurationError, parse_duration
from stateous.model.errors import StateousError
from stateous.model.guards import Guard, GuardError, parse_guard

__all__ = [
    "BUILT_IN_EVENTS",
    "END",
    "NAME_PATTERN",
    "START",
    "STARTED",
    "DeclarationError",
    "Endpoint",
    "Event",
    "State",
    "Transition",
    "Workflow",
    "valid_name",
]

#: Workflow, state and event names.
NAME_PATTERN = re.compile(r"[a-z][a-z0-9_-]{0,63}")
#: Events that transitions name by string and nobody declares.
BUILT_IN_EVENTS: Final = ("timeout", "error", "joined")
#: The internal event on which a token leaves START.
STARTED: Final = "__started__"

_NAME_RULE = "use a-z, 0-9, '_' and '-', starting with a letter, at most 64 characters"


class DeclarationError(StateousError):
    """A mistake in `flow.py` seen at the call that makes it."""

    code = "invalid_workflow"


def valid_name(name: object) -> bool:
    """Whether `name` is a valid workflow, state or event name."""
    return isinstance(name, str) and NAME_PATTERN.fullmatch(name) is not None


def _is_model(value: object) -> bool:
    return isinstance(value, type) and issubclass(value, BaseModel)


class Endpoint:
    """`START` or `END`: Stateous's own states, never declared."""

    __slots__ = ("label", "name")

    def __init__(self, name: str, label: str) -> None:
        self.name = name
        self.label = label

    def __repr__(self) -> str:
        return self.label


#: Every token begins here (graph name `__start__`).
START: Final = Endpoint("__start__", "START")
#: Entering it completes a token (graph name `__end__`).
END: Final = Endpoint("__end__", "END")


class State:
    """A state of one workflow, returned by `Workflow.state`."""

    def __init__(
        self,
        workflow: Workflow,
        name: str,
        *,
        timeout: str | None,
        retries: int,
        parallel: tuple[Workflow, ...],
        join: str,
        inputs: tuple[str, ...],
        into: str | None,
    ) -> None:
        self.workflow = workflow
        self.name = name
        self.timeout = timeout
        self.retries = retries
        self.parallel = parallel
        self.join = join
        self.inputs = inputs
        self.into = into

    @property
    def is_parallel(self) -> bool:
        """Whether the state runs child workflows (it then has no task)."""
        return bool(self.parallel)

    def __repr__(self) -> str:
        return f"<state {self.name!r} of {self.workflow.name!r}>"


class Event:
    """A declared event of one workflow, returned by `Workflow.event`."""

    def __init__(
        self, workflow: Workflow, name: str, payload: type[BaseModel] | None, into: str | None
    ) -> None:
        self.workflow = workflow
        self.name = name
        self.payload = payload
        self.into = into

    def __repr__(self) -> str:
        return f"<event {self.name!r} of {self.workflow.name!r}>"


class Transition:
    """A transition, returned by `Workflow.transition`; `on` is None from START."""

    def __init__(
        self,
        source: State | Endpoint,
        target: State | Endpoint,
        on: str | None,
        when: str | None,
        guard: Guard | None,
        otherwise: bool,
    ) -> None:
        self.source = source
        self.target = target
        self.on = on
        self.when = when
        self.guard = guard
        self.otherwise = otherwise

    @property
    def event(self) -> str:
        """The event the transition is taken on (`__started__` from START)."""
        return self.on if self.on is not None else STARTED

    def __repr__(self) -> str:
        return f"<transition {self.source.name} --{self.on or ''}--> {self.target.name}>"


class Workflow:
    """A named graph of states, events and transitions."""

    def __init__(self, name: str, *, context: type[BaseModel] | None = None) -> None:
        if not valid_name(name):
            raise DeclarationError(f"workflow name {name!r} is not valid: {_NAME_RULE}")
        if context is not None and not _is_model(context):
            raise DeclarationError(
                f"workflow {name!r}: context must be a pydantic model class, not {context!r}"
            )
        self.name = name
        self.context = context
        self.states: dict[str, State] = {}
        self.events: dict[str, Event] = {}
        self.transitions: list[Transition] = []
        #: The context keys tokens are found by, in declaration order.
        self.search_keys: list[str] = []

    def __repr__(self) -> str:
        return f"Workflow({self.name!r})"

    # -- states ------------------------------------------------------------------------
    def state(
        self,
        name: str,
        *,
        timeout: str | None = None,
        retries: int = 0,
        parallel: Sequence[Workflow] = (),
        join: str = "all",
        inputs: Sequence[str] = (),
        into: str | None = None,
    ) -> State:
        """Declare a state; `parallel=[...]` makes it run child workflows."""
        self._check_state_name(name)
        where = f"state {name!r}"
        if timeout is not None:
            try:
                parse_duration(timeout)
            except DurationError as exc:
                raise DeclarationError(f"{where}: {exc.message}") from None
        if type(retries) is not int or retries < 0:
            raise DeclarationError(
                f"{where}: retries must be a whole number, 0 or more, not {retries!r}"
            )
        children = self._check_parallel(name, parallel, retries)
        self._check_join_inputs(name, children, join, inputs, into)
        state = State(
            self,
            name,
            timeout=timeout,
            retries=retries,
            parallel=children,
            join=join,
            inputs=tuple(inputs),
            into=into,
        )
        self.states[name] = state
        return state

    def _check_state_name(self, name: object) -> None:
        if name in (START.name, END.name):
            raise DeclarationError(
                f"state {name!r} is Stateous's own; import START and END instead of declaring them"
            )
        if not valid_name(name):
            raise DeclarationError(f"state name {name!r} is not valid: {_NAME_RULE}")
        if name in self.states:
            raise DeclarationError(f"state {name!r} is already declared")

    def _check_parallel(self, name: str, parallel: object, retries: int) -> tuple[Workflow, ...]:
        if (
            isinstance(parallel, Workflow | str | bytes)
            or not isinstance(parallel, Sequence)
            or not all(isinstance(w, Workflow) for w in parallel)
        ):
            raise DeclarationError(
                f"state {name!r}: parallel takes a list of workflows, e.g. parallel=[review]"
            )
        children: tuple[Workflow, ...] = tuple(parallel)
        if any(w is self for w in children):
            raise DeclarationError(f"state {name!r}: a workflow cannot run itself")
        for i, child in enumerate(children):
            if any(child is other for other in children[:i]):
                raise DeclarationError(
                    f"state {name!r} runs the workflow {child.name!r} two times; "
                    "each child needs a workflow of its own"
                )
        if children and retries != 0:
            raise DeclarationError(
                f"state {name!r}: a parallel state has no task, so it has no retries"
            )
        return children

    def _check_join_inputs(
        self, name: str, children: tuple[Workflow, ...], join: object, inputs: object, into: object
    ) -> None:
        if join not in ("all", "any"):
            raise DeclarationError(f"state {name!r}: join must be 'all' or 'any', not {join!r}")
        if (
            isinstance(inputs, str | bytes)
            or not isinstance(inputs, Sequence)
            or not all(isinstance(k, str) and k for k in inputs)
        ):
            raise DeclarationError(
                f"state {name!r}: inputs is a list of context keys, e.g. inputs=['repo']"
            )
        if not children and (join != "all" or len(inputs) > 0):
            raise DeclarationError(
                f"state {name!r}: join and inputs are for a parallel state; add parallel=[...]"
            )
        if into is not None and (not isinstance(into, str) or not into):
            raise DeclarationError(f"state {name!r}: into is a context key, e.g. into='reviews'")
        if into is not None and not children:
            raise DeclarationError(
                f"state {name!r}: into on a state is for a parallel state; add parallel=[...]"
            )

    # -- events ------------------------------------------------------------------------
    def event(
        self, name: str, *, payload: type[BaseModel] | None = None, into: str | None = None
    ) -> Event:
        """Declare an event; `into="key"` saves its payload in the context."""
        if name in (*BUILT_IN_EVENTS, STARTED):
            raise DeclarationError(
                f"event {name!r} is Stateous's own; transitions use it by name, without a declaration"
            )
        if not valid_name(name):
            raise DeclarationError(f"event name {name!r} is not valid: {_NAME_RULE}")
        if name in self.events:
            raise DeclarationError(f"event {name!r} is already declared")
        if payload is not None and not _is_model(payload):
            raise DeclarationError(
                f"event {name!r}: payload must be a pydantic model class, not {payload!r}"
            )
        if into is not None and (not isinstance(into, str) or not into):
            raise DeclarationError(f"event {name!r}: into is a context key, e.g. into='verdict'")
        event = Event(self, name, payload, into)
        self.events[name] = event
        return event

    # -- search keys -------------------------------------------------------------------
    def search(self, *keys: str) -> None:
        """Declare context keys to find tokens by, e.g. `flow.search("customer")`.

        The names are checked here; that each is a field of the context model of a fitting
        type, and that the workflow is the top one, is checked at compile time.
        """
        if not keys:
            raise DeclarationError(
                "flow.search needs at least one context key, e.g. flow.search('customer')"
            )
        seen = list(self.search_keys)
        for key in keys:
            if not isinstance(key, str) or not key:
                raise DeclarationError(
                    f"flow.search takes context keys by name, e.g. flow.search('customer'), "
                    f"not {key!r}"
                )
            if key in seen:
                raise DeclarationError(f"search key {key!r} is already declared")
            seen.append(key)
        self.search_keys = seen  # all or nothing: a refused call declares no key

    # -- transitions -------------------------------------------------------------------
    def transition(
        self,
        source: State | Endpoint,
        target: State | Endpoint,
        *,
        on: Event | str | None = None,
        when: str | None = None,
        otherwise: bool = False,
    ) -> Transition:
        """Declare a transition from `source` to `target`; the first failing check raises."""
        self._check_owner(source)
        self._check_owner(target)
        event = self._check_endpoints(source, target, on)
        if when is not None and otherwise:
            raise DeclarationError("a fallback (otherwise=True) has no guard; drop `when`")
        guard = None
        if when is not None:
            try:
                guard = parse_guard(when)
            except GuardError as exc:
                raise DeclarationError(exc.message) from None
            self._check_guard(guard, source, event)
        self._check_ambiguity(source, event, guard)
        transition = Transition(
            source, target, None if source is START else event, when, guard, bool(otherwise)
        )
        self.transitions.append(transition)
        return transition

    def _check_owner(self, state: object) -> None:
        if state is START or state is END:
            return
        if not isinstance(state, State):
            raise DeclarationError(
                f"{state!r} is not a state: use the object of flow.state(...), START or END"
            )
        if state.workflow is not self or self.states.get(state.name) is not state:
            raise DeclarationError(
                f"state {state.name!r} belongs to workflow {state.workflow.name!r}, not {self.name!r}"
            )

    def _check_endpoints(self, source: object, target: object, on: object) -> str:
        """The START/END/`on` rules; returns the event name (`__started__` from START)."""
        if target is START:
            raise DeclarationError(
                "nothing may lead into START: a token is there only as it starts"
            )
        if source is END:
            raise DeclarationError("nothing may leave END: entering it completes the token")
        if source is START:
            if target is END:
                raise DeclarationError(
                    "a token cannot go straight from START to END; it needs a state to be in"
                )
            if on is not None:
                raise DeclarationError(
                    "a transition from START takes no `on=`: the engine takes it as the token "
                    "starts. Choose among several with `when=` and `otherwise=True`."
                )
            return STARTED
        assert isinstance(source, State)
        if on is None:
            raise DeclarationError(
                f"a transition from {source.name!r} needs `on=`: the event it is taken on"
            )
        return self._event_name(source, on)

    def _event_name(self, source: State, on: object) -> str:
        if isinstance(on, Event):
            if on.workflow is not self or self.events.get(on.name) is not on:
                raise DeclarationError(
                    f"event {on.name!r} is not declared in workflow {self.name!r}"
                )
            return on.name
        if on == STARTED:
            raise DeclarationError(
                "'__started__' is Stateous's own: only a transition from START is taken on it"
            )
        if not isinstance(on, str) or (on not in BUILT_IN_EVENTS and on not in self.events):
            raise DeclarationError(f"event {on!r} is not declared in workflow {self.name!r}")
        if on == "joined" and not source.is_parallel:
            raise DeclarationError(
                f"only a parallel state is left on 'joined'; {source.name!r} has no parallel=[...]"
            )
        return on

    def _check_guard(self, guard: Guard, source: object, event: str) -> None:
        if guard.uses_branches() and event != "joined":
            raise DeclarationError(
                f"guard {guard.text!r}: branches.all() and branches.any() are for transitions on 'joined'"
            )
        if source is not START:
            declared = self.events.get(event)
            model = declared.payload if declared is not None else None
            fields = _model_fields(model)
            for name in sorted(guard.payload_fields()):
                if name not in fields:
                    raise DeclarationError(f"{event!r} payload has no field {name!r}")
            return
        if guard.payload_fields():
            raise DeclarationError(
                f"guard {guard.text!r}: START's guards read the context only; a token has no "
                "event, and so no payload, as it starts"
            )
        if guard.counted_events():
            raise DeclarationError(
                f"guard {guard.text!r}: START's guards cannot count events; nothing has happened "
                "yet as a token starts"
            )

    def _check_ambiguity(self, source: State | Endpoint, event: str, guard: Guard | None) -> None:
        if guard is not None:
            return
        for other in self.transitions:
            if other.source is source and other.event == event and other.guard is None:
                what = "START" if source is START else f"{event!r} from {source.name!r}"
                raise DeclarationError(
                    f"{what} is ambiguous: two transitions have no guard. Give one a `when`, "
                    "and mark the fallback otherwise=True."
                )


def _model_fields(model: type[BaseModel] | None) -> set[str]:
    """The names a payload of `model` has in JSON (field names and their aliases)."""
    if model is None:
        return set()
    names: set[str] = set()
    for field_name, info in model.model_fields.items():
        names.add(field_name)
        if isinstance(info.alias, str):
            names.add(info.alias)
        if isinstance(info.validation_alias, str):
            names.add(info.validation_alias)
    return names


def workflow_fields(model: type[BaseModel] | None) -> set[str]:
    """The field names of a context model, as `ctx['key']` reads them."""
    return _model_fields(model)


def model_field_annotation(model: type[BaseModel], name: str) -> Any:
    """The annotation of field `name` of `model` (by field name or alias), or None."""
    for field_name, info in model.model_fields.items():
        if name in (field_name, info.alias, info.validation_alias):
            return info.annotation
    return None
