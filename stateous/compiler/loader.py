"""Loading `flow.py` and selecting its workflow."""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
import types
from collections.abc import Iterator

from pydantic import BaseModel

from stateous.model.authoring import Workflow
from stateous.model.errors import StateousError

__all__ = ["LoadError", "children_of", "loaded_flow", "select_workflow"]


class LoadError(StateousError):
    """`flow.py` does not load, or does not define exactly one workflow."""

    code = "invalid_flow"


def children_of(flow: Workflow) -> Iterator[Workflow]:
    """The workflows run by `flow`'s parallel states, in declaration and `parallel` order."""
    for state in flow.states.values():
        yield from state.parallel


@contextlib.contextmanager
def loaded_flow(path: str) -> Iterator[list[Workflow]]:
    """Run `path` as a module and yield its module-level workflows (each object once).

    Its folder comes first on the import path while it runs; no bytecode is written;
    modules imported by the load are forgotten when the block ends, so that two
    projects each with a `schemas.py` can be compiled in one process.
    """
    if not os.path.isfile(path):
        raise LoadError(f"{path}: no such file")
    absolute = os.path.abspath(path)
    code = _compile(absolute)
    folder = os.path.dirname(absolute)
    before = set(sys.modules)
    saved_bytecode = sys.dont_write_bytecode
    sys.dont_write_bytecode = True
    sys.path.insert(0, folder)
    importlib.invalidate_caches()
    try:
        module = _execute(code, absolute)
        flows = _workflows(module)
        _complete_models(flows)
        yield flows
    finally:
        sys.dont_write_bytecode = saved_bytecode
        if sys.path and sys.path[0] == folder:
            del sys.path[0]
        for name in set(sys.modules) - before:
            del sys.modules[name]


def _compile(absolute: str) -> types.CodeType:
    try:
        with open(absolute, "rb") as fh:
            source = fh.read()
    except OSError as exc:
        raise LoadError(f"{absolute} does not import: {type(exc).__name__}: {exc}") from None
    try:
        return compile(source, absolute, "exec", dont_inherit=True)
    except SyntaxError as exc:
        raise LoadError(f"{absolute}, line {exc.lineno}: {exc.msg}") from None


def _execute(code: types.CodeType, absolute: str) -> types.ModuleType:
    stem = os.path.splitext(os.path.basename(absolute))[0]
    name = stem if stem.isidentifier() and stem not in sys.modules else "__stateous_flow__"
    module = types.ModuleType(name)
    module.__file__ = absolute
    sys.modules[name] = module
    try:
        exec(code, module.__dict__)  # the user's own flow.py, as `python flow.py` would run it
    except StateousError as exc:
        raise LoadError(exc.message) from None
    except (Exception, SystemExit) as exc:  # anything else: the file does not import
        raise LoadError(f"{absolute} does not import: {type(exc).__name__}: {exc}") from None
    return module


def _workflows(module: types.ModuleType) -> list[Workflow]:
    flows: list[Workflow] = []
    for value in list(vars(module).values()):
        if isinstance(value, Workflow) and not any(value is f for f in flows):
            flows.append(value)
    return flows


def _complete_models(flows: list[Workflow]) -> None:
    """Resolve postponed annotations while the models' modules are still importable."""
    seen: list[Workflow] = []
    stack = list(flows)
    while stack:
        flow = stack.pop()
        if any(flow is s for s in seen):
            continue
        seen.append(flow)
        stack.extend(children_of(flow))
        for model in (flow.context, *(e.payload for e in flow.events.values())):
            if isinstance(model, type) and issubclass(model, BaseModel):
                # A failure is reported later, as a model that cannot be written as JSON Schema.
                with contextlib.suppress(Exception):
                    model.model_rebuild()


def select_workflow(path: str, flows: list[Workflow]) -> Workflow:
    """The one workflow that no parallel state runs."""
    if not flows:
        raise LoadError(f"{path} defines no Workflow at module level")
    run = [c for f in flows for c in _reachable(f) if c is not f]
    candidates = [f for f in flows if not any(f is r for r in run)] or flows
    if len(candidates) > 1:
        names = ", ".join(repr(f.name) for f in candidates)
        raise LoadError(f"{path} defines {len(candidates)} workflows ({names}); keep one per file")
    return candidates[0]


def _reachable(flow: Workflow) -> list[Workflow]:
    """`flow`'s descendants through parallel states (cycles tolerated)."""
    out: list[Workflow] = []
    stack = list(children_of(flow))
    while stack:
        child = stack.pop()
        if any(child is o for o in out):
            continue
        out.append(child)
        stack.extend(children_of(child))
    return out
