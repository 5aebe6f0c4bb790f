"""Throughput at scale: e2e tokens per second with 100,000 completed tokens (and their ledgers)
already in the database, divided by the same figure on an empty database.

Both runs start real `serve` and `supervise` processes from fresh folders (see `e2e.py`); the
preload goes straight into the store's tables with bulk inserts (`preload.py`).
Usage: `python bench/scale.py [--preload N] [--tokens N] [--db sqlite|postgres]`.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

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


def main() -> None:
    """Run the benchmark and print one JSON line."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--preload", type=int, default=100_000)
    parser.add_argument("--tokens", type=int, default=500)
    parser.add_argument("--db", choices=["sqlite", "postgres"], default="sqlite")
    args = parser.parse_args()
    with common.fresh_folder() as folder, common.database(args.db, folder) as db_url:
        empty = e2e.run(folder, db_url, args.tokens, 1, 16)
    with common.fresh_folder() as folder, common.database(args.db, folder) as db_url:
        seconds = preload.preload(db_url, args.preload)
        settle(db_url)
        loaded = e2e.run(folder, db_url, args.tokens, 1, 16)
    common.emit(
        {
            "bench": "scale",
            "database": args.db,
            "preloaded": args.preload,
            "preload_seconds": round(seconds, 1),
            "tokens": args.tokens,
            "empty_tokens_per_second": empty["tokens_per_second"],
            "loaded_tokens_per_second": loaded["tokens_per_second"],
            "ratio": round(loaded["tokens_per_second"] / empty["tokens_per_second"], 3),
        }
    )


if __name__ == "__main__":
    main()
