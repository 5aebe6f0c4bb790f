"""Postgres's advisory locks: the family locks and the serving lock.

Only where writers run side by side (`Dialect.locks`); SQLite has one writer at a time and
locks nothing, so these are not called there. Each statement is plain SQL, built
once; the family locks, taken by most operations, run through `direct` (the driver's own
path), the serving lock's statements through `Connection.execute`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from sqlalchemy import Connection, text

from stateous.control.store.db import family_key
from stateous.control.store.direct import execute as run


def family_key_sql(top: str) -> str:
    """`family_key` as a Postgres expression of the SQL expression `top`: the first 8 bytes of
    the SHA-256 of `token:<id in lower case>` as a signed 64-bit integer (token ids are ASCII,
    so Postgres's `lower` is Python's)."""
    digest = f"sha256(convert_to('token:' || lower({top}), 'UTF8'))"
    return f"('x' || left(encode({digest}, 'hex'), 16))::bit(64)::bigint"


_LOCK_FAMILY = text("SELECT pg_advisory_xact_lock(:k)")
#: The family lock of a task's token: the key of the token's parent, or of itself.
_LOCK_TASK_FAMILY = text(
    f"SELECT pg_advisory_xact_lock({family_key_sql('coalesce(k.parent, k.token)')}), "
    "p.parent IS NOT NULL AS deeper "
    "FROM tasks t JOIN tokens k ON k.token = t.token LEFT JOIN tokens p ON p.token = k.parent "
    "WHERE t.id = :id"
)
#: Lock many families in one statement; the keys come sorted, and `unnest` keeps their order.
_LOCK_FAMILIES = text(
    "SELECT count(pg_advisory_xact_lock(k)) FROM unnest(CAST(:keys AS bigint[])) k"
)
# Try the family locks of `keys` in their order until `most` are taken (the LIMIT stops the
# scan there, so no lock is tried beyond it); answers the 1-based positions taken.
_TRY_LOCK_KEYS = text(
    "SELECT n FROM unnest(CAST(:keys AS bigint[])) WITH ORDINALITY AS u(k, n) "
    "WHERE pg_try_advisory_xact_lock(k) LIMIT :most"
)


def lock_family(conn: Connection, top: str) -> None:
    """Take the family lock of a top token's id, waiting for it."""
    run(conn, _LOCK_FAMILY, {"k": family_key(top)})


def lock_families(conn: Connection, tops: Iterable[str]) -> None:
    """Take the family locks of many top tokens' ids in one statement, in the order of their
    keys (so two callers never wait on each other)."""
    run(conn, _LOCK_FAMILIES, {"keys": sorted({family_key(top) for top in tops})})


def lock_task_family(conn: Connection, task_id: int) -> bool | None:
    """Take the family lock of a task's token in one statement: the key of the token's
    parent, or its own when it has none. Answers whether the token is two levels down or more
    (its top's lock is then still to take); None: no such task, no lock."""
    row = run(conn, _LOCK_TASK_FAMILY, {"id": task_id}).first()
    return None if row is None else bool(row[1])


#: The family locks of several tasks' tokens, in the order of their keys (as
#: `_LOCK_FAMILIES`), in one statement; answers each task's key and whether its token is two
#: levels down or more (its top's lock is then still to take).
_LOCK_TASKS_FAMILIES = text(
    "WITH f AS MATERIALIZED ("
    f"SELECT t.id, {family_key_sql('coalesce(k.parent, k.token)')} AS k, "
    "p.parent IS NOT NULL AS deeper "
    "FROM tasks t JOIN tokens k ON k.token = t.token LEFT JOIN tokens p ON p.token = k.parent "
    "WHERE t.id = ANY(CAST(:ids AS bigint[]))), "
    "l AS MATERIALIZED ("
    "SELECT count(pg_advisory_xact_lock(s.k)) AS n FROM (SELECT DISTINCT k FROM f ORDER BY k) s) "
    "SELECT f.id, f.k, f.deeper FROM f CROSS JOIN l"
)


def lock_tasks_families(conn: Connection, task_ids: Sequence[int]) -> dict[int, tuple[int, bool]]:
    """Take the family locks of several tasks' tokens in one statement (see
    `lock_task_family`); answers (family key, deeper) by task id (an unknown task: left out)."""
    rows = run(conn, _LOCK_TASKS_FAMILIES, {"ids": list(task_ids)})
    return {int(row[0]): (int(row[1]), bool(row[2])) for row in rows}


def try_lock_families(conn: Connection, tops: Sequence[str], most: int) -> list[int]:
    """Try the family locks of `tops` in order, without waiting, until `most` are taken;
    answers the 0-based positions of those taken, in order."""
    keys = [family_key(top) for top in tops]
    taken = run(conn, _TRY_LOCK_KEYS, {"keys": keys, "most": most})
    return sorted(int(n) - 1 for (n,) in taken)


# The serving lock: a session's advisory lock, held by a connection of its own
# (in autocommit) for as long as the control plane serves.
_TRY_SESSION_LOCK = text("SELECT pg_try_advisory_lock(:k)")
_ANSWERS = text("SELECT 1")
_UNLOCK_SESSION = text("SELECT pg_advisory_unlock_all()")


def try_session_lock(conn: Connection, key: int) -> bool:
    """Try the session's advisory lock of `key` without waiting; whether it was taken."""
    return bool(conn.execute(_TRY_SESSION_LOCK, {"k": key}).scalar())


def check_answers(conn: Connection) -> None:
    """Run a statement that reads nothing: raises when the connection (and so its session's
    locks) is gone."""
    conn.execute(_ANSWERS)


def unlock_session(conn: Connection) -> None:
    """Release every advisory lock of the connection's session."""
    conn.execute(_UNLOCK_SESSION)
