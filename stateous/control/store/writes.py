"""An engine transaction's buffered writes (`Tx.flush`): token changes, memory deleted,
ledger rows appended, in the fewest statements.

Where writes are fused (`Dialect.fuses_writes`, Postgres), one statement of plain SQL built
once per shape and run through `direct` (the driver's cursor); elsewhere the statements of
`tokens`, `memory` and `ledger`, one by one.
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from sqlalchemy import Connection, Table, bindparam, text

from stateous.control.store.dialect import dialect_of
from stateous.control.store.direct import execute as run
from stateous.control.store.ledger import LEDGER_COLUMNS, insert_ledger
from stateous.control.store.memory import delete_all_memory
from stateous.control.store.rows import ROWS_MOST
from stateous.control.store.tables import ledger, tokens
from stateous.control.store.tokens import update_token

#: Tokens whose writes go into one statement (a cascade that ends many children runs more).
_FUSED_TOKENS_MOST = 4


def write_changes(
    conn: Connection,
    changes: Mapping[str, Mapping[str, Any]],
    forget: Collection[str],
    rows: Sequence[dict[str, Any]],
) -> None:
    """An engine transaction's buffered writes: the columns to set of each token in `changes`,
    every memory row of each token in `forget` deleted, then the ledger rows appended.

    Where writes are fused (Postgres) one statement: each change and deletion a data-modifying
    WITH of the ledger's INSERT (or of the last of them, with no ledger row); they touch
    different rows, and each runs to its end whether or not the statement reads it. On SQLite,
    and beyond a few tokens or `ROWS_MOST` rows, one statement each, in that order.
    """
    ids = [token for token, values in changes.items() if values or token in forget]
    ids.extend(token for token in forget if token not in changes)
    if not ids:
        insert_ledger(conn, rows)
        return
    fused = len(ids) <= _FUSED_TOKENS_MOST and len(rows) <= ROWS_MOST
    if not fused or not dialect_of(conn).fuses_writes:
        for token in ids:
            if changes.get(token):
                update_token(conn, token, **changes[token])
            if token in forget:
                delete_all_memory(conn, token)
        insert_ledger(conn, rows)
        return
    shape = tuple((tuple(sorted(changes.get(token, ()))), token in forget) for token in ids)
    params = _row_params(LEDGER_COLUMNS, rows)
    for i, token in enumerate(ids):
        params[f"t{i}_token"] = token
        params.update({f"t{i}_{name}": value for name, value in changes.get(token, {}).items()})
    run(conn, _fused_writes(shape, len(rows)), params)


@functools.lru_cache(maxsize=256)
def _fused_writes(shape: tuple[tuple[tuple[str, ...], bool], ...], count: int) -> Any:
    """The statement of `write_changes` on Postgres for tokens of `shape` (the columns set and
    whether their memory is deleted, per token) and `count` ledger rows, built once for each."""
    parts: list[tuple[str, str]] = []
    binds: list[Any] = []
    for i, (columns, forget) in enumerate(shape):
        binds.append(bindparam(f"t{i}_token", type_=tokens.c.token.type))  # each has a part
        if columns:
            # The columns of `tokens` are lower-case names that no keyword of Postgres takes.
            sets = ", ".join(f"{name} = :t{i}_{name}" for name in columns)
            sql = f"UPDATE tokens SET {sets} WHERE token = :t{i}_token"
            parts.append((f"token_changed_{i}", sql))
            binds.extend(bindparam(f"t{i}_{name}", type_=tokens.c[name].type) for name in columns)
        if forget:
            parts.append((f"memory_deleted_{i}", f"DELETE FROM memory WHERE token = :t{i}_token"))
    if count:
        main, ledger_binds = _rows_sql(ledger, LEDGER_COLUMNS, count)
        binds.extend(ledger_binds)
    else:
        main = parts.pop()[1]
    with_ = ", ".join(f"{name} AS ({sql})" for name, sql in parts)
    return text(f"WITH {with_} {main}" if with_ else main).bindparams(*binds)


def _rows_sql(table: Table, columns: Sequence[str], count: int) -> tuple[str, list[Any]]:
    """`INSERT INTO <table> (...) VALUES (...), (...)` for `count` rows, and its typed binds
    (`<column>_<row>`): the ledger's part of `_fused_writes`."""
    groups = ", ".join(
        "(" + ", ".join(f":{name}_{i}" for name in columns) + ")" for i in range(count)
    )
    binds = [
        bindparam(f"{name}_{i}", type_=table.c[name].type) for i in range(count) for name in columns
    ]
    names = ", ".join(f'"{name}"' for name in columns)
    return f"INSERT INTO {table.name} ({names}) VALUES {groups}", binds


def _row_params(columns: Sequence[str], rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The values of `rows` bound as `_rows_sql` names them."""
    return {f"{name}_{i}": row[name] for i, row in enumerate(rows) for name in columns}
