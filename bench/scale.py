"""The figures of docs/performance.md's "A million tokens" with a million ended tokens and a hundred
thousand live ones in the database, one JSON line each.

The preload (`million.py`'s shape, written by `preload.write_shape` through the store's
tables) is made once and kept (`million_db.py`: a file, or a Postgres database, named by a
digest of the shape and the schema); each loaded run gets a copy of it (SQLite: the file;
Postgres: `CREATE DATABASE ... TEMPLATE`). Every run starts real `serve` and `supervise`
processes from a fresh folder with the bench workflow (the `orders` starter searching by
`title`), warms up with 50 tokens and runs `--tokens` end to end (`e2e.py`'s measure). The
runs alternate, empty then loaded, `--rounds` times. After the last loaded run's tokens, on the
same `serve`: the reads (`scale_reads.py`), the idle CPU a tick, then, with it stopped, the
tick in process (`scale_clock.py`).

The lines, each `{"bench": "scale", "figure": NAME, ...}`: `preload`, `e2e_ratio`, `stats`,
`tokens`, `inbox_audit_why`, `console_refresh`, `clock_tick`, `serve_peak_rss`, and on SQLite
`bytes_per_token`. Usage: `python bench/scale.py [--db sqlite|postgres] [--preload N]
[--live N] [--tokens N] [--rounds N] [--requests N]` (`--preload`: ended tokens).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shutil
import sqlite3
import statistics
import sys
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # after the path is set
import e2e
import million
import million_db
import scale_clock
import scale_reads

from stateous.model.graph import read_graph_file

#: The documented bounds (docs/performance.md), by figure.
BOUNDS = {
    "e2e_ratio": ">= 0.8",
    "stats": "p95 <= 20 ms",
    "tokens": "p95 <= 50 ms",
    "inbox_audit_why": "p95 <= 50 ms",
    "console_refresh": "p95 <= 100 ms",
    "clock_tick": "<= 20 ms of CPU a tick",
    "serve_peak_rss": "<= 250 MiB",
    "bytes_per_token": "reported",
}


def settle(db_url: str) -> None:
    """Let the disk finish writing a copy before measuring (a long-lived database's `fsync`s do
    not wait behind a fresh copy's write-back). Checkpoint SQLite's WAL into the file, then
    flush."""
    if db_url.startswith("sqlite"):
        engine = common.reader(db_url)
        try:
            with engine.connect() as conn:
                conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            engine.dispose()
    os.sync()


@contextmanager
def copy_of(kind: str, template: str, folder: Path) -> Iterator[str]:
    """A new database holding what `template` holds (its URL)."""
    if kind == "sqlite":
        shutil.copy(template.removeprefix("sqlite:///"), folder / "stateous.db")
        os.sync()
        yield f"sqlite:///{folder / 'stateous.db'}"
        return
    name, source = f"stateous_bench_{uuid.uuid4().hex[:10]}", template.rsplit("/", 1)[1]
    with psycopg.connect(common.PG_ADMIN, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}" TEMPLATE "{source}"')
    try:
        os.sync()
        yield common.PG_URL.format(name=name)
    finally:
        with psycopg.connect(common.PG_ADMIN, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


#: Work done on a run's `serve` after its tokens: answers figures.
Reads = Callable[[common.Process], dict[str, Any]]


def session(
    folder: Path, db_url: str, tokens: int, reads: Reads | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """One run: serve the bench workflow, supervise, warm up, measure `tokens` end to end;
    then `reads(serve)` when given (its figures). Answers (e2e figures, read figures)."""
    made = common.prepare(folder, change=million_db.searchable)
    serve = common.start_serve(folder, db_url)
    serve.watch_memory()
    sup = common.start_supervise(made[0], serve.url, 16)
    extra: dict[str, Any] = {}
    with common.stopping(serve, sup):
        e2e.measure(serve.url, db_url, 50, "warm")
        figures = e2e.measure_cost(
            [serve], [sup], False, lambda: e2e.measure(serve.url, db_url, tokens, "bench")
        )
        if reads is not None:
            extra = reads(serve)
    extra["serve_peak_mib"] = round(serve.peak_kib / 1024, 1)
    return figures, extra


def bytes_per_token(path: str, tokens: int) -> dict[str, Any]:
    """The file's size ÷ its tokens, and the bytes of each table and index (dbstat)."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows = conn.execute(
            "SELECT name, sum(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC"
        ).fetchall()
    finally:
        conn.close()
    size = Path(path).stat().st_size
    return {
        "file_bytes": size,
        "tokens": tokens,
        "bytes_per_token": round(size / tokens),
        "by_table_or_index": {name: int(pages) for name, pages in rows if pages},
        "bytes_per_token_by_table_or_index": {
            name: round(pages / tokens) for name, pages in rows if pages >= size / 100
        },
    }


@dataclass
class Runs:
    """The e2e figures of the empty and the loaded runs, and what the last loaded run found."""

    empty: list[dict[str, Any]] = field(default_factory=list)
    loaded: list[dict[str, Any]] = field(default_factory=list)
    found: dict[str, Any] = field(default_factory=dict)


def alternate(args: argparse.Namespace, shape: million.Shape, template: str, work: Path) -> Runs:
    """The rounds, empty then loaded; the reads and the clock in the last loaded run."""
    current = read_graph_file(work / "current" / million_db.GRAPH)
    other = read_graph_file(work / "other" / million_db.GRAPH)
    runs = Runs()

    def idle(serve: common.Process) -> dict[str, Any]:
        return {"idle": scale_clock.serve_idle(serve.popen.pid)}

    def reads(serve: common.Process) -> dict[str, Any]:
        found = scale_reads.measure(
            serve.url, shape, current.structure, other.structure, args.requests
        )
        return {**found, **idle(serve)}

    for round_ in range(args.rounds):
        last = round_ == args.rounds - 1
        with common.fresh_folder() as folder, common.database(args.db, folder) as db_url:
            figures, extra = session(folder, db_url, args.tokens, idle if last else None)
            runs.empty.append(figures)
            runs.found["empty_idle"] = extra.get("idle")
        with common.fresh_folder() as folder, copy_of(args.db, template, folder) as db_url:
            settle(db_url)
            figures, extra = session(folder, db_url, args.tokens, reads if last else None)
            runs.loaded.append(figures)
            runs.found.setdefault("peaks", []).append(extra["serve_peak_mib"])
            if last:
                runs.found.update(extra)
                runs.found["tick"] = scale_clock.in_process(db_url, folder / million_db.GRAPH)
    return runs


def report(args: argparse.Namespace, shape: million.Shape, kept: str, runs: Runs) -> None:
    """One JSON line a figure."""
    base = {"bench": "scale", "database": args.db, "ended": shape.ended, "live": shape.live}

    def line(figure: str, **values: Any) -> None:
        common.emit({**base, "figure": figure, "bound": BOUNDS[figure], **values})

    found = runs.found
    rate = [f["tokens_per_second"] for f in runs.empty], [f["tokens_per_second"] for f in runs.loaded]  # fmt: skip
    cpu = [f["serve_cpu_ms_per_token"] for f in runs.empty], [f["serve_cpu_ms_per_token"] for f in runs.loaded]  # fmt: skip
    line(
        "e2e_ratio", ratio=round(statistics.mean(rate[1]) / statistics.mean(rate[0]), 3),
        empty_runs=rate[0], loaded_runs=rate[1], tokens=args.tokens, rounds=args.rounds,
        serve_cpu_ms_per_token_empty=cpu[0], serve_cpu_ms_per_token_loaded=cpu[1],
    )  # fmt: skip
    line("stats", requests=args.requests, **found["stats"], health_floor=found["health"])
    line("tokens", requests=args.requests, limit=100, listings=found["tokens"])
    line(
        "inbox_audit_why", requests=args.requests,
        inbox=found["inbox"], audit=found["audit"], why=found["why"],
    )  # fmt: skip
    line("console_refresh", requests=args.requests, **found["console_refresh"])
    line(
        "clock_tick", pending_timers=shape.timers, in_process=found["tick"],
        serve_idle_loaded=found["idle"], serve_idle_empty=found["empty_idle"],
    )  # fmt: skip
    line("serve_peak_rss", peak_mib=max(found["peaks"]), each_loaded_run_mib=found["peaks"])
    if args.db == "sqlite":
        path = kept.removeprefix("sqlite:///")
        line("bytes_per_token", **bytes_per_token(path, shape.ended + shape.live))


def main() -> None:
    """Run the benchmark and print one JSON line a figure."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--db", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--preload", type=int, default=1_000_000, help="ended tokens")
    parser.add_argument("--live", type=int, default=100_000, help="live tokens")
    parser.add_argument("--tokens", type=int, default=500, help="tokens of each e2e run")
    parser.add_argument("--rounds", type=int, default=2, help="pairs of runs, empty then loaded")
    parser.add_argument("--requests", type=int, default=50, help="timed requests a read figure")
    args = parser.parse_args()
    shape = million.Shape.scaled(args.preload, args.live)
    with common.fresh_folder() as work:
        kept = million_db.preloaded(args.db, shape, work)
        common.emit(
            {
                "bench": "scale", "database": args.db, "figure": "preload",
                "made_now": kept.made, "seconds": round(kept.seconds, 1), "bytes": kept.size,
                "shape": dataclasses.asdict(shape),
            }
        )  # fmt: skip
        runs = alternate(args, shape, kept.url, work)
    report(args, shape, kept.url, runs)


if __name__ == "__main__":
    main()
