"""Starts that arrive together run as one operation of `start_many`.

Under load many `POST /tokens` arrive while the lane is busy with the shared transaction
before. Each used to be an operation of its own: five statements a start (its lock, its read
and three inserts), each a round trip on Postgres. Here the starts that arrive before the
lane takes them join one operation, which `start_many` applies as the batch route does: one
lock statement, one read and one insert of each kind for all of them, each start keeping
exactly `POST /tokens`'s checks, rows and answer (`start_many` is tested row for row against
`start`). A start alone is such an operation of one.

The operation is queued when its first start arrives; a start that arrives while it waits in
the queue joins it, until the lane takes it (then its starts are fixed, and a rerun of the
shared transaction applies the same ones) or it holds `STARTS_MOST`. No start is answered
before the shared transaction that holds it is committed: every start waits on the
operation's future, which the lane sets after the commit. When the database refused one of
the new rows (`Raced`: a token made meanwhile by a path that takes no family lock), nothing
of the operation was applied, and each of its starts runs again as an operation of its own.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Sequence
from functools import partial
from typing import Protocol

from sqlalchemy import Connection

from stateous.control.clock import Clock
from stateous.control.engine.start import Started, start
from stateous.control.engine.start_many import Raced, StartArgs, start_many
from stateous.control.engine.tx import EngineConfig
from stateous.control.errors import Refusal
from stateous.control.store.group import Lanes, Op
from stateous.control.store.traces import insert_traces

__all__ = ["STARTS_MOST", "StartsHost", "StartsTogether", "keep_traces", "start_alone"]

#: The most starts one operation takes: a few milliseconds of a shared transaction.
STARTS_MOST = 100


class StartsHost(Protocol):
    """What the starts use of the control plane that serves them (a `Plane`)."""

    @property
    def clock(self) -> Clock:
        """The clock of the starts' `at`."""

    @property
    def config(self) -> EngineConfig:
        """The served graph and its settings."""

    @property
    def lanes(self) -> Lanes:
        """Where the starts' operation is queued."""

    def check_serving(self) -> None:
        """Refuse with `503 not_serving` once another control plane took the database."""

    def after_commit(self, call: str, result: object) -> None:
        """Count a committed operation's outcome."""

    async def run_async[T](self, call: str, work: Callable[[Connection], T]) -> T:
        """Run `work` as an operation of its own; answers after the commit."""


class _Together:
    """One queued operation and the starts that joined it."""

    def __init__(self, owner: StartsTogether) -> None:
        self.starts: list[StartArgs] = []
        #: The starts the lane took (fixed at the first run; a rerun applies the same ones).
        self.taken: Sequence[StartArgs] | None = None
        self.op = Op("start", partial(owner.apply, self))
        #: The operation's future as the event loop awaits it, made once for all its starts
        #: (each wrapper costs a wake-up of the loop from the lane's thread).
        self.awaited: asyncio.Future[list[Started | Refusal]] | None = None

    def outcomes(self) -> asyncio.Future[list[Started | Refusal]]:
        """The operation's future, for the running event loop."""
        loop = asyncio.get_running_loop()
        awaited = self.awaited
        if awaited is None or awaited.get_loop() is not loop:
            awaited = self.awaited = asyncio.wrap_future(self.op.future, loop=loop)
        return awaited


class StartsTogether:
    """The starts of one control plane that are waiting for a lane, as one operation."""

    def __init__(self, plane: StartsHost) -> None:
        self._plane = plane
        self._lock = threading.Lock()  # the event loop adds starts, a lane thread takes them
        self._open: _Together | None = None

    def waiting(self) -> int:
        """How many starts wait in the operation still open to more."""
        with self._lock:
            return 0 if self._open is None else len(self._open.starts)

    async def start(self, args: StartArgs) -> Started:
        """Start (or answer) one token as `start` would, in an operation shared with the
        starts that arrive together; answers after the commit, raises its refusal."""
        self._plane.check_serving()
        together, index, queue = self._join(args)
        if queue:
            self._plane.lanes.submit([together.op])
        try:
            # Shielded: a request whose client went away must not cancel the others' operation.
            outcomes: list[Started | Refusal] = await asyncio.shield(together.outcomes())
        except Raced:
            return await start_alone(self._plane, args)
        outcome = outcomes[index]
        if isinstance(outcome, Refusal):
            raise outcome
        self._plane.after_commit("start", outcome)
        return outcome

    def _join(self, args: StartArgs) -> tuple[_Together, int, bool]:
        """Join the operation waiting in the queue, or make one: (it, the start's place in it,
        whether it must be queued)."""
        with self._lock:
            together = self._open
            queue = (
                together is None
                or together.taken is not None
                or together.op.future.done()  # its group failed before it ran: 503 for all
                or len(together.starts) >= STARTS_MOST
            )
            if together is None or queue:
                together = self._open = _Together(self)
            together.starts.append(args)
            return together, len(together.starts) - 1, queue

    def apply(self, together: _Together, conn: Connection) -> list[Started | Refusal]:
        """The operation's work, in a lane: its starts are fixed now, then applied."""
        with self._lock:
            if together.taken is None:
                together.taken = list(together.starts)
                if self._open is together:
                    self._open = None
        plane = self._plane
        outcomes = start_many(conn, plane.clock, plane.config, together.taken)
        keep_traces(conn, together.taken, outcomes)
        return outcomes


async def start_alone(plane: StartsHost, args: StartArgs) -> Started:
    """`start` as an operation of its own: a workflow whose starts cannot share one (a start
    into a parallel state or to END), or a start of an operation the database refused
    (`Raced`)."""
    clock, config = plane.clock, plane.config

    def work(conn: Connection) -> Started:
        started = start(conn, clock, config, args.token, args.context, args.by)
        keep_traces(conn, [args], [started])
        return started

    started: Started = await plane.run_async("start", work)
    return started


def keep_traces(
    conn: Connection, starts: Sequence[StartArgs], outcomes: Sequence[Started | Refusal]
) -> None:
    """Write the `traceparent` of each new token that has one, in its start's
    transaction; nothing when no start carries one (tracing off, no header)."""
    pairs = [
        (outcome.token.token, args.trace)
        for args, outcome in zip(starts, outcomes, strict=True)
        if args.trace is not None and isinstance(outcome, Started) and outcome.created
    ]
    if pairs:
        insert_traces(conn, pairs)
