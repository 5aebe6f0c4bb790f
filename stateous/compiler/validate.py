"""Whole-graph validation: every problem, as one line each."""

from __future__ import annotations

import functools
import types
import typing
from collections.abc import Iterator, Mapping
from typing import Any

from pydantic import BaseModel

from stateous.compiler.loader import children_of
from stateous.compiler.overlap import Exclusive, Overlap, prove_exclusive
from stateous.compiler.schemas import SchemaSet
from stateous.compiler.search import search_problems
from stateous.model.authoring import (
    BUILT_IN_EVENTS,
    END,
    START,
    State,
    Transition,
    Workflow,
    model_field_annotation,
    workflow_fields,
)

__all__ = [
    "id_suffix_length",
    "nesting_problems",
    "validate_tree",
    "workflow_problems",
    "workflow_tree",
]

_MAX_SUFFIX = 64


def workflow_tree(top: Workflow) -> list[Workflow]:
    """The top workflow, then each nested one once, in first-named order (depth first)."""
    out = [top]

    def visit(flow: Workflow) -> None:
        for child in children_of(flow):
            if not any(child is seen for seen in out):
                out.append(child)
                visit(child)

    visit(top)
    return out


def nesting_problems(top: Workflow) -> list[str]:
    """Workflows that run themselves further down, and names shared by two workflows."""
    problems: list[str] = []
    done: list[Workflow] = []

    def visit(flow: Workflow, stack: list[Workflow]) -> None:
        done.append(flow)
        for state in flow.states.values():
            for child in state.parallel:
                if any(child is s for s in stack):
                    problems.append(
                        f"state {state.name!r} of {flow.name!r} runs {child.name!r}, which runs "
                        f"{flow.name!r} in turn; a workflow cannot run itself"
                    )
                elif not any(child is d for d in done):
                    visit(child, [*stack, child])

    visit(top, [top])
    named: dict[str, Workflow] = {}
    for flow in done:
        line = f"two different workflows are named {flow.name!r}; give each its own name"
        if flow.name in named and named[flow.name] is not flow and line not in problems:
            problems.append(line)
        named.setdefault(flow.name, flow)
    return problems


def id_suffix_length(flow: Workflow) -> int:
    """How much longer than its top id a child token id can be (visits counted with 3 digits)."""
    best = 0
    for state in flow.states.values():
        for child in state.parallel:
            step = len(f".{state.name}.999.{child.name}")
            best = max(best, step + id_suffix_length(child))
    return best


def validate_tree(top: Workflow, tree: list[Workflow], schemas: SchemaSet) -> list[str]:
    """Every problem of the top workflow and its children, then the id length."""
    problems = workflow_problems(top, schemas, child=False)
    for child in tree[1:]:
        prefix = f"in child workflow {child.name!r}: "
        problems.extend(prefix + p for p in workflow_problems(child, schemas, child=True))
    longest = id_suffix_length(top)
    if longest > _MAX_SUFFIX:
        problems.append(
            f"the child token ids can be {longest} characters longer than the top token's id, so "
            "with a top id of 64 characters they can pass 128; use shorter state and workflow "
            "names, or nest less"
        )
    return problems


def workflow_problems(flow: Workflow, schemas: SchemaSet, *, child: bool) -> list[str]:
    """The per-workflow checks in their fixed order, the `into=` checks, then the search keys."""
    if not flow.states:
        return [f"workflow {flow.name!r} has no states"]
    problems: list[str] = []
    problems.extend(_ends(flow))
    problems.extend(_unreachable(flow))
    groups = _groups(flow)
    problems.extend(_unmarked_fallbacks(groups))
    problems.extend(_overlaps(flow, groups, schemas))
    problems.extend(_context_keys(flow))
    problems.extend(_inputs(flow))
    problems.extend(_parallel_exits(flow))
    problems.extend(_counts(flow))
    if child and not any(t.source is START and t.guard is None for t in flow.transitions):
        problems.append(
            "START has no fallback: a child workflow is started by the state that runs it, and "
            "no one is told when no guard holds; leave one transition from START without a "
            "guard, or mark one otherwise=True"
        )
    problems.extend(_into(flow))
    problems.extend(search_problems(flow, schemas, child=child))
    return problems


def _ends(flow: Workflow) -> Iterator[str]:
    if not any(t.source is START for t in flow.transitions):
        yield (
            f"workflow {flow.name!r} has no transition from START; add one to the state every "
            "token begins in, e.g. flow.transition(START, <state>)"
        )
    if not any(t.target is END for t in flow.transitions):
        yield (
            f"workflow {flow.name!r} has no transition into END, so no token of it can complete; "
            "add one, e.g. flow.transition(<state>, END, on=<event>)"
        )


def _unreachable(flow: Workflow) -> Iterator[str]:
    reached: set[str] = set()
    frontier = [START.name]
    while frontier:
        here = frontier.pop()
        for t in flow.transitions:
            if (
                t.source.name == here
                and isinstance(t.target, State)
                and t.target.name not in reached
            ):
                reached.add(t.target.name)
                frontier.append(t.target.name)
    for name in flow.states:
        if name not in reached:
            yield f"state {name!r} cannot be reached from START"


def _groups(flow: Workflow) -> dict[tuple[str, str], list[Transition]]:
    groups: dict[tuple[str, str], list[Transition]] = {}
    for t in flow.transitions:
        groups.setdefault((t.source.name, t.event), []).append(t)
    return groups


def _group_label(key: tuple[str, str]) -> str:
    source, event = key
    return "START" if source == START.name else f"{event!r} from {source!r}"


def _unmarked_fallbacks(groups: Mapping[tuple[str, str], list[Transition]]) -> Iterator[str]:
    for key, members in groups.items():
        if any(t.guard is not None for t in members) and any(
            t.guard is None and not t.otherwise for t in members
        ):
            yield (
                f"{_group_label(key)} has guarded transitions and an unguarded one; mark the "
                "unguarded one otherwise=True"
            )


def _overlaps(
    flow: Workflow, groups: Mapping[tuple[str, str], list[Transition]], schemas: SchemaSet
) -> Iterator[str]:
    context_schema = schemas.schema_of(flow.context)
    for key, members in groups.items():
        guarded = [t for t in members if t.guard is not None]
        declared = flow.events.get(key[1])
        payload_schema = schemas.schema_of(declared.payload) if declared is not None else None
        group = _group_label(key)
        for i, first in enumerate(guarded):
            for second in guarded[i + 1 :]:
                assert first.guard is not None and second.guard is not None
                verdict = prove_exclusive(
                    first.guard,
                    second.guard,
                    event=key[1],
                    context_schema=context_schema,
                    payload_schema=payload_schema,
                    defs=schemas.schemas,
                )
                a, b = first.guard.text, second.guard.text
                if isinstance(verdict, Exclusive):
                    continue
                if isinstance(verdict, Overlap):
                    yield (
                        f"{group}: the guards {a!r} and {b!r} can both be true, e.g. when "
                        f"{verdict.example}; make them exclusive, or make one the fallback "
                        "(otherwise=True)"
                    )
                else:
                    yield (
                        f"{group}: cannot prove the guards {a!r} and {b!r} are never both true: "
                        f"{verdict.reason}; compare values with literals, or make one the "
                        "fallback (otherwise=True)"
                    )


def transition_label(t: Transition) -> str:
    """`transition START --> 'x'` or `transition 'a' --ev--> END`."""
    target = "END" if t.target is END else repr(t.target.name)
    if t.source is START:
        return f"transition START --> {target}"
    return f"transition {t.source.name!r} --{t.event}--> {target}"


def _context_keys(flow: Workflow) -> Iterator[str]:
    if flow.context is None:
        return
    fields = workflow_fields(flow.context)
    for t in flow.transitions:
        if t.guard is None:
            continue
        for key in sorted(t.guard.context_keys()):
            if key not in fields:
                yield (
                    f"{transition_label(t)} reads ctx[{key!r}], which "
                    f"{flow.context.__name__} does not have"
                )


def _inputs(flow: Workflow) -> Iterator[str]:
    for state in flow.states.values():
        if not state.is_parallel:
            continue
        if flow.context is not None:
            fields = workflow_fields(flow.context)
            for key in state.inputs:
                if key not in fields:
                    yield (
                        f"state {state.name!r} hands on {key!r}, which "
                        f"{flow.context.__name__} does not have"
                    )
        for child in state.parallel:
            for name in _required_fields(child.context):
                if name not in state.inputs:
                    yield (
                        f"state {state.name!r} does not hand on {name!r}, which {child.name!r} "
                        "requires; add it to inputs"
                    )


def _required_fields(model: type[BaseModel] | None) -> list[str]:
    if model is None:
        return []
    names: list[str] = []
    for name, info in model.model_fields.items():
        if info.is_required():
            names.append(info.alias if isinstance(info.alias, str) else name)
    return names


def _parallel_exits(flow: Workflow) -> Iterator[str]:
    for state in flow.states.values():
        if not state.is_parallel:
            continue
        leaving = [t for t in flow.transitions if t.source is state]
        if not any(t.on == "joined" for t in leaving):
            yield f"parallel state {state.name!r} needs a transition on 'joined'"
        if any(t.on == "error" for t in leaving):
            yield (
                f"parallel state {state.name!r} has no task, so 'error' can never fire; "
                "check 'branches' on 'joined'"
            )


def _counts(flow: Workflow) -> Iterator[str]:
    known = {*flow.events, *BUILT_IN_EVENTS}
    for t in flow.transitions:
        if t.guard is None:
            continue
        for event in sorted(t.guard.counted_events()):
            if event not in known:
                yield f"guard {t.guard.text!r} counts {event!r}, which is not an event"


# -- into= ---------------------------------------------------------------------------------


def _into(flow: Workflow) -> Iterator[str]:
    for event in flow.events.values():
        if event.into is None:
            continue
        where = f"event {event.name!r} has into={event.into!r}"
        if event.payload is None:
            yield f"{where}, but no payload model; give it one, e.g. payload=Verdict"
            continue
        problem = _into_problem(
            flow, event.into, functools.partial(_holds_model, model=event.payload)
        )
        if problem == "missing":
            yield f"{where}, which {_name(flow.context)} does not have"
        elif problem == "type":
            yield (
                f"{where}, but {_name(flow.context)}.{event.into} cannot hold a "
                f"{_name(event.payload)}; declare it e.g. as "
                f"{event.into}: {_name(event.payload)} | None = None"
            )
    for state in flow.states.values():
        if state.into is None:
            continue
        where = f"state {state.name!r} has into={state.into!r}"
        problem = _into_problem(flow, state.into, _holds_branches)
        if problem == "missing":
            yield f"{where}, which {_name(flow.context)} does not have"
        elif problem == "type":
            yield (
                f"{where}, but {_name(flow.context)}.{state.into} cannot hold the joined payload "
                "{'branches': [...]}; declare it e.g. as a model with a branches field, or dict | None"
            )


def _name(model: type[BaseModel] | None) -> str:
    return model.__name__ if model is not None else "the context"


def _into_problem(flow: Workflow, key: str, holds: typing.Callable[[Any], bool]) -> str | None:
    if flow.context is None:
        return None  # any JSON object: every key may hold any value
    if key not in workflow_fields(flow.context):
        return "missing"
    return None if holds(model_field_annotation(flow.context, key)) else "type"


def _union_args(annotation: Any) -> tuple[Any, ...] | None:
    origin = typing.get_origin(annotation)
    if origin is typing.Union or origin is types.UnionType:
        return typing.get_args(annotation)
    if origin is typing.Annotated:
        return typing.get_args(annotation)[:1]
    return None


def _loose_object(annotation: Any) -> bool:
    origin = typing.get_origin(annotation) or annotation
    return annotation is Any or annotation is object or origin in (dict, Mapping, typing.Mapping)


def _holds_model(annotation: Any, model: type[BaseModel] | None) -> bool:
    args = _union_args(annotation)
    if args is not None:
        return any(_holds_model(a, model) for a in args)
    if _loose_object(annotation):
        return True
    return isinstance(annotation, type) and model is not None and issubclass(model, annotation)


def _holds_branches(annotation: Any) -> bool:
    args = _union_args(annotation)
    if args is not None:
        return any(_holds_branches(a) for a in args)
    if _loose_object(annotation):
        return True
    if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
        return False
    fields = annotation.model_fields
    has_branches = any("branches" in (n, f.alias) for n, f in fields.items())
    others_optional = all(not f.is_required() or n == "branches" for n, f in fields.items())
    return has_branches and others_optional
