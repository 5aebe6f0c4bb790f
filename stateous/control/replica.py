"""Start-up of `stateous serve --replica`: a second (third, ...) control plane on
the holder's Postgres database.

A replica never migrates: it waits, saying so, until a control plane started without
`--replica` has brought the schema to this version's revision and recorded its graph; then it
refuses a graph file of another structure. It starts without the hold (its clock only tries to
take it, see stateous.control.hold).
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable

from anyio import to_thread
from sqlalchemy.exc import SQLAlchemyError

from stateous.control.clock import Clock
from stateous.control.engine.tx import EngineConfig
from stateous.control.errors import StoreError
from stateous.control.hold import Hold
from stateous.control.plane import Plane
from stateous.control.served import follow_current, load_versions
from stateous.control.settings import Settings
from stateous.control.store import migrate
from stateous.control.store.control_plane import read_control_plane
from stateous.control.store.db import Store, mask_url
from stateous.control.store.versions import is_on_record
from stateous.model.errors import StateousError
from stateous.model.graph import Graph

__all__ = ["NEEDS_POSTGRES", "open_replica", "other_structure"]

NEEDS_POSTGRES = "--replica needs Postgres: SQLite is served by one process"

#: How often a waiting replica looks at the schema again.
WAIT_SECONDS = 1.0


def other_structure(recorded: str, ours: str) -> str:
    """The refusal of a graph file whose structure is not the one the database serves."""
    return (
        f"refusing to serve as a replica: the database serves the structure {recorded}, "
        f"this graph file has {ours}"
    )


def _reason(exc: BaseException) -> str:
    orig = getattr(exc, "orig", None)
    text = str(orig if orig is not None else exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _look(store: Store) -> tuple[str | None, str | None]:
    """The schema's revision and the structure on record (None until there is one); refuses a
    database this version cannot use."""
    with store.begin(read=True) as conn:
        migrate.check(conn)
        revision = migrate.current_revision(conn)
        if revision != migrate.HEAD:
            return revision, None
        return revision, read_control_plane(conn).structure


def _waiting_line(revision: str | None) -> str:
    if revision is None:
        return (
            "waiting for the database's schema: it has none yet, this replica needs version "
            f"{migrate.HEAD}; a control plane started without --replica creates it"
        )
    if revision != migrate.HEAD:
        return (
            f"waiting for the database's schema: it is at version {revision}, this replica "
            f"needs {migrate.HEAD}; a control plane started without --replica upgrades it"
        )
    return "waiting for a control plane started without --replica to record its graph"


async def wait_for_schema(
    store: Store, url: str, say: Callable[[str], None], every: float = WAIT_SECONDS
) -> str:
    """Wait until the schema is at this version and a graph is on record; answer its structure.

    Says each new reason for waiting once. Refuses, as the holder would, a database that this
    version cannot use (`cannot use the database <url>: <reason>`) or cannot reach.
    """
    said: str | None = None
    while True:
        try:
            revision, structure = await to_thread.run_sync(_look, store)
        except StoreError as exc:
            raise StateousError(f"cannot use the database {url}: {exc.message}") from exc
        except (SQLAlchemyError, OSError) as exc:
            raise StateousError(f"cannot open the database {url}: {_reason(exc)}") from exc
        if structure is not None:
            return structure
        line = _waiting_line(revision)
        if line != said:
            say(line)
            said = line
        await asyncio.sleep(every)


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


async def open_replica(
    settings: Settings, graph: Graph, clock: Clock, store: Store
) -> tuple[Plane, Hold]:
    """Check the database and the graph for a replica; answer its plane and its (empty) hold.

    `store` is the opened database; it is disposed of on a refusal.
    """
    try:
        if store.sqlite:
            raise StateousError(NEEDS_POSTGRES)
        recorded = await wait_for_schema(store, mask_url(settings.db_url), _say)
        # Any graph file on record may serve; new tokens start on the holder's.
        if not await to_thread.run_sync(store.read, lambda c: is_on_record(c, graph.checksum)):
            raise StateousError(other_structure(recorded, graph.structure))
        versions = await to_thread.run_sync(load_versions, store, graph)
        await to_thread.run_sync(follow_current, store, versions)
    except BaseException:
        store.engine.dispose()
        raise
    hold = Hold(
        store,
        clock,
        lapse=settings.sqlite_hold_lapse,
        renew_every=settings.since_every,
        holding=False,
    )
    plane = Plane(store, EngineConfig(graph, settings.lease, versions), clock, role="replica")
    return plane, hold
