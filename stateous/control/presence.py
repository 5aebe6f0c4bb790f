"""This control plane's row in `control_planes`: written every 10 s and at once
when its role changes (a replica that took the hold), deleted on a clean stop."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from stateous.control.clock import Clock
from stateous.control.store import planes
from stateous.control.store.db import Store
from stateous.control.ticker import one_line

__all__ = ["Presence"]

log = logging.getLogger("stateous.serve")


@dataclass
class Presence:
    """Writes `name`, `role()` and `seen_at` every `every`; `await run(stop)` in `serve`."""

    store: Store
    clock: Clock
    name: str
    role: Callable[[], str]
    every: timedelta = planes.EVERY
    started_at: datetime | None = None
    _written: tuple[str, datetime] | None = field(default=None, repr=False)
    _failing: bool = field(default=False, repr=False)

    def beat(self) -> bool:
        """Write the row when it is due or the role changed; answers whether it wrote."""
        now = self.clock.now()
        role = self.role()
        if self._written is not None:
            last_role, last_at = self._written
            if last_role == role and now - last_at < self.every:
                return False
        started = self.started_at = self.started_at or now
        gone = now - planes.LIVE_BEATS * self.every
        with self.store.begin() as conn:
            planes.write_plane(conn, self.name, role, started, now, gone)
        self._written = (role, now)
        return True

    def leave(self) -> None:
        """Delete the row (a clean stop); never raises."""
        with contextlib.suppress(Exception), self.store.begin() as conn:
            planes.leave(conn, self.name)

    async def run(self, stop: asyncio.Event, interval: float = 1.0) -> None:
        """Look every `interval` whether the row is due, until `stop` is set."""
        while not stop.is_set():
            try:
                await asyncio.to_thread(self.beat)
                self._failing = False
            except Exception as exc:  # the database does not answer: the next look tries again
                if not self._failing:
                    log.warning(
                        "cannot write this control plane's row in control_planes (%s); "
                        "trying again in %s seconds",
                        one_line(exc),
                        repr(float(interval)),
                    )
                self._failing = True
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=interval)
