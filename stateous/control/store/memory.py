"""The statements of `memory`: a state's keys read, set and deleted.

Every statement is built once and run through `direct` (the driver's cursor).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, bindparam, delete, insert, select

from stateous.control.store.direct import execute as run
from stateous.control.store.tables import memory

_MEMORY_OF = (
    select(memory.c.key, memory.c.value)
    .where(memory.c.token == bindparam("t"), memory.c.state == bindparam("s"))
    .order_by(memory.c.key)
)
_ONE_MEMORY = (memory.c.token == bindparam("t"), memory.c.state == bindparam("s"),
               memory.c.key == bindparam("k"))  # fmt: skip
_MEMORY_EXISTS = select(memory.c.key).where(*_ONE_MEMORY)
_DELETE_MEMORY = delete(memory).where(*_ONE_MEMORY)
_INSERT_MEMORY = insert(memory)
_DELETE_ALL_MEMORY = delete(memory).where(memory.c.token == bindparam("t"))


def memory_of(conn: Connection, token: str, state: str) -> dict[str, Any]:
    """Every memory key of (token, state), as an object (keys sorted)."""
    return {key: value for key, value in run(conn, _MEMORY_OF, {"t": token, "s": state})}


def memory_exists(conn: Connection, token: str, state: str, key: str) -> bool:
    """Whether the memory key exists."""
    found = run(conn, _MEMORY_EXISTS, {"t": token, "s": state, "k": key})
    return found.first() is not None


def set_memory(conn: Connection, token: str, state: str, key: str, value: Any) -> None:
    """Insert or replace one memory value."""
    delete_memory(conn, token, state, key)
    run(conn, _INSERT_MEMORY, {"token": token, "state": state, "key": key, "value": value})


def delete_memory(conn: Connection, token: str, state: str, key: str) -> None:
    """Delete one memory key."""
    run(conn, _DELETE_MEMORY, {"t": token, "s": state, "k": key})


def delete_all_memory(conn: Connection, token: str) -> None:
    """Delete every memory row of a token (it ended)."""
    run(conn, _DELETE_ALL_MEMORY, {"t": token})
