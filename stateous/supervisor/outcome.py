"""What a routine's result becomes in a report."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from stateous.supervisor.routine import Context, Occurrence, StateRef

__all__ = ["error_text", "failed", "outcome_of"]

_REPR_LIMIT = 100


def failed(error: str, attempt: int) -> dict[str, Any]:
    """A `failed` report: no context writes, no timers."""
    return {"kind": "failed", "error": error, "context": None, "schedules": [], "attempt": attempt}


def error_text(exc: BaseException, *, in_thread: bool = False) -> str:
    """`<ExceptionType>: <message>`; in a `def` routine a non-Exception is wrapped in RuntimeError."""
    text = f"{type(exc).__name__}: {exc}"
    if in_thread and not isinstance(exc, Exception):
        return f"RuntimeError: {text}"
    return text


def outcome_of(
    result: object, state: StateRef[Any], ctx: Context[Any], attempt: int
) -> dict[str, Any]:
    """The report body of a routine that returned `result` (not the `supervisor` field)."""
    writes = ctx.writes() or None
    if result is None:
        return {
            "kind": "waiting",
            "context": writes,
            "schedules": ctx.schedules(),
            "attempt": attempt,
        }
    if isinstance(result, Occurrence):
        if not state.may_emit(result):
            allowed = ", ".join(e.name for e in state.emits) or "nothing"
            return failed(
                f"the routine returned {result.name!r}, which {state.name!r} may not emit "
                f"(allowed: {allowed})",
                attempt,
            )
        body: dict[str, Any] = {"kind": "event", "event": result.name}
        if isinstance(result.payload, BaseModel):
            body["payload"] = result.payload.model_dump(mode="json")
        return {**body, "context": writes, "schedules": ctx.schedules(), "attempt": attempt}
    shown = repr(result)
    if len(shown) > _REPR_LIMIT:
        shown = shown[:97] + "..."
    return failed(
        f"the routine of {state.name!r} returned {shown}; return an event or None", attempt
    )
