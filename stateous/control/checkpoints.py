"""SQLite's checkpoints off the commit path: while `serve` runs, a task copies the WAL into the
database file once a second (`EVERY`, `Store.checkpoint`), so no shared commit does it itself.

The engine's connections keep a backstop (`BACKSTOP` pages, `make_engine`'s
`wal_autocheckpoint`): should the task fall behind, a commit checkpoints as SQLite would by
default, only later.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from stateous.control.store.db import Store

log = logging.getLogger("stateous.control")

#: Seconds between two checkpoints (a few hundred pages each under full load).
EVERY = 1.0
#: The WAL's pages at which a commit checkpoints itself (SQLite's default is 1,000): 40 MB.
BACKSTOP = 10_000


async def run_checkpoints(store: Store, stop: asyncio.Event, every: float = EVERY) -> None:
    """Until `stop` is set, checkpoint, then wait `every` seconds (nothing on Postgres; in
    memory, `Store.checkpoint` does nothing)."""
    if not store.sqlite:
        return
    failing = False
    while not stop.is_set():
        try:
            await asyncio.to_thread(store.checkpoint)
            failing = False
        except Exception as exc:  # the disk refused: commits still checkpoint at the backstop
            if not failing:
                log.warning("cannot checkpoint the database (%s); trying again", exc)
            failing = True
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), timeout=every)
