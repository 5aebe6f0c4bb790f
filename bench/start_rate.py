"""`POST /tokens` per second against a real `stateous serve`: sequential, concurrent, batched.

Starts `stateous serve` (the orders starter, a fresh database in a temporary folder) as a real
process with no supervisor, warms up, then starts tokens one after another over one keep-alive
connection (sequential), then with 8 connections at once (concurrent), then `--batch-tokens`
more with `POST /tokens/batch` in batches of `--batch-size` over one connection,
and prints one JSON line (`batch_starts_per_second` null against a control plane without the
route). Each step also reports the CPU milliseconds per start of `serve` (from `/proc`) and
of this load generator (`*_serve_cpu_ms`, `*_client_cpu_ms`).
The concurrent starts come from bench/loadgen.py (`--client raw`); `--client httpx` sends them
through httpx, a thread and a client per connection, as rounds 1-7 did.
Usage: `python bench/start_rate.py [--tokens N] [--batch-tokens N] [--batch-size N]
[--db sqlite|postgres] [--url URL] [--client raw|httpx]`.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # after the path is set


def sequential(url: str, count: int, prefix: str) -> float:
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


def batched(url: str, count: int, size: int, prefix: str) -> float | None:
    """Start `count` tokens with `POST /tokens/batch`, `size` a request; answer the seconds,
    or None when the control plane has no such route (an older one: `404` or `405`)."""
    with httpx.Client(base_url=url, timeout=120) as http:
        warm = [{"token": f"warm-{prefix}-{n}", "context": {"title": "w"}} for n in range(50)]
        if http.post("/tokens/batch", json={"tokens": warm}).status_code in (404, 405):
            return None
        began = time.perf_counter()
        for first in range(0, count, size):
            items = [
                {"token": f"{prefix}-{n}", "context": {"title": "bench"}}
                for n in range(first, min(first + size, count))
            ]
            answer = http.post("/tokens/batch", json={"tokens": items})
            if answer.status_code != 200:
                raise SystemExit(
                    f"error: batch {first} answered {answer.status_code}: {answer.text}"
                )
            refused = [a for a in answer.json()["answers"] if a["status"] != 201]
            if refused:
                raise SystemExit(f"error: {len(refused)} start(s) of batch {first}: {refused[0]}")
        return time.perf_counter() - began


class Cost:
    """CPU milliseconds per start of `serve` (given its pid) and of this load generator."""

    def __init__(self, pid: int | None) -> None:
        self.pid = pid

    def measured[T](
        self, name: str, count: int, work: Callable[[], T]
    ) -> tuple[T, dict[str, float]]:
        """Run `work` (`count` starts); answer its result and `<name>_{serve,client}_cpu_ms`."""
        serve = common.cpu_seconds(self.pid) if self.pid else 0.0
        client = time.process_time()
        result = work()
        figures = {f"{name}_client_cpu_ms": round((time.process_time() - client) * 1000 / count, 3)}
        if self.pid:
            used = common.cpu_seconds(self.pid) - serve
            figures[f"{name}_serve_cpu_ms"] = round(used * 1000 / count, 3)
        return result, figures


def measure(
    url: str,
    count: int,
    prefix: str,
    batch_count: int,
    batch_size: int,
    pid: int | None = None,
    client: str = "raw",
) -> dict[str, float | None]:
    """Every figure against one control plane; with `pid` (serve's), its CPU per start too."""
    cost = Cost(pid)
    seq, seq_cpu = cost.measured("sequential", count, lambda: sequential(url, count, prefix + "S"))
    conc, conc_cpu = cost.measured(
        "concurrent",
        count,
        lambda: common.start_tokens(
            url, [f"{prefix}C-{n}" for n in range(count)], concurrency=8, client=client
        ),
    )
    figures: dict[str, float | None] = {
        "sequential_seconds": round(seq, 3),
        "sequential_starts_per_second": round(count / seq, 1),
        **seq_cpu,
        "concurrent_connections": 8,
        "concurrent_seconds": round(conc, 3),
        "concurrent_starts_per_second": round(count / conc, 1),
        **conc_cpu,
    }
    if batch_count:
        took, batch_cpu = cost.measured(
            "batch",
            batch_count,
            lambda: batched(url, batch_count, batch_size, prefix + "B"),
        )
        if took is None:
            return {**figures, "batch_starts_per_second": None}
        figures |= {
            "batch_tokens": batch_count,
            "batch_size": batch_size,
            "batch_seconds": round(took, 3),
            "batch_starts_per_second": round(batch_count / took, 1),
            **batch_cpu,
        }
    return figures


def main() -> None:
    """Run the benchmark and print one JSON line."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--tokens", type=int, default=1000)
    parser.add_argument(
        "--batch-tokens", type=int, default=10_000, help="tokens started with POST /tokens/batch"
    )
    parser.add_argument("--batch-size", type=int, default=500, help="starts per batch (1-1000)")
    parser.add_argument("--db", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument(
        "--url", default=None, help="an already running serve (its database is used as is)"
    )
    parser.add_argument(
        "--client",
        choices=common.CLIENTS,
        default="raw",
        help="the load generator of the concurrent starts (bench/loadgen.py, or httpx)",
    )
    args = parser.parse_args()
    if args.url:
        figures = measure(
            args.url,
            args.tokens,
            f"B{int(time.time())}",
            args.batch_tokens,
            args.batch_size,
            client=args.client,
        )
    else:
        with common.fresh_folder() as folder, common.database(args.db, folder) as db_url:
            common.prepare(folder, supervisors=0)
            serve = common.start_serve(folder, db_url)
            with common.stopping(serve):
                figures = measure(
                    serve.url,
                    args.tokens,
                    "B",
                    args.batch_tokens,
                    args.batch_size,
                    serve.popen.pid,
                    args.client,
                )
    common.emit(
        {
            "bench": "start_rate",
            "database": args.db,
            "tokens": args.tokens,
            "client": args.client,
            **figures,
        }
    )


if __name__ == "__main__":
    main()
