"""The guards' choice of one transition and the context model's check.

Below the children's checks and Decide, which both use them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from stateous.control.engine.tx import Tx
from stateous.model.graph import START, STARTED, TransitionSpec, WorkflowBody
from stateous.model.guards import GuardEnv
from stateous.model.validation import validator_for


def context_errors(tx: Tx, body: WorkflowBody, context: Mapping[str, Any]) -> str | None:
    """The context model's errors for `context`, or None (a workflow without a model: None)."""
    if body.context is None:
        return None
    return validator_for(body.schemas, body.context).errors(dict(context))


def targets_text(transitions: Sequence[TransitionSpec]) -> str:
    """The targets' reprs joined by `, ` (the two-guard sentences)."""
    return ", ".join(repr(t.target) for t in transitions)


def choose(
    candidates: Sequence[TransitionSpec], env: GuardEnv
) -> TransitionSpec | list[TransitionSpec] | None:
    """One true guard, else the unguarded one; a list when several guards hold."""
    held = [t for t in candidates if t.guard is not None and t.guard.evaluate(env)]
    if len(held) > 1:
        return held
    if held:
        return held[0]
    return next((t for t in candidates if t.guard is None), None)


def choose_start(body: WorkflowBody, context: Mapping[str, Any]) -> TransitionSpec | str:
    """The transition out of START for a starting context, or the refusal sentence."""
    candidates = body.transitions_from(START, STARTED)
    env = GuardEnv(context=context, payload={}, counts={}, event=None)
    chosen = choose(candidates, env)
    if isinstance(chosen, list):
        return (
            f"more than one transition from START holds ({targets_text(chosen)}); "
            "compile the workflow again, which refuses such guards"
        )
    if chosen is None:
        return "no transition from START holds on this context, and there is no otherwise"
    return chosen
