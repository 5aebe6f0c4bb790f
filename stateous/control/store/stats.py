"""The figures of `GET /stats`: tokens by status, live work by state, read from the
counts the database keeps, never from a scan of the tokens or tasks.

Migration 0013's triggers (made again by 0017, which counts ended tasks too) keep
`stats_counts` in the transaction of every write of `tokens` and `tasks`; on Postgres they append to `stats_deltas` instead, which `fold_deltas` adds into
the counts in the background. A read sums both in one statement, so it sees a fold entirely
or not at all. A child token's state is named `<workflow>/<state>`
(`operator_queries.state_name`), as on the other operator routes.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import (
    Connection,
    Select,
    func,
    literal,
    literal_column,
    select,
    text,
    tuple_,
    union_all,
)

from stateous.control.store.operator_queries import state_name
from stateous.control.store.tables import (
    TASK_IS_OPEN,
    control_plane,
    stats_counts,
    stats_deltas,
    tasks,
)

_COUNTED = ("active", "paused", "queued", "claimed", "waiting")
_LIVE = ("active", "paused")
_KEY = ("kind", "structure", "workflow", "state", "status")


@dataclass(frozen=True)
class Stats:
    """The figures of `GET /stats`."""

    tokens: dict[str, int]
    states: dict[str, dict[str, int]]
    oldest_queued_at: datetime | None
    serving: str | None


@dataclass(frozen=True)
class Count:
    """One count: `kind` 'token' (tokens), 'task' (open tasks) or 'closed' (ended tasks, by
    status alone: structure, workflow and state ''); '' for a null structure or workflow (a top
    token's workflow)."""

    kind: str
    structure: str
    workflow: str
    state: str
    status: str
    n: int

    @classmethod
    def from_row(cls, row: Any) -> Count:
        """A count from a row of the key's five columns and the count."""
        kind, structure, workflow, state, status, n = row
        return cls(str(kind), str(structure), str(workflow), str(state), str(status), int(n))


def _counts_query(postgres: bool) -> Select[Any]:
    if not postgres:  # SQLite's triggers write the counts themselves
        return select(stats_counts).where(stats_counts.c.n != 0)
    both = union_all(select(stats_counts), select(stats_deltas)).subquery()
    keys = [both.c[name] for name in _KEY]
    total = func.sum(both.c.n)
    return select(*keys, total).group_by(*keys).having(total != 0)


# Built once: /stats runs them at every call (a statement built anew costs more than the read).
_COUNTS = {postgres: _counts_query(postgres) for postgres in (False, True)}


def counts(conn: Connection) -> list[Count]:
    """Every count not 0: the rows of `stats_counts` plus the deltas not folded yet (Postgres),
    in one statement."""
    query = _COUNTS[conn.dialect.name == "postgresql"]
    return [Count.from_row(row) for row in conn.execute(query)]


def live_tops_by_structure(conn: Connection, read: list[Count] | None = None) -> dict[str, int]:
    """How many top tokens are active or paused, by structure (a top token's workflow is ''),
    from the counts (`read`: those already read); a token of no structure (before migration
    0011) is left out."""
    live: dict[str, int] = {}
    for count in counts(conn) if read is None else read:
        top = count.kind == "token" and not count.workflow
        if top and count.structure and count.status in _LIVE:
            live[count.structure] = live.get(count.structure, 0) + count.n
    return live


def stats(conn: Connection, states: Iterable[str], token_statuses: Iterable[str]) -> Stats:
    """Counts by token status, and by state (`states` first, in their order, all present)."""
    by_status = dict.fromkeys(token_statuses, 0)
    per_state: dict[str, dict[str, int]] = {name: dict.fromkeys(_COUNTED, 0) for name in states}
    queued: set[tuple[str, str]] = set()
    for count in counts(conn):
        if count.kind == "token":
            by_status[count.status] = by_status.get(count.status, 0) + count.n
            if count.status not in _LIVE:
                continue
        elif count.kind != "task":  # ended tasks: no state's live work
            continue
        elif count.status == "queued":
            queued.add((count.structure, count.state))
        name = state_name(count.workflow or None, count.state)
        entry = per_state.setdefault(name, dict.fromkeys(_COUNTED, 0))
        entry[count.status] += count.n
    oldest = oldest_queued_at(conn, queued)
    serving = conn.execute(select(control_plane.c.serving).where(control_plane.c.id == 1)).scalar()
    return Stats(by_status, per_state, oldest, serving)


def oldest_queued_at(conn: Connection, pairs: Iterable[tuple[str, str]]) -> datetime | None:
    """The earliest `queued_at` of the first queued task in claim order (the lowest id) of each
    (structure, state): one step into `tasks_queue` each, however long the queue.

    A task is queued at its insert, in id order, so the first by id is the oldest queued; a
    task retried after a failed attempt is queued again under its id, keeping its first
    `queued_at`, and so stays the oldest of its state (as a claim takes it first)."""
    query = oldest_queued_query(tuple(sorted(pairs)), conn.dialect.name == "postgresql")
    if query is None:
        return None
    found: datetime | None = conn.execute(query).scalar()
    return found


@functools.lru_cache(maxsize=64)
def oldest_queued_query(pairs: tuple[tuple[str, str], ...], postgres: bool) -> Select[Any] | None:
    """The query of `oldest_queued_at` for these (structure, state) pairs, built once for each
    set of them (None: no pair, no queued task)."""
    first = _first_queued_pg if postgres else _first_queued
    firsts = [first(structure, state) for structure, state in pairs]
    if not firsts:
        return None
    each = union_all(*firsts).subquery()
    return select(func.min(each.c.queued_at))


def _first_queued(structure: str, state: str) -> Select[Any]:
    """The `queued_at` of the first queued task of (structure, state), as a one-row select."""
    of_structure = (
        tasks.c.structure.is_(None) if structure == "" else tasks.c.structure == structure
    )
    first = (
        select(tasks.c.queued_at)
        .where(TASK_IS_OPEN, tasks.c.status == literal_column("'queued'"))
        .where(of_structure, tasks.c.state == state)
        .order_by(tasks.c.id)
        .limit(1)
        .scalar_subquery()
    )
    return select(first.label("queued_at"))


def _first_queued_pg(structure: str, state: str) -> Select[Any]:
    """`_first_queued` for Postgres: the first entry of `tasks_queue` at or after ('queued',
    structure, state), then checked to be of them. Asked for the lowest id among equal
    (status, structure, state), Postgres judged a walk of the primary key cheaper, through every
    ended task first (40 ms at 100,000 tasks); a row comparison keeps the index's own order, so
    it reads one entry (4 buffers). SQLite plans `_first_queued` as one step already, and would
    walk every queued task before this one's."""
    if structure == "":  # no structure: tasks that ended before 0011 only, never in this index
        return _first_queued(structure, state)
    t = tasks.c
    at_or_after = tuple_(t.status, t.structure, t.state, t.id) >= tuple_(
        literal_column("'queued'"), literal(structure), literal(state), literal(0)
    )
    entry = (
        select(t.status, t.structure, t.state, t.queued_at)
        .where(TASK_IS_OPEN, at_or_after)
        .order_by(t.status, t.structure, t.state, t.id)
        .limit(1)
        .subquery()
    )
    first = (
        select(entry.c.queued_at)
        .where(entry.c.status == "queued", entry.c.structure == structure, entry.c.state == state)
        .scalar_subquery()
    )
    return select(first.label("queued_at"))


#: The most deltas one fold takes: a database loaded without a holder (an import, a preload)
#: may hold millions, and one statement must end well within Postgres's statement timeout
#: (400,000 took 8 s on a loaded 2-core machine).
FOLD_MOST = 50_000

# One statement, so the deltas it deletes are exactly those it adds: a delta committed after
# it began is neither (READ COMMITTED), and a fold beside it (a holder that is giving way)
# waits for its rows and then finds them gone. The data-modifying WITHs run to their end
# whether or not the SELECT reads them. The rows are taken by their ctid (a TID scan).
_FOLD = text("""
WITH gone AS (
  DELETE FROM stats_deltas
  WHERE ctid = ANY (ARRAY(SELECT ctid FROM stats_deltas LIMIT :most))
  RETURNING kind, structure, workflow, state, status, n
), added AS (
  INSERT INTO stats_counts (kind, structure, workflow, state, status, n)
  SELECT kind, structure, workflow, state, status, sum(n) FROM gone
  GROUP BY kind, structure, workflow, state, status
  ON CONFLICT (kind, structure, workflow, state, status)
  DO UPDATE SET n = stats_counts.n + excluded.n
)
SELECT count(*) FROM gone
""")


def vacuum_deltas(conn: Connection) -> None:
    """Postgres, on a connection in autocommit: VACUUM the two tables after a fold. A fold
    leaves its deltas dead until a vacuum, and /stats reads every page of `stats_deltas`:
    400,000 folded deltas made a read of the counts 62 ms, 4 ms once vacuumed (its pages given
    back). Autovacuum looks once a minute, so the holder does it itself; on tables this small
    it takes a few milliseconds."""
    conn.execute(text("VACUUM stats_deltas, stats_counts"))


def fold_deltas(conn: Connection, most: int = FOLD_MOST) -> int:
    """Postgres: add up to `most` deltas into `stats_counts` and delete them; answers how many
    were folded (0 on SQLite, whose triggers write the counts themselves)."""
    if conn.dialect.name == "sqlite":
        return 0
    return int(conn.execute(_FOLD, {"most": most}).scalar() or 0)
