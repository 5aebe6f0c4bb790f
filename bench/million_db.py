"""The bench workflow of `scale.py` and its preloaded database, made once and kept.

The workflow is the `orders` starter with `flow.search("title")` (`searchable`); the live
tokens that wait on another version run on it with one more event (`million.WITHDRAWN`).

A preload of a million tokens takes minutes, so it is kept between runs: a SQLite file in
`$STATEOUS_BENCH_CACHE` (default `/var/tmp/stateous-bench`), a Postgres database
`stateous_million_<key>` (copied per run with `CREATE DATABASE ... TEMPLATE`). The key is a
digest of the shape, the two graphs, the code that writes the rows and the schema the
migrations make (read from a new database): a change to any of them makes a new one (the
older ones of the same kind are removed).
A preload half written is never taken: the file is renamed, the database renamed, once done.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import common
import million
import preload
import psycopg

from stateous.control.store import migrate
from stateous.control.store.db import Store, make_engine
from stateous.model.environment import environment
from stateous.model.graph import Graph, read_graph_file

GRAPH = Path("orders") / "build" / "orders.json"


def searchable(folder: Path) -> None:
    """`common.prepare`'s change: the starter in `folder` searches by `title`, compiled."""
    flow = folder / "orders" / "flow.py"
    flow.write_text(flow.read_text(encoding="utf-8") + million.SEARCH, encoding="utf-8")
    common.run_step(folder, "compile", "orders/flow.py")


def graphs(folder: Path) -> tuple[Graph, Graph]:
    """(current, other): the bench workflow, and the other version, compiled in `folder`."""
    for name, extra in (("current", ""), ("other", million.WITHDRAWN)):
        (folder / name).mkdir(parents=True, exist_ok=True)
        common.run_step(folder / name, "init", "workflow", "orders")
        flow = folder / name / "orders" / "flow.py"
        text = flow.read_text(encoding="utf-8") + million.SEARCH + extra
        flow.write_text(text, encoding="utf-8")
        common.run_step(folder / name, "compile", "orders/flow.py")
    current = read_graph_file(folder / "current" / GRAPH)
    return current, read_graph_file(folder / "other" / GRAPH)


def key_of(kind: str, shape: million.Shape, current: Graph, other: Graph, work: Path) -> str:
    """The digest that names a preload: whatever would make its rows or schema differ (the
    shape, the graphs, the code that writes the rows, and the schema the migrations make)."""
    digest = hashlib.sha256(repr(shape).encode())
    digest.update(f"{current.checksum} {other.checksum}".encode())
    for source in (Path(million.__file__), Path(preload.__file__)):
        digest.update(source.read_bytes())
    digest.update(schema_of(kind, work).encode())
    return digest.hexdigest()[:12]


def schema_of(kind: str, work: Path) -> str:
    """The schema the store's migrations make today on a new database of `kind`, as text:
    the same text means the same tables, indexes and triggers, whatever the migrations'
    files look like (a comment changed in one does not make a new preload)."""
    if kind == "sqlite":
        path = work / "schema.db"
        _migrate(f"sqlite:///{path}")
        conn = sqlite3.connect(path)
        try:
            return repr(conn.execute(SQLITE_SCHEMA).fetchall())
        finally:
            conn.close()
            path.unlink()
    name = f"stateous_schema_{os.getpid()}"
    with psycopg.connect(common.PG_ADMIN, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}"')
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        _migrate(common.PG_URL.format(name=name))
        conninfo = common.PG_URL.format(name=name)
        with psycopg.connect(conninfo) as pg:
            return repr([pg.execute(query).fetchall() for query in POSTGRES_SCHEMA])
    finally:
        with psycopg.connect(common.PG_ADMIN, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _migrate(url: str) -> None:
    store = Store(make_engine(url))
    try:
        with store.begin() as conn:
            migrate.upgrade(conn)
    finally:
        store.engine.dispose()


SQLITE_SCHEMA = "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name"
POSTGRES_SCHEMA = (
    "SELECT table_name, column_name, data_type, is_nullable, column_default "
    "FROM information_schema.columns WHERE table_schema = 'public' ORDER BY 1, 2",
    "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'public' ORDER BY 1",
    "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint "
    "WHERE connamespace = 'public'::regnamespace ORDER BY 1",
    "SELECT tgname, pg_get_triggerdef(oid) FROM pg_trigger WHERE NOT tgisinternal ORDER BY 1",
    "SELECT proname, prosrc FROM pg_proc WHERE pronamespace = 'public'::regnamespace ORDER BY 1",
)


@dataclass(frozen=True)
class Preloaded:
    """A kept preload: its URL (a template, never served itself), whether this run made it,
    the seconds it took then (0 when reused) and its size in bytes."""

    url: str
    made: bool
    seconds: float
    size: int


def cache_folder() -> Path:
    """Where the SQLite preloads are kept."""
    folder = Path(environment().bench_cache or "/var/tmp/stateous-bench")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def preloaded(kind: str, shape: million.Shape, work: Path) -> Preloaded:
    """The preload of `shape` on `kind` (`sqlite` or `postgres`), made now if not kept."""
    current, other = graphs(work)
    key = key_of(kind, shape, current, other, work)
    if kind == "sqlite":
        return _sqlite(key, shape, current, other)
    return _postgres(key, shape, current, other)


def _sqlite(key: str, shape: million.Shape, current: Graph, other: Graph) -> Preloaded:
    folder = cache_folder()
    path = folder / f"million-{key}.db"
    if path.exists():
        return Preloaded(f"sqlite:///{path}", False, 0.0, path.stat().st_size)
    for old in folder.glob("million-*.db*"):
        old.unlink()
    building = folder / f"building-{key}.db"
    for leftover in folder.glob(f"{building.name}*"):
        leftover.unlink()
    seconds = preload.write_shape(f"sqlite:///{building}", shape, current, other)
    building.rename(path)
    print(f"preloaded {path} in {seconds:.0f} s", file=sys.stderr)
    return Preloaded(f"sqlite:///{path}", True, seconds, path.stat().st_size)


def _postgres(key: str, shape: million.Shape, current: Graph, other: Graph) -> Preloaded:
    name, building = f"stateous_million_{key}", f"stateous_building_{key}"
    with psycopg.connect(common.PG_ADMIN, autocommit=True) as admin:
        names = [row[0] for row in admin.execute("SELECT datname FROM pg_database")]
        if name in names:
            return Preloaded(common.PG_URL.format(name=name), False, 0.0, _pg_size(admin, name))
        for old in names:
            if old.startswith(("stateous_million_", "stateous_building_")):
                admin.execute(f'DROP DATABASE "{old}" WITH (FORCE)')
        admin.execute(f'CREATE DATABASE "{building}"')
    began = time.perf_counter()
    preload.write_shape(common.PG_URL.format(name=building), shape, current, other)
    seconds = time.perf_counter() - began
    with psycopg.connect(common.PG_ADMIN, autocommit=True) as admin:
        admin.execute(f'ALTER DATABASE "{building}" RENAME TO "{name}"')
        size = _pg_size(admin, name)
    print(f"preloaded {name} in {seconds:.0f} s", file=sys.stderr)
    return Preloaded(common.PG_URL.format(name=name), True, seconds, size)


def _pg_size(admin: psycopg.Connection[Any], name: str) -> int:
    row = admin.execute("SELECT pg_database_size(%s)", (name,)).fetchone()
    return int(row[0]) if row else 0
