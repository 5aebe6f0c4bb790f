"""Throughput at scale: e2e tokens per second with 100,000 completed tokens (and their ledgers)
already in the database, divided by the same figure on an empty database.

Each run starts real `serve` and `supervise` processes from a fresh folder (see `e2e.py`). The
preload goes once into a database of its own with bulk inserts (`preload.py`); each loaded run
gets a copy of it (SQLite: the file; Postgres: `CREATE DATABASE ... TEMPLATE`), so every run
starts from the same 100,000 tokens. The runs alternate, empty then loaded, `--rounds` times,
and the ratio is the loaded runs' mean over the empty runs' mean: a run of 500 tokens lasts
a few seconds, and a machine shared with others moves a single run by a quarter either way.
Usage: `python bench/scale.py [--preload N] [--tokens N] [--rounds N] [--db sqlite|postgres]`.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # after the path is set
import e2e
import preload


def settle(db_url: str) -> None:
    """Let the disk finish writing the preload before measuring.

    The preload commits a few hundred megabytes that the kernel writes back over the next
    seconds; measured at once, every `fsync` of the run waited behind that write-back, which a
    long-lived database does not see. Checkpoint SQLite's WAL into the file, then flush.
    """
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
        yield common.PG_URL.format(name=name)
    finally:
        with psycopg.connect(common.PG_ADMIN, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def main() -> None:
    """Run the benchmark and print one JSON line."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--preload", type=int, default=100_000)
    parser.add_argument("--tokens", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=2, help="pairs of runs, empty then loaded")
    parser.add_argument("--db", choices=["sqlite", "postgres"], default="sqlite")
    args = parser.parse_args()
    empty: list[float] = []
    loaded: list[float] = []
    with common.fresh_folder() as keep, common.database(args.db, keep) as template:
        seconds = preload.preload(template, args.preload)
        settle(template)
        for _ in range(args.rounds):
            with common.fresh_folder() as folder, common.database(args.db, folder) as db_url:
                empty.append(e2e.run(folder, db_url, args.tokens, 1, 16)["tokens_per_second"])
            with common.fresh_folder() as folder, copy_of(args.db, template, folder) as db_url:
                loaded.append(e2e.run(folder, db_url, args.tokens, 1, 16)["tokens_per_second"])
    common.emit(
        {
            "bench": "scale",
            "database": args.db,
            "preloaded": args.preload,
            "preload_seconds": round(seconds, 1),
            "tokens": args.tokens,
            "rounds": args.rounds,
            "empty_runs": empty,
            "loaded_runs": loaded,
            "empty_tokens_per_second": round(statistics.mean(empty), 1),
            "loaded_tokens_per_second": round(statistics.mean(loaded), 1),
            "ratio": round(statistics.mean(loaded) / statistics.mean(empty), 3),
        }
    )


if __name__ == "__main__":
    main()
