"""Sequential `POST /tokens` per second against a running `stateous serve` on SQLite.

Starts `stateous serve` (the orders starter, a fresh SQLite file in a temporary folder) as a real
process, warms up, then starts tokens one after another over one keep-alive connection and
prints one JSON line. Usage: `python bench/start_rate.py [--tokens N] [--url URL]`.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.graphs import ORDERS, write_graph  # noqa: E402  # after the path is set
from tests.support.serve import serve_process  # noqa: E402


def measure(url: str, count: int, prefix: str) -> float:
    """Start `count` tokens one after another; answer the seconds taken."""
    with httpx.Client(base_url=url, timeout=30) as http:
        for n in range(50):
            http.post("/tokens", json={"token": f"warm-{prefix}-{n}", "context": {"title": "w"}})
        began = time.perf_counter()
        for n in range(count):
            answer = http.post(
                "/tokens", json={"token": f"{prefix}-{n}", "context": {"title": "bench"}}
            )
            if answer.status_code != 201:
                raise SystemExit(f"error: start {n} answered {answer.status_code}: {answer.text}")
        return time.perf_counter() - began


def main() -> None:
    """Run the benchmark and print one JSON line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=3000)
    parser.add_argument(
        "--url", default=None, help="an already running serve (its database is used as is)"
    )
    args = parser.parse_args()
    if args.url:
        seconds = measure(args.url, args.tokens, f"B{int(time.time())}")
    else:
        with tempfile.TemporaryDirectory() as folder:
            graph = write_graph(Path(folder), ORDERS)
            db = f"sqlite:///{Path(folder) / 'bench.db'}"
            with serve_process(graph, db, cwd=Path(folder)) as served:
                seconds = measure(served.url, args.tokens, "B")
    line = {
        "bench": "start_rate",
        "database": "sqlite",
        "tokens": args.tokens,
        "seconds": round(seconds, 3),
        "starts_per_second": round(args.tokens / seconds, 1),
    }
    print(json.dumps(line))


if __name__ == "__main__":
    main()
