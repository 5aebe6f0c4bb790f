"""The routine states of a graph document, their stub files and the stubs' text."""

from __future__ import annotations

import ast
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from stateous.compiler.contract import WorkflowBody, comment_text, workflow_bodies

__all__ = [
    "RoutineState",
    "StubPlan",
    "implemented_paths",
    "plan_stubs",
    "routine_states",
    "stub_text",
]

# Names a stub must not take: the folder is first on the import path, so it would hide them.
_HIDDEN = frozenset(sys.stdlib_module_names) | {"contract", "stateous"}


@dataclass(frozen=True)
class RoutineState:
    """A state that can have a routine, named as a claim names it."""

    name: str  # `coding`, or `security-review/triage` for a child's state
    own: str  # the state's own name
    own_id: str
    workflow: str  # the workflow that holds the state (the child for a child's state)
    workflow_id: str | None  # the child workflow's Python name; None in the main workflow
    context: str | None  # the context model of that workflow
    events: tuple[str, ...]  # references to the emitted events, e.g. `events.done`

    @property
    def path(self) -> str:
        """The state's Python path under `states`: `coding` or `security_review.triage`."""
        return f"{self.workflow_id}.{self.own_id}" if self.workflow_id else self.own_id

    @property
    def stem(self) -> str:
        """The stub's natural file stem, before the rules against hiding a module."""
        return f"{self.workflow_id}_{self.own_id}" if self.workflow_id else self.own_id


def _states_of(body: WorkflowBody) -> list[RoutineState]:
    prefix = f"events.{body.ident}." if body.child else "events."
    return [
        RoutineState(
            name=f"{body.name}/{state}" if body.child else state,
            own=state,
            own_id=body.state_ids[state],
            workflow=body.name,
            workflow_id=body.ident or None,
            context=body.context,
            events=tuple(prefix + body.event_ids[e] for e in emits),
        )
        for state, emits in body.states.items()
        if emits is not None
    ]


def routine_states(document: Mapping[str, Any]) -> list[RoutineState]:
    """Every non-parallel state of the main workflow, then of each child workflow."""
    return [state for body in workflow_bodies(document) for state in _states_of(body)]


# --- which states the folder implements -------------------------------------------------------


def _chain(node: ast.expr) -> list[str] | None:
    """`a.b.c` as ["a", "b", "c"]; None when `node` is not an attribute chain."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return parts[::-1]


def _marked_path(decorator: ast.expr) -> str | None:
    """The state path of an `@on_state(states.x)` decorator, or None for another decorator."""
    if not isinstance(decorator, ast.Call) or len(decorator.args) != 1:
        return None
    func = decorator.func
    called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
    if called != "on_state":
        return None
    parts = _chain(decorator.args[0])
    if not parts or "states" not in parts:
        return None
    after = parts[len(parts) - parts[::-1].index("states") :]
    return ".".join(after) if 1 <= len(after) <= 2 else None


def implemented_paths(folder: Path) -> set[str]:
    """The state paths that some `*.py` of `folder` (not contract.py) marks with `@on_state`.

    Files are parsed, never imported; one that cannot be read or parsed is ignored.
    """
    found: set[str] = set()
    for path in sorted(folder.glob("*.py")):
        if path.name == "contract.py" or not path.is_file():
            continue
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                for decorator in node.decorator_list:
                    marked = _marked_path(decorator)
                    if marked is not None:
                        found.add(marked)
    return found


# --- file names and decisions -----------------------------------------------------------------


@dataclass(frozen=True)
class StubPlan:
    """What `init` does for one routine state, and the line it prints."""

    state: RoutineState
    action: Literal["kept", "skipped", "wrote"]
    file_name: str
    why: str  # the parenthesis of a `wrote` line, or ""


def _file_names(states: list[RoutineState]) -> list[tuple[str, str]]:
    """(file stem, why) per state: `_routine` after a stem that would hide a Python module, `_2`,
    `_3`... after a stem another state took first."""
    natural: list[tuple[str, str]] = []
    for state in states:
        if state.stem in _HIDDEN:
            natural.append((f"{state.stem}_routine", f"{state.stem}.py would hide a Python module"))
        else:
            natural.append((state.stem, ""))
    reserved = {stem for stem, _ in natural}
    owners: dict[str, str] = {}
    names: list[tuple[str, str]] = []
    for state, (stem, why) in zip(states, natural, strict=True):
        if stem not in owners:
            owners[stem] = state.name
            names.append((stem, why))
            continue
        n = 2
        while f"{stem}_{n}" in owners or f"{stem}_{n}" in reserved:
            n += 1
        owners[f"{stem}_{n}"] = state.name
        names.append((f"{stem}_{n}", f"{stem}.py is the stub of {owners[stem]!r}"))
    return names


def plan_stubs(document: Mapping[str, Any], folder: Path) -> list[StubPlan]:
    """The decision for each routine state of `document` in `folder`, in routine-state order."""
    states = routine_states(document)
    implemented = implemented_paths(folder) if folder.is_dir() else set()
    plans = []
    for state, (stem, why) in zip(states, _file_names(states), strict=True):
        file_name = f"{stem}.py"
        if state.path in implemented:
            plans.append(StubPlan(state, "kept", file_name, ""))
        elif (folder / file_name).exists():
            plans.append(StubPlan(state, "skipped", file_name, ""))
        else:
            plans.append(StubPlan(state, "wrote", file_name, why))
    return plans


def stub_text(state: RoutineState) -> str:
    """The stub of one routine state: a routine that raises NotImplementedError."""
    ctx_type = f"{state.context}Context" if state.context else "Context"
    contract_names = [*([ctx_type] if state.context else []), *(["events"] if state.events else [])]
    stateous_names = "on_state" if state.context else "Context, on_state"
    returns = " | ".join(state.events) if state.events else "None"
    return (
        f'"""The `{comment_text(state.own)}` state of the `{comment_text(state.workflow)}` workflow."""\n'
        "\n"
        f"from stateous import {stateous_names}\n"
        "\n"
        f"from contract import {', '.join([*contract_names, 'states'])}\n"
        "\n"
        "\n"
        f"@on_state(states.{state.path})\n"
        f"def {state.own_id}(ctx: {ctx_type}) -> {returns}:\n"
        f"    raise NotImplementedError(\"do the work of '{state.name}' here\")\n"
    )
