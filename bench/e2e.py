"""End-to-end throughput: `orders` tokens completed per second, and start→completed p50/p95.

Starts real `stateous serve` and `stateous supervise` processes (routines that return at once,
`tasks: 16`) from a fresh temporary folder, warms up, then starts `--tokens` tokens over HTTP
with 8 connections and waits until all completed. Throughput is tokens ÷ (last `completed` row −
first `started` row), both read from the ledger; the latencies are each token's `completed` − its
`started`.

It also reports what each token cost: CPU milliseconds per token of `serve` and of `supervise`
(all supervisors together), from `utime + stime` of `/proc/<pid>/stat` before and after the
measured run; `database_cpu_ms_per_token`, the same of every `postgres` process on the machine
(0 on SQLite, which runs inside `serve`; a backend that ends during the run is not counted); and
`machine_busy`, the share of the machine's CPUs busy during the run. `--observer` makes the
console's tokens screen's refresh (`console_poll.refresh`: `/health`, `/stats`,
`/inbox?limit=100` beside `/tokens?limit=100`) once a second during the run, and reports its
polls and their p50/max time.

`--replicas N` (Postgres): N control plane processes on the one database, the holder
and N-1 `serve --replica`; the starts are spread across them, each supervisor gets every URL
(each in another order, so their claims spread too), and the CPU per token is reported for each
process (`serve_cpu_ms_per_token_each`, the holder first) and in total (`serve_cpu_ms_per_token`).

The starts come from bench/loadgen.py (`--client raw`, a few tens of microseconds of CPU a
start, reported as `client_cpu_ms_per_token`); `--client httpx` starts them through httpx, as
rounds 1-7 did, whose 0.7 ms a start shared the two cores with the processes measured.

Usage: `python bench/e2e.py [--tokens N] [--db sqlite|postgres] [--supervisors N] [--observer]
[--replicas N] [--client raw|httpx]`.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # after the path is set
import console_poll

from stateous.client import ClientError
from stateous.tui.api import ControlPlane


class Observer:
    """Polls like the console's tokens screen (its refresh, once a second) until stopped; keeps
    each poll's time."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.polls: list[float] = []
        self.failures: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> Observer:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _loop(self) -> None:
        asyncio.run(self._watch())

    async def _watch(self) -> None:
        async with ControlPlane(self.url, timeout=60) as plane:
            while not self._stop.is_set():
                began = time.perf_counter()
                try:
                    await console_poll.refresh(plane)
                except ClientError as error:
                    self.failures.append(str(error))
                self.polls.append((time.perf_counter() - began) * 1000)
                await asyncio.to_thread(
                    self._stop.wait, max(0.0, 1.0 - (time.perf_counter() - began))
                )

    def figures(self) -> dict[str, Any]:
        """The observer's polls, and the p50/max of one poll (every request of it), in ms."""
        if self.failures:
            raise SystemExit(f"error: {len(self.failures)} poll(s) failed, e.g. {self.failures[0]}")
        return {
            "observer_polls": len(self.polls),
            "observer_poll_p50_ms": round(common.percentile(self.polls, 0.50), 1),
            "observer_poll_max_ms": round(max(self.polls), 1),
        }


def measure(
    url: str | list[str], db_url: str, tokens: int, prefix: str, client: str = "raw"
) -> dict[str, Any]:
    """Start `tokens` tokens, wait for them all; answer throughput and latencies, and the
    load generator's CPU per start."""
    engine = common.reader(db_url)
    try:
        ids = [f"{prefix}-{n}" for n in range(tokens)]
        began = time.process_time()
        common.start_tokens(url, ids, client=client)
        starting = time.process_time() - began
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
        "client_cpu_ms_per_token": round(starting * 1000 / tokens, 3),
    }


def measure_cost(
    serves: list[common.Process],
    supervisors: list[common.Process],
    observe: bool,
    work: Callable[[], dict[str, Any]],
) -> dict[str, Any]:
    """Run `work()` (the measured run, answering its figures) and add the CPU per token."""
    pids = [*(p.popen.pid for p in serves), *(p.popen.pid for p in supervisors)]
    before = [common.cpu_seconds(pid) for pid in pids]
    database_before = common.database_cpu_seconds()
    busy_before, total_before = common.machine_busy_seconds()
    observer = Observer(serves[0].url) if observe else None
    if observer is not None:
        with observer:
            figures: dict[str, Any] = work()
    else:
        figures = work()
    used = [common.cpu_seconds(pid) - b for pid, b in zip(pids, before, strict=True)]
    database = common.database_cpu_seconds() - database_before
    busy_after, total_after = common.machine_busy_seconds()
    per_token = 1000 / figures["tokens"]
    count = len(serves)
    figures["serve_cpu_ms_per_token"] = round(sum(used[:count]) * per_token, 3)
    if count > 1:
        figures["serve_cpu_ms_per_token_each"] = [round(u * per_token, 3) for u in used[:count]]
    figures["supervise_cpu_ms_per_token"] = round(sum(used[count:]) * per_token, 3)
    # Postgres's own processes (0 on SQLite, which runs inside serve), and how busy the whole
    # machine was: near 1 means the run waited for a CPU rather than for a round trip or a disk.
    figures["database_cpu_ms_per_token"] = round(database * per_token, 3)
    figures["machine_busy"] = round(
        (busy_after - busy_before) / max(total_after - total_before, 1e-9), 3
    )
    if observer is not None:
        figures.update(observer.figures())
    return figures


def run(
    folder: Path,
    db_url: str,
    tokens: int,
    supervisors: int,
    tasks: int,
    observe: bool = False,
    replicas: int = 1,
    client: str = "raw",
) -> dict[str, Any]:
    """Serve (a holder, and `replicas - 1` replicas), supervise, warm up, measure; everything
    stopped at the end."""
    made = common.prepare(folder, tasks=tasks, supervisors=supervisors)
    running = [common.start_serve(folder, db_url)]
    try:
        for n in range(1, replicas):
            running.append(common.start_serve(folder, db_url, replica=n))
        serves = list(running)
        urls = [serve.url for serve in serves]
        for n, sup in enumerate(made):
            first = n % len(urls)
            order = urls[first:] + urls[:first]
            running.append(common.start_supervise(sup, ", ".join(order), tasks))
        measure(urls, db_url, 50, "warm", client)
        return measure_cost(
            serves,
            running[len(serves) :],
            observe,
            lambda: measure(urls, db_url, tokens, "bench", client),
        )
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
    parser.add_argument(
        "--observer", action="store_true", help="poll like the console's tokens screen"
    )
    parser.add_argument(
        "--replicas",
        type=int,
        default=1,
        help="control plane processes on the one Postgres database (1 holder + N-1 replicas)",
    )
    parser.add_argument(
        "--client",
        choices=common.CLIENTS,
        default="raw",
        help="the load generator of the starts (bench/loadgen.py, or httpx)",
    )
    args = parser.parse_args()
    if args.replicas < 1 or (args.replicas > 1 and args.db != "postgres"):
        parser.error("--replicas N needs N >= 1, and --db postgres for N > 1")
    with common.fresh_folder() as folder, common.database(args.db, folder) as db_url:
        figures = run(
            folder,
            db_url,
            args.tokens,
            args.supervisors,
            args.tasks,
            args.observer,
            args.replicas,
            args.client,
        )
    common.emit(
        {
            "bench": "e2e",
            "database": args.db,
            "supervisors": args.supervisors,
            "tasks": args.tasks,
            "observer": args.observer,
            "processes": args.replicas,
            "client": args.client,
            **figures,
        }
    )


if __name__ == "__main__":
    main()
