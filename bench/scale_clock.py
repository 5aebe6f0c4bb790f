"""The clock's tick on the preloaded database (the documented bound: ≤ 20 ms of the holder's CPU
a tick with 10,000 pending timers, docs/performance.md), measured two ways:

- `in_process`: the control plane's own `Ticker.tick` (the hold taken as `serve` takes it,
  renewed each tick, the expired leases and the due timers read, none due), run `ticks` times
  in this process on a real store; the CPU of this process (`process_time`, every thread) per
  tick. This is the tick alone.
- `serve_idle`: the CPU of a real idle `serve` over `seconds` seconds ÷ its ticks (one a
  second): the tick and everything else an idle holder does (the presence row, WAL
  checkpoints, the bulk, search-key and retention loops' polls), so an upper bound.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import common

from stateous.control.clock import SystemClock
from stateous.control.engine.tx import EngineConfig
from stateous.control.hold import Hold
from stateous.control.plane import Plane
from stateous.control.served import load_versions
from stateous.control.store.db import Store, make_engine
from stateous.control.ticker import Ticker
from stateous.model.graph import read_graph_file


def in_process(db_url: str, graph_file: Path, ticks: int = 200) -> dict[str, Any]:
    """`Ticker.tick` `ticks` times as the holder; CPU ms per tick (mean, p95)."""
    store = Store(make_engine(db_url))
    clock = SystemClock()
    hold = Hold(store, clock)
    try:
        hold.take_and_migrate()
        graph = read_graph_file(graph_file)
        plane = Plane.of(store, EngineConfig(graph, versions=load_versions(store, graph)), clock)
        ticker = Ticker(plane, hold)
        samples: list[float] = []
        for _ in range(ticks + 3):
            began = time.process_time()
            result = ticker.tick()
            samples.append((time.process_time() - began) * 1000)
            if result.lost or result.failures or result.timers or result.leases:
                raise SystemExit(f"error: a tick of the bench did work or failed: {result}")
    finally:
        hold.give_up()
        store.engine.dispose()
    samples = samples[3:]
    return {
        "ticks": ticks,
        "cpu_ms_mean": round(sum(samples) / len(samples), 2),
        "cpu_ms_p95": round(common.percentile(samples, 0.95), 2),
    }


def serve_idle(pid: int, seconds: float = 20.0) -> dict[str, Any]:
    """CPU ms of the process `pid` per second (per tick) while it idles for `seconds`."""
    before = common.cpu_seconds(pid)
    time.sleep(seconds)
    used = common.cpu_seconds(pid) - before
    return {"seconds": seconds, "cpu_ms_per_tick": round(used * 1000 / seconds, 2)}
