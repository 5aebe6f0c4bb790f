"""`stateous compile` without the command: load, select, validate, build, check names."""

from __future__ import annotations

import keyword
import os
from dataclasses import dataclass
from typing import Any

from stateous.compiler.contract import contract_text
from stateous.compiler.document import build_document
from stateous.compiler.loader import loaded_flow, select_workflow
from stateous.compiler.schemas import SchemaSet, collect_models, model_name_problems
from stateous.compiler.validate import nesting_problems, validate_tree, workflow_tree
from stateous.model.canonical import graph_file_text
from stateous.model.errors import StateousError

__all__ = ["CompileError", "Compiled", "compile_flow", "compile_path", "default_out_path"]


class CompileError(StateousError):
    """The workflow is not valid; the message may be the multi-line "is not valid" listing."""

    code = "invalid_workflow"


@dataclass(frozen=True)
class Compiled:
    """A compiled workflow: its name, the graph document and the file text."""

    workflow: str
    document: dict[str, Any]

    @property
    def text(self) -> str:
        """The graph file's text."""
        return graph_file_text(self.document)


def listing(workflow: str, problems: list[str]) -> str:
    """`workflow 'x' is not valid:` and one `  - ` line per problem."""
    return f"workflow {workflow!r} is not valid:\n" + "\n".join(f"  - {p}" for p in problems)


def compile_path(path: str) -> Compiled:
    """Run the steps 1-5 of `stateous compile` on `path`; raise a StateousError on any mistake."""
    with loaded_flow(path) as flows:
        top = select_workflow(path, flows)
        problems = nesting_problems(top)
        if problems:
            raise CompileError(listing(top.name, problems))
        tree = workflow_tree(top)
        models = collect_models(tree)
        schemas = SchemaSet(models)
        problems = validate_tree(top, tree, schemas)
        problems.extend(model_name_problems(models))
        problems.extend(schemas.problems)
        if problems:
            raise CompileError(listing(top.name, problems))
        document = build_document(top, tree, schemas)
    for key in document["schemas"]:
        if not key.isidentifier() or keyword.iskeyword(key) or not key.isascii():
            message = (
                f"the model name {key!r} cannot be a Python name in contract.py; rename the model"
            )
            raise CompileError(listing(top.name, [message]))
    contract_text(document)  # raises ContractError (a StateousError) with its sentence
    return Compiled(top.name, document)


def compile_flow(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The graph document of `flow.py` at `path`, compiled in memory (used by `init supervisor`)."""
    return compile_path(os.fspath(path)).document


def default_out_path(flow_path: str, workflow: str) -> str:
    """`<dir of FLOW>/build/<workflow>.json`, with the platform's separators."""
    return os.path.join(os.path.dirname(flow_path), "build", f"{workflow}.json")
