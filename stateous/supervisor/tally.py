"""The supervisor's line a minute: how many tasks it ran, and how many of them failed.

The per-task lines (`task <id>: ...`, `... reported <x>`) are at DEBUG: at hundreds of tasks a
second they were most of the log. At INFO this line says what the supervisor did instead, e.g.
`ran 1,204 tasks (1,200 done, 4 failed) in the last minute`, and only when it ran any.
"""

from __future__ import annotations

import asyncio
import logging

__all__ = ["EVERY", "Tally", "tally_loop"]

log = logging.getLogger("stateous.supervisor")

#: Seconds between two lines.
EVERY = 60.0


class Tally:
    """The tasks whose report the control plane accepted since the last line."""

    def __init__(self) -> None:
        self.done = 0
        self.failed = 0

    def count(self, *, failed: bool) -> None:
        """One accepted report: `failed`, or an event or `waiting` (done)."""
        if failed:
            self.failed += 1
        else:
            self.done += 1

    def take(self) -> str | None:
        """The line of the tasks counted so far, and a new count; None when there were none."""
        done, failed = self.done, self.failed
        self.done = self.failed = 0
        ran = done + failed
        if not ran:
            return None
        tasks = "task" if ran == 1 else "tasks"
        return f"ran {ran:,} {tasks} ({done:,} done, {failed:,} failed) in the last minute"


async def tally_loop(tally: Tally, every: float = EVERY) -> None:
    """Log the tally's line every `every` seconds (when it has one), until cancelled."""
    while True:
        await asyncio.sleep(every)
        line = tally.take()
        if line is not None:
            log.info("%s", line)
