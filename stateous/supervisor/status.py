"""`.stateous/status.json`: what the console reads of a running supervisor."""

from __future__ import annotations

import asyncio
import json
import logging
import os

from stateous.supervisor.shared import Shared

__all__ = ["status_loop", "write_status"]

log = logging.getLogger("stateous.supervisor")


async def status_loop(shared: Shared) -> None:
    """Rewrite status.json at the pace of heartbeats, also while a heartbeat waits to retry."""
    while True:
        await asyncio.sleep(shared.timings.heartbeat)
        write_status(shared)


def write_status(shared: Shared) -> None:
    """Rewrite `.stateous/status.json` for the console (name, pid, running grants...)."""
    status = {
        "name": shared.settings.name,
        "pid": os.getpid(),
        "url": shared.url,
        "started_at": shared.started_at,
        "last_heartbeat": shared.last_heartbeat,
        "outbox": shared.outbox.count(),
        "running": [
            {
                "task": g.task,
                "token": g.token,
                "state": g.state,
                "attempt": g.attempt,
                "started_at": g.started_at,
            }
            for g in shared.grants.values()
        ],
    }
    target = shared.outbox.path.parent / "status.json"
    temporary = target.with_suffix(".json.tmp")
    try:
        temporary.write_text(json.dumps(status, indent=2) + "\n", encoding="utf-8")
        os.replace(temporary, target)
    except OSError as exc:
        log.warning("cannot write %s: %s", target, exc)
