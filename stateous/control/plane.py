"""The running control plane as the API sees it: the store and its lanes, the graph, the clock."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from anyio import to_thread
from sqlalchemy import Connection

from stateous.control.clock import Clock, SystemClock
from stateous.control.engine.read_ahead import reading_ahead
from stateous.control.engine.start_many import starts_in_bulk
from stateous.control.engine.tx import EngineConfig
from stateous.control.errors import NotServing
from stateous.control.metrics import Metrics
from stateous.control.starts_together import StartsTogether
from stateous.control.store.db import READ_CALLS, Store
from stateous.control.store.group import GROUP_MOST, Lanes, Op
from stateous.control.wakeups import Wakeups

T = TypeVar("T")


@dataclass
class Plane:
    """One control plane: every request runs through `run` (or its siblings), which refuses
    once the hold is lost; its writes commit in the plane's own lanes."""

    store: Store
    config: EngineConfig
    clock: Clock
    serving: bool = True
    #: `holder`, or `replica` until this control plane takes the hold.
    role: str = "holder"
    wakeups: Wakeups = field(default_factory=Wakeups)
    metrics: Metrics = field(default_factory=Metrics)
    #: The shared transactions of the writes, on `store`.
    lanes: Lanes = field(init=False, repr=False)
    #: `POST /tokens` arriving together, as one operation (None: each start its own).
    starts: StartsTogether | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self.lanes = Lanes(self.store)
        # The lanes wake the waiting claims after each commit, and run the parked ones in the
        # transactions that may queue their tasks (the hand-off, stateous.control.wakeups).
        self.lanes.companion = self.wakeups
        if not self.store.sqlite:  # Postgres: a group's reports are read ahead (engine.read_ahead)
            self.lanes.read_ahead = reading_ahead
        if starts_in_bulk(self.config.body(None)):
            self.starts = StartsTogether(self)

    @classmethod
    def of(cls, store: Store, config: EngineConfig, clock: Clock | None = None) -> Plane:
        """A plane with the system clock by default."""
        return cls(store, config, clock or SystemClock())

    def check_serving(self) -> None:
        """Refuse with `503 not_serving` once another control plane took the database."""
        if not self.serving:
            raise NotServing()

    def run(self, call: str, work: Callable[[Connection], T]) -> T:
        """Run `work` as one operation: a read in a transaction of its own, a write in a shared
        one with whatever arrives at the same time; answers after the commit,
        raises what refused it; `not_serving` after a takeover."""
        self.check_serving()
        if call in READ_CALLS:
            result = self.store.read(work)
        else:
            op = Op(call, work)
            self.lanes.submit([op])
            result = op.future.result()
        self.after_commit(call, result)
        return result

    def run_many(self, ops: Sequence[tuple[str, Callable[[Connection], Any]]]) -> list[Any]:
        """Run several operations queued together, in order, each its own operation (a batch
        route's messages): each answer is the work's result or the exception that refused it."""
        self.check_serving()
        answers: list[Any] = []
        for part in parts(ops):
            queued = [Op(call, work) for call, work in part]
            self.lanes.submit(queued)
            answers.extend(self._outcome(op, op.future.exception()) for op in queued)
        return answers

    async def run_async(self, call: str, work: Callable[[Connection], T]) -> T:
        """`run` for the event loop: a write waits for its commit without a worker thread."""
        self.check_serving()
        if call in READ_CALLS:
            return await to_thread.run_sync(self.run, call, work)
        op = Op(call, work)
        self.lanes.submit([op])
        result: T = await asyncio.wrap_future(op.future)
        self.after_commit(call, result)
        return result

    async def run_many_async(
        self,
        ops: Sequence[tuple[str, Callable[[Connection], Any]]],
        tasks: Sequence[int | None] = (),
    ) -> list[Any]:
        """`run_many` for the event loop; `tasks`: the task each operation names (a report's,
        for `read_ahead`), if any."""
        self.check_serving()
        answers: list[Any] = []
        named = list(tasks) or [None] * len(ops)
        for part in parts(list(zip(ops, named, strict=True))):
            queued = [Op(call, work, task=task) for (call, work), task in part]
            self.lanes.submit(queued)
            # gather retrieves every exception, so none is logged as "never retrieved".
            await asyncio.gather(
                *(asyncio.wrap_future(op.future) for op in queued), return_exceptions=True
            )
            answers.extend(self._outcome(op, op.future.exception()) for op in queued)
        return answers

    def _outcome(self, op: Op, failure: BaseException | None) -> Any:
        if failure is not None:
            return failure
        result = op.future.result()
        self.after_commit(op.call, result)
        return result

    def after_commit(self, call: str, result: object) -> None:
        """After the commit: count the clock's work. (The lane that committed has woken the
        long-poll claims already, before any answer of its group.)"""
        self.metrics.after_commit(call, result)


def parts[X](ops: Sequence[X]) -> list[Sequence[X]]:
    """A batch in parts of at most `GROUP_MOST` operations, each queued after the one before
    committed: a shared transaction stays short, and the batch's order holds across lanes."""
    return [ops[i : i + GROUP_MOST] for i in range(0, len(ops), GROUP_MOST)]
