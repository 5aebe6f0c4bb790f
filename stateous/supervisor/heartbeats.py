"""The heartbeat loop: renews the leases of running grants, learns of lost ones."""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime

from stateous.supervisor.shared import Shared

__all__ = ["Heartbeats"]

log = logging.getLogger("stateous.supervisor")


class Heartbeats:
    """Every `timings.heartbeat` seconds, one heartbeat naming every running grant."""

    def __init__(self, shared: Shared) -> None:
        self.shared = shared

    async def run(self) -> None:
        """Beat until cancelled; a failed heartbeat is logged and the next one comes on time."""
        while True:
            await asyncio.sleep(self.shared.timings.heartbeat)
            try:
                await self.beat()
            except Exception:
                log.exception("a heartbeat failed")

    async def beat(self) -> None:
        """One heartbeat; the grants it answers lost are cancelled unless already reporting."""
        shared = self.shared
        ids = sorted({task for task, grant in shared.grants.items() if not grant.lost})
        if not ids:
            return
        body = {"supervisor": shared.settings.name, "tasks": ids}
        answer = await shared.persist(lambda: shared.remote.call("POST", "/tasks/heartbeat", body))
        if answer is None:
            return
        if not answer.ok:
            log.warning("the control plane refused a heartbeat: %s", answer.sentence)
            return
        shared.last_heartbeat = datetime.now(UTC).isoformat()
        lost = answer.body.get("lost", []) if isinstance(answer.body, dict) else []
        for task in lost:
            grant = shared.grants.get(task) if isinstance(task, int) else None
            if grant is not None and not grant.reporting and not grant.lost:
                shared.lose(grant)
