"""`GET /stats` on a large database: the counts of migration 0013 against the scan
that `stats()` ran before it.

A fresh database gets `million.Shape.scaled(ended, live)` through `preload.write_shape` (the
triggers count the rows as they go in; on Postgres their deltas are folded first, as a holder
does at its start, and vacuumed). Then, in this process, `n` reads of the counts
(`stats()`) and `--scans` of the old scan (the grouped queries over `tokens` and `tasks`, kept here),
alternating, each in a read transaction of its own; and `n` `GET /stats` of a real `serve` on a
kept-alive connection. Each as p50/p95/max in ms, one JSON line each.

    .venv/bin/python bench/stats.py --db sqlite --ended 200000 --live 100000
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import common
import httpx
import million
import million_db
import preload
from sqlalchemy import ColumnElement, Connection, func, literal_column, select

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from stateous.control.store.operator_queries import state_name  # noqa: E402
from stateous.control.store.stats import fold_deltas, stats, vacuum_deltas  # noqa: E402
from stateous.control.store.tables import TASK_IS_OPEN, tasks, tokens  # noqa: E402
from stateous.model.wire import TOKEN_STATUSES  # noqa: E402

STATES = ["draft", "review"]


def scan(conn: Connection) -> dict[str, Any]:
    """The figures as `stats()` read them before migration 0013: grouped scans."""
    by_status: dict[str, int] = {
        str(status): int(n)
        for status, n in conn.execute(
            select(tokens.c.status, func.count()).group_by(tokens.c.status)
        ).all()
    }
    is_live: ColumnElement[bool] = tokens.c.status.in_(("active", "paused"))
    if conn.dialect.name == "sqlite":  # few tokens are live, as the old query told SQLite
        is_live = func.likelihood(is_live, literal_column("0.01"))
    live = (
        select(tokens.c.workflow, tokens.c.state, tokens.c.status, func.count())
        .where(is_live)
        .group_by(tokens.c.workflow, tokens.c.state, tokens.c.status)
    )
    held = (
        select(tokens.c.workflow, tasks.c.state, tasks.c.status, func.count())
        .join(tokens, tokens.c.token == tasks.c.token)
        .where(TASK_IS_OPEN)
        .group_by(tokens.c.workflow, tasks.c.state, tasks.c.status)
    )
    per_state: dict[str, dict[str, int]] = {}
    for query in (live, held):
        for workflow, state, status, count in conn.execute(query):
            per_state.setdefault(state_name(workflow, state), {})[status] = int(count)
    oldest = conn.execute(
        select(func.min(tasks.c.queued_at)).where(TASK_IS_OPEN, tasks.c.status == "queued")
    ).scalar()
    return {"tokens": by_status, "states": per_state, "oldest": oldest}


def summary(samples: list[float]) -> dict[str, float]:
    """p50, p95 and max in ms."""
    return {
        "p50_ms": round(common.percentile(samples, 0.5), 2),
        "p95_ms": round(common.percentile(samples, 0.95), 2),
        "max_ms": round(max(samples), 2),
    }


def fold(db_url: str) -> dict[str, Any]:
    """Fold the deltas the preload's inserts left (Postgres), as a holder does within a second
    of its start: how many, in how long."""
    engine = common.reader(db_url)
    try:
        began, folded, steps = time.perf_counter(), 0, 0
        while True:
            with engine.connect() as conn, conn.begin():
                step = fold_deltas(conn)
            if not step:
                break
            folded, steps = folded + step, steps + 1
        if steps:
            with engine.connect() as conn:
                vacuum_deltas(conn.execution_options(isolation_level="AUTOCOMMIT"))
        took = round(time.perf_counter() - began, 2)
        return {"deltas": folded, "steps": steps, "seconds": took}
    finally:
        engine.dispose()


def in_process(db_url: str, n: int, scans: int) -> dict[str, dict[str, float]]:
    """`n` reads of the counts and `scans` of the scan (a second or more each at this size),
    alternating, each its own read transaction."""
    engine = common.reader(db_url)
    reads: dict[str, Callable[[Connection], Any]] = {
        "counts": lambda conn: stats(conn, STATES, TOKEN_STATUSES),
        "scan": scan,
    }
    samples: dict[str, list[float]] = {name: [] for name in reads}
    try:
        for k in range(n + 3):
            for name, read in reads.items():
                if name == "scan" and k >= scans + 3:
                    continue
                with engine.connect() as conn, conn.begin():
                    began = time.perf_counter()
                    read(conn)
                    if k >= 3:  # after 3 untimed reads of each
                        samples[name].append((time.perf_counter() - began) * 1000)
    finally:
        engine.dispose()
    return {name: summary(found) for name, found in samples.items()}


def over_http(folder: Path, db_url: str, n: int) -> dict[str, float]:
    """`n` GET /stats of a real serve, one at a time on a kept-alive connection, and the CPU
    `serve` spent on each (the wall time on a loaded machine is mostly waiting for a core)."""
    serve = common.start_serve(folder, db_url)
    with common.stopping(serve), httpx.Client(base_url=serve.url, timeout=60) as http:
        samples, cpu = [], 0.0
        for k in range(n + 3):
            if k == 3:
                cpu = common.cpu_seconds(serve.popen.pid)
            began = time.perf_counter()
            answer = http.get("/stats")
            if answer.status_code != 200:
                raise SystemExit(f"error: GET /stats answered {answer.status_code}")
            if k >= 3:
                samples.append((time.perf_counter() - began) * 1000)
        cpu = common.cpu_seconds(serve.popen.pid) - cpu
    return {**summary(samples), "serve_cpu_ms_per_request": round(cpu * 1000 / n, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--db", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--ended", type=int, default=200_000)
    parser.add_argument("--live", type=int, default=100_000)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--scans", type=int, default=20, help="reads of the old scan")
    args = parser.parse_args()
    shape = million.Shape.scaled(args.ended, args.live)
    with common.fresh_folder() as folder, common.database(args.db, folder) as db_url:
        current, other = million_db.graphs(folder)
        took = preload.write_shape(db_url, shape, current, other)
        base = {"bench": "stats", "db": args.db, "ended": args.ended, "live": args.live}
        common.emit({**base, "figure": "preload", "seconds": round(took, 1)})
        common.emit({**base, "figure": "fold", **fold(db_url)})
        for name, figures in in_process(db_url, args.requests, args.scans).items():
            common.emit({**base, "figure": f"stats() {name}", **figures})
        common.emit({**base, "figure": "GET /stats", **over_http(folder / "current", db_url,
                                                                 args.requests)})  # fmt: skip


if __name__ == "__main__":
    main()
