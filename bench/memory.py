"""Peak resident memory (VmHWM) of `serve` with 100,000 tokens in its database, and of an idle
and a busy `supervise`.

The database is preloaded with completed tokens (`preload.py`); then real processes run from a
fresh folder: the supervisor idles for a few seconds (its peak is read: idle), then `--tokens`
tokens run end to end while `GET /tokens`, `GET /metrics` and histories are read (peaks: busy
supervisor, serve). Usage: `python bench/memory.py [--preload N] [--tokens N]`.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # after the path is set
import e2e
import preload


def mib(kib: int) -> float:
    """KiB as MiB, one decimal."""
    return round(kib / 1024, 1)


def main() -> None:
    """Run the benchmark and print one JSON line."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--preload", type=int, default=100_000)
    parser.add_argument("--tokens", type=int, default=500)
    parser.add_argument("--db", choices=["sqlite", "postgres"], default="sqlite")
    args = parser.parse_args()
    with common.fresh_folder() as folder, common.database(args.db, folder) as db_url:
        preload.preload(db_url, args.preload)
        made = common.prepare(folder)
        serve = common.start_serve(folder, db_url)
        sup = common.start_supervise(made[0], serve.url, 16)
        with common.stopping(serve, sup):
            time.sleep(3)
            idle = sup.rss_kib()
            e2e.measure(serve.url, db_url, args.tokens, "mem")
            with httpx.Client(base_url=serve.url, timeout=60) as http:
                for _ in range(3):
                    http.get("/tokens", params={"limit": 1000}).raise_for_status()
                    http.get("/tokens", params={"status": "completed", "limit": 1000})
                    http.get("/metrics").raise_for_status()
                    http.get("/tokens/OLD-5/history").raise_for_status()
            busy = sup.rss_kib()
            served = serve.rss_kib()
    common.emit(
        {
            "bench": "memory",
            "database": args.db,
            "preloaded": args.preload,
            "tokens": args.tokens,
            "serve_peak_mib": mib(served),
            "supervise_idle_peak_mib": mib(idle),
            "supervise_busy_peak_mib": mib(busy),
        }
    )


if __name__ == "__main__":
    main()
