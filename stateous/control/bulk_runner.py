"""The holder applies bulk jobs beside the clock, in batches that leave room for
live traffic.

Each token is its own operation (its action and its match marked together, in a savepoint); a
few tokens share a commit, so claims and reports never wait for more than a few tokens' work;
after each batch of 20 the runner rests as long as the batch took, so a job uses at most about
half of the database's turns.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from functools import partial

from sqlalchemy import Connection

from stateous.control import tracing
from stateous.control.engine.bulk import apply_one, finish_if_done
from stateous.control.paced import Pace, run_paced
from stateous.control.plane import Plane
from stateous.control.store import bulk as store

log = logging.getLogger("stateous.bulk")


@dataclass
class BulkRunner:
    """Applies the running jobs, oldest first: `step()` (tests) or `await run(stop)` (serve)."""

    plane: Plane
    batch: int = 20
    group: int = 4  # tokens per shared commit (Postgres; SQLite takes one, see `_batch`)
    idle: float = 1.0  # how often to look for a job when none runs
    rest: float = 0.002  # the least rest between batches

    def step(self) -> int:
        """One batch of the oldest running job with work left; answers the tokens handled."""
        for job in self.plane.run("bulk read", store.running_jobs):
            handled = self._batch(job)
            if handled:
                return handled
        return 0

    def _batch(self, job: store.Job) -> int:
        plane, job_id = self.plane, job.id
        tokens = plane.run("bulk read", lambda conn: store.pending(conn, job_id, self.batch))
        if not tokens:
            plane.run("bulk", lambda conn: finish_if_done(conn, plane.clock, job_id))
            return 0
        # A few tokens share one commit (group commit), each in its own savepoint
        # with its match marked there: fewer commits, and still one token's work at a time.
        # On SQLite the one writer waits for the whole shared commit: four tokens at once raised
        # the p95 of claims and reports by about 8 ms (bench/bulk_latency.py), one by about 2.
        size = 1 if plane.store.sqlite else self.group
        for first in range(0, len(tokens), size):
            part = tokens[first : first + size]
            started = tracing.now()
            answers = plane.run_many([(job.action, partial(_apply, plane, job, t)) for t in part])
            for answer in answers:
                if isinstance(answer, BaseException):
                    raise answer  # the database is busy or gone: the batch is tried again
            tracing.bulk_step(plane.store, started, job.id, job.action, part, answers)
        return len(tokens)

    def drain(self) -> int:
        """Run steps until no job has work left (tests); answers the tokens handled."""
        total = 0
        while handled := self.step():
            total += handled
        return total

    async def run(self, stop: asyncio.Event) -> None:
        """Apply jobs until `stop` is set or this control plane stops serving."""
        pace = Pace(self.rest, self.idle, self.idle, "a bulk job's batch failed")
        await run_paced(self.step, stop, pace)


def _apply(plane: Plane, job: store.Job, token: str, conn: Connection) -> str | None:
    return apply_one(conn, plane.clock, plane.config, job, token)
