"""`serve --retain DURATION`: the holder prunes ended top tokens whose end is older
than now − DURATION, in the background, with no export.

It sweeps the ended tokens due in id order (keyset, never OFFSET) and prunes them through the
same engine prune as `POST /prune`, one savepoint per token: 100 tokens a transaction on
Postgres, 10 on SQLite (whose one writer the claims and reports wait for). After each
transaction it rests at least as long as that took, as the bulk runner does, so claims and
reports keep their turns. When a sweep finds nothing more due, it waits `idle` seconds.

It logs `stateous.retention: pruned 5,120 tokens ended before 2026-09-01` at the first
transaction that pruned anything, then at most once every `log_every` seconds (an hour),
counting what was pruned since the last line (`pruned 1 token` for one). The cut is a date
when DURATION is a whole number of days (`90d`), else a time to the second
(`2026-09-01T14:05:09Z`): a cut of hours means nothing as a date.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from stateous.control.clock import iso
from stateous.control.engine.retention import prune_quietly
from stateous.control.paced import Pace, run_paced
from stateous.control.plane import Plane
from stateous.control.store.retention import ended_tops

log = logging.getLogger("stateous.retention")


def cut_text(cut: datetime, retain: timedelta) -> str:
    """The cut as the log line shows it: its date for a DURATION of whole days, else its time
    to the second."""
    if retain % timedelta(days=1) == timedelta(0):
        return cut.date().isoformat()
    return iso(cut.replace(microsecond=0))


@dataclass
class RetentionRunner:
    """Prunes what `retain` makes due: `step()` (tests) or `await run(stop)` (serve, the holder)."""

    plane: Plane
    retain: timedelta
    batch: int = 100  # tokens a transaction (Postgres)
    rest: float = 0.05  # the least rest after a transaction
    idle: float = 60.0  # the wait once a sweep found nothing more due
    log_every: float = 3600.0
    _after: str | None = field(default=None, repr=False)  # the sweep's last id
    _unlogged: int = field(default=0, repr=False)
    _logged_at: float | None = field(default=None, repr=False)

    @property
    def group(self) -> int:
        """Tokens pruned in one transaction."""
        return 10 if self.plane.store.sqlite else self.batch

    def step(self) -> tuple[int, float]:
        """One transaction's prune of the next due tokens: (tokens looked at, 0 when the sweep
        is over; seconds it took)."""
        started = time.monotonic()
        cut = self.plane.clock.now() - self.retain
        after = self._after
        found = self.plane.run("export", lambda conn: ended_tops(conn, cut, after, self.group))
        ids = [token.token for token in found]
        if not ids:
            self._after = None  # the next sweep starts again from the first id
            self._count(0, cut)  # what the last hour pruned, when no line said it yet
            return 0, time.monotonic() - started
        pruned, _ = self.plane.run("prune", lambda conn: prune_quietly(conn, ids, cut))
        self._after = ids[-1]
        self._count(pruned, cut)
        return len(ids), time.monotonic() - started

    def _count(self, pruned: int, cut: datetime) -> None:
        """Log what was pruned: at the first prune, then once every `log_every` seconds."""
        self._unlogged += pruned
        now = time.monotonic()
        due = self._logged_at is None or now - self._logged_at >= self.log_every
        if self._unlogged and due:
            text = cut_text(cut, self.retain)
            noun = "token" if self._unlogged == 1 else "tokens"
            log.info("pruned %s %s ended before %s", f"{self._unlogged:,}", noun, text)
            self._unlogged = 0
            self._logged_at = now

    def drain(self) -> int:
        """Run steps until the sweep is over (tests); answers the tokens looked at."""
        total = 0
        while handled := self.step()[0]:
            total += handled
        return total

    async def run(self, stop: asyncio.Event) -> None:
        """Prune until `stop` is set or this control plane stops serving."""
        pace = Pace(self.rest, self.idle, self.rest, "a retention batch failed")
        await run_paced(lambda: self.step()[0], stop, pace)
