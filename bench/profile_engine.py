"""The engine's own cost, in-process: CPU milliseconds per call of `start`, `claim` and `report`
for 2-state `orders` tokens on a SQLite file (or, `--db postgres`, a new Postgres database),
each call its own transaction (with its commit),
driven through the engine functions the API calls. Prints one JSON line; `--profile` prints
cProfile's table instead (sorted by `--sort`, `tottime` by default).

Usage: `python bench/profile_engine.py [--tokens 300] [--db sqlite|postgres] [--profile]
[--sort cumulative]`.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import common  # noqa: E402
from sqlalchemy import Connection  # noqa: E402

from stateous.control.clock import SystemClock  # noqa: E402
from stateous.control.engine.claim import claim  # noqa: E402
from stateous.control.engine.report import Outcome, report  # noqa: E402
from stateous.control.engine.start import start  # noqa: E402
from stateous.control.engine.tx import EngineConfig  # noqa: E402
from stateous.control.store import migrate  # noqa: E402
from stateous.control.store.db import Store, make_engine  # noqa: E402
from stateous.model.graph import load_graph  # noqa: E402
from tests.support.graphs import ORDERS, graph_text  # noqa: E402

BOX = "profile-box"
STATES = ["draft", "review"]


def _claim(clock: SystemClock, config: EngineConfig, request: str, conn: Connection) -> Any:
    return claim(conn, clock, config, BOX, STATES, request)


def _report(
    clock: SystemClock, config: EngineConfig, task: int, outcome: Outcome, conn: Connection
) -> Any:
    return report(conn, clock, config, task, outcome)


class Loop:
    """Runs tokens through start, claim, report, claim, report; sums CPU time per call."""

    def __init__(self, store: Store, config: EngineConfig) -> None:
        self.store = store
        self.config = config
        self.clock = SystemClock()
        self.cpu = {"start": 0.0, "claim": 0.0, "report": 0.0}

    def timed(self, name: str, work: Callable[[Connection], Any]) -> Any:
        began = time.process_time()
        with self.store.begin() as conn:
            result = work(conn)
        self.cpu[name] += time.process_time() - began
        return result

    def token(self, name: str) -> None:
        clock, config = self.clock, self.config
        self.timed("start", lambda c: start(c, clock, config, name, {"title": name}))
        for event, payload in (("submitted", None), ("reviewed", {"approved": True})):
            request = os.urandom(16).hex()
            grant = self.timed("claim", partial(_claim, clock, config, request))
            outcome = Outcome("event", event, payload, attempt=1, supervisor=BOX)
            self.timed("report", partial(_report, clock, config, grant["task"], outcome))

    def run(self, prefix: str, tokens: int) -> None:
        for n in range(tokens):
            self.token(f"{prefix}-{n}")


def main() -> None:
    """Warm up, then measure (or profile) `--tokens` tokens."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--tokens", type=int, default=300)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--sort", default="tottime")
    parser.add_argument("--db", choices=["sqlite", "postgres"], default="sqlite")
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory() as folder,
        common.database(args.db, Path(folder)) as db_url,
    ):
        store = Store(make_engine(db_url))
        with store.begin() as conn:
            migrate.upgrade(conn)
        loop = Loop(store, EngineConfig(load_graph(graph_text(ORDERS))))
        loop.run("warm", 50)
        loop.cpu = dict.fromkeys(loop.cpu, 0.0)
        if args.profile:
            profiler = cProfile.Profile()
            profiler.runcall(loop.run, "profile", args.tokens)
            pstats.Stats(profiler).sort_stats(args.sort).print_stats(40)
        else:
            loop.run("bench", args.tokens)
            calls = {"start": args.tokens, "claim": 2 * args.tokens, "report": 2 * args.tokens}
            figures = {f"{k}_cpu_ms": round(v / calls[k] * 1000, 3) for k, v in loop.cpu.items()}
            total = round(sum(loop.cpu.values()) / args.tokens * 1000, 3)
            print(
                json.dumps(
                    {
                        "bench": "profile_engine",
                        "database": args.db,
                        **figures,
                        "token_cpu_ms": total,
                    }
                )
            )
        store.engine.dispose()


if __name__ == "__main__":
    main()
