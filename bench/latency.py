"""Idle latency: from `POST /tokens` to the token's `completed` row, one token at a time.

Real `stateous serve` and `stateous supervise` processes (routines that return at once) from a
fresh folder; 50 tokens, each started only after the one before completed and a short pause,
so the system is idle when each starts. The latency is the `completed` row's time (read from the
ledger) minus the wall-clock time just before the request was sent (one machine, one clock).
`--replicas N` (Postgres): N control plane processes on the one database (the holder
and N-1 replicas). The run is measured twice: first the supervisor and the starts both on the
holder (the single-process figure, `p50_ms`), then the supervisor's claims held by the last
replica while the starts are answered by the holder (`replica_p50_ms`, `replica_p95_ms`), so
the wake-up crosses processes through `NOTIFY`.

Usage: `python bench/latency.py [--tokens N] [--db sqlite|postgres] [--replicas N]`.
"""

from __future__ import annotations

import argparse
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx
from sqlalchemy import text
from sqlalchemy.engine import Engine

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # after the path is set


def completed_at(engine: Engine, token: str) -> datetime | None:
    """The time of the token's `completed` row (UTC), or None yet."""
    with engine.connect() as conn:
        at = conn.execute(
            text("SELECT at FROM ledger WHERE token = :t AND kind = 'completed'"), {"t": token}
        ).scalar()
    if at is None:
        return None
    when: datetime = datetime.fromisoformat(at) if isinstance(at, str) else at
    return when.replace(tzinfo=UTC)


def measure(url: str, db_url: str, tokens: int, prefix: str = "lat") -> list[float]:
    """Start the tokens one by one; answer each one's latency in milliseconds."""
    engine = common.reader(db_url)
    found = []
    try:
        with httpx.Client(base_url=url, timeout=30) as http:
            for n in range(tokens + 5):
                token = f"{prefix}-{n}"
                sent = datetime.now(UTC)
                answer = http.post("/tokens", json={"token": token, "context": {"title": "x"}})
                if answer.status_code != 201:
                    raise SystemExit(f"error: start answered {answer.status_code}: {answer.text}")
                deadline = time.monotonic() + 30
                while (done := completed_at(engine, token)) is None:
                    if time.monotonic() > deadline:
                        raise SystemExit(f"error: {token} did not complete in 30 s")
                    time.sleep(0.002)
                if n >= 5:  # the first few warm up the connections and the routines' imports
                    found.append((done - sent).total_seconds() * 1000)
                time.sleep(0.1)
    finally:
        engine.dispose()
    return found


def main() -> None:
    """Run the benchmark and print one JSON line."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--tokens", type=int, default=50)
    parser.add_argument("--db", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument(
        "--replicas",
        type=int,
        default=1,
        help="control plane processes on the one Postgres database (1 holder + N-1 replicas)",
    )
    args = parser.parse_args()
    if args.replicas < 1 or (args.replicas > 1 and args.db != "postgres"):
        parser.error("--replicas N needs N >= 1, and --db postgres for N > 1")
    with common.fresh_folder() as folder, common.database(args.db, folder) as db_url:
        made = common.prepare(folder)
        serves = [common.start_serve(folder, db_url)]
        with common.stopping(*serves):
            for n in range(1, args.replicas):
                serves.append(common.start_serve(folder, db_url, replica=n))
            holder = serves[0].url
            sup = common.start_supervise(made[0], holder, 16)
            with common.stopping(sup):
                latencies = measure(holder, db_url, args.tokens)
            across: list[float] = []
            if len(serves) > 1:
                # The claims held by the last replica; the starts answered by the holder.
                sup = common.start_supervise(made[0], serves[-1].url, 16)
                with common.stopping(sup):
                    across = measure(holder, db_url, args.tokens, prefix="rep")
            for serve in serves[1:]:
                serve.stop()
    figures = {
        "bench": "latency",
        "database": args.db,
        "processes": args.replicas,
        "tokens": len(latencies),
        "p50_ms": round(common.percentile(latencies, 0.50), 1),
        "p95_ms": round(common.percentile(latencies, 0.95), 1),
        "max_ms": round(max(latencies), 1),
    }
    if across:
        figures["replica_p50_ms"] = round(common.percentile(across, 0.50), 1)
        figures["replica_p95_ms"] = round(common.percentile(across, 0.95), 1)
        figures["replica_max_ms"] = round(max(across), 1)
    common.emit(figures)


if __name__ == "__main__":
    main()
