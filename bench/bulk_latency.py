"""Claims and reports while a bulk job runs: the p95 of each, without and with a job.

A real `stateous serve` of the `orders` starter from a fresh folder. `--bulk N` tokens (10,000 by
default) wait in `draft` with the context `{"group": "bulk"}`; `--live` more are fired on to
`review`. The script then acts as a supervisor of `review`, one request at a time: it claims a task
(`POST /tasks/claim`) and reports it (`POST /tasks/{id}/report`), timing each answer on the
client. It measures `--ops` claim-and-report pairs with no job, then starts a bulk cancel of the
`N` tokens and measures `--ops` pairs more while the job runs. The job must still be running at
the end of the second measure (the line says how far it got), so every pair measured shared the
database with it.

Usage: `python bench/bulk_latency.py [--db sqlite|postgres] [--bulk N] [--live N] [--ops N]`.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # after the path is set

SUPERVISOR = "bench-box"


def start_batch(http: httpx.Client, prefix: str, count: int, context: dict[str, Any]) -> None:
    """Start `count` tokens through `POST /tokens/batch`, 1,000 at a time."""
    for first in range(0, count, 1000):
        starts = [
            {"token": f"{prefix}-{n:06}", "context": {"title": "x", **context}}
            for n in range(first, min(count, first + 1000))
        ]
        answer = http.post("/tokens/batch", json={"tokens": starts}, timeout=300)
        if answer.status_code != 200:
            raise SystemExit(f"error: a batch start answered {answer.status_code}: {answer.text}")


def to_review(http: httpx.Client, prefix: str, count: int) -> None:
    """Fire `submitted` at each live token, so its task waits in `review`."""
    for n in range(count):
        answer = http.post(f"/tokens/{prefix}-{n:06}/events/submitted", json={})
        if answer.status_code != 200:
            raise SystemExit(f"error: a fire answered {answer.status_code}: {answer.text}")


def measure(http: httpx.Client, ops: int) -> tuple[list[float], list[float]]:
    """`ops` claims of a `review` task, each reported at once; the latencies in ms."""
    claims: list[float] = []
    reports: list[float] = []
    body = {"supervisor": SUPERVISOR, "states": ["review"]}
    verdict = {"kind": "event", "event": "reviewed", "payload": {"approved": True},
               "supervisor": SUPERVISOR}  # fmt: skip
    while len(reports) < ops:
        sent = time.perf_counter()
        grant = http.post("/tasks/claim", json=body)
        claims.append((time.perf_counter() - sent) * 1000)
        if grant.status_code != 200:
            raise SystemExit(f"error: no review task to claim ({grant.status_code}); raise --live")
        task = grant.json()
        sent = time.perf_counter()
        answer = http.post(
            f"/tasks/{task['task']}/report", json={**verdict, "attempt": task["attempt"]}
        )
        reports.append((time.perf_counter() - sent) * 1000)
        if answer.status_code != 200:
            raise SystemExit(f"error: a report answered {answer.status_code}: {answer.text}")
    return claims, reports


def figures(name: str, values: list[float]) -> dict[str, float]:
    return {
        f"{name}_p50_ms": round(common.percentile(values, 0.50), 2),
        f"{name}_p95_ms": round(common.percentile(values, 0.95), 2),
    }


def main() -> None:
    """Run the benchmark and print one JSON line."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--db", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--bulk", type=int, default=10_000, help="tokens the bulk job cancels")
    parser.add_argument("--live", type=int, default=1_000, help="tokens claimed and reported")
    parser.add_argument("--ops", type=int, default=400, help="claim-and-report pairs per measure")
    args = parser.parse_args()
    if args.live < 2 * args.ops + 10:
        parser.error("--live must be at least 2 x --ops + 10 (each pair ends a live token)")
    with common.fresh_folder() as folder, common.database(args.db, folder) as db_url:
        common.prepare(folder)
        serve = common.start_serve(folder, db_url)
        with common.stopping(serve), httpx.Client(base_url=serve.url, timeout=60) as http:
            start_batch(http, "live", args.live, {"group": "live"})
            to_review(http, "live", args.live)
            start_batch(http, "bulk", args.bulk, {"group": "bulk"})
            measure(http, 10)  # warm up the connection and the statements
            idle_claims, idle_reports = measure(http, args.ops)
            job = http.post(
                "/bulk", json={"action": "cancel", "filter": {"context": {"group": "bulk"}}}
            )
            if job.status_code != 202:
                raise SystemExit(f"error: POST /bulk answered {job.status_code}: {job.text}")
            job_id = job.json()["job"]
            started = time.monotonic()
            busy_claims, busy_reports = measure(http, args.ops)
            seconds = time.monotonic() - started
            progress = http.get(f"/bulk/{job_id}").json()
    done = int(progress["done"]) + sum(progress["skipped"].values())
    common.emit({
        "bench": "bulk_latency",
        "database": args.db,
        "bulk_tokens": args.bulk,
        "ops": args.ops,
        **figures("claim_idle", idle_claims),
        **figures("report_idle", idle_reports),
        **figures("claim_bulk", busy_claims),
        **figures("report_bulk", busy_reports),
        "bulk_done_while_measuring": done,
        "bulk_still_running": progress["status"] == "running",
        "bulk_tokens_per_s": round(done / seconds, 1) if seconds else 0.0,
    })  # fmt: skip


if __name__ == "__main__":
    main()
