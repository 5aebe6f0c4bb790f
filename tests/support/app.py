"""The real API app under uvicorn, in a thread, on a real port (for API tests)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import uvicorn

from stateous.control.api.app import create_app
from stateous.control.api.lean import LeanRoutes
from stateous.control.api.protocol import protocol_class
from stateous.control.clock import Clock, SystemClock
from stateous.control.engine.tx import EngineConfig
from stateous.control.plane import Plane
from stateous.control.runtime import serve_version
from stateous.control.served import load_versions
from stateous.control.store import migrate
from stateous.control.store.db import Store, make_engine
from stateous.model.auth import Grant
from stateous.model.graph import load_graph
from tests.support.graphs import graph_text
from tests.support.ports import free_port


@dataclass
class RunningApi:
    """A served app: its base URL and its plane (store, graph, clock)."""

    url: str
    plane: Plane


@contextmanager
def running_api(
    db_url: str,
    doc: dict[str, Any],
    clock: Clock | None = None,
    *,
    busy: float = 30.0,
    auth_names: dict[str, str | None] | None = None,
    auth_grants: dict[str, Grant] | None = None,
    migrate_first: bool = True,
    fast_path: bool = True,
) -> Iterator[RunningApi]:
    """Migrate the database, serve the app on 127.0.0.1:<free port>, stop it at the end.

    `migrate_first=False`: the database is at the newest revision already (`migrated_db_url`).

    `busy` shortens the database's wait for a lock (SQLite busy timeout, Postgres lock_timeout);
    `auth_names` turns authentication on with these tokens and names;
    `auth_grants` with these tokens, names and roles;
    `fast_path=False` serves Litestar's application alone, without the hot routes in front of it.
    """
    store = Store(make_engine(db_url, busy_timeout=busy, lock_timeout=busy))
    if migrate_first:
        with store.begin() as conn:
            migrate.upgrade(conn)
    clock = clock or SystemClock()
    graph = load_graph(graph_text(doc))
    serve_version(store, graph, clock)  # as `serve` does: recorded, current
    plane = Plane(store, EngineConfig(graph, versions=load_versions(store, graph)), clock)
    port = free_port()
    app = create_app(plane, auth_names=auth_names, auth_grants=auth_grants)
    config = uvicorn.Config(
        LeanRoutes(app) if fast_path else app,
        host="127.0.0.1",
        port=port,
        log_config=None,
        access_log=False,
        lifespan="off",
        http=protocol_class(),
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the API did not start")
        time.sleep(0.01)
    try:
        yield RunningApi(f"http://127.0.0.1:{port}", plane)
    finally:
        plane.wakeups.close()  # as `serve` stops: waiting claims answer now, not at their `wait`
        server.should_exit = True
        thread.join(timeout=10)
        store.engine.dispose()
