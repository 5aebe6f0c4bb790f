"""End-to-end throughput: `orders` tokens completed per second, and start→completed p50/p95.

Starts real `stateous serve` and `stateous supervise` processes (routines that return at once,
`tasks: 16`) from a fresh temporary folder, warms up, then starts `--tokens` tokens over HTTP
with 8 connections and waits until all completed. Throughput is tokens ÷ (last `completed` row −
first `started` row), both read from the ledger; the latencies are each token's `completed` − its
`started`. Usage: `python bench/e2e.py [--tokens N] [--db sqlite|postgres] [--supervisors N]`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # after the path is set


def measure(url: str, db_url: str, tokens: int, prefix: str) -> dict[str, Any]:
    """Start `tokens` tokens, wait for them all; answer throughput and latencies."""
    engine = common.reader(db_url)
    try:
        ids = [f"{prefix}-{n}" for n in range(tokens)]
        common.start_tokens(url, ids)
        common.wait_completed(engine, prefix + "-", tokens)
        spans = common.spans(engine, prefix + "-")
    finally:
        engine.dispose()
    first = min(s for s, _ in spans.values())
    last = max(c for _, c in spans.values())
    seconds = (last - first).total_seconds()
    latencies = [(c - s).total_seconds() * 1000 for s, c in spans.values()]
    return {
        "tokens": tokens,
        "seconds": round(seconds, 3),
        "tokens_per_second": round(tokens / seconds, 1),
        "p50_ms": round(common.percentile(latencies, 0.50), 1),
        "p95_ms": round(common.percentile(latencies, 0.95), 1),
    }


def run(folder: Path, db_url: str, tokens: int, supervisors: int, tasks: int) -> dict[str, Any]:
    """Serve, supervise, warm up, measure; everything stopped at the end."""
    made = common.prepare(folder, tasks=tasks, supervisors=supervisors)
    serve = common.start_serve(folder, db_url)
    running = [serve]
    try:
        for sup in made:
            running.append(common.start_supervise(sup, serve.url, tasks))
        measure(serve.url, db_url, 50, "warm")
        return measure(serve.url, db_url, tokens, "bench")
    finally:
        for process in reversed(running):
            process.stop()


def main() -> None:
    """Run the benchmark and print one JSON line."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--tokens", type=int, default=1000)
    parser.add_argument("--db", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--supervisors", type=int, default=1)
    parser.add_argument("--tasks", type=int, default=16)
    args = parser.parse_args()
    with common.fresh_folder() as folder, common.database(args.db, folder) as db_url:
        figures = run(folder, db_url, args.tokens, args.supervisors, args.tasks)
    common.emit(
        {
            "bench": "e2e",
            "database": args.db,
            "supervisors": args.supervisors,
            "tasks": args.tasks,
            **figures,
        }
    )


if __name__ == "__main__":
    main()
