"""Note: `POST /tasks/{id}/note`."""

from __future__ import annotations

from sqlalchemy import Connection

from stateous.control.clock import Clock
from stateous.control.engine.checks import check_held, locked_task
from stateous.control.engine.tx import EngineConfig, Tx


def note(
    conn: Connection,
    clock: Clock,
    config: EngineConfig,
    task_id: int,
    text: str,
    attempt: int | None,
) -> None:
    """Write `note {task, text}` (text already trimmed and checked) on the task's token."""
    tx = Tx.open(conn, clock, config)
    task, token = locked_task(tx, task_id)
    check_held(task, attempt)
    tx.write(token.token, "note", {"task": task.id, "text": text})
    tx.flush()
