"""The holder folds the deltas of `GET /stats` into its counts (Postgres).

On Postgres migration 0013's triggers append +1/-1 rows to `stats_deltas` in every writer's
transaction, so writers side by side never wait on shared count rows. /stats reads the counts
plus those rows, right at any moment; folding them in keeps that read short: each step is one
statement that deletes the deltas it read and adds them to `stats_counts`, then a VACUUM of
the rows it left dead (a read of the deltas reads them all until then). SQLite's triggers
write the counts themselves, so nothing runs there.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from stateous.control.paced import Pace, run_paced
from stateous.control.plane import Plane
from stateous.control.store.stats import fold_deltas, vacuum_deltas


@dataclass
class StatsFolder:
    """Folds the deltas: `step()` (tests) or `await run(stop)` (serve, the holder, Postgres)."""

    plane: Plane
    rest: float = 1.0  # seconds between folds: at a thousand tokens a second, some 10,000 rows
    idle: float = 1.0  # the wait after a fold that found nothing

    def step(self) -> int:
        """One fold in a transaction of its own, then a VACUUM of the deltas it left dead;
        answers how many deltas it folded."""
        self.plane.check_serving()
        folded = self.plane.store.run_alone("fold stats", fold_deltas)
        if folded:
            with self.plane.store.engine.connect() as conn:
                vacuum_deltas(conn.execution_options(isolation_level="AUTOCOMMIT"))
        return folded

    async def run(self, stop: asyncio.Event) -> None:
        """Fold until `stop` is set or this control plane stops serving (nothing on SQLite)."""
        if self.plane.store.sqlite:
            return
        pace = Pace(self.rest, self.idle, self.rest, "folding the stats counts failed")
        await run_paced(self.step, stop, pace)
