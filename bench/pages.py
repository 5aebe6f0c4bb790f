"""The listings' pages at a million tokens: `GET /tokens` with each documented
filter and its next page (keyset), `GET /inbox`, `GET /audit`, `GET /tasks`, `GET /bulk`, p95 of
`--requests` requests each against a real `stateous serve`.

The database is filled through the store's tables (not through the engine): `--ended` ended top
tokens (`OLD-…`, a month of ends), `--live` live ones (`ORDER-…`: a fifth waiting for the
outside with a `task_waiting` row, the others queued; ten in a state of their own, a hundred
with a child each), a search key `customer` on every top token (`acme` on a third, else a value
of three tokens), and 200,000 audit rows (one actor's 20 among them). Each figure prints as one JSON line:
`{"figure": "tokens?prefix=ORDER-00001", "rows": 100, "p50_ms": …, "p95_ms": …}`.

    .venv/bin/python bench/pages.py --db sqlite|postgres [--ended 1000000] [--live 100000]
        [--requests 50] [--only TEXT] [--keep FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import Table

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))  # the bench's scripts import `common` as the others do

from common import database, percentile  # noqa: E402

from stateous.control.clock import SystemClock  # noqa: E402
from stateous.control.runtime import serve_version  # noqa: E402
from stateous.control.store import migrate  # noqa: E402
from stateous.control.store import tables as t  # noqa: E402
from stateous.control.store.db import Store, make_engine  # noqa: E402
from stateous.model.graph import load_graph  # noqa: E402
from tests.support.graphs import ORDERS, graph_text, variant  # noqa: E402
from tests.support.processes import launch_serve  # noqa: E402

BATCH = 10_000
AUDIT = 200_000
NOW = datetime(2026, 11, 1)


def searched() -> dict[str, Any]:
    """The orders graph with a `customer` text declared as a search key."""
    doc = variant(ORDERS)
    doc["schemas"]["Item"]["properties"]["customer"] = {"type": "string", "default": "acme"}
    doc["search"] = ["customer"]
    return doc


def customer(n: int) -> str:
    return '"acme"' if n % 3 == 0 else f'"c-{n // 3}"'


def token_rows(ended: int, live: int, structure: str) -> Iterator[dict[str, Any]]:
    """The ended tokens (oldest first), then the live ones, then a hundred children."""
    for n in range(ended):
        status = ("completed", "completed", "completed", "failed", "cancelled")[n % 5]
        yield {"token": f"OLD-{n:07d}", "state": "review", "status": status, "visit": 1,
               "context": {"title": "t", "verdict": None}, "parent": None, "workflow": None,
               "entered_at": NOW - timedelta(days=40) + timedelta(seconds=2 * n),
               "structure": structure}  # fmt: skip
    for n in range(live):
        state = "rare" if n < 10 else ("draft", "review")[n % 2]
        yield {"token": f"ORDER-{n:06d}", "state": state,
               "status": "paused" if n % 50 == 1 else "active", "visit": 1,
               "context": {"title": "t", "verdict": None}, "parent": None, "workflow": None,
               "entered_at": NOW + timedelta(seconds=n), "structure": structure}  # fmt: skip
    for n in range(100):
        yield {"token": f"ORDER-{n * 7:06d}.child", "state": "draft", "status": "active",
               "visit": 1, "context": {}, "parent": f"ORDER-{n * 7:06d}", "workflow": None,
               "entered_at": NOW + timedelta(seconds=n), "structure": structure}  # fmt: skip


def task_rows(live: int, structure: str) -> Iterator[dict[str, Any]]:
    for n in range(live):
        yield {"token": f"ORDER-{n:06d}", "state": ("draft", "review")[n % 2], "visit": 1,
               "status": "waiting" if n % 5 == 0 else "queued", "attempt": 1,
               "claimed_by": None, "lease_until": None,
               "queued_at": NOW + timedelta(seconds=n), "structure": structure,
               "waiting_since": NOW + timedelta(seconds=n, milliseconds=5) if n % 5 == 0
               else None}  # fmt: skip


def other_rows(ended: int, live: int) -> Iterator[tuple[Table, dict[str, Any]]]:
    for n in range(0, live, 5):
        yield t.ledger, {"token": f"ORDER-{n:06d}", "seq": 5, "kind": "task_waiting",
                         "at": NOW + timedelta(seconds=n, milliseconds=5), "key": None,
                         "data": {"task": n + 1}}  # fmt: skip
    for n in range(ended + live):
        token = f"OLD-{n:07d}" if n < ended else f"ORDER-{n - ended:06d}"
        yield t.token_keys, {"key": "customer", "value": customer(n), "token": token}
    for n in range(AUDIT):
        yield t.audit, {"token": f"OLD-{n:07d}", "seq": 1, "kind": "cancelled",
                        "at": NOW - timedelta(seconds=n), "actor": "rare" if n % 10_000 == 0
                        else ("alice", "bob")[n % 2], "via": "cli", "reason": None,
                        "bulk": None}  # fmt: skip


def insert_all(store: Store, rows: Iterator[tuple[Table, dict[str, Any]]]) -> None:
    batches: dict[str, list[dict[str, Any]]] = {}
    named = {table.name: table for table in t.metadata.tables.values()}
    for table, row in rows:
        batch = batches.setdefault(table.name, [])
        batch.append(row)
        if len(batch) >= BATCH:
            with store.begin() as conn:
                conn.execute(named[table.name].insert(), batch)
            batch.clear()
    for name, batch in batches.items():
        if batch:
            with store.begin() as conn:
                conn.execute(named[name].insert(), batch)


def fill(db_url: str, ended: int, live: int, doc: dict[str, Any]) -> None:
    graph = load_graph(graph_text(doc))
    store = Store(make_engine(db_url))
    with store.begin() as conn:
        migrate.upgrade(conn)
    serve_version(store, graph, SystemClock())  # marks `customer` filled: no token yet
    began = time.perf_counter()
    insert_all(store, ((t.tokens, row) for row in token_rows(ended, live, graph.structure)))
    insert_all(store, ((t.tasks, row) for row in task_rows(live, graph.structure)))
    insert_all(store, other_rows(ended, live))
    with store.begin() as conn:
        conn.execute(t.bulk_jobs.insert(), [
            {"action": "pause", "filter": {}, "matched": 0, "status": "finished",
             "created_at": NOW, "by": None} for _ in range(300)
        ])  # fmt: skip
    with store.begin() as conn:
        conn.exec_driver_sql("ANALYZE")
    store.engine.dispose()
    print(json.dumps({"filled_s": round(time.perf_counter() - began, 1)}), flush=True)


FIGURES = [
    "tokens", "tokens?status=active", "tokens?status=completed", "tokens?state=rare",
    "tokens?state=draft", "tokens?prefix=OLD-", "tokens?prefix=ORDER-00001",
    "tokens?prefix=OLD-000", "tokens?prefix=OLD-00", "tokens?structure={structure}",
    "tokens?parent=ORDER-000693", 'tokens?context.customer="acme"',
    'tokens?context.customer="c-1234"', "tokens?status=active&prefix=ORDER-0",
    "inbox", "audit", "audit?actor=rare", "tasks?status=queued", "bulk",
]  # fmt: skip


def timed(http: httpx.Client, path: str, requests: int) -> dict[str, Any]:
    """p50 and p95 of the first page and of the next one (its Link header)."""
    first = http.get("/" + path)
    first.raise_for_status()
    nxt = first.links.get("next", {}).get("url")
    figures: dict[str, Any] = {"figure": path, "rows": len(first.json())}
    for name, url in (("", "/" + path), ("next_", nxt)):
        if url is None:
            continue
        spent = []
        for _ in range(requests):
            began = time.perf_counter()
            http.get(url).raise_for_status()
            spent.append((time.perf_counter() - began) * 1000)
        figures[f"{name}p50_ms"] = round(percentile(spent, 0.5), 1)
        figures[f"{name}p95_ms"] = round(percentile(spent, 0.95), 1)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--ended", type=int, default=1_000_000)
    parser.add_argument("--live", type=int, default=100_000)
    parser.add_argument("--requests", type=int, default=50)
    parser.add_argument("--only", default="", help="figures containing this text only")
    parser.add_argument(
        "--keep", type=Path, help="SQLite: fill this file once, then measure it again as it is"
    )
    args = parser.parse_args()
    doc = searched()
    structure = load_graph(graph_text(doc)).structure
    with tempfile.TemporaryDirectory() as tmp, database(args.db, Path(tmp)) as db_url:
        if args.keep is not None:
            db_url = f"sqlite:///{args.keep.resolve()}"
        if args.keep is None or not args.keep.exists():
            fill(db_url, args.ended, args.live, doc)
        graph = Path(tmp) / "orders.json"
        graph.write_text(graph_text(doc), encoding="utf-8")
        served = launch_serve(graph, db_url, cwd=Path(tmp), ready_timeout=120)
        try:
            with httpx.Client(base_url=served.url, timeout=60) as http:
                for figure in FIGURES:
                    path = figure.format(structure=structure)
                    if args.only in path:
                        print(json.dumps(timed(http, path, args.requests)), flush=True)
        finally:
            served.stop()


if __name__ == "__main__":
    main()
