"""What the counting triggers of migration 0013 cost a token, on SQLite and Postgres.

`orders` tokens run through the engine in this process, one transaction a step as `serve` runs
them (start; claim and submit `draft`; claim and approve `review`), on a fresh database with the
triggers and on one whose triggers were dropped, alternating `--rounds` times. The cost is CPU,
not time (the machine is shared): this process's CPU (`time.process_time`) plus, on Postgres,
the CPU of the server processes of the bench's database (`/proc/<pid>/stat`), where the
triggers run. One JSON line per run, then the medians.

    .venv/bin/python bench/stats_cost.py --db postgres --tokens 1000 --rounds 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import common
from sqlalchemy import text

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from stateous.control.clock import FakeClock  # noqa: E402
from stateous.control.engine.claim import claim  # noqa: E402
from stateous.control.engine.report import Outcome, report  # noqa: E402
from stateous.control.engine.start import start  # noqa: E402
from stateous.control.engine.tx import EngineConfig  # noqa: E402
from stateous.control.store import migrate  # noqa: E402
from stateous.control.store.db import Store, make_engine  # noqa: E402
from stateous.model.graph import load_graph  # noqa: E402
from tests.support.graphs import ORDERS, graph_text  # noqa: E402

TRIGGERS = [f"stats_{table}_{op}" for table in ("tokens", "tasks") for op in ("insert", "update", "delete")]  # fmt: skip
TICKS = os.sysconf("SC_CLK_TCK")


def server_cpu(store: Store) -> float:
    """Seconds of CPU of the Postgres processes serving this database (0 on SQLite)."""
    if store.sqlite:
        return 0.0
    with store.engine.connect() as conn:
        pids = conn.execute(
            text("SELECT pid FROM pg_stat_activity WHERE datname = current_database()")
        ).scalars()
        total = 0.0
        for pid in pids:
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            total += (int(fields[11]) + int(fields[12])) / TICKS
    return total


def run(store: Store, tokens: int, prefix: str) -> None:
    """`tokens` orders tokens from start to completed, each step its own transaction."""
    config, clock = EngineConfig(load_graph(graph_text(ORDERS))), FakeClock()
    for n in range(tokens):
        with store.begin() as conn:
            start(conn, clock, config, f"{prefix}-{n}", {"title": "t"})
        for state, event, payload in (("draft", "submitted", None),
                                      ("review", "reviewed", {"approved": True})):  # fmt: skip
            with store.begin() as conn:
                grant = claim(conn, clock, config, "box", [state], None)
            assert grant is not None
            outcome = Outcome("event", event, payload, supervisor="box")
            with store.begin() as conn:
                report(conn, clock, config, grant["task"], outcome)


def one(kind: str, folder: Path, tokens: int, triggers: bool, k: int) -> dict[str, Any]:
    """One run on a fresh database: CPU ms a token, this process's and the server's."""
    with common.database(kind, folder / f"run-{k}") as db_url:
        (folder / f"run-{k}").mkdir(exist_ok=True)
        store = Store(make_engine(db_url))
        try:
            with store.begin() as conn:
                migrate.upgrade(conn)
                if not triggers:
                    for name in TRIGGERS:
                        table = name.split("_")[1]
                        on = "" if store.sqlite else f" ON {table}"
                        conn.execute(text(f"DROP TRIGGER {name}{on}"))
            run(store, 50, "warm")
            cpu, server = time.process_time(), server_cpu(store)
            run(store, tokens, "T")
            cpu, server = time.process_time() - cpu, server_cpu(store) - server
        finally:
            store.engine.dispose()
    return {
        "client_ms_per_token": round(cpu * 1000 / tokens, 3),
        "server_ms_per_token": round(server * 1000 / tokens, 3),
        "total_ms_per_token": round((cpu + server) * 1000 / tokens, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--db", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--tokens", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    base = {"bench": "stats_cost", "db": args.db, "tokens": args.tokens}
    totals: dict[bool, list[float]] = {True: [], False: []}
    with common.fresh_folder() as folder:
        for k in range(args.rounds):
            for triggers in (True, False):
                found = one(args.db, folder, args.tokens, triggers, 2 * k + int(triggers))
                totals[triggers].append(found["total_ms_per_token"])
                common.emit({**base, "triggers": triggers, "round": k + 1, **found})
    with_, without = statistics.median(totals[True]), statistics.median(totals[False])
    common.emit({**base, "figure": "median total ms per token", "with_triggers": with_,
                 "without": without, "cost": round(with_ - without, 3)})  # fmt: skip


if __name__ == "__main__":
    main()
