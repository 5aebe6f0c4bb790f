"""Memory write: `PUT /tasks/{id}/memory`."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection

from stateous.control.clock import Clock
from stateous.control.engine.checks import check_held, locked_task
from stateous.control.engine.tx import EngineConfig, Tx
from stateous.control.store.memory import delete_memory, memory_exists, set_memory


def write_memory(
    conn: Connection,
    clock: Clock,
    config: EngineConfig,
    task_id: int,
    key: str,
    value: Any,
    attempt: int | None,
) -> None:
    """Set (or, with None, delete) one memory key of the task's token and state."""
    tx = Tx.open(conn, clock, config)
    task, token = locked_task(tx, task_id)
    check_held(task, attempt)
    data = {"state": task.state, "memory_key": key}
    if value is not None:
        set_memory(conn, token.token, task.state, key, value)
        tx.write(token.token, "memory_set", data)
    elif memory_exists(conn, token.token, task.state, key):
        delete_memory(conn, token.token, task.state, key)
        tx.write(token.token, "memory_deleted", data)
    tx.flush()
