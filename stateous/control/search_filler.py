"""The holder fills a search key added to a served graph: the rows of `token_keys`
of the live top tokens of each version that searches by a key not yet filled, in batches that
leave room for live traffic; then the key's row of `search_keys`, which ends its
`409 search_not_ready`.

A token changed meanwhile gets its rows from its own transaction (`Tx.flush`); each batch takes
the family locks of its tokens first (Postgres), so it never writes a value older than one
written by a transaction that committed before it.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from functools import partial

from sqlalchemy import Connection

from stateous.control.engine.search import search_of
from stateous.control.paced import Pace, run_paced
from stateous.control.plane import Plane
from stateous.control.store import token_keys
from stateous.control.store.dialect import dialect_of
from stateous.control.store.locks import lock_families

log = logging.getLogger("stateous.search")


@dataclass
class _Fill:
    """One key of one structure being filled: the last token done and the counts."""

    structure: str
    key: str
    total: int
    done: int = 0
    after: str | None = None
    filled: bool = False


@dataclass
class SearchFiller:
    """Fills the keys not filled yet, one batch at a time: `step()` (tests) or
    `await run(stop)` (serve, holder only)."""

    plane: Plane
    batch: int = 500
    rest: float = 0.05  # seconds between batches, so claims and reports keep their turns
    _fills: list[_Fill] | None = field(default=None, repr=False)

    def _pending(self) -> list[_Fill]:
        """The keys of the versions known that have no row in `search_keys`."""
        config = self.plane.config
        config.versions.reload()
        done = self.plane.store.read(token_keys.filled)
        fills = []
        for graph in config.versions.graphs():
            for key in search_of(graph):
                if (graph.structure, key) not in done:
                    live = partial(token_keys.count_live_top, structure=graph.structure)
                    total = self.plane.store.read(live)
                    fills.append(_Fill(graph.structure, key, total))
                    config.filling[(graph.structure, key)] = (0, total)
        return fills

    def step(self) -> int:
        """One batch of the first key with work left; answers the tokens handled (0: every
        key is filled)."""
        self.plane.check_serving()
        if self._fills is None:
            self._fills = self._pending()
        while self._fills:
            fill = self._fills[0]
            with self.plane.store.begin() as conn:
                handled = self._batch(conn, fill)
            fill.done = min(fill.total, fill.done + handled)
            self.plane.config.filling[(fill.structure, fill.key)] = (fill.done, fill.total)
            if fill.filled:
                self._fills.pop(0)
                self.plane.config.filling.pop((fill.structure, fill.key), None)
                log.info("search key %r filled for %d live tokens", fill.key, fill.done)
            if handled:
                return handled
        return 0

    def _batch(self, conn: Connection, fill: _Fill) -> int:
        """Write the rows of the next tokens of `fill`; the key's row with the last batch."""
        next_ids = [
            t for t, _ in token_keys.live_top_after(conn, fill.structure, fill.after, self.batch)
        ]
        if len(next_ids) < self.batch:
            token_keys.mark_filled(conn, fill.structure, fill.key, self.plane.clock.now())
            fill.filled = True
        if not next_ids:
            return 0
        if dialect_of(conn).locks:
            lock_families(conn, next_ids)
        rows = {
            token: token_keys.rows_of(
                token, context, search_of(self.plane.config.versions.of(structure))
            )
            for token, structure, context in token_keys.top_rows(conn, next_ids)
            if structure == fill.structure and isinstance(context, dict)
        }
        token_keys.replace_keys(conn, rows)
        fill.after = next_ids[-1]
        return len(next_ids)

    def drain(self) -> int:
        """Run steps until every key is filled (tests); answers the tokens handled."""
        total = 0
        while handled := self.step():
            total += handled
        return total

    async def run(self, stop: asyncio.Event) -> None:
        """Fill until every key is filled, `stop` is set or this control plane stops serving."""
        pace = Pace(self.rest, None, self.rest, "filling a search key failed", False)
        await run_paced(self.step, stop, pace, on_failure=self._forget_fills)

    def _forget_fills(self) -> None:
        """After a failed step, read what is left to fill again."""
        self._fills = None
