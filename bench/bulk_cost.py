"""A bulk job's own cost, in-process: CPU milliseconds per token of a bulk cancel, driven by the
control plane's `BulkRunner` with no rest between batches, on a SQLite file or a Postgres
database. Prints one JSON line; `--profile` prints cProfile's table instead (sorted by `--sort`).

`--tokens` `orders` tokens (2,000 by default) are started with one `start` each, then one
`POST /bulk`-like job (`bulk.create`) freezes them, and `BulkRunner.drain()` applies it. Only the
drain is timed: its CPU time (`time.process_time`, which the machine's other load does not add
to) and its wall time.

Usage: `python bench/bulk_cost.py [--db sqlite|postgres] [--tokens N] [--profile] [--sort KEY]`.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import common  # noqa: E402  # after the path is set

from stateous.control.bulk_runner import BulkRunner  # noqa: E402
from stateous.control.clock import SystemClock  # noqa: E402
from stateous.control.engine import bulk  # noqa: E402
from stateous.control.engine.start import start  # noqa: E402
from stateous.control.engine.tx import EngineConfig  # noqa: E402
from stateous.control.plane import Plane  # noqa: E402
from stateous.control.store import migrate  # noqa: E402
from stateous.control.store.db import Store, make_engine  # noqa: E402
from stateous.model.graph import load_graph  # noqa: E402
from tests.support.graphs import ORDERS, graph_text  # noqa: E402

BY = {"actor": "bench", "reason": "a measured bulk cancel", "via": "api"}


def prepare(url: str, tokens: int) -> Plane:
    """Migrate, start the tokens and create the job; answer the plane that will apply it."""
    store = Store(make_engine(url))
    with store.begin() as conn:
        migrate.upgrade(conn)
    config = EngineConfig(load_graph(graph_text(ORDERS)))
    plane = Plane(store, config, SystemClock())
    clock = plane.clock
    for first in range(0, tokens, 500):
        with store.begin() as conn:
            for n in range(first, min(tokens, first + 500)):
                start(conn, clock, config, f"BULK-{n:06}", {"title": "t", "customer": "acme"})
    request = bulk.check_request(
        {"action": "cancel", "filter": {"context": {"customer": "acme"}}}, BY
    )
    with store.begin() as conn:
        status, answer = bulk.create(conn, clock, config, request)
    assert status == 202 and answer["matched"] == tokens, answer
    return plane


def main() -> None:
    """Prepare, then time (or profile) the drain of the job."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--db", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--tokens", type=int, default=2000)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--sort", default="tottime")
    args = parser.parse_args()
    with common.fresh_folder() as folder, common.database(args.db, folder) as url:
        plane = prepare(url, args.tokens)
        runner = BulkRunner(plane)
        if args.profile:
            profiler = cProfile.Profile()
            done = profiler.runcall(runner.drain)
            pstats.Stats(profiler).sort_stats(args.sort).print_stats(45)
        else:
            cpu, wall = time.process_time(), time.monotonic()
            done = runner.drain()
            cpu, wall = time.process_time() - cpu, time.monotonic() - wall
            print(json.dumps({
                "bench": "bulk_cost", "database": args.db, "tokens": done,
                "cpu_ms_per_token": round(cpu / done * 1000, 3),
                "wall_ms_per_token": round(wall / done * 1000, 3),
            }))  # fmt: skip
        plane.store.engine.dispose()
        assert done == args.tokens, f"the job did {done} of {args.tokens} tokens"


if __name__ == "__main__":
    main()
